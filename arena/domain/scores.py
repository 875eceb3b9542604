"""Scores (methodology: Scores): Brier, Brier skill, P/L, return, win rate, bands, tests.

Pure functions and small accumulators; no I/O. Everything that touches money is ``Decimal``.
Scores are exact decimals too while they are being summed (a Brier value has at most a few
dozen digits), so a family's mean Brier is the same whichever way the rows are streamed; they
only become floats at the last step, for the p-values of the hypothesis tests.

* Brier of a scored BUY: ``(implied_confidence - won)^2``; the market's Brier on the same trade:
  ``(price_paid - won)^2``.
* Brier skill score ``BSS = 1 - BS / BS_ref``, against 0.25 (always 50%) and against the
  market's Brier on the same trades.
* ``P/L = total value - starting balance``, ``return % = P/L / starting balance * 100``.
* Win rate ``won / (won + lost)`` over scored bets.
* Two tests where they fit: a one-sample t-test of the per-trade Brier against 0.25, and a
  paired t-test of the per-trade Brier against the market's Brier on the same trade.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from arena.domain.ledger import ONE, ZERO

BRIER_UNIFORM = Decimal("0.25")
HUNDRED = Decimal(100)

# Upper bounds are inclusive: 0.10 is "excellent", 0.25 "fair", 0.40 "poor".
BRIER_BANDS: tuple[tuple[Decimal, str], ...] = (
    (Decimal("0.10"), "excellent"),
    (Decimal("0.20"), "good"),
    (Decimal("0.25"), "fair"),
    (Decimal("0.40"), "poor"),
)
BRIER_WORST_BAND = "very poor"


def brier(forecast: Decimal, won: bool) -> Decimal:
    """``(forecast - won)^2`` for a forecast of the side that was bet on."""
    outcome = ONE if won else ZERO
    return (forecast - outcome) ** 2


def skill_score(score: Decimal, reference: Decimal) -> Decimal | None:
    """``1 - score / reference``; None when the reference is zero (no skill can be measured)."""
    if reference == ZERO:
        return None
    return ONE - score / reference


def brier_band(score: Decimal) -> str:
    """The seed's interpretation of a Brier score (0-0.10 excellent ... > 0.40 very poor)."""
    for bound, label in BRIER_BANDS:
        if score <= bound:
            return label
    return BRIER_WORST_BAND


def return_band(return_pct: Decimal) -> str:
    """The seed's interpretation of a return in percent.

    ``> +50`` exceptional, ``[+20, +50]`` excellent, ``[+5, +20)`` good, ``(-5, +5)`` neutral,
    ``[-20, -5]`` poor, ``< -20`` very poor: a value on a shared edge (+5, -5, +20) takes the band
    farther from zero, except +50 and -20 where the seed's strict ``>``/``<`` decides.
    """
    if return_pct > 50:
        return "exceptional"
    if return_pct >= 20:
        return "excellent"
    if return_pct >= 5:
        return "good"
    if return_pct > -5:
        return "neutral"
    if return_pct >= -20:
        return "poor"
    return "very poor"


def pnl(total_value: Decimal, starting_balance: Decimal) -> Decimal:
    return total_value - starting_balance


def return_pct(profit: Decimal, starting_balance: Decimal) -> Decimal | None:
    """``P/L / starting balance * 100`` (None for a zero balance)."""
    if starting_balance == ZERO:
        return None
    return profit / starting_balance * HUNDRED


@dataclass(frozen=True)
class TTest:
    """A t statistic with its degrees of freedom and two-sided p-value."""

    t: float
    df: int
    p_value: float


def t_test(n: int, total: Decimal, total_squares: Decimal, mu: Decimal = ZERO) -> TTest | None:
    """Two-sided one-sample t-test of ``mean == mu`` from a count, a sum and a sum of squares.

    None when it cannot be computed (fewer than two values, or no variance at all)."""
    if n < 2:
        return None
    mean = total / n
    variance = (total_squares - total * total / n) / (n - 1)
    if variance <= ZERO:
        return None
    t = float((mean - mu) / (variance / n).sqrt())
    from scipy.special import stdtr  # scipy loads only when a test is computed

    p = float(2 * stdtr(n - 1, -abs(t)))  # two-sided, Student's t CDF
    return TTest(t=t, df=n - 1, p_value=p)


@dataclass
class ScoreTally:
    """Running sums over scored bets; :meth:`add` one bet at a time, :meth:`merge` tallies.

    Holds a fixed number of exact decimals whatever the number of bets, so a leaderboard can
    stream millions of scored trades in flat memory.
    """

    n: int = 0
    wins: int = 0
    sum_brier: Decimal = ZERO
    sum_brier_sq: Decimal = ZERO
    sum_market: Decimal = ZERO
    sum_diff: Decimal = ZERO  # brier - market brier, per trade
    sum_diff_sq: Decimal = ZERO

    def add(self, brier_score: Decimal, market_brier: Decimal, won: bool) -> None:
        diff = brier_score - market_brier
        self.n += 1
        self.wins += 1 if won else 0
        self.sum_brier += brier_score
        self.sum_brier_sq += brier_score * brier_score
        self.sum_market += market_brier
        self.sum_diff += diff
        self.sum_diff_sq += diff * diff

    def merge(self, other: ScoreTally) -> None:
        self.n += other.n
        self.wins += other.wins
        self.sum_brier += other.sum_brier
        self.sum_brier_sq += other.sum_brier_sq
        self.sum_market += other.sum_market
        self.sum_diff += other.sum_diff
        self.sum_diff_sq += other.sum_diff_sq

    def summary(self) -> ScoreSummary:
        if self.n == 0:
            return ScoreSummary(0, 0, None, None, None, None, None, None, None)
        mean = self.sum_brier / self.n
        market = self.sum_market / self.n
        vs_uniform = t_test(self.n, self.sum_brier, self.sum_brier_sq, BRIER_UNIFORM)
        vs_market = t_test(self.n, self.sum_diff, self.sum_diff_sq)
        return ScoreSummary(
            scored_bets=self.n,
            wins=self.wins,
            brier=mean,
            market_brier=market,
            bss_uniform=skill_score(mean, BRIER_UNIFORM),
            bss_market=skill_score(mean, market),
            win_rate=Decimal(self.wins) / self.n,
            p_vs_uniform=vs_uniform.p_value if vs_uniform else None,
            p_vs_market=vs_market.p_value if vs_market else None,
        )


@dataclass(frozen=True)
class ScoreSummary:
    """Scores over a set of scored bets; None wherever there is nothing to score."""

    scored_bets: int
    wins: int
    brier: Decimal | None
    market_brier: Decimal | None
    bss_uniform: Decimal | None
    bss_market: Decimal | None
    win_rate: Decimal | None
    p_vs_uniform: float | None  # H0: mean Brier = 0.25 (two-sided)
    p_vs_market: float | None  # H0: mean Brier = market's Brier on the same trades (paired)

    @property
    def losses(self) -> int:
        return self.scored_bets - self.wins

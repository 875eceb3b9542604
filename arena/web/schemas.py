"""The response models of the JSON API (``/api/v1``): what ``/api/openapi.json`` says each route
answers, and what FastAPI checks each answer against.

The JSON is built by the same query functions as the pages (plain dicts); these models describe
it, never reshape it. Every model keeps fields it does not declare (``extra="allow"``), so a
field added to a route's JSON passes through untouched until its model names it. Exact decimals
(money, prices, shares) are strings, instants are ISO 8601 UTC strings. A stored row is described
by its table (:func:`row_model`), so a new column appears in the document with the migration that
adds it.
"""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model
from sqlalchemy import Column, Table

from arena.store import schema
from arena.web.records import MARKET_LIST_COLUMNS
from arena.web.standings import DECISION_COLUMNS

DecimalText = Annotated[str, Field(description="An exact decimal number, as text.")]
Instant = Annotated[str, Field(json_schema_extra={"format": "date-time"})]
Day = Annotated[str, Field(json_schema_extra={"format": "date"})]


class Open(BaseModel):
    """A JSON object whose undeclared fields pass through (FastAPI never drops one)."""

    model_config = ConfigDict(extra="allow")


# -- errors -------------------------------------------------------------------------------------


class Error(Open):
    """An error answer: a short title and what went wrong."""

    error: str
    detail: Any


class Problem(Open):
    """One invalid parameter: where it is, what is wrong, the kind of error."""

    loc: list[str | int]
    msg: str
    type: str


class InvalidRequest(Open):
    """A bad parameter (422): each problem with its location."""

    error: str
    detail: list[Problem]


Responses = dict[int | str, dict[str, Any]]  # the extra answers of a route, as FastAPI takes them
NOT_FOUND: Responses = {404: {"model": Error, "description": "Nothing has this id (JSON)."}}
INVALID: Responses = {422: {"model": InvalidRequest, "description": "A bad parameter (JSON)."}}
UNAVAILABLE: Responses = {
    503: {"model": Error, "description": "The database is unreachable (JSON)."}
}


# -- stored rows, described by their tables -----------------------------------------------------


def column_type(column: Column[Any]) -> Any:
    """The JSON type of a stored column as :func:`arena.jsonable.jsonable` writes it."""
    try:
        python = column.type.python_type
    except NotImplementedError:  # pragma: no cover - every column type of arena has one
        python = object
    kind: Any = Any  # JSON columns: lists and objects as stored
    if issubclass(python, bool):
        kind = bool
    elif issubclass(python, int):
        kind = int
    elif issubclass(python, Decimal):
        kind = DecimalText
    elif issubclass(python, datetime):
        kind = Instant
    elif issubclass(python, date):
        kind = Day
    elif issubclass(python, str):
        kind = str
    return kind | None if column.nullable and kind is not Any else kind


def row_model(name: str, table: Table, *exclude: str, doc: str, **extra: Any) -> type[BaseModel]:
    """A model of ``table``'s rows (without ``exclude``), plus ``extra`` fields given as
    ``(type, default)`` pairs the way :func:`pydantic.create_model` takes them."""
    kept = [c.key for c in table.columns if c.key not in exclude]
    return picked(name, table, tuple(kept), doc, **extra)


def picked(
    name: str, table: Table, keep: tuple[str, ...], doc: str, **extra: Any
) -> type[BaseModel]:
    """A model of the columns ``keep`` of ``table``, in that order (and ``extra``)."""
    fields: dict[str, Any] = {key: (column_type(table.c[key]), ...) for key in keep}
    fields.update(extra)
    return create_model(name, __base__=Open, __doc__=doc, **fields)


def optional(item: Any) -> Any:
    """``item`` or null (a model made at run time is no type to mypy)."""
    return item | None


def many(item: Any) -> Any:
    """A list of ``item`` models (a model made at run time is no type to mypy)."""
    return list[item]


def page_of(name: str, item: Any, doc: str, **extra: Any) -> type[BaseModel]:
    """A page of a list: its items and where the page is in the whole list."""
    return create_model(
        name,
        __base__=Open,
        __doc__=doc,
        items=(many(item), ...),
        page=(int, ...),
        per_page=(int, ...),
        total=(int, ...),
        pages=(int, ...),
        **extra,
    )


WITH_AGENT = {"family_id": (str, ...), "replicate": (int, ...), "display_name": (str, ...)}
"""Who a row of a market's or a cohort's record belongs to: the family and which replicate."""
WITH_QUESTION = {"question": (str, ...)}

FamilyRow = row_model("FamilyRow", schema.families, doc="A model family as stored.")
CohortRow = row_model(
    "CohortRow", schema.cohorts, doc="A cohort and its number of agents.", agents=(int, ...)
)
AgentRow = row_model("AgentRow", schema.agents, doc="An agent (a family in one cohort).")
MarketRow = row_model(
    "MarketRow",
    schema.markets,
    doc="A market as stored, with its page on Polymarket.",
    polymarket_url=(str, ...),
)
PositionRow = row_model(
    "PositionRow", schema.positions, doc="A position and its market's question.", **WITH_QUESTION
)
OpenPositionRow = row_model(
    "OpenPositionRow",
    schema.positions,
    "settlement_outcome",
    "payout",
    "realized_pnl",
    "closed_at",
    doc="An open position valued by the snapshots' rule: its entry price (cost per share, fees "
    "included), mark (null when the market has no price), value and unrealised P/L.",
    **WITH_QUESTION,
    avg_entry_price=(DecimalText, ...),
    mark=(DecimalText | None, ...),
    value=(DecimalText, ...),
    unrealized_pnl=(DecimalText, ...),
)
SnapshotRow = row_model("SnapshotRow", schema.portfolio_snapshots, doc="A portfolio snapshot.")
AgentPositionRow = row_model(
    "AgentPositionRow", schema.positions, doc="A position and its agent.", **WITH_AGENT
)
TradeRow = row_model(
    "TradeRow", schema.trades, doc="A trade and its market's question.", **WITH_QUESTION
)
AgentTradeRow = row_model(
    "AgentTradeRow", schema.trades, doc="A trade and its agent.", **WITH_AGENT
)
BrierRow = row_model(
    "BrierRow", schema.brier_scores, "family_id", doc="A scored bet and its agent.", **WITH_AGENT
)
ForecastRow = row_model(
    "ForecastRow", schema.forecasts, doc="A forecast and its market's question.", **WITH_QUESTION
)
AgentForecastRow = row_model(
    "AgentForecastRow",
    schema.forecasts,
    "family_id",
    doc="A forecast and its agent.",
    **WITH_AGENT,
)
CitationRow = picked(
    "CitationRow",
    schema.citations,
    ("position", "url", "title", "content", "cited_at"),
    doc="One web source an attempt's answer cites (web search families).",
)
AttemptRow = row_model(
    "AttemptRow",
    schema.decision_attempts,
    "raw_body",
    doc="One attempt of a decision: the prompt, the raw response, the error, and the web "
    "sources its answer cites (empty without web search).",
    citations=(many(CitationRow), ...),
)
DecisionRecord = row_model(
    "DecisionRecord", schema.decisions, "claim_token", doc="A decision as stored."
)
DecisionLine = picked(
    "DecisionLine",
    schema.decisions,
    DECISION_COLUMNS,
    doc="A decision in a list, with its agent's family and replicate.",
    **WITH_AGENT,
)
DecisionPage = page_of("DecisionPage", DecisionLine, doc="A page of decisions, newest first.")
MarketLine = picked(
    "MarketLine",
    schema.markets,
    MARKET_LIST_COLUMNS,
    doc="A market in the market list.",
)
PriceRow = picked(
    "PriceRow",
    schema.market_prices,
    ("observed_at", "prices", "yes_price", "volume"),
    doc="An observed price of a market.",
)


# -- the leaderboard and the standings ----------------------------------------------------------


class Standing(Open):
    """One family's standing: the fields of `arena leaderboard --format json`. Money as
    decimal strings, scores and rates as numbers, null when there is nothing to score."""

    family_id: str
    display_name: str
    kind: str
    track: str = Field(
        description="model (no tools), web (web search), agent (outside agent) or baseline: "
        "its newest agent's, from the kind and web search frozen on it."
    )
    cohort_id: int | None
    cohorts: int
    agents: int
    starting_balance: DecimalText
    total_value: DecimalText
    pnl: DecimalText
    replicates: int
    pnl_mean: DecimalText
    pnl_spread: DecimalText | None
    return_pct: float | None
    realized_pnl: DecimalText
    unrealized_pnl: DecimalText
    brier: float | None
    market_brier: float | None
    bss_uniform: float | None
    bss_market: float | None
    p_vs_uniform: float | None
    p_vs_market: float | None
    scored_bets: int
    wins: int
    losses: int
    win_rate: float | None
    cost_usd: DecimalText
    prompt_tokens: int
    completion_tokens: int
    decisions: int
    attempts: int
    malformed_attempts: int
    malformed_share: float | None
    system_holds: int
    failures: int
    failed_decisions: int
    retries: int
    exit_pnl: DecimalText | None
    slippage_mid_bps: float | None
    fees_usd: DecimalText
    fill_ratio: float | None
    liquidity_refusals: int
    provisional: bool
    brier_band: str | None
    return_band: str | None


class CohortStanding(Standing):
    """A family's standing in one cohort, with its cash, invested cost and trade count."""

    cash: DecimalText
    invested: DecimalText
    positions_value: DecimalText
    trades: int


Cohort = create_model(
    "Cohort",
    __base__=Open,
    __doc__="One cohort: its row, the standings in it and its decisions (paginated).",
    cohort=(CohortRow, ...),
    standings=(list[CohortStanding], ...),
    decisions=(DecisionPage, ...),
)
CohortPage = page_of("CohortPage", CohortRow, doc="A page of cohorts, newest first.")


class Snapshot(Open):
    """An agent's newest portfolio snapshot."""

    taken_at: Instant
    total_value: DecimalText
    pnl: DecimalText
    pnl_pct: DecimalText | None
    brier: DecimalText | None
    resolved_bets: int


class Lineage(Open):
    """The family's agent in one cohort: the frozen lineage and its newest snapshot."""

    id: int
    cohort_id: int
    replicate: int
    display_name: str
    openrouter_id: str | None
    strategy: str | None
    prompt_version: str
    methodology_version: str
    starting_balance: DecimalText
    cash: DecimalText
    realized_pnl: DecimalText
    week_start: Instant
    snapshot: Snapshot | None


Insufficient = Literal["insufficient"]


class Interval(Open):
    """A mean with its 95% cluster-robust t interval (`low`, `high`), the cluster
    bootstrap's bounds, the p-value of "the mean is 0" and the independent clusters."""

    estimate: float
    low: float
    high: float
    bootstrap_low: float | None
    bootstrap_high: float | None
    p_value: float | None
    n_clusters: int


class MarketSkillRow(Open):
    """One forecaster against the price it was shown: alpha (> 0: it beat the price), the
    market-copy index and the return per $1 of betting against the odds."""

    forecaster: str
    alpha_brier: Interval | Insufficient = Field(
        description="Mean over questions of (m - o)^2 - (p - o)^2."
    )
    alpha_log: Interval | Insufficient = Field(
        description="Mean of ln p(outcome) - ln m(outcome), both clipped to [0.001, 0.999]."
    )
    copy_correlation: float | Insufficient = Field(
        description="Pearson correlation of its forecasts with the prices shown."
    )
    copy_distance: float | None = Field(description="Mean |p - m|.")
    follows_market: bool = Field(description="Correlation >= 0.98 and distance <= 0.02.")
    copy_questions: int
    return_per_dollar: Interval | Insufficient
    return_per_dollar_after_fee: Interval | Insufficient
    fee_unknown: int = Field(description="Bets left out of the after-fee return: no fee known.")
    questions: int
    markets: int
    clusters: int


class MarketReport(Open):
    """Skill against the market, as `arena analyze market --format json`."""

    kind: str
    as_of: Instant
    options: dict[str, Any]
    resampling: dict[str, Any]
    sample: str
    rows: list[MarketSkillRow]


class ServedAnalysis(Open):
    """The methodology in use, and which stored v2 analysis a part of it comes from."""

    methodology: str
    pending: bool = Field(
        description="No analysis stored yet: it is being computed (its part null meanwhile)."
    )
    as_of: Instant | None = Field(description="The instant the served analysis is as of.")
    computed_at: Instant | None = Field(description="When the served analysis was computed.")
    resamples: int | None = Field(description="Bootstrap resamples of its intervals.")


class AgainstMarket(ServedAnalysis):
    """Skill against the market (null until a forecast resolves)."""

    market: MarketReport | None


class PowerRow(Open):
    """Two forecasters adjacent in the ranking (`a` above `b`): the Brier gap on their
    common questions, its standard error, and the weeks to separate them."""

    a: str
    b: str
    delta: float | Insufficient
    se: float | Insufficient
    weeks_seen: int
    separated: bool
    n_questions: int
    n_clusters: int
    more_weeks: int | None = Field(
        description=(
            "More weeks for 80% power at two-sided 5% (0: separated; null: not separable at this "
            "gap, or insufficient)."
        )
    )
    weeks_needed: int | None
    verdict: str


class PowerReport(Open):
    """Weeks to separate, as `arena analyze power --format json`."""

    kind: str
    as_of: Instant
    options: dict[str, Any]
    assumptions: str
    rows: list[PowerRow]


class Power(ServedAnalysis):
    """The weeks to separate (null until a forecast resolves)."""

    power: PowerReport | None


class ReplicateRow(Open):
    """One family's replicates: their mean raw Brier and its spread, and the family's raw
    Brier over its questions (the mean of its replicates' scores of each question) with its
    cluster-robust 95% interval."""

    forecaster: str
    family_id: str
    replicates: int
    mean_brier: float
    sd_brier: float | None = Field(description="Null with one replicate.")
    brier: float | None
    ci_low: float | None
    ci_high: float | None
    n_clusters: int


class CloseOrdering(Open):
    """Two adjacent families (`upper` scored better) whose gap is smaller than the larger of
    their replicates' standard deviations."""

    upper: str
    lower: str
    gap: float
    spread: float


class ReplicatesReport(Open):
    """Skill or the luck of a run, as `arena analyze replicates --format json`."""

    kind: str
    as_of: Instant
    unit: str
    rule: str
    rows: list[ReplicateRow]
    between_variance: float | None
    within_variance: float | None
    icc: float | None = Field(description="Share of the agents' variance between families.")
    close_orderings: list[CloseOrdering]


class Replicates(ServedAnalysis):
    """The replicates' variance split (null until a forecast resolves)."""

    replicates: ReplicatesReport | None


class ReliabilityBin(Open):
    """Forecasts with a probability in [low, high) (the last bin closed at 1)."""

    low: float
    high: float
    count: int
    mean_forecast: float
    observed_frequency: float


class CalibrationRow(Open):
    """One forecaster's calibration over its scored forecast rows, as a row of `arena analyze
    calibration --format json`."""

    forecaster: str
    n: int
    brier: float
    binned_brier: float
    reliability: float
    resolution: float
    uncertainty: float
    ece: float
    base_rate: float
    bins: list[ReliabilityBin]
    mce: float = Field(description="Largest |mean forecast - observed frequency| of a bin.")
    ace: float = Field(description="ECE over equal-mass bins of the sorted forecasts.")
    log_loss: float = Field(description="-mean ln p(outcome), p clipped to [0.001, 0.999].")
    spherical: float = Field(description="Mean p(outcome) / sqrt(p^2 + (1 - p)^2).")
    overconfidence: float = Field(description="Mean max(p, 1 - p) minus the hit rate.")


class Research(Open):
    """A family's research measures (methodology v2): its row against the market and its
    calibration in depth (null where the analysis has none for it)."""

    market: MarketSkillRow | None
    calibration: CalibrationRow | None
    bin_rule: str


class CalibrationBin(Open):
    """Scored bets whose stated confidence is in [low, high): mean confidence, share won."""

    low: float
    high: float
    n: int
    mean_confidence: float | None
    observed: float | None


Family = create_model(
    "Family",
    __base__=Open,
    __doc__="One family across cohorts.",
    family=(FamilyRow, ...),
    standing=(Standing | None, ...),
    cohorts=(list[Lineage], ...),
    recent_decisions=(DecisionPage, ...),
    calibration=(list[CalibrationBin], ...),
    research=(Research | None, ...),
)


class Valuation(Open):
    """An agent's cash, open positions' value, total value, P/L and return now, by the
    snapshots' rule (what the next snapshot at the same marks would store)."""

    cash: DecimalText
    positions_value: DecimalText
    total_value: DecimalText
    pnl: DecimalText
    return_pct: DecimalText | None
    realized_pnl: DecimalText


Agent = create_model(
    "Agent",
    __base__=Open,
    __doc__="One agent: its positions, trades (paginated) and decisions.",
    agent=(AgentRow, ...),
    valuation=(Valuation, ...),
    latest_snapshot=(optional(SnapshotRow), ...),
    open_positions=(many(OpenPositionRow), ...),
    closed_positions=(page_of("PositionPage", PositionRow, doc="A page of closed positions."), ...),
    trades=(page_of("TradePage", TradeRow, doc="A page of trades, newest first."), ...),
    decisions=(DecisionPage, ...),
)


# -- markets and decisions ----------------------------------------------------------------------

Markets = page_of(
    "Markets",
    MarketLine,
    doc="A page of the market list, and every category there is.",
    categories=(list[str], ...),
)
Market = create_model(
    "Market",
    __base__=Open,
    __doc__="One market: its price history (newest first) and every agent's record on it.",
    market=(MarketRow, ...),
    price_history=(many(PriceRow), ...),
    positions=(many(AgentPositionRow), ...),
    trades=(many(AgentTradeRow), ...),
    brier_scores=(many(BrierRow), ...),
    forecasts=(many(AgentForecastRow), ...),
)


class DecisionAgent(Open):
    """The agent that made a decision."""

    id: int
    family_id: str
    replicate: int
    display_name: str
    kind: str
    openrouter_id: str | None


class DecisionCohort(Open):
    """The cohort of a decision."""

    id: int
    week_start: Instant
    methodology_version: str


class Claim(Open):
    """One claim of a decision: the attempts it made, from the first start to the last end."""

    claim_token: str
    attempts: list[int]
    first: Instant | None
    last: Instant | None


class ClaimHistory(Open):
    """Who claimed a decision, how often, and until when."""

    claim_count: int
    holder: str | None
    lease_until: Instant | None
    claims: list[Claim]


class CoveringCommitment(Open):
    """The commitment that covers a record: the first at or after its sequence number."""

    seq: int
    committed_at: Instant
    signed: bool
    key_id: str | None


class ChainRecord(Open):
    """A decision's record in the hash chain, and the commitment that covers it (null: not
    yet committed)."""

    seq: int
    hash: str
    recorded_at: Instant
    after_the_fact: bool = Field(description="Chained by the genesis pass, after the fact.")
    commitment: CoveringCommitment | None


Decision = create_model(
    "Decision",
    __base__=Open,
    __doc__="The whole record of one decision.",
    record=(ChainRecord | None, ...),
    decision=(DecisionRecord, ...),
    agent=(DecisionAgent, ...),
    cohort=(DecisionCohort, ...),
    attempts=(many(AttemptRow), ...),
    trades=(many(TradeRow), ...),
    forecasts=(many(ForecastRow), ...),
    claim_history=(ClaimHistory, ...),
)


# -- status, ranking, curves, methodology -------------------------------------------------------


class JobLine(Open):
    """A job's latest run and its next run time."""

    job: str
    last_slot: Instant | None
    status: str
    finished_at: Instant | None
    next_run: Instant | None
    error: str | None


class CohortLine(Open):
    """An unfinished cohort: its phase, agents and open positions."""

    cohort_id: int
    week_start: Instant
    phase: str
    agents: int
    open_positions: int


class GapSlot(Open):
    """A snapshot slot that lacks `missing` agent snapshots, and what its run did."""

    slot: Instant
    missing: int
    run: str


class SnapshotGaps(Open):
    """The gap slots of the last `window_hours`, oldest first."""

    window_hours: int
    slots: list[GapSlot]
    missing_snapshots: int


class AbandonedRun(Open):
    """A job run whose holder died mid-run and that nobody finished."""

    job: str
    slot: Instant
    holder: str
    started_at: Instant


class DaemonLine(Open):
    """Whether a daemon runs this database's jobs, judged from its latest job run."""

    serving: bool
    last_run: Instant | None


class CommitmentLine(Open):
    """A commitment of the chain's head: `count` records added since the previous one."""

    seq: int
    head_hash: str
    count: int
    committed_at: Instant
    signed: bool
    key_id: str | None


class AnchorLine(Open):
    """A configured anchor: the latest commitment it took, how many wait for it, and the
    failure of the delivery that is failing (0 attempts and nulls when none is)."""

    anchor: str
    delivered_seq: int | None
    delivered_at: Instant | None
    undelivered: int
    failed_attempts: int
    last_error: str | None
    failed_at: Instant | None


class RecordLine(Open):
    """The record chain's head (`head_seq` 0: empty), its latest commitment, the records since
    it, each configured anchor, and whether the latest commitment is `signed` or `unsigned`
    (`signing` null: none yet)."""

    head_seq: int
    head_hash: str
    commitment: CommitmentLine | None
    uncommitted: int
    anchors: list[AnchorLine]
    signing: str | None


class Status(Open):
    """What `arena status` shows: `warnings` are real trouble (and the work the schedule owes,
    when a daemon serves the database); when none does, that work is in `pending` and
    `headline` says so."""

    now: Instant
    jobs: list[JobLine]
    cohorts: list[CohortLine]
    warnings: list[Any]
    snapshot_gaps: SnapshotGaps
    abandoned_runs: list[AbandonedRun]
    daemon: DaemonLine
    pending: list[str]
    headline: str | None
    record: RecordLine | None


class RankingRow(Open):
    """One forecaster in the ranking: its (adjusted) Brier score, intervals and rank."""

    forecaster: str
    status: str
    reason: str | None
    interval_status: str | None
    interval_reason: str | None
    n_questions: int
    n_clusters: int
    weight_sum: float
    brier: float | None
    adjusted_brier: float | None
    ci_low: float | None
    ci_high: float | None
    bootstrap_low: float | None
    bootstrap_high: float | None
    peer_score: float | None
    provisional: bool
    first_forecast_at: Instant | None
    component: int | None
    reference: bool
    rank: int | None
    p_rank_1: float | None = Field(
        description="Share of the bootstrap resamples in which it ranked first (null: unranked)."
    )
    p_top_3: float | None = Field(description="Share of the resamples in which it ranked 1-3.")
    rank_low: int | None = Field(description="2.5% percentile of its resampled rank.")
    rank_high: int | None = Field(description="97.5% percentile of its resampled rank.")


class Difference(Open):
    """The score difference of two adjacent forecasters, with its intervals."""

    upper: str
    lower: str
    n_questions: int
    status: str
    reason: str | None
    n_clusters: int
    mean: float | None
    se: float | None
    weeks_seen: int
    separated: bool
    ci_low: float | None
    ci_high: float | None
    bootstrap_low: float | None
    bootstrap_high: float | None


class RankingReport(Open):
    """The difficulty-adjusted Brier ranking, as `arena analyze ranking --format json`."""

    kind: str
    as_of: Instant
    options: dict[str, Any]
    resampling: dict[str, Any]
    n_scored_questions: int
    n_clusters: int
    n_components: int
    shift: float | None = Field(description="Mean difficulty added back; null: none scored.")
    dropped_questions: int = Field(
        description="Questions left unscored for want of a difficulty (see dropped_reason)."
    )
    dropped_reason: str | None
    sample: str = Field(description="What n counts (questions, each family's agents averaged).")
    rank_sample: str = Field(description="Where the rank probabilities come from.")
    rows: list[RankingRow]
    differences: list[Difference]


class Ranking(ServedAnalysis):
    """The methodology in use and the v2 ranking (null until a forecast resolves)."""

    ranking: RankingReport | None


class SeriesDrawdown(Open):
    """The largest fall of a curve's growth (1 + return) from a running peak over the range:
    peak, trough and end (back at the peak, else the last point) in Unix seconds."""

    peak: int
    trough: int
    end: int
    pct: float
    recovered: bool


class Series(Open):
    """One family's curve: times (Unix seconds), its total value over its agents in dollars,
    its break-even (their summed starting balances) and its return in percent."""

    family_id: str
    display_name: str
    label: str
    kind: str
    points: int
    t: list[int]
    value: list[float]
    pct: list[float]
    base: list[float]
    drawdown: SeriesDrawdown | None


class Curves(Open):
    """Portfolio curves of every family in scope, decision-run markers and break-even."""

    range: str
    cohort: int | None
    family: str | None
    start: int | None
    end: int | None
    break_even: float | None
    decision_markers: list[int]
    max_points: int
    series: list[Series]


# -- risk and return (`arena analyze risk`) ------------------------------------------------------


class RiskInterval(Open):
    """An estimate with its 95% moving-block bootstrap interval."""

    estimate: float
    low: float
    high: float


RiskFigure = Annotated[
    RiskInterval | Literal["insufficient"],
    Field(description='The figure and its interval, or "insufficient" (reason beside it).'),
]


class RiskRow(Open):
    """One family's (or agent's) risk and return, from its weekly returns."""

    forecaster: str = Field(description="The family id, or the agent id with by=agent.")
    family_id: str
    agents: int | None = Field(description="The family's agents (null with by=agent).")
    weeks: int = Field(description="Complete weeks of the curve.")
    mean_weekly_return: float | None
    annualised_return: float | None = Field(description="(V_W / V_0)^(52/W) - 1.")
    sharpe: RiskFigure
    sortino: RiskFigure
    max_drawdown_pct: RiskFigure
    max_drawdown_usd: float | None
    drawdown_hours: float | None
    recovered: bool | None = Field(description="null when the forecaster has no value.")
    calmar: RiskFigure
    insufficient_reason: str | None
    min_weeks: int
    annualisation: str


class WithoutValue(Open):
    """An agent whose snapshots have no value of the asked kind (exit: gamma cohorts)."""

    agent_id: str
    reason: str


class Risk(Open):
    """Risk and return per family or agent, as `arena analyze risk --format json`."""

    kind: str
    as_of: Instant
    by: str
    value: str
    options: dict[str, Any]
    resampling: dict[str, Any]
    annualisation: str
    min_weeks: int
    sample: str = Field(description="What a week and a family's weekly return are.")
    rows: list[RiskRow]
    without_value: list[WithoutValue]


class Methodology(Open):
    """METHODOLOGY.md as Markdown text."""

    markdown: str


def allowed_values(parameter: dict[str, Any], document: dict[str, Any]) -> list[Any]:
    """The values an enumerated parameter of ``document`` (an OpenAPI document) allows, its
    ``$ref`` and ``anyOf`` (``X | None``) followed; [] when it is not enumerated."""
    found: list[Any] = []
    pending = [parameter.get("schema", {})]
    while pending:
        node = pending.pop()
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
            node = document["components"]["schemas"][ref.rsplit("/", 1)[1]]
        found.extend(node.get("enum", []))
        pending.extend(node.get("anyOf", []))
    return found


# -- the trend (arena/web/trend.py) -------------------------------------------------------------


class TrendRow(Open):
    """One family in one cohort week, as a row of `arena analyze trend --format json`."""

    family_id: str
    week_start: Instant = Field(description="Sunday 00:00 UTC that starts the week.")
    weekly_return: float | None = Field(description="Mean return of its agents that week.")
    brier: float | None = Field(description="v1: mean Brier of its bets made that week.")
    adjusted: float | None = Field(description="v2: difficulty-adjusted Brier that week.")
    alpha: float | None = Field(description="v2: alpha (Brier) against the market that week.")
    rank_week: int | None
    rank_cumulative: int | None
    rank_by: str = Field(description="`adjusted` (lower is better) or `return`.")
    lineage_changed: bool
    lineage: list[str] = Field(description="What changed since its previous cohort week.")


class LineageChange(Open):
    """A week where the family's lineage changed, and what changed."""

    week_start: Instant
    lineage: list[str]


class FamilyTrend(Open):
    """One family's trend: its rows (ranks among every family) and its lineage changes."""

    family_id: str
    as_of: Instant | None
    rank_by: str | None
    rows: list[TrendRow]
    changes: list[LineageChange]


# -- breakdown by category or horizon (issue 25) -----------------------------------------------


class IntervalEstimate(Open):
    """An interval: the estimate and its bounds."""

    estimate: float | None
    low: float | None
    high: float | None


class LedgerGroupRow(Open):
    """One family in one category or horizon bucket: its positions, their P/L and cost
    (money as decimal text), its scored bets and their mean Brier."""

    group: str
    family_id: str
    positions: int
    open_positions: int
    pnl: DecimalText
    cost: DecimalText
    scored_bets: int
    brier: float | None
    provisional: bool = Field(description="Fewer than 30 scored bets in the group.")


class ForecastGroupRow(Open):
    """One forecaster in one category or horizon bucket: forecasts, scored questions, Brier,
    and the difficulty-adjusted Brier with its cluster-robust interval."""

    group: str
    forecaster: str
    forecasts: int
    questions: int
    brier: float | None
    adjusted: IntervalEstimate | Literal["insufficient"]
    provisional: bool = Field(description="Fewer than 30 scored questions in the group.")


class ForecastBreakdown(Open):
    """The forecast side, as of an instant."""

    by: str
    as_of: Instant | None
    groups: list[str]
    rows: list[ForecastGroupRow]


class Breakdown(Open):
    """Every family per category or horizon bucket: `arena analyze breakdown --format json`."""

    by: Literal["category", "horizon"]
    horizon_rule: str
    ledger: list[LedgerGroupRow]
    forecasts: ForecastBreakdown | None

"""The budget guard: optional USD caps per decision run and per family within a run.

Before each decision the engine *reserves* the worst case the decision can cost: every
repair round of it (``malformed_retries + 1`` calls), each with the whole prompt (estimated
conservatively at one token per 3 characters, plus the echoed previous answer) and
``max_tokens`` of output, at the family's prices from OpenRouter's ``/models`` (cached by the
provider), and for a family with web search the most its searches can cost in one call
(:data:`SEARCH_WORST_CASE_USD`). When what is already spent plus that reservation would pass
a cap, the decision is recorded as ``budget_skipped`` instead of overspending. After the calls
the reservation is replaced by the actual cost reported by OpenRouter (``usage.cost``, the
whole charge, web search included); a paid answer without a usable cost keeps
the reservation instead. A retried decision brings in what its earlier claims already paid
(:meth:`Budget.carry`), so a decision that keeps failing after its call stops being paid for
once that reaches a cap.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from arena import config
from arena.errors import BudgetExceeded

WorstCase = Callable[[str, int, int], Decimal]  # (model, prompt tokens, max tokens) -> USD
CHARS_PER_TOKEN = 3
# OpenRouter's web search server tool returns at most 50 results per request across all its
# searches (`max_total_results`' default), and Exa, its dearest documented engine, costs
# $4 per 1000 results (Parallel: $0.005 per search of up to 10; native search is the
# provider's own price, passed through).
SEARCH_WORST_CASE_USD = 50 * Decimal("0.004")


class Budget:
    def __init__(
        self, limits: config.BudgetLimits, pricing: WorstCase | None, rounds: int = 1
    ) -> None:
        self.limits = limits
        self.pricing = pricing
        self.rounds = rounds
        self.spent: dict[str, Decimal] = defaultdict(Decimal)
        self.reserved: dict[str, Decimal] = defaultdict(Decimal)

    @property
    def enabled(self) -> bool:
        return self.limits.per_run_usd is not None or self.limits.per_family_usd is not None

    @property
    def run_spent(self) -> Decimal:
        return sum(self.spent.values(), Decimal(0))

    def worst_case(
        self,
        model: str,
        messages: list[dict[str, Any]],
        max_tokens: int,
        *,
        searched: bool = False,
    ) -> Decimal:
        if self.pricing is None:
            raise BudgetExceeded("budget set but no model prices are available")
        chars = sum(len(str(m.get("content") or "")) for m in messages)
        prompt_tokens = math.ceil(chars / CHARS_PER_TOKEN) + max_tokens
        try:
            one_call = self.pricing(model, prompt_tokens, max_tokens)
        except Exception as exc:  # unknown model price: refuse rather than guess
            raise BudgetExceeded(f"no price for {model}: {exc}") from None
        if searched:
            one_call += SEARCH_WORST_CASE_USD
        return one_call * self.rounds

    def reserve(
        self,
        family_id: str,
        model: str,
        messages: list[dict[str, Any]],
        max_tokens: int,
        *,
        unpaid: bool = False,
        searched: bool = False,
    ) -> Decimal:
        """Reserve the worst case of one decision, or raise :class:`BudgetExceeded`;
        ``unpaid``: arena pays nothing for the calls (a baseline, an outside agent);
        ``searched``: the family calls with web search."""
        if unpaid or not self.enabled:
            return Decimal(0)
        cost = self.worst_case(model, messages, max_tokens, searched=searched)
        run_total = self.run_spent + sum(self.reserved.values(), Decimal(0)) + cost
        family_total = self.spent[family_id] + self.reserved[family_id] + cost
        if self.limits.per_run_usd is not None and run_total > self.limits.per_run_usd:
            raise BudgetExceeded(
                f"budget.per_run_usd {self.limits.per_run_usd} cannot cover the worst case "
                f"${cost:.6f} of {family_id} (spent ${self.run_spent:.6f} this run)"
            )
        if self.limits.per_family_usd is not None and family_total > self.limits.per_family_usd:
            raise BudgetExceeded(
                f"budget.per_family_usd {self.limits.per_family_usd} cannot cover the worst "
                f"case ${cost:.6f} of {family_id} (spent ${self.spent[family_id]:.6f})"
            )
        self.reserved[family_id] += cost
        return cost

    def carry(self, family_id: str, earlier: Decimal) -> None:
        """Count what earlier claims of a retried decision paid (its stored attempts)."""
        self.spent[family_id] += earlier

    def settle(self, family_id: str, actual: Decimal, *, uncosted: bool = False) -> None:
        """Replace the family's reservation by what the calls actually cost; ``uncosted``
        (an answer came without a usable cost) keeps the reservation when it is larger."""
        reserved, self.reserved[family_id] = self.reserved[family_id], Decimal(0)
        self.spent[family_id] += max(actual, reserved) if uncosted else actual

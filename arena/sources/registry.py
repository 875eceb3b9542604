"""Which provider answers for an agent: built-in baselines, or OpenRouter (one shared client).

The OpenRouter key is read from the environment only when an OpenRouter agent actually needs
a call; a run of baselines alone never asks for it.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Protocol

import httpx
from pydantic import SecretStr

from arena.config import BaselineFamily, Settings, openrouter_api_key
from arena.domain.states import FamilyKind
from arena.errors import ConfigError
from arena.sources.baselines import BaselineProvider
from arena.sources.providers import ModelProvider

if TYPE_CHECKING:
    from arena.sources.openrouter import OpenRouterProvider


class AgentLike(Protocol):
    """What choosing a provider needs to know of an agent (a stored agent row has it)."""

    kind: str
    family_id: str
    strategy: str | None


class ProviderRegistry:
    def __init__(
        self,
        settings: Settings,
        *,
        api_key: SecretStr | None = None,
        http_client: httpx.Client | None = None,
    ) -> None:
        self.settings = settings
        self._api_key = api_key
        self._http_client = http_client
        self._openrouter: OpenRouterProvider | None = None
        self._baselines: dict[tuple[str, int], BaselineProvider] = {}

    @property
    def openrouter(self) -> OpenRouterProvider:
        if self._openrouter is None:
            key = self._api_key or openrouter_api_key()
            if key is None:
                raise ConfigError(
                    "OPENROUTER_API_KEY: not set; OpenRouter families need it "
                    "(set it in the environment, or deactivate those families)"
                )
            from arena.sources.openrouter import OpenRouterProvider  # the SDK loads slowly

            self._openrouter = OpenRouterProvider(self.settings, key, self._http_client)
        return self._openrouter

    def for_agent(self, agent: AgentLike) -> ModelProvider:
        if agent.kind == FamilyKind.BASELINE:
            seed = 0
            family = next((f for f in self.settings.families if f.id == agent.family_id), None)
            if isinstance(family, BaselineFamily):
                seed = family.seed
            key = (agent.strategy or "always-hold", seed)
            if key not in self._baselines:
                self._baselines[key] = BaselineProvider(*key)
            return self._baselines[key]
        return self.openrouter

    def worst_case(self, model: str, prompt_tokens: int, max_tokens: int) -> Decimal:
        return self.openrouter.worst_case_cost(model, prompt_tokens, max_tokens)

    def close(self) -> None:
        if self._openrouter is not None:
            self._openrouter.close()

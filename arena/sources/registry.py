"""Which provider answers for an agent: built-in baselines, outside agents (one provider and
HTTP client per family, never the OpenRouter client), or OpenRouter (one shared client).

The OpenRouter key is read from the environment only when an OpenRouter agent actually needs
a call; a run of baselines alone never asks for it. An outside agent's secret is read from the
variable its family's ``secret_env`` names, when its provider is first needed.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Protocol

import httpx
from pydantic import SecretStr

from arena.config import AgentFamily, BaselineFamily, Settings, openrouter_api_key
from arena.domain.states import FamilyKind
from arena.errors import ConfigError
from arena.sources.baselines import BaselineProvider
from arena.sources.outside_agent import OutsideAgentProvider
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
        agent_http: httpx.Client | None = None,
    ) -> None:
        """``http_client``: OpenRouter's client; ``agent_http``: one client for every outside
        agent (owned by the caller; without it each agent family gets a client of its own)."""
        self.settings = settings
        self._api_key = api_key
        self._http_client = http_client
        self._agent_http = agent_http
        self._openrouter: OpenRouterProvider | None = None
        self._baselines: dict[tuple[str, int], BaselineProvider] = {}
        self._agents: dict[str, OutsideAgentProvider] = {}

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
        if agent.kind == FamilyKind.AGENT:
            return self.outside_agent(agent.family_id)
        return self.openrouter

    def outside_agent(self, family_id: str) -> OutsideAgentProvider:
        """The provider of an outside agent family (a :class:`ConfigError` when the family
        is no longer configured as one, or its secret is not set)."""
        if family_id not in self._agents:
            family = next((f for f in self.settings.families if f.id == family_id), None)
            if not isinstance(family, AgentFamily):
                raise ConfigError(
                    f"families: no outside agent family {family_id!r} is configured; its "
                    "agents cannot be called"
                )
            secret = family.secret()
            if secret is None:
                raise ConfigError(
                    f"{family.secret_env}: not set; the outside agent {family_id!r} needs its "
                    "HMAC secret (set it in the environment, or deactivate the family)"
                )
            self._agents[family_id] = OutsideAgentProvider(family, secret, self._agent_http)
        return self._agents[family_id]

    def worst_case(self, model: str, prompt_tokens: int, max_tokens: int) -> Decimal:
        return self.openrouter.worst_case_cost(model, prompt_tokens, max_tokens)

    def close(self) -> None:
        if self._openrouter is not None:
            self._openrouter.close()
        for provider in self._agents.values():
            provider.close()

"""Settings and model families, validated once at start-up.

Sources, highest priority first: ``ARENA_*`` environment variables (``__`` for nesting), then
the YAML file (``--config``, ``ARENA_CONFIG``, or ``config.yaml``). Secrets are never read from
the file: ``OPENROUTER_API_KEY`` comes from the environment only (as ``ARENA_ADMIN_TOKEN`` will
once an admin surface exists; none does yet, so nothing reads it).
"""

from __future__ import annotations

import os
import re
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import yaml
from pydantic import (
    AfterValidator,
    AnyHttpUrl,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
)

from arena.domain.states import AnchorKind, FamilyKind, Job, Methodology
from arena.errors import ConfigError
from arena.masking import mask_url, masked_urls

DEFAULT_CONFIG_PATH = Path("config.yaml")
FAMILY_ID_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,63}$"

# Upper bounds: every numeric value stays far inside what the ledger's columns and Python's
# datetime arithmetic hold, so a typo is a one-line config error, not a crash hours later.
MAX_MONEY = Decimal(1_000_000_000)  # dollars (Money columns hold 16 integer digits)
MAX_USD_BUDGET = Decimal(1_000_000)
MAX_SECONDS = 86_400  # one day
MAX_TOKENS = 1_000_000


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _no_control(value: str) -> str:
    if _CONTROL.search(value):
        raise ValueError("must not contain control characters (NUL, tab, newline...)")
    return value


# Config text stored in String(n) columns (arena/store/models.py): within n, no control chars.
Text100 = Annotated[str, Field(max_length=100), AfterValidator(_no_control)]
Text200 = Annotated[str, Field(max_length=200), AfterValidator(_no_control)]
Text500 = Annotated[str, Field(max_length=500), AfterValidator(_no_control)]


Money = Annotated[Decimal, Field(gt=0, le=MAX_MONEY, allow_inf_nan=False)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Benchmark(_Strict):
    starting_balance: Money = Decimal(10000)
    min_bet: Money = Decimal(50)
    max_bet_fraction: Annotated[Decimal, Field(gt=0, le=1, allow_inf_nan=False)] = Decimal("0.25")
    universe_size: Annotated[int, Field(ge=1, le=5000)] = 500
    malformed_retries: Annotated[int, Field(ge=0, le=10)] = 2
    decision_cohort_limit: Annotated[int, Field(ge=1, le=520)] = 5
    cancel_after_days: Annotated[int, Field(ge=1, le=3650)] = 14
    claim_lease_seconds: Annotated[int, Field(ge=1, le=MAX_SECONDS)] = 90  # renewed every 1/3
    min_scored_bets: Annotated[int, Field(ge=0, le=1_000_000)] = 10  # fewer: provisional row
    # A model never sees prices older than this (methodology: "Fresh prices, open markets only").
    max_price_age_minutes: Annotated[int, Field(ge=1, le=10080)] = 360
    # A decision run refuses a universe with fewer tradable markets (default: universe_size / 2).
    min_universe_markets: Annotated[int | None, Field(ge=1, le=5000)] = None
    # Pricing mode of new cohorts (methodology: "Executable prices"); each cohort keeps its own.
    pricing: Literal["book", "gamma"] = "book"
    # Limit price of a book execution: the price shown + this (BUY), - this (SELL).
    max_slippage: Annotated[Decimal, Field(ge=0, lt=1, allow_inf_nan=False)] = Decimal("0.05")

    @property
    def universe_floor(self) -> int:
        """The fewest tradable markets a decision run accepts to freeze a universe."""
        return self.min_universe_markets or max(self.universe_size // 2, 1)


MINUTES_PER_DAY = 24 * 60
# What SQLAlchemy's SQLite driver reads from a URL's query (any other parameter it ignores,
# unless ``uri=true`` hands them to SQLite).
SQLITE_DRIVER_PARAMETERS = frozenset(
    {"uri", "timeout", "isolation_level", "detect_types", "check_same_thread", "cached_statements"}
)


SCHEDULE_ALIASES = {"resolution_minutes": "settlement_minutes"}
"""Old ``schedule`` keys that still work (the interface contract names them), each mapped to
its key."""


class Schedule(_Strict):
    """When each job runs (UTC): a weekly day and time, or every N minutes from midnight.
    ``resolution_minutes`` is the old name of ``settlement_minutes``, kept as an alias
    (:data:`SCHEDULE_ALIASES`); giving both in one place is an error naming them."""

    cohort_start: str = "sun 00:00"
    decision_run: str = "sun 00:05"
    market_sync_minutes: Annotated[int, Field(ge=1, le=1440)] = 5
    snapshot_minutes: Annotated[int, Field(ge=1, le=1440)] = 10
    settlement_minutes: Annotated[int, Field(ge=1, le=1440)] = 10
    # At least this often while new records exist (and after each decision run).
    commitment_minutes: Annotated[int, Field(ge=1, le=1440)] = 60
    # The stored v2 analysis is brought up to date this often (and after each decision run and
    # settlement); it computes only when the forecasts changed or the result is an hour old.
    analysis_minutes: Annotated[int, Field(ge=1, le=1440)] = 10
    misfire_grace_seconds: Annotated[int, Field(ge=1, le=MAX_SECONDS)] = 300
    # Missed weekly work (cohort start, decision run, unfinished decisions) is caught up until
    # this many hours after the week starts (168: the whole week).
    catch_up_hours: Annotated[int, Field(ge=0, le=168)] = 168

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, raw: Any) -> Any:
        return rename_aliases(raw, SCHEDULE_ALIASES, "schedule")

    def weekly_spec(self, job: Job) -> str:
        """The day and time (``"sun 00:05"``) at which the weekly ``job`` fires."""
        return {Job.COHORT_START: self.cohort_start, Job.DECISION_RUN: self.decision_run}[job]

    def every_minutes(self, job: Job) -> int:
        """How many minutes apart the interval ``job`` fires, counted from midnight UTC."""
        return {
            Job.MARKET_SYNC: self.market_sync_minutes,
            Job.SETTLEMENT: self.settlement_minutes,
            Job.SNAPSHOT: self.snapshot_minutes,
            Job.COMMITMENT: self.commitment_minutes,
            Job.ANALYSIS: self.analysis_minutes,
        }[job]

    @field_validator("cohort_start", "decision_run")
    @classmethod
    def _weekly(cls, value: str) -> str:
        parse_weekly(value)
        return value

    @model_validator(mode="after")
    def _decision_run_after_cohort_start(self) -> Schedule:
        # A week's decision run decides the cohort that week's cohort start opens; before it
        # (or at the same minute, when the two jobs race) there would be nothing to decide.
        if weekly_offset(self.decision_run) <= weekly_offset(self.cohort_start):
            raise ValueError(
                f"decision_run ({self.decision_run!r}) must come after cohort_start "
                f"({self.cohort_start!r}) in the week, which starts Sunday 00:00 UTC"
            )
        return self

    @field_validator(
        "market_sync_minutes",
        "snapshot_minutes",
        "settlement_minutes",
        "commitment_minutes",
        "analysis_minutes",
    )
    @classmethod
    def _divides_the_day(cls, value: int) -> int:
        # Slots count from midnight UTC (arena.slots): an interval must divide the day.
        if MINUTES_PER_DAY % value:
            raise ValueError(
                f"{value} does not divide a day (1440 minutes); use e.g. 5, 10, 15, 30, 45, "
                "60, 90, 120, 240, 360, 720 or 1440"
            )
        return value


def rename_aliases(raw: Any, aliases: dict[str, str], section: str) -> Any:
    """``raw`` (a mapping of one config section) with each old key renamed to its key; both
    given is a :class:`ConfigError` naming the two."""
    if not isinstance(raw, dict) or not aliases.keys() & raw.keys():
        return raw
    renamed = dict(raw)
    for old, new in aliases.items():
        if old in renamed:
            if new in renamed:
                raise ConfigError(
                    f"{section}.{new} and {section}.{old} are both given; {old} is the old name "
                    f"of {new}: keep one"
                )
            renamed[new] = renamed.pop(old)
    return renamed


_DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


def parse_weekly(value: str) -> tuple[str, int, int]:
    """Parse ``"sun 00:05"`` into (day, hour, minute); raises ValueError."""
    try:
        day, clock = value.strip().lower().split()
        hour_text, minute_text = clock.split(":")
        hour, minute = int(hour_text), int(minute_text)
    except ValueError:
        raise ValueError(f"expected 'day HH:MM' (e.g. 'sun 00:05'), got {value!r}") from None
    if day not in _DAYS or not (0 <= hour < 24 and 0 <= minute < 60):
        raise ValueError(f"expected 'day HH:MM' (e.g. 'sun 00:05'), got {value!r}")
    return day, hour, minute


def weekly_offset(spec: str) -> timedelta:
    """How long after the week's start (Sunday 00:00 UTC) a ``"sun 00:05"`` schedule fires."""
    day, hour, minute = parse_weekly(spec)
    days_after_sunday = (_DAYS.index(day) + 1) % 7
    return timedelta(days=days_after_sunday, hours=hour, minutes=minute)


class Polymarket(_Strict):
    gamma_url: AnyHttpUrl = AnyHttpUrl("https://gamma-api.polymarket.com")
    clob_url: AnyHttpUrl = AnyHttpUrl("https://clob.polymarket.com")
    timeout_seconds: Annotated[float, Field(gt=0, le=3600, allow_inf_nan=False)] = 30.0
    max_attempts: Annotated[int, Field(ge=1, le=20)] = 5
    page_size: Annotated[int, Field(ge=1, le=100)] = 100


class OpenRouter(_Strict):
    base_url: AnyHttpUrl = AnyHttpUrl("https://openrouter.ai/api/v1")
    max_tokens: Annotated[int, Field(ge=1, le=MAX_TOKENS)] = 16000
    timeout_seconds: Annotated[float, Field(gt=0, le=3600, allow_inf_nan=False)] = 120.0
    max_attempts: Annotated[int, Field(ge=1, le=20)] = 4
    app_url: Text500 = "https://github.com/arena-benchmark/arena"
    app_title: Text200 = "arena"


class BudgetLimits(_Strict):
    """Optional USD spend limits; ``None`` means unlimited."""

    per_run_usd: Annotated[Decimal | None, Field(ge=0, le=MAX_USD_BUDGET, allow_inf_nan=False)] = (
        None
    )
    per_family_usd: Annotated[
        Decimal | None, Field(ge=0, le=MAX_USD_BUDGET, allow_inf_nan=False)
    ] = None


class V2(_Strict):
    """Methodology v2 settings (forecast panel and research ranking)."""

    panel_size: Annotated[int, Field(ge=1, le=200)] = 20
    panel_min_price: Annotated[Decimal, Field(gt=0, lt=1)] = Decimal("0.03")
    panel_max_price: Annotated[Decimal, Field(gt=0, lt=1)] = Decimal("0.97")
    difficulty_weight: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] = 1.0


class Analysis(_Strict):
    """Research statistics (``arena analyze``): one resample count and seed for every bootstrap."""

    resamples: Annotated[int, Field(ge=1, le=1_000_000)] = 10_000
    seed: Annotated[int, Field(ge=0, le=2**32 - 1)] = 0


COMMITMENTS_FILE = "commitments.jsonl"
"""The file the file and git anchors append each commitment to, one JSON line each (and that a
published dataset holds)."""

# A git remote (a name or a URL) and branch go on git's command line: never an option.
GIT_REMOTE_PATTERN = r"^[^-\s][^\s]{0,499}$"
GIT_BRANCH_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9._/-]{0,199}$"


class FileAnchor(_Strict):
    """Append each commitment to ``<path>/commitments.jsonl`` (``path``: a directory)."""

    kind: Literal[AnchorKind.FILE]
    path: Path

    @property
    def name(self) -> str:
        """How ``anchor_deliveries``, ``arena status`` and ``/metrics`` name this anchor."""
        return f"{self.kind}:{self.path}"


class GitAnchor(_Strict):
    """Append each commitment to ``commitments.jsonl`` in the working tree of the local git
    repository ``repo``, commit it and push ``HEAD`` to ``branch`` of ``remote`` (a remote's
    name or URL)."""

    kind: Literal[AnchorKind.GIT]
    repo: Path
    remote: Annotated[str, Field(pattern=GIT_REMOTE_PATTERN)] = "origin"
    branch: Annotated[str, Field(pattern=GIT_BRANCH_PATTERN)] = "main"
    timeout_seconds: Annotated[float, Field(gt=0, le=3600, allow_inf_nan=False)] = 60.0

    @property
    def name(self) -> str:
        return f"{self.kind}:{self.repo}"


class HttpAnchor(_Strict):
    """POST each commitment as JSON to ``url``; the answer is kept."""

    kind: Literal[AnchorKind.HTTP]
    url: AnyHttpUrl
    timeout_seconds: Annotated[float, Field(gt=0, le=3600, allow_inf_nan=False)] = 10.0
    max_attempts: Annotated[int, Field(ge=1, le=20)] = 3

    @property
    def name(self) -> str:
        return f"{self.kind}:{mask_url(str(self.url))}"


AnchorConfig = Annotated[FileAnchor | GitAnchor | HttpAnchor, Field(discriminator="kind")]


class RecordSettings(_Strict):
    """The verifiable record: where commitments are sent. The signing key comes from
    ``ARENA_SIGNING_KEY`` only (:func:`arena.record.signing.signing_key_from_env`)."""

    anchors: list[AnchorConfig] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique_anchors(self) -> RecordSettings:
        names = [anchor.name for anchor in self.anchors]
        for name in names:
            if names.count(name) > 1:
                raise ValueError(f"anchor {name!r} is given twice")
        return self


UNSPECIFIED_LICENCE = "unspecified (set publish.licence)"


class Publish(_Strict):
    """The published dataset (``arena publish``): the licence its card states, as the operator
    sets it (e.g. ``CC-BY-4.0``); arena chooses none for the operator."""

    licence: Annotated[str, Field(min_length=1, max_length=200)] = UNSPECIFIED_LICENCE


class Logging(_Strict):
    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    json_logs: bool = False


MAX_REPLICATES = 20
Replicates = Annotated[int, Field(ge=1, le=MAX_REPLICATES, strict=True)]
"""A family's agents per cohort (``r1``..``rN``): same universe and prompt, claimed, budgeted
and traded independently; the analyses rank the family on their mean."""


class WebSearch(_Strict):
    """OpenRouter's ``openrouter:web_search`` server tool for a family (absent: no search).

    The choices and limits are OpenRouter's (its web search server tool documentation): the
    engine is ``auto`` (the provider's native search, else Exa), ``native``, ``exa``,
    ``firecrawl`` (bring your own key) or ``parallel``; ``max_results`` per search call is
    1-10 (default 5); ``search_context_size`` is ``low``, ``medium`` or ``high``.
    """

    engine: Literal["auto", "native", "exa", "firecrawl", "parallel"] = "auto"
    max_results: Annotated[int, Field(ge=1, le=10, strict=True)] = 5
    search_context_size: Literal["low", "medium", "high"] = "medium"

    def tool(self) -> dict[str, Any]:
        """The entry of the request's ``tools`` array."""
        parameters = {
            "engine": self.engine,
            "max_results": self.max_results,
            "search_context_size": self.search_context_size,
        }
        return {"type": "openrouter:web_search", "parameters": parameters}


class OpenRouterFamily(_Strict):
    """A model family called through OpenRouter (a family without ``kind``)."""

    kind: Literal[FamilyKind.OPENROUTER] = FamilyKind.OPENROUTER
    id: Annotated[str, Field(pattern=FAMILY_ID_PATTERN)]
    display_name: Text200
    provider: Text100 = ""
    openrouter_id: Annotated[
        str, Field(min_length=3, max_length=200, pattern=r"^[\w.:-]+/[\w.:-]+$")
    ]
    active: bool = True
    max_tokens: Annotated[int | None, Field(ge=1, le=MAX_TOKENS)] = None
    provider_routing: dict[str, Any] | None = None  # OpenRouter `provider` object
    reasoning: dict[str, Any] | None = None  # OpenRouter `reasoning` object
    web_search: WebSearch | None = None  # OpenRouter's web search server tool; None: off
    replicates: Replicates = 1


class BaselineFamily(_Strict):
    """A built-in deterministic strategy answering through the same validation path."""

    kind: Literal[FamilyKind.BASELINE]
    id: Annotated[str, Field(pattern=FAMILY_ID_PATTERN)]
    strategy: Literal["always-hold", "market-follower", "random"]
    display_name: Text200 = ""
    provider: Text100 = "arena baseline"
    active: bool = True
    seed: Annotated[int, Field(ge=-(2**63), lt=2**63)] = 0
    replicates: Replicates = 1

    @property
    def openrouter_id(self) -> None:
        return None


ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"
AGENT_SCHEMA_VERSION = 1
"""The version of the outside-agent contract, ``arena/resources/agent_schema_v1.json``."""
MAX_AGENT_DEADLINE_SECONDS = 3600


def _http_endpoint(value: AnyHttpUrl) -> AnyHttpUrl:
    if value.scheme not in ("http", "https"):
        raise ValueError("must be an http:// or https:// URL")
    if value.username or value.password:
        raise ValueError("must not hold a user or password (the secret comes from secret_env)")
    return value


class AgentFamily(_Strict):
    """An outside agent: arena POSTs each decision request, signed with HMAC-SHA256 under the
    secret in the environment variable ``secret_env``, to ``endpoint``, and waits for its
    answer up to ``deadline_seconds`` (:mod:`arena.sources.outside_agent`)."""

    kind: Literal[FamilyKind.AGENT]
    id: Annotated[str, Field(pattern=FAMILY_ID_PATTERN)]
    endpoint: Annotated[AnyHttpUrl, AfterValidator(_http_endpoint)]
    secret_env: Annotated[str, Field(pattern=ENV_NAME_PATTERN)]
    deadline_seconds: Annotated[
        float, Field(gt=0, le=MAX_AGENT_DEADLINE_SECONDS, allow_inf_nan=False)
    ] = 600
    display_name: Text200 = ""
    provider: Text100 = "outside agent"
    active: bool = True
    replicates: Replicates = 1

    @field_validator("secret_env")
    @classmethod
    def _not_arena_secret(cls, value: str) -> str:
        if value in ("OPENROUTER_API_KEY", SIGNING_KEY_ENV, "ARENA_ADMIN_TOKEN"):
            raise ValueError(f"must name the agent's own secret, not {value}")
        return value

    @property
    def openrouter_id(self) -> None:
        return None

    def secret(self) -> SecretStr | None:
        """The agent's HMAC secret, from the environment only (None when unset or empty)."""
        value = os.environ.get(self.secret_env, "")
        return SecretStr(value) if value else None


FamilyConfig = OpenRouterFamily | BaselineFamily | AgentFamily
"""A configured family of any kind."""
Family = Annotated[FamilyConfig, Field(discriminator="kind")]


def _default_kind(raw: Any) -> Any:
    if isinstance(raw, dict) and "kind" not in raw:
        return {**raw, "kind": FamilyKind.OPENROUTER}
    return raw


class Settings(BaseSettings):
    """The whole validated configuration."""

    model_config = SettingsConfigDict(
        env_prefix="ARENA_",
        env_nested_delimiter="__",
        extra="forbid",
        frozen=True,
    )
    _yaml_path: ClassVar[Path | None] = None

    database_url: str = "sqlite:///arena.db"
    methodology: Methodology = Methodology.V1
    benchmark: Benchmark = Benchmark()
    schedule: Schedule = Schedule()
    polymarket: Polymarket = Polymarket()
    openrouter: OpenRouter = OpenRouter()
    budget: BudgetLimits = BudgetLimits()
    v2: V2 = V2()
    analysis: Analysis = Analysis()
    record: RecordSettings = RecordSettings()
    publish: Publish = Publish()
    logging: Logging = Logging()
    families: list[Family] = Field(default_factory=list)

    @field_validator("families", mode="before")
    @classmethod
    def _families_kind(cls, raw: Any) -> Any:
        if isinstance(raw, list):
            return [_default_kind(item) for item in raw]
        return raw

    @field_validator("database_url")
    @classmethod
    def _database_url(cls, value: str) -> str:
        # The messages never quote the URL: it may hold a password.
        if not value.startswith(("sqlite://", "postgresql")):
            raise ValueError("must start with sqlite:/// or postgresql+psycopg://")
        from sqlalchemy.engine import make_url
        from sqlalchemy.exc import ArgumentError

        try:
            url = make_url(value)
        except (ArgumentError, ValueError):
            raise ValueError("is not a database URL") from None
        if url.get_backend_name() != "sqlite":
            return value
        if url.username or url.password or url.host or url.port:
            raise ValueError(
                "a SQLite URL names a file only, with no user, password or host "
                "(sqlite:///relative/arena.db or sqlite:////absolute/arena.db)"
            )
        uri = str(url.query.get("uri", "")).lower() in ("true", "yes", "on", "y", "t", "1")
        ignored = sorted(set(url.query) - SQLITE_DRIVER_PARAMETERS)
        if ignored and not uri:
            raise ValueError(
                f"SQLite ignores the query parameter(s) {', '.join(ignored)} (SQLite URI "
                "options need uri=true)"
            )
        return value

    @model_validator(mode="after")
    def _unique_families(self) -> Settings:
        seen: set[str] = set()
        for family in self.families:
            if family.id in seen:
                raise ValueError(f"duplicate family id {family.id!r}")
            seen.add(family.id)
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Old key names are renamed within each source, so an alias in the environment
        # overrides the current key in the file as any variable does.
        return (
            _Renamed(settings_cls, init_settings),
            _Renamed(settings_cls, env_settings),
            _Renamed(settings_cls, _YamlSource(settings_cls, cls._yaml_path)),
        )

    @property
    def active_families(self) -> list[FamilyConfig]:
        return [f for f in self.families if f.active]

    def family(self, family_id: str) -> FamilyConfig:
        for family in self.families:
            if family.id == family_id:
                return family
        raise ConfigError(f"families: no family with id {family_id!r}")

    def max_tokens(self, family_id: str) -> int:
        """The completion token limit of a family's calls: its own, else the OpenRouter
        default (also for a family no longer configured)."""
        try:
            family = self.family(family_id)
        except ConfigError:
            return self.openrouter.max_tokens
        return getattr(family, "max_tokens", None) or self.openrouter.max_tokens

    def masked(self) -> dict[str, Any]:
        """The configuration as a dict safe to log (credentials in every URL masked)."""
        return dict(masked_urls(self.model_dump(mode="json")))


class _YamlSource(PydanticBaseSettingsSource):
    def __init__(self, settings_cls: type[BaseSettings], path: Path | None) -> None:
        super().__init__(settings_cls)
        self._data: dict[str, Any] = {}
        if path is not None:
            self._data = read_yaml(path)

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return self._data.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return dict(self._data)


class _Renamed(PydanticBaseSettingsSource):
    """A settings source with the old ``schedule`` keys (:data:`SCHEDULE_ALIASES`) renamed."""

    def __init__(self, settings_cls: type[BaseSettings], source: PydanticBaseSettingsSource):
        super().__init__(settings_cls)
        self._source = source

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return self._source.get_field_value(field, field_name)

    def __call__(self) -> dict[str, Any]:
        data = dict(self._source())
        if "schedule" in data:
            data["schedule"] = rename_aliases(data["schedule"], SCHEDULE_ALIASES, "schedule")
        return data


MAX_YAML_DEPTH = 32  # the deepest setting is 4 levels down; provider objects nest a few more


class _ConfigLoader(yaml.SafeLoader):
    """The safe loader, refusing what YAML lets through silently: a key given twice in one
    mapping (YAML keeps the last one) and nesting deeper than :data:`MAX_YAML_DEPTH` (the
    composer recurses once per level, so a deep file would end in a ``RecursionError``). Each
    is a :class:`ConfigError` naming the line; :func:`read_yaml` adds the file."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                line = self.peek_event().start_mark.line + 1
                raise ConfigError(f"line {line}: nested deeper than {MAX_YAML_DEPTH} levels")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, yaml.MappingNode):
            first_line: dict[Any, int] = {}
            for key_node, _value in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":  # `<<:` merges, it is no key
                    continue
                key = self.construct_object(key_node, deep=True)
                line = key_node.start_mark.line + 1
                try:
                    if key in first_line:
                        raise ConfigError(
                            f"line {line}: duplicate key {repr(key)[:100]} (first given at line "
                            f"{first_line[key]}; YAML would keep only the last)"
                        )
                    first_line[key] = line
                except TypeError:  # an unhashable key: the base class says so
                    break
        return super().construct_mapping(node, deep=deep)


def read_yaml(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"config: cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"config: {path} is not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset "
            f"{exc.start}); save it as UTF-8"
        ) from None
    try:
        data = yaml.load(text, Loader=_ConfigLoader) or {}  # a SafeLoader
    except ConfigError as exc:  # refused by the loader: the message names the line
        raise ConfigError(f"config: {path}: {exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"config: {path} is not valid YAML: {exc}".splitlines()[0]) from None
    if not isinstance(data, dict):
        raise ConfigError(f"config: {path} must hold a mapping at the top level")
    for secret in ("openrouter_api_key", "api_key", "admin_token"):
        if secret in data or secret in (data.get("openrouter") or {}):
            raise ConfigError(f"{secret}: secrets come from the environment only, not the file")
    return data


def resolve_config_path(explicit: str | Path | None = None) -> Path | None:
    """``--config`` beats ``ARENA_CONFIG`` beats ``./config.yaml`` (if present)."""
    if explicit:
        return Path(explicit)
    if env := os.environ.get("ARENA_CONFIG"):
        return Path(env)
    return DEFAULT_CONFIG_PATH if DEFAULT_CONFIG_PATH.exists() else None


NO_CONFIG_FILE = "no --config, ARENA_CONFIG or ./config.yaml"
"""Why no config file was read (said when that matters: an empty family list, a database)."""

DATABASE_URL_HOW = (
    "set database_url in a config file (--config FILE, ARENA_CONFIG, or ./config.yaml) or "
    "the environment variable ARENA_DATABASE_URL"
)
"""How an operator chooses the database: said wherever arena names a database it could not
use (the CLI's hint, the dashboard's "database unavailable" page, ``/readyz``, its log)."""


def database_url_source(explicit: str | Path | None = None) -> str:
    """Where the database URL came from, in words: the environment variable, the config file
    found as :func:`resolve_config_path` finds it, or the default when there is neither."""
    if os.environ.get("ARENA_DATABASE_URL"):
        return "from ARENA_DATABASE_URL"
    path = resolve_config_path(explicit)
    if path is None:
        return f"by default: {NO_CONFIG_FILE}"
    return f"from {path}"


def load_settings(path: str | Path | None = None, **overrides: Any) -> Settings:
    """Load and validate settings; any problem raises :class:`ConfigError` naming the key."""
    Settings._yaml_path = resolve_config_path(path)
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        raise ConfigError(describe_validation_error(exc)) from None
    except SettingsError as exc:  # an ARENA_* variable holding bad JSON
        raise ConfigError(describe_settings_error(exc)) from None
    finally:
        Settings._yaml_path = None


def describe_validation_error(exc: ValidationError) -> str:
    """One line: the dotted key of the first error and what is wrong with it."""
    error = exc.errors()[0]
    tags = (*FamilyKind, *AnchorKind)
    loc = [str(part) for part in error["loc"] if part not in tags]
    key = ".".join(loc) or "config"
    message = error["msg"]
    if error["type"] == "extra_forbidden":
        message = "unknown key"
    elif error["type"] == "union_tag_invalid":  # a family's (or an anchor's) unknown kind
        expected = re.findall(r"'([^']*)'>", error["ctx"]["expected_tags"])
        kinds = ", ".join(repr(tag) for tag in expected)
        message = f"kind {error['ctx']['tag']!r} is not one of {kinds}"
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{key}: {message}{more}"


def describe_settings_error(exc: SettingsError) -> str:
    """One line naming the environment variable whose value pydantic-settings cannot parse."""
    match = re.search(r'field "([^"]+)"', str(exc))
    if match is None:
        return f"config: {str(exc).splitlines()[0]}"
    variable = f"ARENA_{match.group(1).upper()}"
    return f"{variable}: not valid JSON (complex settings in the environment are JSON)"


def openrouter_api_key() -> SecretStr | None:
    """The OpenRouter key, from the environment only."""
    value = os.environ.get("OPENROUTER_API_KEY", "").strip()
    return SecretStr(value) if value else None


SIGNING_KEY_ENV = "ARENA_SIGNING_KEY"
"""The environment variable holding the Ed25519 private key commitments are signed with (PEM,
PKCS#8): read by :func:`arena.record.signing.signing_key_from_env` only, never stored, logged,
published or handed to a child process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from arena.config import load_settings
from arena.errors import ConfigError
from tests.conftest import Database
from tests.helpers import SEVEN_FAMILIES, cli_env, run_arena, write_config

REPO = Path(__file__).resolve().parents[1]


def test_shipped_config_has_reference_lineup_and_baselines() -> None:
    settings = load_settings(REPO / "config.yaml")
    openrouter = [f.id for f in settings.families if f.kind == "openrouter"]
    assert openrouter == [
        "gpt-5.1",
        "gemini-2.5-flash",
        "grok-4",
        "claude-opus-4.5",
        "deepseek-v3.1",
        "kimi-k2",
        "qwen-3-next",
    ]
    assert settings.family("gpt-5.1").display_name == "GPT-5.2"
    assert {f.strategy for f in settings.families if f.kind == "baseline"} == {
        "market-follower",
        "always-hold",
        "random",
    }
    assert settings.benchmark.starting_balance == 10000
    assert settings.methodology == "v1"


def test_env_overrides_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = write_config(tmp_path / "c.yaml", "sqlite:///a.db")
    monkeypatch.setenv("ARENA_DATABASE_URL", "sqlite:///b.db")
    monkeypatch.setenv("ARENA_OPENROUTER__BASE_URL", "http://127.0.0.1:9/api/v1")
    monkeypatch.setenv("ARENA_BENCHMARK__MALFORMED_RETRIES", "4")
    settings = load_settings(config)
    assert settings.database_url == "sqlite:///b.db"
    assert str(settings.openrouter.base_url) == "http://127.0.0.1:9/api/v1"
    assert settings.benchmark.malformed_retries == 4


def test_arena_config_env_selects_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = write_config(tmp_path / "c.yaml", "sqlite:///picked.db")
    monkeypatch.setenv("ARENA_CONFIG", str(config))
    assert load_settings().database_url == "sqlite:///picked.db"


@pytest.mark.parametrize(
    ("patch", "key"),
    [
        ({"bogus": 1}, "bogus: unknown key"),
        ({"benchmark": {"min_bet": -5}}, "benchmark.min_bet"),
        ({"benchmark": {"decision_cohort_limit": 0}}, "benchmark.decision_cohort_limit"),
        ({"polymarket": {"gamma_url": "not a url"}}, "polymarket.gamma_url"),
        ({"schedule": {"decision_run": "someday"}}, "schedule.decision_run"),
        ({"families": [*SEVEN_FAMILIES, SEVEN_FAMILIES[0]]}, "duplicate family id 'gpt-5.1'"),
        ({"families": [{"id": "x", "kind": "baseline", "strategy": "nope"}]}, "families.0"),
        ({"openrouter": {"api_key": "sk-or-v1-x"}}, "secrets come from the environment"),
        ({"methodology": "v9"}, "methodology"),
        ({"analysis": {"resamples": 0}}, "analysis.resamples"),
        ({"analysis": {"resamples": "many"}}, "analysis.resamples"),
        ({"analysis": {"seed": -1}}, "analysis.seed"),
    ],
)
def test_invalid_config_names_the_key(tmp_path: Path, patch: dict, key: str) -> None:
    config = write_config(tmp_path / "c.yaml", "sqlite:///x.db", **patch)
    with pytest.raises(ConfigError) as info:
        load_settings(config)
    assert key in str(info.value)
    assert "\n" not in str(info.value)


def test_cli_bad_config_is_one_line_exit_2(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"benchmark": {"universe_size": -1}}))
    result = run_arena("--config", str(config), "families", env=cli_env(), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0
    assert "benchmark.universe_size" in result.stderr
    assert "Traceback" not in result.stderr


def test_unsupported_database_url_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="database_url"):
        load_settings(write_config(tmp_path / "c.yaml", "mysql://x"))


# -- issue 22, finding 10: what YAML lets through silently is refused in one line -------------


def _status(config: Path, tmp_path: Path) -> tuple[int, str]:
    result = run_arena("--config", str(config), "status", cwd=tmp_path)
    return result.returncode, result.stderr


def test_a_deeply_nested_config_is_one_line(db: Database, tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    nested = "{a: " * 5000 + "1" + "}" * 5000
    config.write_text(f"database_url: {db.url}\nschedule: {nested}\n")
    code, stderr = _status(config, tmp_path)
    assert code == 2 and "Traceback" not in stderr, stderr
    assert stderr.strip() == f"arena: error: config: {config}: line 2: nested deeper than 32 levels"


def test_duplicate_keys_are_refused_with_the_key_and_line(db: Database, tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(
        f"database_url: {db.url}\n"
        "benchmark:\n"
        "  min_bet: 50\n"
        "  universe_size: 100\n"
        "  min_bet: 5000\n"
    )
    code, stderr = _status(config, tmp_path)
    assert code == 2 and "Traceback" not in stderr, stderr
    assert stderr.strip() == (
        f"arena: error: config: {config}: line 5: duplicate key 'min_bet' (first given at line "
        "3; YAML would keep only the last)"
    )
    # a merge key (<<) is not a duplicate: the mapping's own key overrides the merged one
    config.write_text(
        f"database_url: {db.url}\nlogging:\n  <<: {{level: ERROR}}\n  level: WARNING\n"
    )
    assert _status(config, tmp_path)[0] == 0


def _searching(web_search: object) -> dict[str, list[dict[str, object]]]:
    """The seven families, the first with this ``web_search``."""
    return {"families": [{**SEVEN_FAMILIES[0], "web_search": web_search}, *SEVEN_FAMILIES[1:]]}


@pytest.mark.parametrize(
    ("web_search", "key"),
    [
        ({"engine": "bing"}, "web_search.engine"),
        ({"engine": "EXA"}, "web_search.engine"),
        ({"max_results": 0}, "web_search.max_results"),
        ({"max_results": 11}, "web_search.max_results"),
        ({"max_results": "5"}, "web_search.max_results"),
        ({"max_results": True}, "web_search.max_results"),
        ({"max_results": 2.5}, "web_search.max_results"),
        ({"search_context_size": "huge"}, "web_search.search_context_size"),
        ({"max_total_results": 20}, "web_search.max_total_results: unknown key"),
        ("on", "web_search: Input should be a valid dictionary"),
        ([], "web_search: Input should be a valid dictionary"),
    ],
)
def test_a_bad_web_search_names_the_key(tmp_path: Path, web_search: object, key: str) -> None:
    config = write_config(tmp_path / "c.yaml", "sqlite:///x.db", **_searching(web_search))
    with pytest.raises(ConfigError) as info:
        load_settings(config)
    assert f"families.0.{key}" in str(info.value)
    assert "\n" not in str(info.value)


def test_web_search_is_off_unless_given_and_takes_openrouters_defaults(tmp_path: Path) -> None:
    plain = load_settings(write_config(tmp_path / "a.yaml", "sqlite:///x.db"))
    assert all(getattr(f, "web_search", None) is None for f in plain.families)
    on = load_settings(write_config(tmp_path / "b.yaml", "sqlite:///x.db", **_searching({})))
    search = getattr(on.family("gpt-5.1"), "web_search", None)
    assert search is not None
    assert search.tool() == {
        "type": "openrouter:web_search",
        "parameters": {"engine": "auto", "max_results": 5, "search_context_size": "medium"},
    }
    assert getattr(on.family("grok-4"), "web_search", None) is None


# -- issue 27, part 2: outside agents (families of kind agent) --------------------------------

AGENT = {
    "id": "my-agent",
    "kind": "agent",
    "endpoint": "https://agent.example.org/decide",
    "secret_env": "MY_AGENT_SECRET",
}


def test_an_agent_family_loads_with_its_default_deadline(tmp_path: Path) -> None:
    settings = load_settings(write_config(tmp_path / "c.yaml", "sqlite:///x.db", families=[AGENT]))
    [family] = settings.families
    assert family.kind == "agent" and family.deadline_seconds == 600
    assert str(family.endpoint) == "https://agent.example.org/decide"
    assert family.openrouter_id is None and family.secret_env == "MY_AGENT_SECRET"


@pytest.mark.parametrize(
    ("patch", "key"),
    [
        ({"endpoint": "ftp://agent.example.org/x"}, "families.0.endpoint"),
        ({"endpoint": "not a url"}, "families.0.endpoint"),
        ({"endpoint": "https://user:pw@agent.example.org/"}, "families.0.endpoint"),
        ({"secret_env": "MY-SECRET"}, "families.0.secret_env"),
        ({"secret_env": "1SECRET"}, "families.0.secret_env"),
        ({"secret_env": "OPENROUTER_API_KEY"}, "families.0.secret_env"),
        ({"deadline_seconds": 3601}, "families.0.deadline_seconds"),
        ({"deadline_seconds": 0}, "families.0.deadline_seconds"),
        ({"secret": "s3cret"}, "families.0.secret: unknown key"),
        ({"openrouter_id": "a/b"}, "families.0.openrouter_id: unknown key"),
    ],
)
def test_an_invalid_agent_family_names_the_key(tmp_path: Path, patch: dict, key: str) -> None:
    config = write_config(tmp_path / "c.yaml", "sqlite:///x.db", families=[{**AGENT, **patch}])
    with pytest.raises(ConfigError) as info:
        load_settings(config)
    assert key in str(info.value) and "\n" not in str(info.value)
    assert "s3cret" not in str(info.value)


def test_families_lists_an_agent_and_whether_its_secret_is_set(tmp_path: Path) -> None:
    config = write_config(tmp_path / "c.yaml", "sqlite:///x.db", families=[AGENT])
    args = ("--config", str(config), "families", "--format", "json")
    missing = json.loads(run_arena(*args, cwd=tmp_path).stdout)
    assert missing[0]["kind"] == "agent" and missing[0]["ready"] == "needs MY_AGENT_SECRET"
    assert missing[0]["target"] == "https://agent.example.org/decide"
    ready = run_arena(*args, env=cli_env(MY_AGENT_SECRET="s3cret-value"), cwd=tmp_path)
    assert json.loads(ready.stdout)[0]["ready"] == "yes"
    assert "s3cret-value" not in ready.stdout + ready.stderr


def test_families_table_names_an_unset_agent_secret_within_80_columns(tmp_path: Path) -> None:
    config = write_config(tmp_path / "c.yaml", "sqlite:///x.db", families=[AGENT])
    result = run_arena("--config", str(config), "families", env=cli_env(COLUMNS="80"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "https://agent.example.org/decide" in result.stdout  # the endpoint column kept
    assert "no secret: set MY_AGENT_SECRET in the environment" in result.stdout
    assert max(len(line) for line in result.stdout.splitlines()) <= 80

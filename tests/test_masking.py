"""Credentials never leave the process (issue 22, finding 5): every form a URL can carry one
in (``user:password@``, ``?password=``, ``?sslpassword=``, ``?api_key=``, ``?access_token=``,
``?client_secret=``) is masked in the start-up configuration line and in "cannot connect to".
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from arena.masking import mask_url, masked_text
from tests.conftest import Database
from tests.helpers import free_port, run_arena, write_config

SECRETS = ("Pw-in-userinfo-71", "Pw-in-query-72", "Ssl-pw-73", "Api-key-74", "Token-75")


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql+psycopg://u:pw@h:5432/db", "postgresql+psycopg://u:***@h:5432/db"),
        ("postgresql://u@h/db?password=pw&sslmode=disable", "postgresql://u@h/db?password=***&sslmode=disable"),
        ("postgresql://h/db?SSLPASSWORD=a&Api_Key=b", "postgresql://h/db?SSLPASSWORD=***&Api_Key=***"),
        ("https://h/x?access_token=a&client_secret=b&q=1", "https://h/x?access_token=***&client_secret=***&q=1"),
        ("postgresql://h/db?pass%77ord=pw", "postgresql://h/db?pass%77ord=***"),  # encoded name
        ("postgresql://u:p@ss@h/db", "postgresql://u:***@h/db"),  # an unencoded @ in a password
        ("postgresql://u:p/s?s@h/db", "postgresql://u:***@h/db"),  # a / and a ? in it
        ("sqlite:///a.db?token=t", "sqlite:///a.db?token=***"),
        ("sqlite:////var/lib/arena/arena.db", "sqlite:////var/lib/arena/arena.db"),
        ("postgresql://u@h:5432/db?application_name=arena", "postgresql://u@h:5432/db?application_name=arena"),
    ],
)  # fmt: skip
def test_mask_url_hides_every_credential_form(url: str, shown: str) -> None:
    assert mask_url(url) == shown


def _with_secrets(url: str) -> str:
    """``url`` carrying passwords: in its userinfo (PostgreSQL; a SQLite URL has none) and in
    its query (a SQLite URL takes query parameters as a SQLite URI, ``uri=true``)."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        parsed = parsed.set(database=f"file:{parsed.database}", query={"uri": "true"})
    else:
        parsed = parsed.set(password=SECRETS[0])
    query = {"password": SECRETS[1], "sslpassword": SECRETS[2]}
    return parsed.update_query_dict(query).render_as_string(hide_password=False)


def _assert_no_secret(*texts: str) -> None:
    for secret in SECRETS:
        for text in texts:
            assert secret not in text, f"{secret} leaked: {text}"


def test_the_configuration_line_masks_every_credential(db: Database, tmp_path: Path) -> None:
    # On PostgreSQL every parameter is a libpq option it accepts (trust auth ignores them).
    url = _with_secrets(db.url)
    dead = free_port()  # market sync fails at once: only the start-up line matters here
    config = write_config(
        tmp_path / "c.yaml",
        url,
        families=[{"id": "always-hold", "kind": "baseline", "strategy": "always-hold"}],
        polymarket={
            "gamma_url": f"http://reader:{SECRETS[3]}@127.0.0.1:{dead}/?api_key={SECRETS[3]}",
            "clob_url": f"http://127.0.0.1:{dead}/?access_token={SECRETS[4]}",
            "max_attempts": 1,
        },
    )
    at = "2026-11-24T12:00:00Z"
    result = run_arena("--config", str(config), "run", "--once", "--at", at, cwd=tmp_path)
    assert "configuration:" in result.stderr, result.stderr
    assert "password=***" in result.stderr and "api_key=***" in result.stderr
    _assert_no_secret(result.stdout, result.stderr)
    logs = run_arena("--config", str(config), "status", "--format", "json", cwd=tmp_path)
    _assert_no_secret(logs.stdout, logs.stderr)  # nor in what the run stored and status shows


def test_cannot_connect_masks_every_credential(db: Database, tmp_path: Path) -> None:
    if db.backend == "postgresql":  # nothing listens on that port
        url = _with_secrets(make_url(db.url).set(port=free_port()).render_as_string(False))
        runs = [
            (url, "status"),  # the read-only path
            (url, "run"),  # the path that migrates first
            # parameters libpq refuses before it connects: the same line, masked alike
            (f"{url}&api_key={SECRETS[3]}&access_token={SECRETS[4]}", "run"),
        ]
    else:  # a directory where the database file should be
        (tmp_path / "a-directory").mkdir()
        url = _with_secrets(f"sqlite:///{tmp_path / 'a-directory'}")
        url += f"&api_key={SECRETS[3]}&access_token={SECRETS[4]}"
        runs = [(url, "status"), (url, "run")]
    for database_url, command in runs:
        config = write_config(tmp_path / "c.yaml", database_url)
        once = ["--once"] if command == "run" else []
        result = run_arena("--config", str(config), command, *once, cwd=tmp_path)
        assert result.returncode == 2, result.stderr
        assert "cannot connect to" in result.stderr and "password=***" in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
        _assert_no_secret(result.stdout, result.stderr)


@pytest.mark.parametrize(
    "url",
    [
        f"sqlite://reader:{SECRETS[0]}@/arena.db?password={SECRETS[1]}",  # SQLite has no user
        f"sqlite:///arena.db?password={SECRETS[1]}",  # ignored by SQLite without uri=true
        f"postgresql+psycopg://u:{SECRETS[0]}@h:port{SECRETS[1]}/db",  # not a URL
    ],
)
def test_a_refused_database_url_is_never_quoted(tmp_path: Path, url: str) -> None:
    config = write_config(tmp_path / "c.yaml", url)
    result = run_arena("--config", str(config), "status", cwd=tmp_path)
    assert result.returncode == 2 and "database_url" in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    _assert_no_secret(result.stdout, result.stderr)


def test_masked_text_masks_every_url_inside_a_message() -> None:
    text = (
        "OperationalError: cannot reach postgresql://arena:pw-1@db:5432/arena; "
        "fetching 'https://anchor.example/post?token=tk-2&x=1' failed"
    )
    masked = masked_text(text)
    assert "pw-1" not in masked and "tk-2" not in masked
    assert "postgresql://arena:***@db:5432/arena;" in masked
    assert "https://anchor.example/post?token=***&x=1'" in masked
    assert masked_text("no url here") == "no url here"

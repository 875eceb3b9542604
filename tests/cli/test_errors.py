"""User errors end as one line on stderr with exit code 2, never a traceback."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import threading
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from tests.conftest import Database
from tests.helpers import cli_env, run_arena, write_config


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("sqlite:///missing-dir/arena.db", "does not exist"),
        ("postgresql+psycopg://nobody@127.0.0.1:1/arena", "cannot connect"),
    ],
)
def test_database_errors_are_one_line(tmp_path: Path, url: str, expected: str) -> None:
    config = write_config(tmp_path / "c.yaml", url)
    result = run_arena("--config", str(config), "cohort", "start", cwd=tmp_path)
    assert result.returncode == 2
    assert expected in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_missing_config_file_is_one_line(tmp_path: Path) -> None:
    result = run_arena("--config", str(tmp_path / "nope.yaml"), "families", cwd=tmp_path)
    assert result.returncode == 2
    assert "cannot read" in result.stderr and "Traceback" not in result.stderr


def test_bad_timestamp_is_one_line(tmp_path: Path) -> None:
    config = write_config(tmp_path / "c.yaml", f"sqlite:///{tmp_path / 'a.db'}")
    result = run_arena("--config", str(config), "snapshot", "--at", "yesterday", cwd=tmp_path)
    assert result.returncode == 2
    assert "--at" in result.stderr and "Traceback" not in result.stderr


def test_openrouter_family_without_key_is_a_usage_error(tmp_path: Path) -> None:
    config = write_config(tmp_path / "c.yaml", f"sqlite:///{tmp_path / 'a.db'}")
    at = "2026-11-22T00:05:00Z"
    assert (
        run_arena("--config", str(config), "cohort", "start", "--at", at, cwd=tmp_path).returncode
        == 0
    )
    result = run_arena("--config", str(config), "decide", "--at", at, env=cli_env(), cwd=tmp_path)
    assert result.returncode == 2
    assert "OPENROUTER_API_KEY" in result.stderr and "Traceback" not in result.stderr
    from sqlalchemy import create_engine, func, select

    from arena.store.models import Decision

    engine = create_engine(f"sqlite:///{tmp_path / 'a.db'}")
    with engine.connect() as conn:  # failed before claiming anything
        assert conn.scalar(select(func.count()).select_from(Decision)) == 0


# -- issue 22, finding 10: small promises, each one line -----------------------------------


def _one_line(result: subprocess.CompletedProcess[str], code: int, expected: str) -> None:
    """One error line (and at most a hint line after it: tests/cli/test_error_style.py)."""
    assert result.returncode == code, result.stderr
    assert expected in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    first, *hints = result.stderr.strip().splitlines()
    assert expected in first and all(h.startswith("arena: hint: ") for h in hints), result.stderr
    assert len(hints) <= 1, result.stderr


def test_a_file_that_is_not_a_database_is_one_line(tmp_path: Path) -> None:
    """``database_url: sqlite:////etc/passwd`` (a copy of its kind here): every command says
    the file is not an arena database, and leaves it as it was (SQLite only: a PostgreSQL URL
    names a server, which answers or not)."""
    passwd = tmp_path / "passwd"
    passwd.write_text("root:x:0:0:root:/root:/bin/bash\n" * 40)
    before = passwd.read_bytes()
    config = write_config(tmp_path / "c.yaml", f"sqlite:///{passwd}")
    for command in (["status"], ["cohort", "start"], ["export", "--out", str(tmp_path / "o")]):
        result = run_arena("--config", str(config), *command, cwd=tmp_path)
        _one_line(result, 2, "is not an arena database")
    assert passwd.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.yaml", "passwd"]


def test_an_id_out_of_range_is_one_line(db: Database, tmp_path: Path) -> None:
    """An id no row can have (beyond the database's integer) is refused, not overflowed."""
    config = write_config(tmp_path / "c.yaml", db.url)
    out = tmp_path / "o"
    huge = "99999999999999999999"
    result = run_arena(
        "--config", str(config), "export", "--cohort", "1", "--cohort", huge, "--out", str(out)
    )
    _one_line(result, 2, f"--cohort: {huge} is not an id (ids run from 1 to 2147483647)")
    assert not out.exists()
    result = run_arena("--config", str(config), "leaderboard", f"--cohort={2**31}")
    _one_line(result, 2, f"--cohort: {2**31} is not an id")


class CuttingProxy:
    """A TCP proxy to PostgreSQL that, the moment a client sends ``trigger`` (not forwarded),
    closes every connection and stops listening: the database is gone from then on, for this
    process only (the server itself keeps running for everyone else)."""

    def __init__(self, port: int, trigger: bytes) -> None:
        self.target, self.trigger = port, trigger
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.sockets: list[socket.socket] = []
        self.cut = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.cut.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.target))
            self.sockets += [client, server]
            threading.Thread(target=self._pump, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, False), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, watch: bool) -> None:
        tail = b""
        while True:
            try:
                data = source.recv(65536)
            except OSError:
                return
            if not data:
                break
            if watch and self.trigger in tail + data:
                self.close()
                return
            tail = data[-len(self.trigger) :]
            try:
                sink.sendall(data)
            except OSError:
                return
        sink.close()

    def close(self) -> None:
        self.cut.set()
        self.listener.close()
        for sock in self.sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()


@pytest.mark.postgres
def test_a_database_outage_during_run_once_is_one_line(
    postgres_db: Database, tmp_path: Path
) -> None:
    """The database goes away under ``arena run --once`` (after it connected and migrated, as
    the first job takes its slot): one line and exit 1, no traceback. PostgreSQL only: a
    SQLite file does not go away in the middle of a command."""
    url = make_url(postgres_db.url)
    proxy = CuttingProxy(url.port or 5432, trigger=b"job_runs")
    through = url.set(port=proxy.port, query={"sslmode": "disable"})
    config = write_config(tmp_path / "c.yaml", through.render_as_string(hide_password=False))
    try:
        result = run_arena("--config", str(config), "run", "--once", cwd=tmp_path)
    finally:
        proxy.close()
    assert proxy.cut.is_set()  # the outage did happen, in the middle of the run
    assert "configuration:" in result.stderr  # ... after start-up
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("arena: failed: database unavailable: "), result.stderr

"""The command line starts fast: heavy libraries load only inside the commands that use them.

Checked in fresh processes through ``sys.modules``, never with a stopwatch (the timings are
printed by ``benchmarks/bench_startup.py``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.helpers import cli_env

# Numerical and plotting libraries, the export's Arrow, the web stack, the HTTP clients, the
# database layer and the migrations: none is needed to parse a command line or print help.
NEVER_AT_IMPORT = {
    "numpy", "scipy", "matplotlib", "pyarrow", "fastapi", "starlette", "uvicorn",
    "prometheus_client", "httpx", "openai", "sqlalchemy", "pydantic", "alembic",
    "apscheduler", "structlog", "jinja2",
}  # fmt: skip
# What `arena status` may not load: it reads a few tables, it computes and calls nothing.
NEVER_IN_STATUS = {
    "numpy", "scipy", "matplotlib", "pyarrow", "fastapi", "uvicorn", "httpx", "openai",
    "alembic", "apscheduler", "structlog", "jinja2", "psutil",
}  # fmt: skip

# ... nor the ORM: status reads in SQLAlchemy Core (the ORM and the mapped classes cost about
# 0.13 s of its start-up).
NEVER_IN_STATUS_MODULES = {"sqlalchemy.orm", "arena.store.models", "arena.jobs.cohorts"}

SNIPPET = """
import atexit, json, sys
atexit.register(lambda: sys.__stderr__.write(
    "MODULES " + json.dumps(sorted(sys.modules)) + "\\n"))
"""


def loaded_modules(body: str, cwd: Path, **env: str) -> set[str]:
    """Every module (dotted names) loaded by running ``body`` in a fresh process."""
    done = subprocess.run(
        [sys.executable, "-c", SNIPPET + body],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=cli_env(**env),
        timeout=120,
    )
    line = next(x for x in done.stderr.splitlines() if x.startswith("MODULES "))
    return set(json.loads(line.removeprefix("MODULES ")))


def loaded(body: str, cwd: Path, **env: str) -> set[str]:
    """The top-level packages loaded by running ``body`` in a fresh process."""
    return {name.split(".")[0] for name in loaded_modules(body, cwd, **env)}


def test_importing_the_cli_loads_no_heavy_library(tmp_path: Path) -> None:
    modules = loaded("import arena.cli", tmp_path)
    assert "arena" in modules
    assert not modules & NEVER_AT_IMPORT


def test_help_loads_no_heavy_library(tmp_path: Path) -> None:
    modules = loaded("from arena.cli import main\nmain(['--help'])", tmp_path)
    assert not modules & NEVER_AT_IMPORT


def test_status_loads_only_the_database_layer(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'arena.db'}"
    body = "from arena.cli import main\nmain(['status'])"
    loaded(body, tmp_path, ARENA_DATABASE_URL=url)  # the first run migrates the new database
    modules = loaded_modules(body, tmp_path, ARENA_DATABASE_URL=url)
    assert "sqlalchemy.engine" in modules  # it did read the database
    assert not {name.split(".")[0] for name in modules} & NEVER_IN_STATUS
    assert not modules & NEVER_IN_STATUS_MODULES

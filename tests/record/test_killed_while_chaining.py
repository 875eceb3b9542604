"""A decision run killed between a decision and its record (issue 26, "Faults"): the process
dies with SIGKILL after the record is written and before the transaction commits. Nothing is
half written: no completed decision without its record, no record without its decision, no
trade; the next run completes every decision, each with one record, on one linear chain."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from sqlalchemy import func, select

from arena.fakes.gamma import serve_fake_gamma
from arena.store.models import Decision, Trade
from tests.conftest import Database
from tests.helpers import run_arena
from tests.jobs.decide_world import MODELS, bet, make_world
from tests.jobs.test_decide_processes import AT, BINARY, GAMMA, _env
from tests.record.chain_checks import assert_linear

KILL_WHILE_CHAINING = """
import os, signal, sys
from arena.record import chain

real = chain.append

def append_then_die(session, kind, *args, **kwargs):
    record = real(session, kind, *args, **kwargs)
    if kind == "decision":
        os.kill(os.getpid(), signal.SIGKILL)  # written, flushed, not committed
    return record

chain.append = append_then_die
from arena.cli import main
sys.argv = ["arena", *sys.argv[1:]]
main()
"""


def test_a_run_killed_while_chaining_leaves_nothing_half_written(
    db: Database, tmp_path: Path
) -> None:
    world = make_world(db, tmp_path)
    for model in MODELS.values():
        world.fake.set_default(model, _bet_answer())
    config = str(world.config_path)
    with world.fake.serve() as url, serve_fake_gamma(GAMMA) as gamma_url:
        env = _env(world.fake, url, gamma_url)
        killed = subprocess.run(
            [sys.executable, "-c", KILL_WHILE_CHAINING, "--config", config, "decide", "--at", AT],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        with db.factory() as session:
            completed = session.scalar(
                select(func.count()).select_from(Decision).where(Decision.status == "completed")
            )
            trades = session.scalar(select(func.count()).select_from(Trade))
            claimed = session.scalar(select(func.count()).select_from(Decision))
        # while one executes, the next is asked and the one after is claimed: in flight
        assert claimed in (1, 2, 3) and completed == 0 and trades == 0
        assert [r.kind for r in assert_linear(db)] == ["cohort"]
        rerun = run_arena("--config", config, "decide", "--at", AT, env=env, cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stderr + rerun.stdout
    decisions = world.decisions()
    assert len(decisions) == 7 and {d.status for d in decisions.values()} == {"completed"}
    records = assert_linear(db)
    assert sorted(r.subject_id for r in records if r.kind == "decision") == sorted(
        d.id for d in decisions.values()
    )
    world.assert_ledger()


def _bet_answer():  # type: ignore[no-untyped-def]
    from arena.fakes.openrouter import answer

    return answer(json.dumps(bet(BINARY[0], "YES", 100)))

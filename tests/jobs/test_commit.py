"""The commitment job on both databases: a commitment of the chain's head, signed (and
verifiable with the public key) or unsigned, delivered to each anchor, and retried while an
anchor fails; the key never stored or logged; ``arena status`` says what it sees."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlalchemy import select

from arena.clock import FixedClock
from arena.config import FileAnchor as FileAnchorConfig
from arena.config import Settings
from arena.errors import ConfigError
from arena.jobs.commit import commit_record, signing_key_from_environment
from arena.jobs.status import UNSIGNED, read_record, read_status
from arena.record.chain import append, head
from arena.record.commitments import signed_bytes
from arena.record.records import RecordKind
from arena.record.signing import key_id, load_public_key, public_key_pem, signature_holds
from arena.sources.anchors import FileAnchor, GitAnchor, HttpAnchor
from arena.store.db import transaction
from arena.store.models import AnchorDelivery, Commitment
from arena.store.schema import metadata
from tests.conftest import Database
from tests.sources.anchor_fakes import FakeAnchorServer, git_remote

AT = datetime(2026, 11, 22, 0, 10, tzinfo=UTC)


def add_records(db: Database, n: int, at: datetime = AT) -> None:
    """Append ``n`` records (of cohorts that need not exist: the chain takes any body)."""
    with transaction(db.factory) as session:
        first = head(session).seq + 1
        for subject in range(first, first + n):
            append(session, RecordKind.COHORT, subject, {"n": subject}, at)


def commitments(db: Database) -> list[Commitment]:
    with db.factory() as session:
        return list(session.scalars(select(Commitment).order_by(Commitment.seq)))


def deliveries(db: Database) -> list[AnchorDelivery]:
    with db.factory() as session:
        return list(session.scalars(select(AnchorDelivery).order_by(AnchorDelivery.id)))


def pem_of(key: Ed25519PrivateKey) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode("ascii")


def test_a_commitment_is_signed_and_holds_under_the_public_key(
    db: Database, tmp_path: Path
) -> None:
    key = Ed25519PrivateKey.generate()
    anchor = FileAnchor(FileAnchorConfig(kind="file", path=tmp_path))
    assert commit_record(db.factory, FixedClock(AT), key, [anchor]).committed is None  # empty
    add_records(db, 3)
    report = commit_record(db.factory, FixedClock(AT), key, [anchor])
    assert report.committed is not None and report.committed.count == 3
    assert (report.delivered, report.failures) == (1, [])
    (made,) = commitments(db)
    assert (made.seq, made.count, made.key_id) == (3, 3, key_id(key))
    public = load_public_key(public_key_pem(key))
    assert made.signature is not None
    assert signature_holds(public, made.body.encode(), made.signature)
    (line,) = (tmp_path / "commitments.jsonl").read_text().splitlines()
    entry = json.loads(line)
    assert signed_bytes(entry) == made.body.encode()
    assert signature_holds(public, signed_bytes(entry), entry["signature"])
    assert entry["committed_at"] == "2026-11-22T00:10:00Z"
    # nothing new: no commitment; one more record: a commitment of one
    later = FixedClock(AT + timedelta(hours=1))
    assert commit_record(db.factory, later, key, [anchor]).committed is None
    add_records(db, 1)
    assert commit_record(db.factory, later, key, [anchor]).committed is not None
    assert [(c.seq, c.count) for c in commitments(db)] == [(3, 3), (4, 1)]
    assert len((tmp_path / "commitments.jsonl").read_text().splitlines()) == 2


def test_without_a_key_commitments_are_unsigned_and_status_says_so(db: Database) -> None:
    add_records(db, 2)
    report = commit_record(db.factory, FixedClock(AT))
    assert report.committed is not None and not report.committed.signed
    (made,) = commitments(db)
    assert made.signature is None and made.key_id is None
    assert json.loads(made.body)["key_id"] is None
    settings = Settings(database_url=db.url)
    with db.factory() as session:
        record = read_record(session, settings)
    assert (record.head_seq, record.signing, record.uncommitted) == (2, "unsigned", 0)
    assert record.commitment is not None and record.commitment.seq == 2
    assert "unsigned" in UNSIGNED


def test_the_key_is_read_from_the_environment_and_never_stored_or_logged(
    db: Database, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    key = Ed25519PrivateKey.generate()
    pem = pem_of(key)
    secret = pem.splitlines()[1]  # the PEM body: the key itself
    monkeypatch.setenv("ARENA_SIGNING_KEY", pem)
    caplog.set_level(logging.DEBUG)
    loaded = signing_key_from_environment()
    assert loaded is not None and key_id(loaded) == key_id(key)
    add_records(db, 2)
    commit_record(db.factory, FixedClock(AT), loaded)
    with db.factory() as session:
        dump = "\n".join(
            repr(row) for table in metadata.sorted_tables for row in session.execute(table.select())
        )
    assert key_id(key) in dump  # the commitment is there, signed
    assert secret not in dump and "PRIVATE KEY" not in dump
    assert secret not in caplog.text and "PRIVATE KEY" not in caplog.text


def test_an_invalid_key_is_a_config_error_naming_the_variable_not_its_value(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ARENA_SIGNING_KEY", "not-a-key-but-a-secret-anyway")
    with pytest.raises(ConfigError) as refused:
        signing_key_from_environment()
    assert "ARENA_SIGNING_KEY" in str(refused.value)
    assert "not-a-key" not in str(refused.value) and "not-a-key" not in str(refused.value.hint)
    monkeypatch.delenv("ARENA_SIGNING_KEY")
    assert signing_key_from_environment() is None


def test_a_git_remote_that_refuses_pushes_keeps_the_commitment_until_it_takes_it(
    db: Database, tmp_path: Path
) -> None:
    remote = git_remote(tmp_path)
    remote.refuse()
    anchor = GitAnchor(remote.config())
    add_records(db, 2)
    report = commit_record(db.factory, FixedClock(AT), None, [anchor])
    assert report.committed is not None  # stored whatever the anchor does
    assert report.failure() is not None and "pushes are refused here" in report.failure()
    (failed,) = deliveries(db)
    assert (failed.status, failed.attempts, failed.delivered_at) == ("failed", 1, None)
    assert failed.last_error is not None and "git push failed" in failed.last_error
    assert failed.anchor == f"git:{remote.work}"
    add_records(db, 1)
    again = commit_record(db.factory, FixedClock(AT + timedelta(hours=1)), None, [anchor])
    assert again.committed is not None and len(again.failures) == 1  # still refused
    first, second = deliveries(db)
    assert (first.status, first.attempts) == ("failed", 2)
    assert (second.status, second.attempts) == ("pending", 0)  # waits behind the first
    settings = Settings(database_url=db.url, record={"anchors": [remote.config()]})
    with db.factory() as session:
        status = read_status(session, settings, AT + timedelta(hours=1), AT)
    (warning,) = [w for w in status.warnings if w.startswith("anchor ")]
    assert f"anchor git:{remote.work}: 2 commitment(s) not delivered" in warning
    assert "pushes are refused here" in warning

    remote.refuse(False)
    done = commit_record(db.factory, FixedClock(AT + timedelta(hours=2)), None, [anchor])
    assert done.committed is None and (done.delivered, done.failures) == (2, [])
    assert [(d.status, d.attempts) for d in deliveries(db)] == [("delivered", 3), ("delivered", 1)]
    assert [json.loads(line)["seq"] for line in remote.pushed_lines()] == [2, 3]
    with db.factory() as session:
        status = read_status(session, settings, AT + timedelta(hours=2), AT)
    assert not [w for w in status.warnings if w.startswith("anchor ")]
    assert status.record is not None
    (line,) = status.record.anchors
    assert (line.delivered_seq, line.undelivered, line.last_error) == (3, 0, None)


def test_an_http_anchor_that_times_out_is_retried_until_it_recovers(db: Database) -> None:
    server = FakeAnchorServer(mode="slow")
    with server.serve() as url:
        anchor = HttpAnchor(FakeAnchorServer.config(url), sleep=lambda _s: None)
        try:
            add_records(db, 1)
            report = commit_record(db.factory, FixedClock(AT), None, [anchor])
            (failed,) = deliveries(db)
            assert (failed.status, failed.attempts) == ("failed", 1)
            assert failed.last_error is not None and "timeout" in failed.last_error
            assert report.failures and "timeout" in report.failures[0]
            server.mode = "ok"
            later = commit_record(db.factory, FixedClock(AT + timedelta(hours=1)), None, [anchor])
        finally:
            anchor.close()
    assert later.delivered == 1
    (delivered,) = deliveries(db)
    assert (delivered.status, delivered.attempts) == ("delivered", 2)
    assert delivered.answer == 'HTTP 200: {"receipt": "r-1"}'
    assert delivered.delivered_at == AT + timedelta(hours=1)
    assert json.loads(server.received[-1])["seq"] == 1


def test_a_commitment_run_chains_what_was_stored_without_a_record(db: Database) -> None:
    """A daemon upgraded without `arena db upgrade` still chains the earlier data (after the
    fact) before it commits, so the commitment covers it."""
    from tests.analytics.results_arena import build_arena
    from tests.record.chain_checks import assert_linear

    build_arena(db.factory)  # written through the ORM: no record
    report = commit_record(db.factory, FixedClock(AT))
    records = assert_linear(db)
    assert records and all(r.after_the_fact for r in records)
    assert report.chained_after_the_fact == len(records)
    (commitment,) = commitments(db)
    assert commitment.seq == len(records) and commitment.head_hash == records[-1].hash
    assert commit_record(db.factory, FixedClock(AT)).chained_after_the_fact == 0

"""``arena record commit``: the commitment job by hand, signed with the key of
``ARENA_SIGNING_KEY``; an invalid key stops it with one line naming the variable, never the
value."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from arena.record.chain import append
from arena.record.commitments import signed_bytes
from arena.record.records import RecordKind
from arena.record.signing import key_id, signature_holds
from arena.store.db import make_engine, session_factory, transaction, upgrade
from tests.cli.test_results import arena_main
from tests.helpers import write_config

AT = datetime(2026, 11, 22, 1, tzinfo=UTC)


def test_record_commit_signs_and_appends_to_the_file_anchor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'arena.db'}"
    engine = make_engine(url)
    upgrade(engine)
    with transaction(session_factory(engine)) as session:
        append(session, RecordKind.COHORT, 1, {"cohort": 1}, AT)
    engine.dispose()
    anchor = tmp_path / "anchor"
    anchor.mkdir()
    config = write_config(
        tmp_path / "c.yaml", url, record={"anchors": [{"kind": "file", "path": str(anchor)}]}
    )
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    monkeypatch.setenv("ARENA_SIGNING_KEY", pem)
    done = arena_main(
        capsys, "--config", str(config), "record", "commit", "--at", "2026-11-22T01:00:00Z"
    )
    assert done.returncode == 0, done.stderr
    assert "commitment at seq 1 (1 new record(s), signed)" in done.stdout
    assert "anchors: 1 delivery(ies) made, 0 failed" in done.stdout
    assert max(len(line) for line in done.stdout.splitlines()) <= 80
    (line,) = (anchor / "commitments.jsonl").read_text().splitlines()
    entry = json.loads(line)
    assert entry["key_id"] == key_id(key)
    assert signature_holds(key.public_key(), signed_bytes(entry), entry["signature"])
    assert pem.splitlines()[1] not in done.stdout + done.stderr
    again = arena_main(capsys, "--config", str(config), "record", "commit")
    assert again.returncode == 0 and "no new record since the last commitment" in again.stdout


def test_an_invalid_signing_key_stops_with_one_line_naming_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path / "c.yaml", f"sqlite:///{tmp_path / 'arena.db'}")
    monkeypatch.setenv("ARENA_SIGNING_KEY", "hunter2-is-no-key")
    done = arena_main(capsys, "--config", str(config), "record", "commit")
    assert done.returncode == 2
    assert "ARENA_SIGNING_KEY is not a PEM private key" in done.stderr
    assert "openssl genpkey -algorithm ed25519" in done.stderr
    assert "hunter2" not in done.stderr + done.stdout
    assert "Traceback" not in done.stderr

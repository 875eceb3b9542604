"""Commitment job: commit the record chain's head and send it to the anchors.

:func:`commit_record` writes a commitment (:mod:`arena.record.commitments`) when the chain's
head advanced since the last one, signed when a key is configured, with one pending delivery
per configured anchor, in one transaction that holds the chain's head (so two replicas never
commit the same head twice, and no record is appended between reading the head and writing
the commitment). Then it delivers, to each anchor, every commitment not yet delivered to it,
oldest first, each delivery's state (attempts, last error, answer) written as it ends. An
anchor that fails stops its own queue for this run (so it receives commitments in order); the
next run retries it. A failing anchor never loses a commitment, and never blocks anything but
its own deliveries: the daemon commits after each decision run and every
``schedule.commitment_minutes`` (:class:`arena.domain.states.Job` ``COMMITMENT``).

The signing key is read from ``ARENA_SIGNING_KEY`` once, at start-up
(:func:`signing_key_from_environment`); an invalid one is a configuration error that names the
variable, never its value.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from arena.clock import Clock, iso_utc
from arena.config import SIGNING_KEY_ENV
from arena.domain.states import DeliveryStatus
from arena.errors import AnchorError, ConfigError
from arena.record.chain import HEAD_ID, chain_backlog, head
from arena.record.commitments import commitment_body, commitment_entry, entry_line
from arena.record.signing import (
    SigningKeyError,
    key_id,
    load_signing_key,
    sign,
    signing_key_from_env,
)
from arena.sources.anchors import Anchor
from arena.store.db import transaction
from arena.store.models import AnchorDelivery, Commitment, RecordHead

log = logging.getLogger(__name__)

GENERATE_KEY = "openssl genpkey -algorithm ed25519"


def signing_key_from_environment() -> Ed25519PrivateKey | None:
    """The key commitments are signed with (None: unsigned); :class:`ConfigError` naming
    ``ARENA_SIGNING_KEY`` when it holds no Ed25519 private key."""
    pem = signing_key_from_env()
    if pem is None:
        return None
    try:
        return load_signing_key(pem)
    except SigningKeyError as exc:
        raise ConfigError(
            str(exc), hint=f"set {SIGNING_KEY_ENV} to the PEM that `{GENERATE_KEY}` writes"
        ) from None


@dataclass(frozen=True)
class Committed:
    """A commitment just written."""

    seq: int
    head_hash: str
    count: int
    signed: bool


@dataclass
class CommitReport:
    """What a commitment run did: the commitment it wrote (None: the head had not moved),
    the deliveries that succeeded, and each one that failed (``anchor: reason``)."""

    committed: Committed | None = None
    anchors: int = 0  # how many are configured
    chained_after_the_fact: int = 0  # found stored without a record (the genesis pass)
    delivered: int = 0
    failures: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, Any]:
        made = self.committed
        return {
            "seq": made.seq if made else None,
            "records": made.count if made else 0,
            "signed": made.signed if made else None,
            "delivered": self.delivered,
            "failed": len(self.failures),
            "chained_after_the_fact": self.chained_after_the_fact,
        }

    def failure(self) -> str | None:
        if not self.failures:
            return None
        return f"{len(self.failures)} anchor delivery(ies) failed: " + "; ".join(self.failures)

    def summary(self) -> str:
        made = self.committed
        if made is None:
            line = "commitment: no new record since the last commitment"
        else:
            signed = "signed" if made.signed else "unsigned (no ARENA_SIGNING_KEY)"
            line = (
                f"commitment at seq {made.seq} ({made.count} new record(s), {signed}): "
                f"head {made.head_hash[:16]}"
            )
        if not self.anchors:
            return f"{line}\nno anchor configured (record.anchors)"
        return f"{line}\nanchors: {self.delivered} delivery(ies) made, {len(self.failures)} failed"


def commit_record(
    factory: sessionmaker[Session],
    clock: Clock,
    key: Ed25519PrivateKey | None = None,
    anchors: Sequence[Anchor] = (),
) -> CommitReport:
    """Chain whatever is stored without a record (after the fact: the genesis pass, which
    `arena db upgrade` also runs), commit the chain's head if it moved, then deliver every
    undelivered commitment to ``anchors`` (module docstring)."""
    chained = chain_backlog(factory, clock.now())  # anything stored without a record
    made = make_commitment(factory, clock.now(), key, anchors)
    report = CommitReport(committed=made, anchors=len(anchors), chained_after_the_fact=chained)
    for anchor in anchors:
        deliver(factory, anchor, clock, report)
    return report


def make_commitment(
    factory: sessionmaker[Session],
    now: datetime,
    key: Ed25519PrivateKey | None,
    anchors: Sequence[Anchor] = (),
) -> Committed | None:
    """Write a commitment of the head (with a pending delivery per anchor) when records were
    appended since the last one; None when none was."""
    with transaction(factory) as session:
        lock = select(RecordHead).where(RecordHead.id == HEAD_ID).with_for_update()
        session.execute(lock)  # appends and commitments queue here
        current = head(session)
        last = session.scalar(select(Commitment.seq).order_by(Commitment.seq.desc()).limit(1))
        if current.seq == 0 or (last is not None and last >= current.seq):
            return None
        count = current.seq - (last or 0)
        kid = key_id(key) if key is not None else None
        body = commitment_body(current.seq, current.hash, count, iso_utc(now), kid)
        commitment = Commitment(
            seq=current.seq,
            head_hash=current.hash,
            count=count,
            committed_at=now,
            body=body.decode("utf-8"),
            signature=sign(key, body) if key is not None else None,
            key_id=kid,
        )
        session.add(commitment)
        session.flush()
        for anchor in anchors:
            session.add(
                AnchorDelivery(
                    commitment_id=commitment.id,
                    anchor=anchor.name,
                    status=DeliveryStatus.PENDING,
                    attempts=0,
                    updated_at=now,
                )
            )
    log.info("record committed at seq %s (%s new records)", current.seq, count)
    return Committed(current.seq, current.hash, count, key is not None)


def deliver(
    factory: sessionmaker[Session], anchor: Anchor, clock: Clock, report: CommitReport
) -> None:
    """Deliver to ``anchor`` every commitment it has not taken yet, oldest first, until one
    fails (that one, and the rest, wait for the next run)."""
    with factory() as session:
        waiting = session.execute(
            select(AnchorDelivery.id, Commitment.seq, Commitment.body, Commitment.signature)
            .join(Commitment, Commitment.id == AnchorDelivery.commitment_id)
            .where(
                AnchorDelivery.anchor == anchor.name,
                AnchorDelivery.status != DeliveryStatus.DELIVERED,
            )
            .order_by(Commitment.seq, Commitment.id)
        ).all()
    for delivery_id, seq, body, signature in waiting:
        line = entry_line(commitment_entry(body, signature))
        try:
            answer = anchor.deliver(line, seq)
        except Exception as exc:  # any anchor's failure stays its own
            reason = str(exc) if isinstance(exc, AnchorError) else f"{type(exc).__name__}: {exc}"
            _record_attempt(factory, delivery_id, clock.now(), error=reason)
            log.warning("anchor %s: commitment %s not delivered: %s", anchor.name, seq, reason)
            report.failures.append(f"{anchor.name}: commitment {seq}: {reason}")
            return
        _record_attempt(factory, delivery_id, clock.now(), answer=answer)
        report.delivered += 1


def _record_attempt(
    factory: sessionmaker[Session],
    delivery_id: int,
    now: datetime,
    *,
    answer: str | None = None,
    error: str | None = None,
) -> None:
    with transaction(factory) as session:
        delivery = session.get_one(AnchorDelivery, delivery_id)
        delivery.attempts += 1
        delivery.updated_at = now
        if error is None:
            delivery.status = DeliveryStatus.DELIVERED
            delivery.delivered_at = now
            delivery.answer = answer
            delivery.last_error = None
        else:
            delivery.status = DeliveryStatus.FAILED
            delivery.last_error = error

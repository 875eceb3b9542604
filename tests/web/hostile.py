"""Markets whose text is hostile: HTML, for the escaping tests; and words too long for any line,
for the layout tests."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy.orm import Session, sessionmaker

from arena.store.models import Market

HOSTILE = (
    '<script>alert("xss");window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
    " Will it rain?"
)
UNBROKEN = "Will-" + "x" * 400 + "-happen?"
"""A question with no place to break a line (the layout tests: it must not widen the page)."""
UNBROKEN_ID = "6" * 32


def insert_hostile_market(
    factory: sessionmaker[Session], market_id: str = "666", question: str = HOSTILE
) -> None:
    now = datetime(2026, 11, 2, tzinfo=UTC)
    with factory() as session, session.begin():
        session.add(
            Market(
                id=market_id,
                question=question,
                slug='x" onmouseover="alert(1)',
                description="<b onmouseover=alert(1)>bold</b>",
                category="<i>weather</i>",
                outcomes=["Yes", "<svg onload=alert(1)>"],
                prices=["0.5", "0.5"],
                first_seen_at=now,
                updated_at=now,
            )
        )

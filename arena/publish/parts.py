"""The parts ``arena publish`` adds to the dataset's tables, chain and commitments
(:func:`arena.publish.dataset.publish_dataset`), in the order they are written."""

from __future__ import annotations

from arena.config import Settings
from arena.publish.analysis import analysis_part, leaderboard_part
from arena.publish.card import card_part
from arena.publish.dataset import Part
from arena.publish.incidents import incidents_part
from arena.publish.site import site_part


def dataset_parts(settings: Settings) -> tuple[Part, ...]:
    """``leaderboard.json``, ``analysis/report.json``, ``incidents.jsonl`` with
    ``analysis/incidents.json``, the card ``README.md`` and the static site ``site/``."""
    return (
        leaderboard_part(settings),
        analysis_part(settings),
        incidents_part(settings),
        card_part(settings),
        site_part(settings),
    )

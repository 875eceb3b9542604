"""Tracks: forecasters compared like with like (issue 27).

An agent's track follows from what it is, frozen on it at cohort start (its ``kind`` and its
``web_search`` settings): ``model`` (a language model through OpenRouter, no tools), ``web``
(the same with OpenRouter's web search), ``agent`` (an outside agent answering over HTTP), and
``baseline`` (the built-in strategies). ``--track``/``?track=`` keeps one track's agents only;
a baseline is never in the model, web or agent track, but shown in its own.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from arena.domain.states import FamilyKind
from arena.errors import OptionError

MODEL = "model"
WEB = "web"
AGENT = "agent"
BASELINE = "baseline"
TRACKS = (MODEL, WEB, AGENT, BASELINE)


def web_search_settings(value: Mapping[str, Any] | str | None) -> dict[str, Any] | None:
    """Frozen web search settings as stored (a mapping) or exported (its JSON text); None (or
    a JSON null): no web search."""
    if isinstance(value, str):
        value = json.loads(value) if value.strip() else None
    return dict(value) if value else None


def tools_label(value: Mapping[str, Any] | str | None) -> str:
    """The frozen web search settings in one line (``off`` without), for lineage notes."""
    settings = web_search_settings(value)
    if settings is None:
        return "off"
    return ", ".join(f"{name}={settings[name]}" for name in sorted(settings))


def track_of(kind: str, web_search: Mapping[str, Any] | str | None) -> str:
    """The track of an agent of ``kind`` with the frozen ``web_search`` settings (a mapping,
    its JSON text, or None: off). The one place a track is derived."""
    if kind == FamilyKind.BASELINE:
        return BASELINE
    if kind == FamilyKind.AGENT:
        return AGENT
    return WEB if web_search_settings(web_search) else MODEL


def check_track(track: str | None) -> str | None:
    """``track`` when it is a track name (or None); else the one-line usage error listing them."""
    if track is not None and track not in TRACKS:
        raise OptionError(f"--track: {track!r} is not one of {', '.join(TRACKS)}")
    return track

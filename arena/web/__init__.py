"""The read-only web dashboard and JSON API (``arena serve``, ``arena run --http``).

Nothing here is imported by :mod:`arena.cli` at start-up: the web stack (FastAPI, uvicorn,
Jinja2, prometheus-client) loads only when a command serves it. Every HTML page has a JSON twin
under ``/api/v1`` built from the same query function, so the two can never disagree.
"""

from __future__ import annotations

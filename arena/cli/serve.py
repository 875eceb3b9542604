"""``arena serve``: the read-only web dashboard and JSON API over the configured database.

The web stack (FastAPI, uvicorn, Jinja2, prometheus-client) is imported inside the command, so
``arena --help`` and every other command start without it.
"""

from __future__ import annotations

from typing import Annotated

import typer

from arena.cli.common import state


def serve(
    ctx: typer.Context,
    host: Annotated[
        str, typer.Option("--host", metavar="HOST", help="Interface to listen on.")
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", metavar="PORT", min=1, max=65535, help="TCP port to listen on.")
    ] = 8000,
) -> None:
    """Serve the read-only dashboard and JSON API (pages, /api/v1, /healthz, /readyz, /metrics)."""
    from arena.web.server import serve_forever

    serve_forever(state(ctx).settings, host, port)


def register(app: typer.Typer) -> None:
    app.command("serve")(serve)

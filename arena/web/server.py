"""Serving the dashboard with uvicorn: in the foreground (``arena serve``) or on a background
thread beside the daemon (``arena run --http HOST:PORT``)."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

import uvicorn

from arena.config import Settings
from arena.web.app import create_app
from arena.web.db import readiness, unavailable

log = logging.getLogger(__name__)
STOP_TIMEOUT_S = 10.0


def _config(settings: Settings, host: str, port: int) -> uvicorn.Config:
    app = create_app(settings)
    ready, detail = readiness(app.state.ctx.engine, app.state.ctx.head)
    if not ready:
        reason = unavailable(settings.database_url, detail)
        log.warning("the dashboard starts, but its database is not ready: %s", reason)
    return uvicorn.Config(
        app, host=host, port=port, log_config=None, access_log=False, server_header=False
    )


def serve_forever(settings: Settings, host: str, port: int) -> None:
    """Serve until SIGINT/SIGTERM (uvicorn handles both gracefully)."""
    server = uvicorn.Server(_config(settings, host, port))
    log.info("dashboard on http://%s:%d/", host, port)
    try:
        server.run()
    except KeyboardInterrupt:  # uvicorn re-raises the SIGINT it has already handled gracefully
        log.info("dashboard stopped")


@dataclass
class BackgroundServer:
    """A dashboard served from a thread of the daemon; :meth:`stop` ends it."""

    server: uvicorn.Server
    thread: threading.Thread

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(STOP_TIMEOUT_S)


def serve_in_background(settings: Settings, host: str, port: int) -> BackgroundServer:
    """Start the dashboard on a daemon thread (uvicorn leaves signals to the main thread)."""
    server = uvicorn.Server(_config(settings, host, port))
    thread = threading.Thread(target=server.run, name="arena-http", daemon=True)
    thread.start()
    log.info("dashboard on http://%s:%d/ beside the daemon", host, port)
    return BackgroundServer(server, thread)

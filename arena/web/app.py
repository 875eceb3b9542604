"""The app factory: security headers, request log lines, error pages, operations endpoints.

:func:`create_app` builds the whole dashboard over a database URL; ``arena serve`` and
``arena run --http`` both serve what it returns.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from fastapi.staticfiles import StaticFiles
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy.exc import DBAPIError
from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from arena import __version__
from arena.config import Settings
from arena.errors import NotFound
from arena.store.db import head_revision, session_factory
from arena.web import api, pages
from arena.web.context import WebContext
from arena.web.db import failure_line, read_only_engine, readiness, unavailable
from arena.web.metrics import HttpMetrics, make_registry
from arena.web.params import CheckedRoute
from arena.web.render import HERE, SECURITY_HEADERS, error_response, templates, wants_json

log = logging.getLogger(__name__)
access = logging.getLogger("arena.web.access")


def create_app(
    settings: Settings, *, database_url: str | None = None, context: WebContext | None = None
) -> FastAPI:
    """The dashboard and JSON API over ``database_url`` (default: the settings'), read-only.

    With ``context``, the app reads through the caller's engine and clock instead (the static
    copy of ``arena publish`` renders pages in-process at a fixed instant) and leaves that
    engine open: the caller made it, the caller closes it."""
    url = database_url or settings.database_url
    if context is None:
        engine = read_only_engine(url)
        ctx = WebContext(settings, engine, session_factory(engine), head_revision())
    else:
        ctx = context
        url = context.engine.url.render_as_string(hide_password=True)
    registry, http_metrics = make_registry(ctx)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        if context is None:
            ctx.engine.dispose()  # the app owns its pool: a stopped app holds no connection

    app = FastAPI(
        lifespan=lifespan,
        title="arena",
        version=__version__,
        description="Read-only JSON API of the arena: every dashboard page has a twin here.",
        docs_url=None,
        redoc_url=None,
        openapi_url="/api/openapi.json",
    )
    app.router.route_class = CheckedRoute  # the edge rule for the routes added below too
    app.state.ctx = ctx
    app.state.database_url = url  # named (masked) when the database is unavailable
    app.state.templates = templates()
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    app.include_router(api.router)
    app.include_router(pages.router)

    app.add_middleware(FrontDoor, http_metrics=http_metrics)

    @app.get("/healthz", include_in_schema=False)
    def healthz() -> PlainTextResponse:
        return PlainTextResponse("ok\n")

    @app.get("/readyz", include_in_schema=False)
    def readyz() -> PlainTextResponse:
        ready, detail = readiness(ctx.engine, ctx.head)
        if ready:
            return PlainTextResponse(f"ready: {detail}\n")
        return PlainTextResponse(f"not ready: {unavailable(url, detail)}\n", status_code=503)

    @app.get("/metrics", include_in_schema=False)
    def metrics() -> Response:
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    _error_handlers(app)
    return app


class FrontDoor:
    """Pure ASGI middleware: security headers on every response (error pages included), the
    request counter and latency histogram, and one structured log line per request."""

    def __init__(self, app: ASGIApp, http_metrics: HttpMetrics) -> None:
        self.app = app
        self.metrics = http_metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        request_id = uuid.uuid4().hex[:12]
        scope.setdefault("state", {})["request_id"] = request_id
        status = 500

        async def send_with_headers(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    if name not in headers:
                        headers.append(name, value)
            await send(message)

        try:
            await self.app(scope, receive, send_with_headers)
        finally:
            seconds = time.perf_counter() - started
            template = getattr(scope.get("route"), "path", None) or "unmatched"
            self.metrics.requests.labels(template, str(status)).inc()
            self.metrics.latency.labels(template).observe(seconds)
            fields = {
                "request_id": request_id,
                "method": scope["method"],
                "path": scope["path"],  # never the query string: it may carry a token
                "route": template,
                "status": status,
                "duration_ms": round(seconds * 1000, 1),
            }
            access.info(
                "%s %s %d %.1fms",
                fields["method"],
                fields["path"],
                status,
                fields["duration_ms"],
                extra=fields,
            )


def _error_handlers(app: FastAPI) -> None:
    @app.exception_handler(NotFound)
    async def not_found(request: Request, exc: NotFound) -> Response:
        return error_response(request, 404, "not found", str(exc))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        title = "not found" if exc.status_code == 404 else "error"
        detail = exc.detail if exc.status_code != 404 else f"no page at {request.url.path}"
        response = error_response(request, exc.status_code, title, detail)
        response.headers.update(exc.headers or {})  # a 405's Allow, above all
        return response

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, exc: RequestValidationError) -> Response:
        problems = [
            {"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")}
            for e in exc.errors()
        ]
        if wants_json(request):
            return JSONResponse({"error": "invalid request", "detail": problems}, 422)
        text = "; ".join(f"{'.'.join(map(str, p['loc'][1:]))}: {p['msg']}" for p in problems)
        return error_response(request, 400, "bad request", text)

    @app.exception_handler(DBAPIError)
    async def database_error(request: Request, exc: DBAPIError) -> Response:
        reason = unavailable(request.app.state.database_url, failure_line(exc))
        log.error("database error on %s: %s", request.url.path, reason)
        return error_response(request, 503, "database unavailable", reason)

    @app.exception_handler(Exception)
    async def internal_error(request: Request, exc: Exception) -> Response:
        request_id = getattr(request.state, "request_id", "-")
        log.exception("unhandled error on %s (request %s)", request.url.path, request_id)
        return error_response(request, 500, "internal error", f"request {request_id}")

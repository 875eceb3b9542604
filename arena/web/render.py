"""How the app answers: the Jinja templates, a page rendered with the shared context, an error
as a page or as JSON, and the security headers every response carries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.templating import Jinja2Templates

from arena.domain.states import FamilyKind, Methodology
from arena.web import filters
from arena.web.deps import web_context

HERE = Path(__file__).resolve().parent
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
}


def templates() -> Jinja2Templates:
    """Jinja2 with autoescaping on for every template: market text is untrusted."""
    env = Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    filters.register(env)
    env.globals.update(FamilyKind=FamilyKind, Methodology=Methodology)  # kinds by name, not text
    env.globals.update(agent_path=agent_path)
    return Jinja2Templates(env=env)


def agent_path(cohort_id: int, family_id: str, replicate: int | None = 1) -> str:
    """The agent page of replicate ``replicate`` of a family in a cohort; replicate 1 keeps
    the page's address from before replicates (no query)."""
    path = f"/cohorts/{cohort_id}/families/{family_id}"
    return path if replicate in (None, 1) else f"{path}?replicate={replicate}"


def html(request: Request, template: str, context: dict[str, Any]) -> HTMLResponse:
    """Render a page template with the shared context."""
    body = {"ctx": web_context(request), "request": request, **context}
    response: HTMLResponse = request.app.state.templates.TemplateResponse(request, template, body)
    return response


def wants_json(request: Request) -> bool:
    """Whether the request is for the JSON API (errors answer in JSON there)."""
    return request.url.path.startswith("/api/")


def error_response(request: Request, status: int, title: str, detail: Any) -> Response:
    """A JSON error under ``/api/``, an HTML page elsewhere; never a traceback."""
    response: Response
    if wants_json(request):
        response = JSONResponse({"error": title, "detail": detail}, status_code=status)
    else:
        response = request.app.state.templates.TemplateResponse(
            request,
            "error.html",
            {"status": status, "title": title, "detail": detail, "ctx": None},
            status_code=status,
        )
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    return response

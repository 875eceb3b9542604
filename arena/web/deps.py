"""The FastAPI dependencies every route shares: the web context and a read session.

A route asks for them by type (``session: SessionDep``) instead of opening a session by hand.
The session is read-only (the engine refuses writes) and rolled back when the route's function
ends, before the response is sent; a database that fails inside it is the app's 503 "database
unavailable" answer (:func:`arena.web.app.create_app`'s error handlers).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from arena.web.context import WebContext


def web_context(request: Request) -> WebContext:
    """The app's :class:`WebContext` (settings, engine, cache), made once by the app factory."""
    context: WebContext = request.app.state.ctx
    return context


ContextDep = Annotated[WebContext, Depends(web_context)]


def read_session(ctx: ContextDep) -> Iterator[Session]:
    """One session for the route, rolled back when the route's function ends."""
    with ctx.session() as session:
        yield session


SessionDep = Annotated[Session, Depends(read_session, scope="function")]

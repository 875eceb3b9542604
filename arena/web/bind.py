"""The ``HOST:PORT`` syntax of ``arena run --http`` (no web imports: checked before start-up)."""

from __future__ import annotations

from arena.errors import UserError


def parse_bind(text: str, option: str = "--http") -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:8000`` for IPv6) as ``(host, port)``; a :class:`UserError` if not."""
    host, sep, port_text = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise UserError(f"{option}: {text!r} is not HOST:PORT (e.g. 127.0.0.1:8000)")
    return host, int(port_text)

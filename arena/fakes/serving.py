"""Serve a pure request handler over real HTTP on 127.0.0.1, or in-process through
``httpx.MockTransport``, for fakes of outside services.

A handler is ``handle(method, path, query) -> (status, headers, body)`` with ``query`` mapping
each parameter to its list of values; a :data:`BodyHandler` also receives the request body (for
POST endpoints). It signals transport-level misbehaviour by raising :class:`FakeDrop` (close
the socket without answering) or :class:`FakeSlow` (answer late).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx

from arena.errors import FakeDrop, FakeSlow

Reply = tuple[int, dict[str, str], bytes]
Handler = Callable[[str, str, dict[str, list[str]]], Reply]
BodyHandler = Callable[[str, str, dict[str, list[str]], bytes], Reply]

__all__ = [
    "BodyHandler",
    "FakeDrop",
    "FakeSlow",
    "Handler",
    "LocalHandler",
    "Reply",
    "mock_transport",
    "serve_asgi",
    "serve_body_handler",
    "serve_handler",
]


class LocalHandler(BaseHTTPRequestHandler):
    """The request handler every fake's HTTP server builds on: HTTP/1.1 with keep-alive, as
    the real APIs answer, and no access log. Its socket sends at once (``TCP_NODELAY``): an
    answer goes out in two writes (headers, then body), and with Nagle's algorithm the second
    waits for the client's delayed ACK, 40 ms on Linux, now and then, a stall that no real
    API has and that a benchmark would count as arena's own time."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: object) -> None:
        return


@contextmanager
def serve_asgi(app: Any, started_within: float = 10.0) -> Iterator[str]:
    """Serve the ASGI ``app`` with uvicorn on a thread, on a free port of 127.0.0.1 (bound
    before uvicorn starts, so no other process can take it); yields the base URL once it
    listens, and stops the server on exit."""
    import socket

    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app, log_config=None, log_level="warning", access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, args=([sock],), name="asgi-fake", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + started_within
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the local ASGI server did not start")
            time.sleep(0.01)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@contextmanager
def serve_handler(handle: Handler) -> Iterator[str]:
    """Run ``handle`` behind a threaded HTTP server on an ephemeral port; yields the base URL."""
    with serve_body_handler(lambda method, path, query, _body: handle(method, path, query)) as url:
        yield url


@contextmanager
def serve_body_handler(handle: BodyHandler) -> Iterator[str]:
    """Like :func:`serve_handler`, for a handler that also reads the request body."""

    class RequestHandler(LocalHandler):
        def do_GET(self) -> None:
            self._serve("GET")

        def do_POST(self) -> None:
            self._serve("POST")

        def _serve(self, method: str) -> None:
            url = urlsplit(self.path)
            query = parse_qs(url.query, keep_blank_values=True)
            length = int(self.headers.get("Content-Length") or 0)
            request_body = self.rfile.read(length) if length > 0 else b""
            try:
                status, headers, body = handle(method, url.path, query, request_body)
            except FakeDrop:
                self.close_connection = True  # the server closes the socket, nothing sent
                return
            except FakeSlow as slow:
                time.sleep(slow.delay)
                status, headers, body = slow.reply
            try:
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except OSError:  # the client gave up (timeout) before the late answer
                self.close_connection = True

    server = ThreadingHTTPServer(("127.0.0.1", 0), RequestHandler)
    server.daemon_threads = True
    server.block_on_close = False
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def mock_transport(handle: BodyHandler) -> httpx.MockTransport:
    """``handle`` as an in-process transport: a drop raises the httpx error a real dropped
    connection would (``connect_error``: refused), and a reply slower than the client's read
    timeout raises ``httpx.ReadTimeout`` at once; a faster one is answered without waiting."""

    def respond(request: httpx.Request) -> httpx.Response:
        query: dict[str, list[str]] = {}
        for key, value in request.url.params.multi_items():
            query.setdefault(key, []).append(value)
        try:
            status, headers, body = handle(request.method, request.url.path, query, request.read())
        except FakeDrop as drop:
            if drop.kind == "connect_error":
                raise httpx.ConnectError("connection refused", request=request) from None
            raise httpx.RemoteProtocolError(
                "Server disconnected without sending a response.", request=request
            ) from None
        except FakeSlow as slow:
            read_timeout = (request.extensions.get("timeout") or {}).get("read")
            if read_timeout is None or slow.delay >= read_timeout:
                raise httpx.ReadTimeout("timed out", request=request) from None
            status, headers, body = slow.reply
        return httpx.Response(status, headers=headers, content=body)

    return httpx.MockTransport(respond)

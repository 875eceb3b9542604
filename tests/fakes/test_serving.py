"""The fakes' HTTP servers answer as the real APIs do, with no delay of their own."""

from __future__ import annotations

import socket
from http.server import ThreadingHTTPServer
from threading import Thread

import httpx

from arena.fakes.serving import LocalHandler


def test_a_fake_server_sends_its_answers_at_once() -> None:
    """An answer goes out in two writes (headers, body); with Nagle's algorithm the body
    waits for the client's delayed ACK (40 ms on Linux) now and then, a stall no real API has
    and that a benchmark would count as arena's own time. The handler every fake builds on
    turns it off on each connection, kept alive between requests."""

    class Probe(LocalHandler):
        def do_GET(self) -> None:
            nodelay = self.connection.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
            body = str(nodelay).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Probe)
    server.daemon_threads = True
    thread = Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{server.server_port}") as client:
            answers = [client.get("/") for _ in range(3)]
    finally:
        server.shutdown()
        server.server_close()
    assert [a.text for a in answers] == ["1", "1", "1"]
    assert [a.http_version for a in answers] == ["HTTP/1.1"] * 3

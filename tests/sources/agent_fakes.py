"""Outside agents for tests: a scripted fake served over real HTTP on 127.0.0.1, and the
example agent (``examples/outside_agent/app.py``) run by uvicorn in its own process."""

from __future__ import annotations

import hashlib
import hmac
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from arena.fakes.serving import LocalHandler, Reply
from tests.helpers import free_port

EXAMPLE_DIR = Path(__file__).resolve().parents[2] / "examples" / "outside_agent"

Behaviour = Callable[[dict[str, Any]], Reply]


@dataclass
class Seen:
    """One request an agent received: its headers, raw body and JSON."""

    headers: dict[str, str]
    body: bytes
    json: dict[str, Any]


def signed_by(secret: str, seen: Seen) -> bool:
    """Whether ``seen`` carries a valid signature under ``secret`` (checked independently of
    arena's own signing code)."""
    stamp = seen.headers["x-arena-timestamp"]
    digest = hmac.new(secret.encode(), stamp.encode() + b"." + seen.body, hashlib.sha256)
    return seen.headers["x-arena-signature"] == f"sha256={digest.hexdigest()}"


def reply(request: dict[str, Any], answer: Any, **extra: Any) -> Reply:
    """A 200 reply for ``request`` with ``answer`` (and any other field)."""
    body = {"decision_id": request["decision_id"], "answer": answer, **extra}
    return 200, {"Content-Type": "application/json"}, json.dumps(body).encode()


def hold(request: dict[str, Any]) -> Reply:
    return reply(request, {"action": "HOLD", "reasoning": "fake agent holds"})


@dataclass
class FakeAgent:
    """Answers each request with the next scripted behaviour (the last one repeats); a
    behaviour may sleep first (a slow agent). Records every request it receives."""

    script: list[Behaviour] = field(default_factory=lambda: [hold])
    seen: list[Seen] = field(default_factory=list)

    def answer(self, headers: dict[str, str], body: bytes) -> Reply:
        request = json.loads(body)
        self.seen.append(Seen(headers, body, request))
        behaviour = self.script[min(len(self.seen), len(self.script)) - 1]
        return behaviour(request)

    @contextmanager
    def serve(self) -> Iterator[str]:
        """The agent's endpoint URL (``/decide`` on 127.0.0.1) while it is served."""
        agent = self

        class Handler(LocalHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                headers = {k.lower(): v for k, v in self.headers.items()}
                status, reply_headers, content = agent.answer(headers, body)
                try:
                    self.send_response(status)
                    for key, value in reply_headers.items():
                        self.send_header(key, value)
                    self.send_header("Content-Length", str(len(content)))
                    self.end_headers()
                    self.wfile.write(content)
                except OSError:  # arena gave up (its deadline) before the answer
                    self.close_connection = True

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        server.block_on_close = False
        thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_port}/decide"
        finally:
            server.shutdown()
            server.server_close()
            thread.join(timeout=5)


def slow(seconds: float, then: Behaviour = hold) -> Behaviour:
    """A behaviour that answers ``then`` after ``seconds``."""

    def behaviour(request: dict[str, Any]) -> Reply:
        time.sleep(seconds)
        return then(request)

    return behaviour


Process = subprocess.Popen[bytes]
UVICORN = (
    sys.executable,
    "-m",
    "uvicorn",
    "app:app",
    "--host",
    "127.0.0.1",
    "--log-level",
    "warning",
)


def start_example_agent(secret: str, port: int, strategy: str = "hold") -> Process:
    """The example agent served by uvicorn on ``port`` in its own process, once it listens."""
    process = subprocess.Popen(
        [*UVICORN, "--port", str(port)],
        cwd=EXAMPLE_DIR,
        env={"AGENT_SECRET": secret, "AGENT_STRATEGY": strategy, "PATH": ""},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_listening(port, process)
    except BaseException:
        stop(process)
        raise
    return process


def stop(process: Process) -> None:
    if process.poll() is None:
        process.kill()
    process.wait(timeout=10)


@contextmanager
def example_agent(secret: str, strategy: str = "hold") -> Iterator[tuple[str, Process]]:
    """The example agent in its own process: its endpoint, and the process (to kill)."""
    port = free_port()
    process = start_example_agent(secret, port, strategy)
    try:
        yield f"http://127.0.0.1:{port}/decide", process
    finally:
        stop(process)


def wait_listening(port: int, process: Process) -> None:
    """Until the process answers HTTP on ``port`` (it died: fail)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, "the example agent exited"
        try:
            httpx.get(f"http://127.0.0.1:{port}/docs", timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.05)
    raise AssertionError("the example agent did not start")

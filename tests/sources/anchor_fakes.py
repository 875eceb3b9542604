"""Fakes of the anchors' outside world: a local bare git repository as the remote (one that can
refuse every push, through a pre-receive hook), and an HTTP anchor on 127.0.0.1 that can answer
slowly (a timeout) or fail."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from arena.config import GitAnchor as GitAnchorConfig
from arena.config import HttpAnchor as HttpAnchorConfig
from arena.errors import FakeSlow
from arena.fakes.serving import Reply, serve_body_handler

REFUSING_HOOK = "#!/bin/sh\necho 'pushes are refused here' >&2\nexit 1\n"


def git(*args: str, cwd: Path) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True, timeout=60
    )
    return done.stdout


@dataclass
class GitRemote:
    """A bare repository (the remote) and a clone of it (the anchor's working tree)."""

    bare: Path
    work: Path

    def refuse(self, refusing: bool = True) -> None:
        hook = self.bare / "hooks" / "pre-receive"
        if refusing:
            hook.write_text(REFUSING_HOOK)
            hook.chmod(0o755)
        else:
            hook.unlink(missing_ok=True)

    def pushed_lines(self, branch: str = "main") -> list[str]:
        """The lines of commitments.jsonl on ``branch`` of the remote ([] when absent)."""
        try:
            text = git("show", f"{branch}:commitments.jsonl", cwd=self.bare)
        except subprocess.CalledProcessError:
            return []
        return text.splitlines()

    def config(self, **extra: object) -> GitAnchorConfig:
        return GitAnchorConfig.model_validate(
            {"kind": "git", "repo": str(self.work), "remote": str(self.bare), **extra}
        )


def git_remote(tmp: Path) -> GitRemote:
    bare, work = tmp / "remote.git", tmp / "record"
    bare.mkdir()
    git("init", "--quiet", "--bare", cwd=bare)
    git("clone", "--quiet", str(bare), str(work), cwd=tmp)
    return GitRemote(bare, work)


@dataclass
class FakeAnchorServer:
    """An HTTP anchor: ``mode`` "ok" (200 with a receipt), "slow" (answers after ``delay``
    seconds, past the client's timeout) or "fail" (503). Keeps every body it received."""

    mode: str = "ok"
    delay: float = 2.0
    received: list[bytes] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def handle(self, method: str, path: str, _query: object, body: bytes) -> Reply:
        with self.lock:
            self.received.append(body)
        receipt = (200, {"Content-Type": "application/json"}, b'{"receipt": "r-1"}')
        if self.mode == "slow":
            raise FakeSlow(self.delay, receipt)
        if self.mode == "fail":
            return 503, {}, b"down for maintenance"
        return receipt

    @contextmanager
    def serve(self) -> Iterator[str]:
        with serve_body_handler(self.handle) as url:
            yield url

    @staticmethod
    def config(url: str, **extra: object) -> HttpAnchorConfig:
        return HttpAnchorConfig.model_validate(
            {"kind": "http", "url": url, "timeout_seconds": 0.3, "max_attempts": 2, **extra}
        )

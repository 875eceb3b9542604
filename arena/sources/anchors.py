"""Anchors: the outside places a commitment is sent to, so its time is attested by someone
other than the operator's database (config ``record.anchors``).

* :class:`FileAnchor`: appends the commitment's line to ``<path>/commitments.jsonl``;
* :class:`GitAnchor`: appends it to ``commitments.jsonl`` in a local repository's working tree,
  commits it and pushes ``HEAD`` to the configured remote and branch (``git``, no shell, each
  call under a timeout);
* :class:`HttpAnchor`: POSTs it as JSON with a timeout and retries; the answer is the receipt.

Each :meth:`~Anchor.deliver` returns a receipt (a commit id, an HTTP answer) or raises
:class:`arena.errors.AnchorError` saying why. Delivering the same line again is harmless: a
file that already holds it is left as it is, a commit already made is only pushed. Anchors
know nothing of storage: :mod:`arena.jobs.commit` keeps each delivery's state.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

import httpx

from arena.config import COMMITMENTS_FILE, SIGNING_KEY_ENV, AnchorConfig
from arena.config import FileAnchor as FileAnchorConfig
from arena.config import GitAnchor as GitAnchorConfig
from arena.config import HttpAnchor as HttpAnchorConfig
from arena.errors import AnchorError, TransientError
from arena.masking import mask_url
from arena.sources.http import (
    USER_AGENT,
    error_text,
    retry_after_seconds,
    tls_context,
    with_retries,
)
from arena.sources.retry import Backoff, RetryPolicy

log = logging.getLogger(__name__)

ANSWER_CHARS = 500
"""How much of an anchor's answer (an HTTP body) is kept."""
ERROR_CHARS = 300
ANCHOR_BACKOFF = Backoff(first=1.0, cap=30.0)
SECRET_VARIABLES = (SIGNING_KEY_ENV, "OPENROUTER_API_KEY", "ARENA_ADMIN_TOKEN")
"""Never handed to a child process (a git hook could read them)."""
GIT_IDENTITY = ("-c", "user.name=arena", "-c", "user.email=arena@localhost")
"""The committer of a repository that names none."""


class Anchor(Protocol):
    """One configured anchor."""

    @property
    def name(self) -> str:
        """``kind:target``, as ``anchor_deliveries.anchor`` stores it (no credential)."""
        ...

    def deliver(self, line: str, seq: int) -> str | None:
        """Send one commitment (``line``: its canonical JSON; ``seq``: its sequence number);
        the receipt, or :class:`AnchorError`."""
        ...

    def close(self) -> None: ...


def masked_text(text: str) -> str:
    """``text`` with every URL in it masked (:func:`arena.masking.mask_url`)."""
    return re.sub(r"\S+://\S+", lambda found: mask_url(found.group(0)), text)


def append_line(path: Path, line: str) -> bool:
    """Append ``line`` to the file at ``path`` (created) unless it holds that line already;
    whether it was appended."""
    try:
        if path.exists():
            with path.open(encoding="utf-8") as lines:
                if any(held.rstrip("\n") == line for held in lines):
                    return False
        with path.open("a", encoding="utf-8") as out:
            out.write(line + "\n")
            out.flush()
            os.fsync(out.fileno())
    except OSError as exc:
        raise AnchorError(f"cannot write {path}: {exc.strerror or exc}") from None
    return True


class FileAnchor:
    def __init__(self, config: FileAnchorConfig) -> None:
        self.name = config.name
        self.directory = config.path

    def deliver(self, line: str, seq: int) -> str | None:
        if not self.directory.is_dir():
            raise AnchorError(f"{self.directory} is not a directory")
        append_line(self.directory / COMMITMENTS_FILE, line)
        return None

    def close(self) -> None:
        pass


def child_environment() -> dict[str, str]:
    """The environment of a child process: arena's secrets left out, never a prompt."""
    env = {k: v for k, v in os.environ.items() if k not in SECRET_VARIABLES}
    env["GIT_TERMINAL_PROMPT"] = "0"
    return env


def git_reason(output: str) -> str:
    """What git said went wrong, in one line: the remote's own words, the rejected refs and
    git's errors (its progress and hints left out), URLs masked."""
    lines = [line.strip() for line in output.splitlines()]
    said = [line for line in lines if line.startswith(("remote:", "!", "error:", "fatal:"))]
    text = " / ".join(said or [line for line in lines if line][-3:])
    return masked_text(text)[:ERROR_CHARS] or "no message"


class GitAnchor:
    def __init__(self, config: GitAnchorConfig) -> None:
        self.name = config.name
        self.repo = config.repo
        self.remote = config.remote
        self.branch = config.branch
        self.timeout = config.timeout_seconds

    def _git(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        command = ["git", "-C", str(self.repo), *args]
        try:
            done = subprocess.run(  # no shell; the config validated the arguments
                command,
                capture_output=True,
                text=True,
                timeout=self.timeout,
                env=child_environment(),
                stdin=subprocess.DEVNULL,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise AnchorError(f"git {args[0]} timed out after {self.timeout:g} s") from None
        except OSError as exc:
            raise AnchorError(f"cannot run git: {exc.strerror or exc}") from None
        if check and done.returncode != 0:
            reason = git_reason(done.stderr or done.stdout)
            raise AnchorError(f"git {args[0]} failed (exit {done.returncode}): {reason}")
        return done

    def deliver(self, line: str, seq: int) -> str | None:
        if not (self.repo / ".git").exists():
            raise AnchorError(f"{self.repo} is not the working tree of a git repository")
        append_line(self.repo / COMMITMENTS_FILE, line)
        self._git("add", "--", COMMITMENTS_FILE)
        staged = self._git("diff", "--cached", "--quiet", "--", COMMITMENTS_FILE, check=False)
        if staged.returncode != 0:  # not committed yet (a commit that failed is made again)
            named = self._git("config", "user.email", check=False).stdout.strip()
            identity = () if named else GIT_IDENTITY
            message = f"arena commitment {seq}"
            self._git(*identity, "commit", "--quiet", "-m", message, "--", COMMITMENTS_FILE)
        self._git("push", "--quiet", self.remote, f"HEAD:refs/heads/{self.branch}")
        return self._git("rev-parse", "HEAD").stdout.strip()

    def close(self) -> None:
        pass


class HttpAnchor:
    def __init__(
        self,
        config: HttpAnchorConfig,
        *,
        http: httpx.Client | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.name = config.name
        self.url = str(config.url)
        self._owns_http = http is None
        self._http = http or httpx.Client(
            timeout=config.timeout_seconds, headers={"User-Agent": USER_AGENT}, verify=tls_context()
        )
        self.policy = RetryPolicy(
            config.max_attempts,
            ANCHOR_BACKOFF,
            (TransientError, httpx.TransportError),
            sleep=sleep,
            service="anchor",
        )

    def _post(self, line: str) -> str:
        response = self._http.post(
            self.url, content=line.encode("utf-8"), headers={"Content-Type": "application/json"}
        )
        status = response.status_code
        if status == 429 or status >= 500:
            raise TransientError(
                f"HTTP {status}{error_text(response)}", retry_after_seconds(response.headers)
            )
        if status >= 400:
            raise AnchorError(f"refused: HTTP {status}{error_text(response)}")
        return f"HTTP {status}: {response.text[:ANSWER_CHARS]}"

    def deliver(self, line: str, seq: int) -> str | None:
        return with_retries(
            lambda: self._post(line),
            self.policy,
            what=f"POST of commitment {seq}",
            log=log,
            failed=AnchorError,
        )

    def close(self) -> None:
        if self._owns_http:
            self._http.close()


def build_anchors(
    configs: Sequence[AnchorConfig], *, sleep: Callable[[float], None] = time.sleep
) -> list[Anchor]:
    """The anchors of ``record.anchors``, in their order (the caller closes them)."""
    anchors: list[Anchor] = []
    for config in configs:
        if isinstance(config, FileAnchorConfig):
            anchors.append(FileAnchor(config))
        elif isinstance(config, GitAnchorConfig):
            anchors.append(GitAnchor(config))
        else:
            anchors.append(HttpAnchor(config, sleep=sleep))
    return anchors

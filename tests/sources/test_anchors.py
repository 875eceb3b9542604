"""The anchors on their own: a file that gains one line per commitment, a git repository whose
remote receives it (or refuses it), an HTTP anchor that times out, fails or answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arena.config import FileAnchor as FileAnchorConfig
from arena.config import Settings
from arena.errors import AnchorError
from arena.sources.anchors import FileAnchor, GitAnchor, HttpAnchor, child_environment
from tests.sources.anchor_fakes import FakeAnchorServer, git, git_remote

LINE_1 = '{"count":1,"seq":1}'
LINE_2 = '{"count":1,"seq":2}'


def test_the_file_anchor_appends_each_commitment_once(tmp_path: Path) -> None:
    anchor = FileAnchor(FileAnchorConfig(kind="file", path=tmp_path))
    assert anchor.name == f"file:{tmp_path}"
    anchor.deliver(LINE_1, 1)
    anchor.deliver(LINE_2, 2)
    anchor.deliver(LINE_2, 2)  # a retry of a delivery that was made: nothing added
    assert (tmp_path / "commitments.jsonl").read_text() == f"{LINE_1}\n{LINE_2}\n"


def test_the_file_anchor_needs_its_directory(tmp_path: Path) -> None:
    anchor = FileAnchor(FileAnchorConfig(kind="file", path=tmp_path / "gone"))
    with pytest.raises(AnchorError, match="is not a directory"):
        anchor.deliver(LINE_1, 1)


def test_the_git_anchor_commits_and_pushes_to_its_remote(tmp_path: Path) -> None:
    remote = git_remote(tmp_path)
    anchor = GitAnchor(remote.config())
    receipt = anchor.deliver(LINE_1, 1)
    assert remote.pushed_lines() == [LINE_1]
    assert receipt == git("rev-parse", "main", cwd=remote.bare).strip()
    anchor.deliver(LINE_2, 2)
    assert remote.pushed_lines() == [LINE_1, LINE_2]
    log = git("log", "--format=%s", "main", cwd=remote.bare).splitlines()
    assert log == ["arena commitment 2", "arena commitment 1"]


def test_a_refused_push_is_pushed_again_without_a_second_commit(tmp_path: Path) -> None:
    remote = git_remote(tmp_path)
    remote.refuse()
    anchor = GitAnchor(remote.config())
    with pytest.raises(AnchorError) as refused:
        anchor.deliver(LINE_1, 1)
    assert "git push failed" in str(refused.value)
    assert "pushes are refused here" in str(refused.value)
    assert remote.pushed_lines() == []
    remote.refuse(False)
    anchor.deliver(LINE_1, 1)  # the retry: the commit exists, only the push is made
    assert remote.pushed_lines() == [LINE_1]
    assert git("rev-list", "--count", "main", cwd=remote.bare).strip() == "1"


def test_git_never_sees_the_signing_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARENA_SIGNING_KEY", "-----BEGIN PRIVATE KEY-----")
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-secret")
    env = child_environment()
    assert "ARENA_SIGNING_KEY" not in env and "OPENROUTER_API_KEY" not in env
    assert env["GIT_TERMINAL_PROMPT"] == "0"


def test_a_git_remote_that_is_an_option_is_refused() -> None:
    with pytest.raises(ValueError, match="remote"):
        Settings(record={"anchors": [{"kind": "git", "repo": "/r", "remote": "--upload-pack=x"}]})


def test_the_http_anchor_posts_the_commitment_and_keeps_the_answer() -> None:
    server = FakeAnchorServer()
    with server.serve() as url:
        anchor = HttpAnchor(FakeAnchorServer.config(url + "/commit"), sleep=lambda _s: None)
        try:
            answer = anchor.deliver(LINE_1, 1)
        finally:
            anchor.close()
    assert answer == 'HTTP 200: {"receipt": "r-1"}'
    assert [json.loads(body) for body in server.received] == [json.loads(LINE_1)]


@pytest.mark.parametrize(
    ("mode", "reason"), [("slow", "timeout (ReadTimeout)"), ("fail", "HTTP 503")]
)
def test_an_http_anchor_that_times_out_or_fails_is_retried_then_reported(
    mode: str, reason: str
) -> None:
    server = FakeAnchorServer(mode=mode)
    pauses: list[float] = []
    with server.serve() as url:
        anchor = HttpAnchor(FakeAnchorServer.config(url), sleep=pauses.append)
        try:
            with pytest.raises(AnchorError) as failed:
                anchor.deliver(LINE_1, 1)
        finally:
            anchor.close()
    assert reason in str(failed.value)
    assert "after 2 attempts" in str(failed.value)
    assert len(server.received) == 2 and len(pauses) == 1


def test_an_http_anchor_that_refuses_is_not_retried() -> None:
    def refuse(*_args: object) -> tuple[int, dict[str, str], bytes]:
        return 403, {"Content-Type": "application/json"}, b'{"error": "who are you"}'

    from arena.fakes.serving import serve_body_handler

    with serve_body_handler(refuse) as url:
        anchor = HttpAnchor(FakeAnchorServer.config(url), sleep=lambda _s: None)
        try:
            with pytest.raises(AnchorError, match="refused: HTTP 403: who are you"):
                anchor.deliver(LINE_1, 1)
        finally:
            anchor.close()


def test_the_http_anchor_is_named_without_its_credentials() -> None:
    config = FakeAnchorServer.config("https://user:pw@stamp.example/c?token=abc")
    assert HttpAnchor(config).name == "http:https://user:***@stamp.example/c?token=***"

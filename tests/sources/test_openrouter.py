"""The OpenRouter provider (real openai SDK) against the fake OpenRouter, over both transports."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from arena.config import OpenRouter, OpenRouterFamily, Settings, WebSearch
from arena.domain.storable import CUT_MARKER
from arena.errors import (
    FatalProviderError,
    PermanentProviderError,
    ProviderCallError,
    TransientProviderError,
    UnknownModelPriceError,
)
from arena.fakes.openrouter import (
    FakeOpenRouter,
    answer,
    chatty,
    empty_content,
    error_in_200,
    fenced,
    http_error,
    length_exhausted,
    null_choices,
    null_choices_rate_limited,
    null_content,
    odd_fields,
    reasoning_only,
    searched,
    slow,
)
from arena.sources.openrouter import ModelPrice, OpenRouterProvider
from arena.sources.openrouter_replies import classify_completion, has_json_object
from arena.sources.providers import ModelReply, ModelRequest, call_with_retries
from tests.helpers import free_port, python_prints

KEY = "sk-or-v1-test-secret-0123456789abcdef"
MODEL = "openai/gpt-4o-mini"
HOLD = {"action": "HOLD", "reasoning": "nothing compelling"}
FAMILIES = [
    OpenRouterFamily(
        id="pinned",
        display_name="Pinned",
        openrouter_id=MODEL,
        provider_routing={"order": ["OpenAI"], "allow_fallbacks": False},
        reasoning={"effort": "low"},
    ),
    OpenRouterFamily(id="plain", display_name="Plain", openrouter_id=MODEL),
    OpenRouterFamily(
        id="searching",
        display_name="Searching",
        openrouter_id=MODEL,
        web_search=WebSearch(engine="parallel", max_results=2, search_context_size="high"),
    ),
]


class FakeClock:
    """A monotonic clock that the fake server's sleep advances."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


@dataclass
class Rig:
    fake: FakeOpenRouter
    provider: OpenRouterProvider
    clock: FakeClock
    transport: str


def make_settings(base_url: str, timeout: float = 5.0) -> Settings:
    return Settings(
        openrouter=OpenRouter(base_url=base_url, timeout_seconds=timeout, max_attempts=4),
        families=FAMILIES,
    )


MakeRig = Callable[..., Rig]


@pytest.fixture(params=["mock", "server"])
def make_rig(request: pytest.FixtureRequest) -> Iterator[MakeRig]:
    """Build a provider wired to a fake, in-process (MockTransport) or over real HTTP."""
    with ExitStack() as stack:

        def build(timeout: float = 5.0, **fake_kwargs: Any) -> Rig:
            clock = FakeClock()
            fake = FakeOpenRouter(KEY, sleep=clock.sleep, **fake_kwargs)
            if request.param == "mock":
                base_url = "https://openrouter.test/api/v1"
                http: httpx.Client | None = stack.enter_context(
                    httpx.Client(transport=fake.transport())
                )
            else:
                base_url = stack.enter_context(fake.serve())
                # plain http: skip loading CA certificates (~80 ms a client)
                http = stack.enter_context(httpx.Client(verify=False))
            provider = OpenRouterProvider(
                make_settings(base_url, timeout), SecretStr(KEY), http, monotonic=clock
            )
            stack.callback(provider.close)
            return Rig(fake, provider, clock, request.param)

        yield build


@pytest.fixture
def rig(make_rig: MakeRig) -> Rig:
    return make_rig()


def req(family: str = "plain", model: str = MODEL, max_tokens: int = 300) -> ModelRequest:
    """A request of ``family``, with the web search settings its agents would have frozen."""
    messages = [
        {"role": "system", "content": "You are a forecaster."},
        {"role": "user", "content": "Markets: ..."},
    ]
    search = getattr(next(f for f in FAMILIES if f.id == family), "web_search", None)
    frozen = None if search is None else search.model_dump(mode="json")
    return ModelRequest(family, model, messages, max_tokens, web_search=frozen)


def fail(rig: Rig, request: ModelRequest | None = None) -> ProviderCallError:
    with pytest.raises(ProviderCallError) as info:
        rig.provider.complete(request or req())
    return info.value


# -- successful calls ------------------------------------------------------------------------


def test_valid_answer_carries_metadata(rig: Rig) -> None:
    rig.fake.script(MODEL, answer(json.dumps(HOLD), provider="Azure"))
    reply = rig.provider.complete(req())

    body = rig.fake.chat_requests()[-1]
    assert json.loads(reply.content or "") == HOLD
    assert reply.finish_reason == "stop"
    assert reply.provider == "Azure"
    assert reply.model == MODEL
    assert reply.generation_id is not None
    assert reply.generation_id.startswith("gen-")
    assert reply.raw is not None
    assert reply.raw["id"] == reply.generation_id
    assert reply.prompt_tokens == reply.raw["usage"]["prompt_tokens"] > 0
    assert reply.completion_tokens == reply.raw["usage"]["completion_tokens"] > 0
    expected = Decimal("0.00000015") * reply.prompt_tokens + Decimal("0.0000006") * (
        reply.completion_tokens
    )
    assert reply.cost_usd == expected
    assert isinstance(reply.cost_usd, Decimal)
    assert reply.latency_ms == 0
    assert reply.content_from_reasoning is False
    assert body.json["model"] == MODEL


def test_odd_fields_keep_the_wrapped_answer_and_every_field_is_made_storable(rig: Rig) -> None:
    rig.fake.set_default(MODEL, answer(lambda messages: json.dumps(HOLD)))
    rig.fake.script(MODEL, odd_fields(rig.fake.default_for(MODEL)))
    reply = rig.provider.complete(req())

    assert json.loads(reply.content or "") == HOLD
    assert reply.provider == "P\ufffd" + "p" * 92 + CUT_MARKER
    assert reply.model is not None and len(reply.model) == 200
    assert reply.model.endswith(CUT_MARKER)
    assert reply.finish_reason == "stop_" + "s" * 21 + CUT_MARKER
    assert reply.generation_id is None  # 150 characters: dropped, never cut
    assert (reply.prompt_tokens, reply.completion_tokens, reply.cost_usd) == (None, None, None)
    assert reply.raw is not None and reply.raw["provider"] == "P\ufffd" + "p" * 148  # whole


def test_latency_is_measured(rig: Rig) -> None:
    rig.fake.script(MODEL, slow(0.25))
    if rig.transport == "mock":  # the in-process fake's pause moves the fake clock exactly
        assert rig.provider.complete(req()).latency_ms == 250
        return
    # The real server pauses in wall time: measured on the real clock, the latency is at least
    # the pause (a lower bound, which a busy machine cannot break; the upper bound is generous).
    settings = make_settings(str(rig.provider.settings.openrouter.base_url))
    with OpenRouterProvider(settings, SecretStr(KEY)) as provider:
        latency_ms = provider.complete(req()).latency_ms
    assert 250 <= latency_ms < 60_000


def test_request_headers_and_body(rig: Rig) -> None:
    rig.provider.complete(req("pinned", max_tokens=777))
    rig.provider.complete(req("plain"))
    pinned, plain = rig.fake.chat_requests()

    assert pinned.headers["authorization"] == f"Bearer {KEY}"
    assert pinned.headers["http-referer"] == "https://github.com/arena-benchmark/arena"
    assert pinned.headers["x-title"] == "arena"
    assert pinned.headers["x-openrouter-title"] == "arena"
    assert pinned.json["temperature"] == 0
    assert pinned.json["max_tokens"] == 777
    assert pinned.json["usage"] == {"include": True}
    assert pinned.json["provider"] == {"order": ["OpenAI"], "allow_fallbacks": False}
    assert pinned.json["reasoning"] == {"effort": "low"}
    assert pinned.json["messages"] == req().messages
    assert "provider" not in plain.json
    assert "reasoning" not in plain.json
    assert plain.json["max_tokens"] == 300
    assert rig.provider.request_payload(req("pinned", max_tokens=777)) == pinned.json


def test_callable_content_sees_the_messages(rig: Rig) -> None:
    seen: list[list[dict[str, Any]]] = []

    def respond(messages: list[dict[str, Any]]) -> str:
        seen.append(messages)
        return json.dumps({"action": "HOLD", "reasoning": messages[-1]["content"]})

    rig.fake.set_default(MODEL, answer(respond))
    reply = rig.provider.complete(req())
    assert seen == [req().messages]
    assert json.loads(reply.content or "")["reasoning"] == "Markets: ..."


@pytest.mark.parametrize("behaviour", [fenced(HOLD), chatty(HOLD)], ids=["fenced", "chatty"])
def test_fenced_and_chatty_content_is_returned_verbatim(rig: Rig, behaviour: Any) -> None:
    rig.fake.script(MODEL, behaviour)
    reply = rig.provider.complete(req())
    assert reply.content == behaviour.content
    assert has_json_object(reply.content or "")


def test_script_queue_then_model_default_then_global_default(rig: Rig) -> None:
    rig.fake.script(MODEL, answer("not json"), answer(json.dumps(HOLD)))
    rig.fake.set_default(MODEL, answer("still not json"))
    contents = [rig.provider.complete(req()).content for _ in range(3)]
    assert contents == ["not json", json.dumps(HOLD), "still not json"]
    rig.fake.add_model("other/model")
    other = rig.provider.complete(req(model="other/model"))
    assert json.loads(other.content or "")["action"] == "HOLD"


# -- HTTP errors -----------------------------------------------------------------------------

HTTP_CASES = [
    (400, PermanentProviderError),
    (401, FatalProviderError),
    (402, FatalProviderError),
    (403, PermanentProviderError),
    (404, PermanentProviderError),
    (408, TransientProviderError),
    (429, TransientProviderError),
    (502, TransientProviderError),
    (503, TransientProviderError),
]


@pytest.mark.parametrize(("status", "kind"), HTTP_CASES)
def test_http_errors_are_classified(rig: Rig, status: int, kind: type[ProviderCallError]) -> None:
    rig.fake.script(MODEL, http_error(status, metadata={"error_type": f"type_{status}"}))
    error = fail(rig)
    assert type(error) is kind
    assert error.status == status
    assert error.error_code == status
    assert error.error_type == f"type_{status}"
    assert error.reason == f"http_{status}"
    assert error.raw is not None
    assert error.raw["error"]["code"] == status
    assert error.message
    assert error.model == MODEL
    assert isinstance(error, FatalProviderError) == (status in (401, 402))


def test_http_error_details_are_kept(rig: Rig) -> None:
    rig.fake.script(MODEL, http_error(403), http_error(502))
    moderation = fail(rig)
    assert moderation.raw is not None
    assert moderation.raw["error"]["metadata"]["reasons"] == ["violence"]
    upstream = fail(rig)
    assert upstream.provider == "FakeProvider"
    assert "upstream unavailable" in upstream.message


def test_unknown_model_is_a_permanent_400(rig: Rig) -> None:
    error = fail(rig, req(model="nobody/nothing"))
    assert isinstance(error, PermanentProviderError)
    assert error.status == 400
    assert "not a valid model ID" in error.message


def test_wrong_key_is_fatal(rig: Rig) -> None:
    rig.fake.api_key = "sk-or-v1-another-key"
    error = fail(rig)
    assert isinstance(error, FatalProviderError)
    assert error.status == 401
    assert error.message == "No auth credentials found"


@pytest.mark.parametrize(("status", "header"), [(429, "7"), (503, "2.5")])
def test_retry_after_is_read(rig: Rig, status: int, header: str) -> None:
    rig.fake.script(MODEL, http_error(status, retry_after=header))
    error = fail(rig)
    assert isinstance(error, TransientProviderError)
    assert error.retry_after == float(header)


# -- errors inside HTTP 200 ------------------------------------------------------------------


def test_finish_reason_error_is_classified_by_its_code(rig: Rig) -> None:
    rig.fake.script(MODEL, error_in_200(502, "Upstream died"), error_in_200(400, "Bad input"))
    transient = fail(rig)
    assert isinstance(transient, TransientProviderError)
    assert transient.reason == "error_in_200"
    assert transient.status == 200
    assert transient.error_code == 502
    assert transient.message.startswith("Upstream died")
    assert transient.generation_id is not None
    assert transient.cost_usd is not None
    permanent = fail(rig)
    assert isinstance(permanent, PermanentProviderError)
    assert permanent.error_code == 400


def test_null_choices_with_an_error(rig: Rig) -> None:
    rig.fake.script(MODEL, null_choices_rate_limited("DeepInfra"))
    error = fail(rig)
    assert isinstance(error, TransientProviderError)
    assert error.reason == "error_in_200"
    assert error.error_code == 429
    assert error.provider == "DeepInfra"
    assert "Too Many Requests" in error.message
    assert error.generation_id is not None


def test_null_choices_without_an_error(rig: Rig) -> None:
    rig.fake.script(MODEL, null_choices())
    error = fail(rig)
    assert isinstance(error, TransientProviderError)
    assert error.reason == "null_choices"


@pytest.mark.parametrize("behaviour", [empty_content(), null_content()], ids=["empty", "null"])
def test_empty_content_is_a_transient_cold_start(rig: Rig, behaviour: Any) -> None:
    rig.fake.script(MODEL, behaviour)
    error = fail(rig)
    assert isinstance(error, TransientProviderError)
    assert error.reason == "empty_content"
    assert error.prompt_tokens is not None


def test_length_exhausted_is_permanent(rig: Rig) -> None:
    rig.fake.script(MODEL, length_exhausted())
    error = fail(rig, req(max_tokens=512))
    assert isinstance(error, PermanentProviderError)
    assert error.reason == "length_exhausted"
    assert "max_tokens" in error.message
    assert error.completion_tokens == 512
    assert error.cost_usd is not None
    assert error.cost_usd > 0


def test_reasoning_without_json_is_permanent(rig: Rig) -> None:
    rig.fake.script(MODEL, reasoning_only("I think the market is fair."))
    error = fail(rig)
    assert isinstance(error, PermanentProviderError)
    assert error.reason == "reasoning_only"


def test_reasoning_with_json_becomes_the_content(rig: Rig) -> None:
    text = f"Weighing it up. Final answer: {json.dumps(HOLD)}"
    rig.fake.script(MODEL, reasoning_only(text))
    reply = rig.provider.complete(req())
    assert reply.content == text
    assert reply.reasoning == text
    assert reply.content_from_reasoning is True


def test_unreadable_body_is_transient() -> None:
    with pytest.raises(TransientProviderError) as info:
        classify_completion(200, {"X-Generation-Id": "gen-1"}, "<html>oops</html>", 12)
    assert info.value.reason == "invalid_body"
    assert info.value.generation_id == "gen-1"
    assert info.value.latency_ms == 12


def test_content_parts_are_joined() -> None:
    parts = [{"type": "text", "text": '{"action": '}, {"type": "text", "text": '"HOLD"}'}]
    body = {"choices": [{"finish_reason": "stop", "message": {"content": parts}}]}
    reply = classify_completion(200, {}, json.dumps(body), 1)
    assert reply.content == '{"action": "HOLD"}'
    assert reply.cost_usd is None


def _searched_body(annotations: Any, usage: dict[str, Any] | None = None) -> str:
    message = {"content": '{"action": "HOLD"}', "annotations": annotations}
    return json.dumps({"choices": [{"finish_reason": "stop", "message": message}], "usage": usage})


def test_citations_are_read_from_url_citation_annotations_by_the_storable_rule() -> None:
    from arena.sources import openrouter_replies as replies

    def cited(url: Any, title: Any = "t", content: Any = "c") -> dict[str, Any]:
        return {"type": "url_citation", "url_citation": {"url": url, "title": title,
                                                          "content": content}}  # fmt: skip

    long_url = "https://example.org/" + "a" * replies.URL_CHARS
    annotations = [
        cited("https://example.org/a", "A\x00 title" + "t" * 600, "x" * 30_000),
        cited("HTTP://EXAMPLE.ORG/b", None, None),
        cited("javascript:alert(1)"),
        cited("data:text/html,hi"),
        cited("https://example.org/\ud800"),
        cited("https://example.org/a b"),
        cited(long_url),
        cited(42),
        {"type": "file", "file": {"url": "https://example.org/f"}},
        "not an annotation",
        {"type": "url_citation"},
    ]
    usage = {"cost": 0.02, "cost_details": {"web_search_cost": "0.004"}}
    reply = classify_completion(200, {}, _searched_body(annotations, usage), 1, searched=True)
    assert [c.url for c in reply.citations] == ["https://example.org/a", "HTTP://EXAMPLE.ORG/b"]
    first, second = reply.citations
    assert first.title == ("A\ufffd title" + "t" * 600)[: 500 - len(CUT_MARKER)] + CUT_MARKER
    assert first.content == "x" * (20_000 - len(CUT_MARKER)) + CUT_MARKER
    assert (second.title, second.content) == (None, None)
    assert reply.search_cost_usd == Decimal("0.004") and reply.cost_usd == Decimal("0.02")
    assert reply.search_note is None


def test_citations_are_capped_and_odd_annotations_cost_nothing_but_themselves() -> None:
    from arena.sources import openrouter_replies as replies

    many = [
        {"type": "url_citation", "url_citation": {"url": f"https://e.org/{i}"}}
        for i in range(replies.MAX_CITATIONS + 5)
    ]
    reply = classify_completion(200, {}, _searched_body(many), 1, searched=True)
    assert len(reply.citations) == replies.MAX_CITATIONS
    assert reply.citations[-1].url == f"https://e.org/{replies.MAX_CITATIONS - 1}"
    for odd in ({"url_citation": "x"}, None, "x", {"type": "url_citation", "url_citation": []}):
        odd_reply = classify_completion(200, {}, _searched_body(odd), 1, searched=True)
        assert odd_reply.citations == () and odd_reply.content == '{"action": "HOLD"}'
    bad_cost = {"cost_details": {"web_search_cost": "-1"}, "server_tool_use": "x"}
    odd_reply = classify_completion(200, {}, _searched_body([], bad_cost), 1, searched=True)
    assert odd_reply.search_cost_usd is None
    assert odd_reply.search_note == (
        "web search did not run (unavailable, or the model did not search)"
    )


def test_annotations_of_a_call_without_web_search_are_not_read() -> None:
    body = _searched_body(
        [{"type": "url_citation", "url_citation": {"url": "https://example.org/a"}}],
        {"cost_details": {"web_search_cost": "0.004"}},
    )
    reply = classify_completion(200, {}, body, 1)
    assert (reply.citations, reply.search_cost_usd, reply.search_note) == ((), None, None)


def test_the_citation_limits_are_the_citation_columns() -> None:
    from arena.sources import openrouter_replies as replies
    from arena.store import schema

    columns = schema.citations.c
    assert (columns.url.type.length, columns.title.type.length) == (
        replies.URL_CHARS,
        replies.TITLE_CHARS,
    )
    assert schema.decision_attempts.c.search_note.type.length == replies.SEARCH_NOTE_CHARS


def test_a_web_search_family_sends_the_server_tool(rig: Rig) -> None:
    rig.fake.script(MODEL, searched(answer(json.dumps(HOLD)), {"url": "https://e.org/x"}))
    reply = rig.provider.complete(req("searching"))
    [sent] = rig.fake.chat_requests(MODEL)
    assert sent.json["tools"] == [
        {
            "type": "openrouter:web_search",
            "parameters": {"engine": "parallel", "max_results": 2, "search_context_size": "high"},
        }
    ]
    assert sent.json["model"] == MODEL and ":online" not in sent.json["model"]
    assert "plugins" not in sent.json
    assert [c.url for c in reply.citations] == ["https://e.org/x"]
    assert reply.search_cost_usd == Decimal("0.004")


# -- timeouts and connection failures --------------------------------------------------------


def test_slow_answer_past_the_timeout_is_transient(make_rig: MakeRig) -> None:
    rig = make_rig(timeout=0.3)
    rig.fake.script(MODEL, slow(30))
    error = fail(rig)
    assert isinstance(error, TransientProviderError)
    assert error.reason == "timeout"


def test_connection_refused_is_transient() -> None:
    port = free_port()
    settings = make_settings(f"http://127.0.0.1:{port}/api/v1")
    with (
        OpenRouterProvider(settings, SecretStr(KEY)) as provider,
        pytest.raises(TransientProviderError) as info,
    ):
        provider.complete(req())
    assert info.value.reason == "connection"


# -- the retry loop --------------------------------------------------------------------------


def retry(rig: Rig, sleeps: list[float], seen: list[tuple[int, object]]) -> ModelReply:
    return call_with_retries(
        rig.provider,
        req(),
        max_attempts=rig.provider.settings.openrouter.max_attempts,
        on_attempt=lambda number, outcome: seen.append((number, outcome)),
        sleep=sleeps.append,
    )


def test_retries_honour_retry_after_and_report_every_attempt(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    rig.fake.script(
        MODEL,
        http_error(429, retry_after=7),
        http_error(503, retry_after="3"),
        empty_content(),
        answer(json.dumps(HOLD)),
    )
    sleeps: list[float] = []
    seen: list[tuple[int, object]] = []
    with caplog.at_level(logging.WARNING, logger="arena.sources.providers"):
        reply = retry(rig, sleeps, seen)

    assert json.loads(reply.content or "") == HOLD
    assert [number for number, _ in seen] == [1, 2, 3, 4]
    assert [getattr(o, "reason", "reply") for _, o in seen] == [
        "http_429", "http_503", "empty_content", "reply"]  # fmt: skip
    assert seen[-1][1] is reply
    assert sleeps[:2] == [7.0, 3.0]
    assert 0 < sleeps[2] <= 31
    assert len(rig.fake.chat_requests()) == 4
    assert caplog.text.count("retrying") == 3


def test_transient_failures_stop_after_max_attempts(rig: Rig) -> None:
    rig.fake.set_default(MODEL, http_error(502))
    sleeps: list[float] = []
    seen: list[tuple[int, object]] = []
    with pytest.raises(TransientProviderError) as info:
        retry(rig, sleeps, seen)
    assert info.value.status == 502
    assert len(rig.fake.chat_requests()) == 4
    assert len(seen) == 4
    assert len(sleeps) == 3
    assert all(0 < s <= 31 for s in sleeps)


@pytest.mark.parametrize("status", [400, 403, 404, 401, 402])
def test_no_retry_on_other_4xx(rig: Rig, status: int) -> None:
    rig.fake.script(MODEL, http_error(status), answer(json.dumps(HOLD)))
    sleeps: list[float] = []
    seen: list[tuple[int, object]] = []
    with pytest.raises(ProviderCallError) as info:
        retry(rig, sleeps, seen)
    assert info.value.status == status
    assert isinstance(info.value, FatalProviderError) == (status in (401, 402))
    assert sleeps == []
    assert len(seen) == 1
    assert len(rig.fake.chat_requests()) == 1


def test_complete_with_retries_uses_the_settings(make_rig: MakeRig) -> None:
    rig = make_rig()
    rig.provider.sleep = rig.clock.sleep
    rig.fake.set_default(MODEL, http_error(408))
    seen: list[tuple[int, object]] = []
    with pytest.raises(TransientProviderError):
        rig.provider.complete_with_retries(req(), lambda n, o: seen.append((n, o)))
    assert [n for n, _ in seen] == [1, 2, 3, 4]
    assert len(rig.clock.slept) == 3


def test_retry_after_is_capped() -> None:
    calls: list[int] = []

    class Limited:
        def complete(self, request: ModelRequest) -> ModelReply:
            calls.append(1)
            if len(calls) == 1:
                raise TransientProviderError("busy", reason="http_429", retry_after=3600)
            return ModelReply("{}", None, "stop", None, None, None, None, None, None, 0, None)

    sleeps: list[float] = []
    call_with_retries(Limited(), req(), max_attempts=2, sleep=sleeps.append, max_retry_after=60)
    assert sleeps == [60]


# -- secrets ---------------------------------------------------------------------------------


def test_the_key_never_leaks(rig: Rig, caplog: pytest.LogCaptureFixture) -> None:
    rig.fake.script(MODEL, http_error(429, retry_after=0), answer(json.dumps(HOLD)))
    rig.fake.script(MODEL, http_error(402), error_in_200(), reasoning_only("no json"))
    outcomes: list[object] = []
    with caplog.at_level(logging.DEBUG):
        reply = call_with_retries(
            rig.provider, req("pinned"), max_attempts=3, sleep=lambda _: None,
            on_attempt=lambda _, o: outcomes.append(o))  # fmt: skip
        for _ in range(3):
            outcomes.append(fail(rig))
        rig.provider.fetch_model_pricing()
    assert reply in outcomes
    dumped = [repr(o) + repr(getattr(o, "as_dict", lambda: None)()) for o in outcomes]
    assert KEY not in caplog.text
    assert all(KEY not in text for text in dumped)
    assert KEY not in repr(rig.provider)
    assert "openrouter reply" in caplog.text
    assert "openrouter failure" in caplog.text


def test_empty_key_is_refused() -> None:
    from arena.errors import ConfigError

    with pytest.raises(ConfigError):
        OpenRouterProvider(make_settings("https://openrouter.test/api/v1"), SecretStr(""))


# -- pricing, generation ---------------------------------------------------------


def test_pricing_and_worst_case_cost(rig: Rig) -> None:
    rig.fake.add_model("anthropic/claude-x", "0.000003", "0.000015", provider="Anthropic")
    prices = rig.provider.fetch_model_pricing()
    assert prices[MODEL] == ModelPrice(Decimal("0.00000015"), Decimal("0.0000006"))
    assert prices["anthropic/claude-x"] == (Decimal("0.000003"), Decimal("0.000015"))
    assert "openrouter/auto" not in prices  # negative (variable) prices are not usable
    cost = rig.provider.worst_case_cost("anthropic/claude-x", 48000, 16000)
    assert cost == Decimal("0.384")
    assert rig.provider.worst_case_cost(f"{MODEL}:nitro", 1000, 500) == Decimal("0.00045")
    with pytest.raises(UnknownModelPriceError) as info:
        rig.provider.worst_case_cost("nobody/nothing", 1, 1)
    assert info.value.model == "nobody/nothing"


def test_pricing_is_cached_until_the_ttl(rig: Rig) -> None:
    def model_calls() -> int:
        return sum(1 for r in rig.fake.requests if r.path.endswith("/models"))

    rig.provider.fetch_model_pricing()
    rig.fake.add_model("late/model")
    assert "late/model" not in rig.provider.fetch_model_pricing()
    assert model_calls() == 1
    rig.clock.now += 3601
    assert "late/model" in rig.provider.fetch_model_pricing()
    assert model_calls() == 2
    rig.provider.fetch_model_pricing(refresh=True)
    assert model_calls() == 3


def test_generation_is_404_then_available(rig: Rig) -> None:
    reply = rig.provider.complete(req())
    assert reply.generation_id is not None
    assert rig.provider.generation(reply.generation_id) is None
    assert rig.provider.generation(reply.generation_id) is None
    data = rig.provider.generation(reply.generation_id)
    assert data is not None
    assert data["id"] == reply.generation_id
    assert Decimal(str(data["total_cost"])) == reply.cost_usd
    assert rig.provider.generation("gen-unknown") is None


# -- the fake's pure handler -----------------------------------------------------------------


def test_fake_handler_shapes() -> None:
    fake = FakeOpenRouter("k")
    chat = "/api/v1/chat/completions"
    status, _, body = fake.handle("POST", chat, {}, b"{}")
    assert (status, json.loads(body)["error"]["message"]) == (401, "No auth credentials found")
    auth = {"Authorization": "Bearer k"}
    status, _, body = fake.handle("POST", chat, auth, b'{"model": "openai/gpt-4o-mini"}')
    assert status == 400
    request = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 9}
    status, headers, body = fake.handle("POST", chat, auth, json.dumps(request).encode())
    answer_body = json.loads(body)
    assert status == 200
    assert headers["X-Generation-Id"] == answer_body["id"]
    assert answer_body["choices"][0]["message"]["role"] == "assistant"
    assert set(answer_body["usage"]) >= {"prompt_tokens", "completion_tokens", "cost"}
    assert fake.handle("GET", "/models", {}, b"")[0] == 200  # public, like the real one
    assert fake.handle("GET", "/api/v1/generation?id=x", {}, b"")[0] == 401  # needs the key
    assert fake.handle("GET", "/api/v1/nothing", auth, b"")[0] == 404
    assert [r.path for r in fake.requests][:3] == [chat, chat, chat]
    assert fake.requests[2].json == request
    assert fake.chat_requests(MODEL)[0].headers["authorization"] == "Bearer k"


def test_the_sdk_loads_in_the_background_not_at_start_up() -> None:
    """Issue 27's start-up: the OpenAI SDK (0.3 s of imports) is not loaded with the command;
    a decision run starts loading it on a thread while it syncs markets and freezes its
    universe, and the first request finds it loaded."""
    code = (
        "import sys, threading, arena.cli, arena.runtime, arena.cli.decide\n"
        "print('openai' in sys.modules)\n"
        "from arena.sources.openrouter import load_sdk_in_background\n"
        "load_sdk_in_background()\n"
        "[t.join() for t in threading.enumerate() if t.name == 'load-openai']\n"
        "print('openai' in sys.modules, 'openai.resources.chat.completions' in sys.modules)\n"
    )
    # the chat completions too, which the SDK would load at the first request
    assert python_prints(code) == ["False", "True True"]

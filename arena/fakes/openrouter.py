"""A faithful fake of the OpenRouter API, scriptable per model, for tests and the demo.

Implements ``POST /chat/completions``, ``GET /models`` and ``GET /generation?id=``
(with or without the ``/api/v1`` prefix), shaped like ``openrouter-api.md``, including every
failure mode listed there. Each model has a queue of :class:`Behaviour` (consumed one per
completion) and a default; :func:`answer`, :func:`http_error`, :func:`error_in_200` and the other
factories build them (malformed-then-valid: ``script(model, answer("oops"), answer(valid))``;
odd reply fields: ``script(model, odd_fields(fake.default_for(model)))``;
never-valid: ``set_default(model, answer("oops"))``). Every request received is recorded in
:attr:`FakeOpenRouter.requests`.

The core is a pure handler, :meth:`FakeOpenRouter.handle`, exposed two ways: in-process with
:meth:`FakeOpenRouter.transport` (an ``httpx.MockTransport``; a delay past the client's read
timeout raises ``httpx.ReadTimeout``) and as a real HTTP server on 127.0.0.1 with
:meth:`FakeOpenRouter.serve` (a delay is a real pause before answering). The behaviours and
their factories live in :mod:`arena.fakes.openrouter_script` and are re-exported here.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from http.server import ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx

from arena.fakes.openrouter_script import (
    DEFAULT_SEARCH,
    ERROR_MESSAGES,
    Behaviour,
    Search,
    answer,
    chatty,
    empty_content,
    error_in_200,
    fenced,
    http_error,
    length_exhausted,
    no_results,
    null_choices,
    null_choices_rate_limited,
    null_content,
    odd_fields,
    reasoning_only,
    search_unavailable,
    searched,
    slow,
    with_fields,
)
from arena.fakes.serving import LocalHandler

Reply = tuple[int, dict[str, str], bytes]

__all__ = [
    "Behaviour",
    "FakeOpenRouter",
    "RecordedRequest",
    "Search",
    "answer",
    "chatty",
    "empty_content",
    "error_in_200",
    "fenced",
    "http_error",
    "length_exhausted",
    "no_results",
    "null_choices",
    "null_choices_rate_limited",
    "null_content",
    "odd_fields",
    "reasoning_only",
    "search_unavailable",
    "searched",
    "slow",
    "with_fields",
]


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the fake received it (header names lower-cased)."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    json: Any


@dataclass
class _Model:
    prompt_price: Decimal
    completion_price: Decimal
    provider: str
    queue: deque[Behaviour] = field(default_factory=deque)
    default: Behaviour | None = None


@dataclass
class _Generation:
    data: dict[str, Any]
    polls: int = 0


class FakeOpenRouter:
    """The fake server's state: models, scripts, generations, credit and recorded requests."""

    def __init__(
        self,
        api_key: str = "sk-or-v1-fake-test-key",
        *,
        default: Behaviour | None = None,
        generation_not_ready_polls: int = 2,
        credit_limit: Decimal | None = Decimal(100),
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.api_key = api_key
        self.default = default or answer('{"action": "HOLD", "reasoning": "fake default"}')
        self.generation_not_ready_polls = generation_not_ready_polls
        self.credit_limit = credit_limit
        self.usage = Decimal(0)
        self.requests: list[RecordedRequest] = []
        self._sleep = sleep
        self._models: dict[str, _Model] = {}
        self._generations: dict[str, _Generation] = {}
        self._completions = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self.add_model("openai/gpt-4o-mini", "0.00000015", "0.0000006", provider="OpenAI")

    def add_model(
        self,
        model_id: str,
        prompt_price: str = "0.000001",
        completion_price: str = "0.000002",
        *,
        provider: str = "FakeProvider",
    ) -> None:
        """List a model in ``/models`` with these USD-per-token prices."""
        with self._lock:
            self._models[model_id] = _Model(
                Decimal(prompt_price), Decimal(completion_price), provider
            )

    def script(self, model_id: str, *behaviours: Behaviour) -> None:
        """Queue behaviours for the next completions of ``model_id`` (listing it if needed)."""
        if model_id not in self._models:
            self.add_model(model_id)
        with self._lock:
            self._models[model_id].queue.extend(behaviours)

    def set_default(self, model_id: str, behaviour: Behaviour) -> None:
        """What ``model_id`` answers once its queue is empty (e.g. never-valid content)."""
        if model_id not in self._models:
            self.add_model(model_id)
        with self._lock:
            self._models[model_id].default = behaviour

    def default_for(self, model_id: str) -> Behaviour:
        """What ``model_id`` answers when nothing is queued (to wrap, e.g. in ``odd_fields``)."""
        with self._lock:
            model = self._models.get(model_id)
            return (model.default if model else None) or self.default

    def chat_requests(self, model: str | None = None) -> list[RecordedRequest]:
        """Recorded chat completion requests, optionally for one model."""
        return [
            r
            for r in list(self.requests)
            if r.path.endswith("/chat/completions")
            and (model is None or (isinstance(r.json, dict) and r.json.get("model") == model))
        ]

    # -- the pure handler ------------------------------------------------------------------

    def handle(self, method: str, path: str, headers: dict[str, str], body: bytes) -> Reply:
        """Answer one request: ``(status, headers, body bytes)``, after any scripted delay."""
        delay, reply = self.dispatch(method, path, headers, body)
        if delay > 0:
            self._sleep(delay)
        return reply

    def dispatch(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[float, Reply]:
        """Like :meth:`handle` but returns the delay instead of waiting it out."""
        parts = urlsplit(path)
        route = parts.path.removeprefix("/api/v1").rstrip("/")
        lowered = {k.lower(): v for k, v in headers.items()}
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = None
        with self._lock:
            self.requests.append(
                RecordedRequest(method, parts.path, dict(parse_qsl(parts.query)), lowered, parsed)
            )
        if method == "GET" and route == "/models":
            return 0.0, self._models_list()
        if not self._authorised(lowered):
            return 0.0, _error(401, ERROR_MESSAGES[401])
        if method == "POST" and route == "/chat/completions":
            return self._chat(parsed)
        if method == "GET" and route == "/generation":
            return 0.0, self._generation(dict(parse_qsl(parts.query)).get("id", ""))
        return 0.0, _error(404, f"Not found: {method} {parts.path}")

    def _authorised(self, headers: dict[str, str]) -> bool:
        return headers.get("authorization") == f"Bearer {self.api_key}"

    def _chat(self, request: Any) -> tuple[float, Reply]:
        if not isinstance(request, dict) or not isinstance(request.get("messages"), list):
            return 0.0, _error(400, 'Input required: specify "messages"')
        model_id = str(request.get("model") or "")
        with self._lock:
            model = self._models.get(model_id)
            if model is None:
                return 0.0, _error(400, f"{model_id} {ERROR_MESSAGES[400]}")
            behaviour = model.queue.popleft() if model.queue else model.default or self.default
        if behaviour.kind == "http_error":
            extra = {"Retry-After": behaviour.retry_after} if behaviour.retry_after else {}
            message = behaviour.message or ERROR_MESSAGES.get(behaviour.status, "Error")
            if behaviour.status == 400 and behaviour.message is None:
                message = f"{model_id} {message}"
            return behaviour.delay, _error(behaviour.status, message, behaviour.metadata, extra)
        return behaviour.delay, self._completion(request, model_id, model, behaviour)

    def _completion(
        self, request: dict[str, Any], model_id: str, model: _Model, behaviour: Behaviour
    ) -> Reply:
        with self._lock:
            self._completions += 1
            number = self._completions
        created = 1747412345 + number
        gen_id = f"gen-{created}-{hashlib.sha1(str(number).encode()).hexdigest()[:20]}"
        provider = behaviour.provider or model.provider
        headers = {"X-Generation-Id": gen_id}
        if behaviour.kind == "null_choices":
            body: dict[str, Any] = {
                "id": gen_id,
                "model": model_id,
                "provider": provider,
                "object": "chat.completion",
                "created": created,
                "choices": None,
            }
            if behaviour.error is not None:
                body["error"] = behaviour.error
            return 200, headers, json.dumps(body).encode()
        messages = request["messages"]
        content = behaviour.content
        if callable(content):
            content = content(messages)
        prompt_text = "".join(str(m.get("content") or "") for m in messages if isinstance(m, dict))
        prompt_tokens = max(1, len(prompt_text) // 4)
        completion_tokens = max(1, (len(content or "") + len(behaviour.reasoning or "")) // 4)
        if behaviour.finish_reason == "length":
            completion_tokens = int(request.get("max_tokens") or completion_tokens)
        cost = prompt_tokens * model.prompt_price + completion_tokens * model.completion_price
        choice: dict[str, Any] = {
            "index": 0,
            "logprobs": None,
            "finish_reason": behaviour.finish_reason,
            "native_finish_reason": behaviour.finish_reason,
            "message": {
                "role": "assistant",
                "refusal": None,
                "reasoning": behaviour.reasoning,
                "content": content,
            },
        }
        if behaviour.kind == "error_in_200":
            choice["error"] = {
                **(behaviour.error or {}),
                "message": behaviour.message,
                "metadata": behaviour.metadata or {},
            }
            choice["message"]["content"] = ""
        usage: dict[str, Any] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "cost": float(cost),
            "is_byok": False,
            "prompt_tokens_details": {"cached_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": len(behaviour.reasoning or "") // 4},
        }
        if _has_web_search(request):
            search = behaviour.search or DEFAULT_SEARCH
            search_cost = Decimal(search.cost)
            cost += search_cost
            usage["cost"] = float(cost)
            usage["cost_details"] = {"web_search_cost": float(search_cost)}
            usage["server_tool_use"] = {"web_search_requests": search.searches}
            if search.citations:
                choice["message"]["annotations"] = _annotations(search, content or "")
        fields = dict(behaviour.fields or {})
        usage.update(fields.pop("usage", None) or {})
        body = {
            "id": gen_id,
            "provider": provider,
            "model": model_id,
            "object": "chat.completion",
            "created": created,
            "system_fingerprint": "fp_fake",
            "choices": [choice],
            "usage": usage,
            **fields,
        }
        headers.update(behaviour.headers or {})
        with self._lock:
            self.usage += cost
            self._generations[gen_id] = _Generation(
                {
                    "id": gen_id,
                    "total_cost": float(cost),
                    "model": model_id,
                    "provider_name": provider,
                    "latency": 250 + int(behaviour.delay * 1000),
                    "generation_time": 200,
                    "tokens_prompt": prompt_tokens,
                    "tokens_completion": completion_tokens,
                    "finish_reason": behaviour.finish_reason,
                    "cancelled": False,
                }
            )
        return 200, headers, json.dumps(body).encode()

    def _generation(self, gen_id: str) -> Reply:
        with self._lock:
            generation = self._generations.get(gen_id)
            if generation is not None:
                generation.polls += 1
        if generation is None or generation.polls <= self.generation_not_ready_polls:
            return _error(404, f"Generation {gen_id} not found")
        return _json(200, {"data": generation.data})

    def _models_list(self) -> Reply:
        with self._lock:
            models = dict(self._models)
        data = [
            {
                "id": model_id,
                "name": model_id.split("/")[-1],
                "context_length": 128000,
                "pricing": {
                    "prompt": str(m.prompt_price),
                    "completion": str(m.completion_price),
                    "request": "0",
                    "image": "0",
                },
                "supported_parameters": ["max_tokens", "temperature", "reasoning", "seed"],
                "top_provider": {
                    "context_length": 128000,
                    "max_completion_tokens": 16384,
                    "is_moderated": False,
                },
            }
            for model_id, m in models.items()
        ]
        data.append(
            {
                "id": "openrouter/auto",
                "name": "Auto Router",
                "context_length": 2000000,
                "pricing": {"prompt": "-1", "completion": "-1"},
            }
        )
        return _json(200, {"data": data})

    # -- the two transports ----------------------------------------------------------------

    def transport(self) -> httpx.MockTransport:
        """In-process transport; a delay past the request's read timeout raises ReadTimeout."""

        def handler(request: httpx.Request) -> httpx.Response:
            path = request.url.raw_path.decode("ascii")
            delay, (status, headers, body) = self.dispatch(
                request.method, path, dict(request.headers), request.read()
            )
            read_timeout = (request.extensions.get("timeout") or {}).get("read")
            if delay > 0 and read_timeout is not None and delay >= read_timeout:
                raise httpx.ReadTimeout("fake OpenRouter: read timed out", request=request)
            if delay > 0:
                self._sleep(delay)
            return httpx.Response(status, headers=headers, content=body)

        return httpx.MockTransport(handler)

    @contextmanager
    def serve(self) -> Iterator[str]:
        """Run a real HTTP server on 127.0.0.1 (ephemeral port); yields its ``/api/v1`` URL."""
        fake = self

        class Handler(LocalHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                delay, (status, headers, payload) = fake.dispatch(
                    self.command, self.path, dict(self.headers.items()), body
                )
                if delay > 0 and fake._stopping.wait(delay):
                    return
                try:
                    self.send_response(status)
                    for name, value in {
                        **headers,
                        "Content-Type": "application/json",
                        "Content-Length": str(len(payload)),
                    }.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout); nothing to do

            def do_GET(self) -> None:
                self._answer()

            def do_POST(self) -> None:
                self._answer()

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        self._stopping.clear()
        thread = threading.Thread(
            target=server.serve_forever, args=(0.01,), name="fake-openrouter", daemon=True
        )
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}/api/v1"
        finally:
            self._stopping.set()
            server.shutdown()
            server.server_close()
            thread.join(timeout=5)


def _has_web_search(request: dict[str, Any]) -> bool:
    tools = request.get("tools")
    return isinstance(tools, list) and any(
        isinstance(t, dict) and t.get("type") == "openrouter:web_search" for t in tools
    )


def _annotations(search: Search, content: str) -> list[dict[str, Any]]:
    """OpenRouter's ``url_citation`` annotations (every citation spans the whole content)."""
    return [
        {
            "type": "url_citation",
            "url_citation": {**cited, "start_index": 0, "end_index": len(content)},
        }
        for cited in search.citations
    ]


def _json(status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> Reply:
    return (
        status,
        {"Content-Type": "application/json", **(headers or {})},
        json.dumps(body).encode(),
    )


def _error(
    status: int,
    message: str,
    metadata: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> Reply:
    error: dict[str, Any] = {"code": status, "message": message}
    if metadata:
        error["metadata"] = metadata
    return _json(status, {"error": error, "user_id": "user_fake"}, headers)

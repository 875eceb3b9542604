"""The example outside agent (a family of ``kind: agent``): a small FastAPI app.

``examples/outside_agent/app.py`` re-exports it (run it there with ``AGENT_SECRET=... uvicorn
app:app --port 8700``); it lives in the package so that ``arena demo`` can serve it from an
installed wheel, which holds no ``examples/``. It imports nothing of arena's: an agent needs
only the contract (the JSON Schema arena serves at ``/api/v1/agent-schema``) and the secret.

It checks every request's signature (``X-Arena-Signature: sha256=<hex HMAC-SHA256 of
"<X-Arena-Timestamp>." + body>``, under its secret) and refuses a bad or stale one with 401.
Then it answers with one simple rule (its strategy):

* ``hold`` (the default): HOLD every week;
* ``favourite``: the minimum bet on the favourite side of the first binary market it does
  not hold yet, else HOLD.

Under methodology v2 it also forecasts every panel market at its price, and states each
bet's probability (the favourite's price).

:data:`app` reads the secret and the strategy from ``AGENT_SECRET`` and ``AGENT_STRATEGY`` at
each request; :func:`make_app` takes them as arguments instead.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import time
from typing import Any

from fastapi import FastAPI, HTTPException, Request

MAX_SKEW_SECONDS = 300  # a request signed longer ago than this is refused (a replay)


def verify(secret: bytes, timestamp: str, body: bytes, signature: str) -> bool:
    """Whether ``signature`` signs ``body`` at ``timestamp`` under ``secret``, and is recent."""
    if not timestamp.isdigit() or abs(time.time() - int(timestamp)) > MAX_SKEW_SECONDS:
        return False
    digest = hmac.new(secret, timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(f"sha256={digest}", signature)


def decide(request: dict[str, Any], strategy: str) -> dict[str, Any]:
    """The answer object: HOLD, or under ``favourite`` the minimum bet on a favourite. Under
    methodology v2 a bet also states its probability, and the answer forecasts every panel
    market at its price (a uniform forecast where it has none)."""
    answer: dict[str, Any] = {"action": "HOLD", "reasoning": "example agent: holding"}
    if strategy == "favourite":
        answer = _favourite(request) or answer
    if request["cohort"]["methodology"] == "v2":
        answer["forecasts"] = [_forecast(request, market) for market in request["panel"]]
    return answer


def _favourite(request: dict[str, Any]) -> dict[str, Any] | None:
    """The minimum bet on the favourite side of the first binary market not held yet."""
    held = {p["market_id"] for p in request["portfolio"]["positions"]}
    min_bet = request["rules"]["min_bet"]
    for market in request["universe"]:
        if market["market_id"] in held or market["sides"] != ["YES", "NO"]:
            continue
        if not market["prices"] or float(request["portfolio"]["cash"]) < float(min_bet):
            continue
        yes = float(market["prices"][market["outcomes"].index(_yes(market["outcomes"]))])
        bet: dict[str, Any] = {
            "market_id": market["market_id"],
            "side": "YES" if yes >= 0.5 else "NO",
            "amount": float(min_bet),
        }
        if request["cohort"]["methodology"] == "v2":
            bet["probability"] = _clipped(max(yes, 1 - yes))
        return {
            "action": "BET",
            "bets": [bet],
            "reasoning": "example agent: the minimum bet on the favourite",
        }
    return None


def _forecast(request: dict[str, Any], question: dict[str, Any]) -> dict[str, Any]:
    """A panel market forecast at its prices in the universe (uniform when not there)."""
    outcomes = question["outcomes"]
    market = next((m for m in request["universe"] if m["market_id"] == question["market_id"]), None)
    prices = [float(p) for p in (market or {}).get("prices") or []]
    if len(prices) != len(outcomes) or sum(prices) <= 0:
        prices = [1.0] * len(outcomes)
    shares = [p / sum(prices) for p in prices]
    if [name.lower() for name in outcomes] == ["yes", "no"]:
        return {"market_id": question["market_id"], "probability": _clipped(shares[0])}
    return {
        "market_id": question["market_id"],
        "probabilities": {name: round(p, 4) for name, p in zip(outcomes, shares, strict=True)},
    }


def _clipped(probability: float) -> float:
    return round(min(0.99, max(0.01, probability)), 3)


def _yes(outcomes: list[str]) -> str:
    return next(name for name in outcomes if name.lower() == "yes")


def make_app(secret: bytes | None = None, strategy: str | None = None) -> FastAPI:
    """The agent's app, answering ``POST /decide``: under ``secret`` with ``strategy``, or
    (each None) under ``AGENT_SECRET`` with ``AGENT_STRATEGY`` as the environment holds them
    at each request."""
    agent = FastAPI(title="arena example outside agent")

    @agent.post("/decide")
    async def decide_route(request: Request) -> dict[str, Any]:
        body = await request.body()
        key = secret if secret is not None else os.environ.get("AGENT_SECRET", "").encode()
        timestamp = request.headers.get("x-arena-timestamp", "")
        signature = request.headers.get("x-arena-signature", "")
        if not key or not verify(key, timestamp, body, signature):
            raise HTTPException(status_code=401, detail="bad signature")
        payload = json.loads(body)
        rule = strategy or os.environ.get("AGENT_STRATEGY", "hold")
        return {
            "schema_version": 1,
            "decision_id": payload["decision_id"],
            "answer": decide(payload, rule),
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0},
        }

    return agent


app = make_app()

"""An example outside agent for arena (a family of ``kind: agent``): a small FastAPI app.

Run it with ``AGENT_SECRET=... uvicorn app:app --port 8700`` in this directory, and point a
family at it::

    families:
      - id: my-agent
        kind: agent
        endpoint: http://127.0.0.1:8700/decide
        secret_env: MY_AGENT_SECRET      # arena's environment holds the same secret

It checks every request's signature (``X-Arena-Signature: sha256=<hex HMAC-SHA256 of
"<X-Arena-Timestamp>." + body>``, under ``AGENT_SECRET``) and refuses a bad or stale one with
401. Then it answers with one simple rule (``AGENT_STRATEGY``):

* ``hold`` (the default): HOLD every week;
* ``favourite``: the minimum bet on the favourite side of the first binary market it does
  not hold yet, else HOLD.

The contract is the JSON Schema arena serves at ``/api/v1/agent-schema``. This file imports
nothing of arena's: an agent needs only the schema and the secret.
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

app = FastAPI(title="arena example outside agent")


def verify(secret: bytes, timestamp: str, body: bytes, signature: str) -> bool:
    """Whether ``signature`` signs ``body`` at ``timestamp`` under ``secret``, and is recent."""
    if not timestamp.isdigit() or abs(time.time() - int(timestamp)) > MAX_SKEW_SECONDS:
        return False
    digest = hmac.new(secret, timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(f"sha256={digest}", signature)


def decide(request: dict[str, Any], strategy: str) -> dict[str, Any]:
    """The answer object: HOLD, or under ``favourite`` the minimum bet on a favourite."""
    if strategy == "favourite":
        held = {p["market_id"] for p in request["portfolio"]["positions"]}
        min_bet = request["rules"]["min_bet"]
        for market in request["universe"]:
            if market["market_id"] in held or market["sides"] != ["YES", "NO"]:
                continue
            if not market["prices"] or float(request["portfolio"]["cash"]) < float(min_bet):
                continue
            yes = float(market["prices"][market["outcomes"].index(_yes(market["outcomes"]))])
            return {
                "action": "BET",
                "bets": [
                    {
                        "market_id": market["market_id"],
                        "side": "YES" if yes >= 0.5 else "NO",
                        "amount": float(min_bet),
                    }
                ],
                "reasoning": "example agent: the minimum bet on the favourite",
            }
    return {"action": "HOLD", "reasoning": "example agent: holding"}


def _yes(outcomes: list[str]) -> str:
    return next(name for name in outcomes if name.lower() == "yes")


@app.post("/decide")
async def decide_route(request: Request) -> dict[str, Any]:
    body = await request.body()
    secret = os.environ.get("AGENT_SECRET", "").encode()
    timestamp = request.headers.get("x-arena-timestamp", "")
    signature = request.headers.get("x-arena-signature", "")
    if not secret or not verify(secret, timestamp, body, signature):
        raise HTTPException(status_code=401, detail="bad signature")
    payload = json.loads(body)
    answer = decide(payload, os.environ.get("AGENT_STRATEGY", "hold"))
    return {
        "schema_version": 1,
        "decision_id": payload["decision_id"],
        "answer": answer,
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0},
    }

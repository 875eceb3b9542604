"""The demo's outside agent (issue 27, part 5): the example app served on a free port of
127.0.0.1 while the demo runs, under a secret that exists in the environment only meanwhile;
it answers a request signed with that secret and refuses any other, and it is gone after."""

from __future__ import annotations

import json
import os
import time

import httpx
import pytest
from pydantic import SecretStr

from arena.cli.demo import DEMO_AGENT_SECRET_ENV, demo_agent
from arena.sources.outside_agent import SIGNATURE_HEADER, TIMESTAMP_HEADER, signature


def _post(endpoint: str, secret: str) -> httpx.Response:
    request = {
        "decision_id": 7,
        "universe": [],  # nothing to bet on
        "portfolio": {"cash": "100.00", "positions": []},
        "rules": {"min_bet": "10.00"},
        "cohort": {"methodology": "v2"},
        "panel": [{"market_id": "9", "question": "Rain?", "outcomes": ["Yes", "No"]}],
    }
    body = json.dumps(request).encode()
    stamp = str(int(time.time()))
    headers = {
        TIMESTAMP_HEADER: stamp,
        SIGNATURE_HEADER: signature(SecretStr(secret), stamp, body),
        "Content-Type": "application/json",
    }
    with httpx.Client(trust_env=False) as client:
        return client.post(endpoint, content=body, headers=headers)


@pytest.mark.parametrize("earlier", [None, "kept"])
def test_the_demo_agent_serves_locally_under_a_secret_for_the_demo_only(
    monkeypatch: pytest.MonkeyPatch, earlier: str | None
) -> None:
    if earlier is None:
        monkeypatch.delenv(DEMO_AGENT_SECRET_ENV, raising=False)
    else:
        monkeypatch.setenv(DEMO_AGENT_SECRET_ENV, earlier)
    with demo_agent() as endpoint:
        assert endpoint.startswith("http://127.0.0.1:") and endpoint.endswith("/decide")
        secret = os.environ[DEMO_AGENT_SECRET_ENV]
        assert len(secret) >= 32 and secret != earlier
        answered = _post(endpoint, secret)
        assert answered.status_code == 200, answered.text
        assert answered.json()["decision_id"] == 7
        assert answered.json()["answer"] == {
            "action": "HOLD",
            "reasoning": "example agent: holding",
            "forecasts": [{"market_id": "9", "probability": 0.5}],  # v2: no price, uniform
        }
        assert _post(endpoint, "another secret").status_code == 401
    assert os.environ.get(DEMO_AGENT_SECRET_ENV) == earlier
    with pytest.raises(httpx.ConnectError):
        _post(endpoint, secret)

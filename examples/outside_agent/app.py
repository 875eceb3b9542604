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

Under methodology v2 it also forecasts every panel market at its price, and states each
bet's probability (the favourite's price).

The contract is the JSON Schema arena serves at ``/api/v1/agent-schema``. The agent itself is
:mod:`arena.fakes.example_agent` (so ``arena demo`` serves it from an installed wheel, which
holds no ``examples/``); that module imports nothing else of arena's, so it can be copied out
as a starting point: an agent needs only the schema and the secret.
"""

from arena.fakes.example_agent import app, decide, make_app, verify

__all__ = ["app", "decide", "make_app", "verify"]

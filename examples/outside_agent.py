#!/usr/bin/env python3
"""A minimal outside agent for agorabench (standard library only).

It answers every decision with values the action's JSON schema allows, drawn at random (seeded
by the game, role, decision and attempt, so a replayed game gets the same answers). Replace
``decide`` with your own agent; the protocol is in docs/outside-agents.md.

    python examples/outside_agent.py --port 8123               # then, in a study file:
    # [[models]]
    # name = "mine"
    # spec = "http/http://127.0.0.1:8123/act"

With ``--key-env MY_AGENT_KEY`` it refuses (HTTP 401) requests without
``Authorization: Bearer <the value of MY_AGENT_KEY>``. It prints one line when it listens:
``listening on http://HOST:PORT/act`` (``--port 0`` takes a free port).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def pick(prop: dict[str, Any], schema: dict[str, Any], rng: random.Random) -> Any:
    """A random value of one JSON-schema property: an option, a number within its bounds, a
    boolean or a short text."""
    if "$ref" in prop:  # a nested model or an enumeration kept under $defs
        prop = schema.get("$defs", {}).get(prop["$ref"].rsplit("/", 1)[-1], {})
    if "enum" in prop:
        return rng.choice(prop["enum"])
    if "const" in prop:
        return prop["const"]
    for option in prop.get("anyOf", []):
        if option.get("type") != "null":
            return pick(option, schema, rng)
    kind = prop.get("type")
    low = prop.get("minimum", prop.get("exclusiveMinimum", 0))
    high = prop.get("maximum", prop.get("exclusiveMaximum", low + 10))
    if kind == "integer":
        return rng.randint(math.ceil(low), math.floor(high))
    if kind == "number":
        return round(rng.uniform(low, high), 2)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "object":
        return {name: pick(p, schema, rng) for name, p in prop.get("properties", {}).items()}
    return rng.choice(["Fine by me.", "Let us keep it fair.", "I will take my chances."])


def decide(request: dict[str, Any]) -> dict[str, Any]:
    """The answer to one decision: an ``action`` object with the schema's fields, and a short
    ``response`` text kept with the turn."""
    rng = random.Random(f"{request['game_id']}:{request['role']}:{request['decision']}:{request['attempt']}")
    schema = request["action_schema"]
    action = {name: pick(prop, schema, rng) for name, prop in schema.get("properties", {}).items()}
    seen = request.get("observation") or {}
    if {"alice_gain", "bob_gain"} <= action.keys() and isinstance(seen.get("money"), (int, float)):
        # what the observation tells helps: a split must add up to the money (action_rules says so)
        mine = round(rng.uniform(0.3, 0.7) * seen["money"], 2)
        action.update(alice_gain=mine, bob_gain=round(seen["money"] - mine, 2))
    return {"action": action, "response": f"Random choice for decision {request['decision']} of {request['role']}."}


class Handler(BaseHTTPRequestHandler):
    """POST /act: one decision in, one answer out (JSON both ways)."""

    key: str | None = None

    def do_POST(self) -> None:  # noqa: N802 - the name http.server calls
        if self.key is not None and self.headers.get("Authorization") != f"Bearer {self.key}":
            return self._send(401, {"error": "missing or wrong key"})
        try:
            request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            answer = decide(request)
        except (ValueError, KeyError, TypeError) as exc:
            return self._send(400, {"error": f"cannot read the request: {exc}"})
        self._send(200, answer)

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:  # quiet: one line per request is too many
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8123)
    parser.add_argument("--key-env", help="environment variable holding the key requests must carry")
    args = parser.parse_args()
    Handler.key = os.environ[args.key_env] if args.key_env else None
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    print(f"listening on http://{args.host}:{server.server_address[1]}/act", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()

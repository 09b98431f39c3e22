"""Outside agents (``http/URL``): a program of the researcher's own takes a seat and is asked for
each decision over HTTP (docs/outside-agents.md). Everything here is real: the command line as
a subprocess, agents on 127.0.0.1 (the shipped example agent as its own process, and a test
agent whose behaviour each URL path chooses), SQLite databases read back."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator

import pytest

from agorabench import families
from agorabench.core.study import ModelEntry, StudyError, load_study, parse_model_spec
from agorabench.core.table import TIMEOUT
from agorabench.models.spec import parse_spec, split_url
from agorabench.store.store import Store
from support.helpers import ROOT, free_port, run_agora
from support.studies import study_toml

EXAMPLE = ROOT / "examples" / "outside_agent.py"
KEY = "agent-key-0123456789abcdef"


@pytest.fixture
def example_agent() -> Iterator[Any]:
    """Start the shipped example agent (its own process, ``--port 0``); returns its URL."""
    procs: list[subprocess.Popen] = []

    def start(key_env: str | None = None, env: dict[str, str] | None = None) -> str:
        args = [sys.executable, str(EXAMPLE), "--port", "0"] + (["--key-env", key_env] if key_env else [])
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})})
        procs.append(proc)
        line = proc.stdout.readline().strip() if proc.stdout else ""
        assert line.startswith("listening on http://127.0.0.1:"), (line, proc.stderr.read() if proc.poll() is not None and proc.stderr else "")
        return line.removeprefix("listening on ")

    yield start
    for proc in procs:
        proc.terminate()
        proc.wait(timeout=10)


def _answer(request: dict[str, Any]) -> dict[str, Any]:
    """A valid action from the schema alone: the first option, the smallest number, a short
    text; a split of the observed money when the action is one (GLEE bargaining)."""
    action: dict[str, Any] = {}
    for name, prop in request["action_schema"].get("properties", {}).items():
        if "enum" in prop:
            action[name] = prop["enum"][0]
        elif prop.get("type") in ("integer", "number"):
            action[name] = prop.get("minimum", 0)
        elif prop.get("type") == "boolean":
            action[name] = False
        else:
            action[name] = "fine"
    if "alice_gain" in action:
        action.update(alice_gain=request["observation"]["money"] / 2, bob_gain=request["observation"]["money"] / 2)
    return {"action": action, "response": f"I am {request['role']}.", "reasoning": "thought it over"}


#: What the garbage agent answers, in turn: (status, body).
GARBAGE = [
    (200, b"this is not JSON at all"),
    (200, b"[1, 2, 3]"),
    (200, b'{"no_action": true}'),
    (200, b'{"action": {"offer": "lots", "decision": "maybe"}}'),
    (200, b'{"action": "accept"}'),
    (400, b'{"error": "I refuse this request"}'),
    (200, b""),
]


class Agents:
    """Outside agents on one loopback server; the URL path picks the behaviour: ``/good``
    answers valid actions, ``/garbage`` gives each decision the next kind of :data:`GARBAGE`, ``/slow`` answers
    after 1.5 s, ``/flaky`` answers 503 to each game's first request, ``/down`` always 503, and
    ``/locked`` 401 without the right key. Every request is kept (path, headers, body)."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str], dict[str, Any]]] = []
        self.lock = threading.Lock()
        self.garbage: dict[tuple[str, str, int], int] = {}
        self.flaky_seen: set[str] = set()
        agents = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                body = json.loads(raw)
                with agents.lock:
                    agents.requests.append((self.path, dict(self.headers), body))
                status, out, headers = agents.respond(self.path, self.headers, body)
                try:
                    self.send_response(status)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(out)))
                    self.end_headers()
                    self.wfile.write(out)
                except (BrokenPipeError, ConnectionResetError):  # the slow agent's caller gave up
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def respond(self, path: str, headers: Any, body: dict[str, Any]) -> tuple[int, bytes, dict[str, str]]:
        good = json.dumps(_answer(body)).encode()
        if path == "/garbage":  # each decision its own kind of garbage, every attempt alike
            with self.lock:
                kind = self.garbage.setdefault((body["game_id"], body["role"], body["decision"]), len(self.garbage))
            status, out = GARBAGE[kind % len(GARBAGE)]
            return status, out, {}
        if path == "/slow":
            time.sleep(1.5)
        if path == "/down":
            return 503, b'{"error": "down for maintenance"}', {"Retry-After": "0"}
        if path == "/flaky":
            with self.lock:
                first = body["game_id"] not in self.flaky_seen
                self.flaky_seen.add(body["game_id"])
            if first:
                return 503, b"busy", {"Retry-After": "0"}
        if path == "/locked" and headers.get("Authorization") != f"Bearer {KEY}":
            return 401, b'{"error": "who are you?"}', {}
        return 200, good, {}

    def __enter__(self) -> "Agents":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()

    def bodies(self, path: str) -> list[tuple[dict[str, str], dict[str, Any]]]:
        return [(h, b) for p, h, b in self.requests if p == path]


def _games(db: str, study: str) -> list[dict[str, Any]]:
    return Store(db, read_only=True).games(study)


def _turns(db: str, study: str) -> list[dict[str, Any]]:
    return Store(db, read_only=True).turns(study, messages=False)


# --- the example agent plays every registered game ------------------------------------------


def test_the_example_agent_plays_every_registered_game_to_the_end(example_agent, write_study, tmp_path):
    """The shipped example agent, requiring a key, sits in every seat of every registered game
    (the registry's games and quick configurations, as the conformance suite plays them): every
    game ends done, each with turns the agent answered validly, every invalid turn with its
    reason; the key travelled (the agent refuses requests without it)."""
    url = example_agent(key_env="EXAMPLE_AGENT_KEY", env={"EXAMPLE_AGENT_KEY": KEY})
    examples = families.examples()
    lines = ['name = "outside_all"', 'matchups = "same_model"']
    for game, config in examples.items():
        lines += ["", "[[parts]]", f"game = {json.dumps(game)}", "[parts.fixed]", *(f"{k} = {json.dumps(v)}" for k, v in config.items())]
    lines += ["", "[[models]]", 'name = "example"', f'spec = "http/{url}"', "timeout = 60", 'api_key_env = "EXAMPLE_AGENT_KEY"']
    path = write_study("\n".join(lines) + "\n")
    db = str(tmp_path / "all.db")
    res = run_agora("run", str(path), "--db", db, "--quiet", timeout=600, env={"EXAMPLE_AGENT_KEY": KEY})
    assert res.returncode == 0 and f"{len(examples)} played, 0 errors" in res.stdout, res.stdout + res.stderr
    games = _games(db, "outside_all")
    assert sorted(g["game"] for g in games) == sorted(examples)
    assert all(g["status"] == "done" and g["outcome"] is not None for g in games), [(g["game"], g["status"], g["error"]) for g in games]
    turns = _turns(db, "outside_all")
    for g in games:
        mine = [t for t in turns if t["game_id"] == g["id"]]
        assert any(t["valid"] for t in mine), (g["game"], [t["error"] for t in mine])
        assert all(t["raw"] for t in mine)
        assert all(t["error"] for t in mine if not t["valid"])
        # a valid answer is stored as the agent's words, then the action in the game's format
        assert all(t["raw"].startswith("Random choice for decision") for t in mine if t["valid"])
    # without the key the agent refuses: the games stop with the reason, the run says so
    path.write_text(path.read_text().replace('name = "outside_all"', 'name = "outside_nokey"').replace('api_key_env = "EXAMPLE_AGENT_KEY"\n', ""))
    res = run_agora("run", str(path), "--db", db, "--quiet", timeout=300)
    assert f"0 played, {len(examples)} errors" in res.stdout, res.stdout + res.stderr
    assert all("unauthorised (HTTP 401)" in (g["error"] or "") for g in _games(db, "outside_nokey"))


# --- what a request holds --------------------------------------------------------------------


def test_requests_carry_the_schema_the_key_and_nothing_the_role_may_not_know(write_study, tmp_path):
    """GLEE bargaining with incomplete information, Alice's money losing 20 % a round and
    Bob's 5 %: each request holds the role's messages, its observation, the action's schema and
    rule, the game, the decision and the attempt, and the key in the headers; Alice's requests
    never hold Bob's discount factor and Bob's never Alice's. With complete information the same
    field carries the other's factor (so the check above could fail)."""
    with Agents() as agents:
        for complete in (False, True):
            name = f"bargain_{complete}"
            text = study_toml(
                name,
                "glee.bargaining",
                matchups="same_model",
                fixed={"horizon": 2, "complete_info": complete, "delta_a": 0.8, "delta_b": 0.95},
                models=[{"name": "agent", "spec": f"http/{agents.url}/good", "api_key_env": "BARGAIN_KEY", "params": {"style": "even"}}],
            )
            res = run_agora("run", str(write_study(text, f"{name}.toml")), "--db", str(tmp_path / "b.db"), "--quiet", timeout=300, env={"BARGAIN_KEY": KEY})
            assert res.returncode == 0 and "1 played, 0 errors" in res.stdout, res.stdout + res.stderr
        sent = agents.bodies("/good")
    assert sent and all(h.get("Authorization") == f"Bearer {KEY}" and h.get("X-API-Key") == KEY for h, _ in sent)
    incomplete = [b for _, b in sent if b["observation"]["delta_other"] is None]
    complete = [b for _, b in sent if b["observation"]["delta_other"] is not None]
    assert incomplete and complete
    for _, body in sent:
        assert body["protocol"] == "agorabench.outside/1" and body["game"] == "glee.bargaining"
        assert body["role"] in ("alice", "bob") and body["decision"] >= 0 and body["attempt"] == 0 and body["error"] is None
        assert body["params"] == {"style": "even"} and body["time_limit"] == 120
        assert body["messages"][0]["role"] == "system" and body["messages"][-1]["role"] == "user"
        schema = body["action_schema"]
        if body["phase"] == "offer":
            assert set(schema["properties"]) == {"alice_gain", "bob_gain"} and "add up to $10,000" in body["action_rules"]
        else:
            assert schema["properties"]["decision"]["enum"] == ["accept", "reject"]
    for body in incomplete:
        own, other = (0.8, 0.95) if body["role"] == "alice" else (0.95, 0.8)
        assert body["observation"]["delta_self"] == own
        text = json.dumps(body)
        assert str(other) not in text and f"{round((1 - other) * 100)}% less" not in text, body["role"]
    for body in complete:
        assert body["observation"]["delta_other"] == (0.95 if body["role"] == "alice" else 0.8)
    # the answers were played: an even split offered and accepted; raw reply and reasoning kept
    db = str(tmp_path / "b.db")
    turns = _turns(db, "bargain_False")
    assert all(t["valid"] for t in turns) and turns[0]["raw"] == 'I am alice.\n\n{"alice_gain": 5000.0, "bob_gain": 5000.0}'
    assert turns[0]["reasoning"] == "thought it over"
    assert _games(db, "bargain_False")[0]["outcome"]["agreed"] is True


# --- failures are data; the study goes on ----------------------------------------------------


def test_garbage_timeouts_and_dead_agents_are_stored_and_the_study_goes_on(write_study, tmp_path):
    """Five agents play the ultimatum game in every ordered pair: a good one, one answering
    garbage (not JSON, not an object, no action, an action the rules refuse, HTTP 400, an empty
    body), a slow one (1.5 s against a 0.5 s time limit), a flaky one (503 before each game's
    first answer) and a dead one (always 503). Garbage is invalid turns with their reasons, re-asked
    and then replaced by the fallback; the slow agent's turns are timeouts, never re-asked; the
    flaky agent's games are played after retries; the dead agent's games fail with the reason
    and every other game is done."""
    with Agents() as agents:
        models = [
            {"name": "good", "spec": f"http/{agents.url}/good"},
            {"name": "garbage", "spec": f"http/{agents.url}/garbage"},
            {"name": "slow", "spec": f"http/{agents.url}/slow", "timeout": 0.5},
            {"name": "flaky", "spec": f"http/{agents.url}/flaky"},
            {"name": "down", "spec": f"http/{agents.url}/down", "max_attempts": 2},
        ]
        text = study_toml("failing", "ultimatum", matchups="ordered_pairs", fixed={"pie": 10, "rounds": 2}, models=models)
        db = str(tmp_path / "f.db")
        res = run_agora("run", str(write_study(text)), "--db", db, "--quiet", "--concurrency", "8", timeout=300)
        down_requests = len(agents.bodies("/down"))
        flaky_requests = len(agents.bodies("/flaky"))
    assert "20 games, 0 already done, 12 played, 8 errors" in res.stdout, res.stdout + res.stderr
    games = _games(db, "failing")
    assert len(games) == 20
    for g in games:
        if "down" in g["seats"].values():
            assert g["status"] == "error" and "HTTP 503" in g["error"] and "after 2 attempts" in g["error"], g["error"]
        else:
            assert g["status"] == "done", (g["seats"], g["error"])
    assert down_requests == 16  # two attempts for each of the dead agent's 8 games
    turns = _turns(db, "failing")
    seat = {g["id"]: g["seats"] for g in games}
    by = {name: [t for t in turns if seat[t["game_id"]][t["role"]] == name] for name in ("good", "garbage", "slow", "flaky")}
    assert by["good"] and all(t["valid"] for t in by["good"])
    assert by["flaky"] and all(t["valid"] for t in by["flaky"]) and flaky_requests > len(by["flaky"])
    assert by["garbage"] and not any(t["valid"] for t in by["garbage"])
    assert all(t["retries"] == 2 and t["error"] for t in by["garbage"])  # asked three times, then the fallback
    reasons = " | ".join(t["error"] for t in by["garbage"])
    for said in ("not JSON", "not an object", 'no "action"', "not a valid action", "HTTP 400", "was empty"):
        assert said in reasons, (said, reasons)
    assert by["slow"] and all(t["error"] == TIMEOUT and not t["valid"] and t["retries"] == 0 for t in by["slow"])
    assert all(t["latency"] < 1.4 for t in by["slow"])  # the time limit, not the agent, ended the move


def test_an_agent_invalid_too_often_stops_like_a_model(write_study, tmp_path):
    """``stop_after_invalid`` stops an outside agent as it stops a model: after that many invalid
    turns in a row its remaining games end as errors naming the reason."""
    with Agents() as agents:
        text = study_toml(
            "stopping", "ultimatum", matchups="ordered_pairs", repeats=4, stop_after_invalid=3,
            fixed={"pie": 10, "rounds": 1},
            models=[{"name": "good", "spec": f"http/{agents.url}/good"}, {"name": "garbage", "spec": f"http/{agents.url}/garbage"}],
        )
        db = str(tmp_path / "s.db")
        res = run_agora("run", str(write_study(text)), "--db", db, "--quiet", "--concurrency", "1", timeout=300)
    games = _games(db, "stopping")
    stopped = [g for g in games if g["status"] == "error"]
    assert stopped and all("turns in a row were invalid" in g["error"] for g in stopped), res.stdout + res.stderr
    assert len(stopped) < len(games)


# --- settings and specs ----------------------------------------------------------------------


def test_specs_and_entries_of_outside_agents_read_or_fail_in_one_line(write_study, tmp_path):
    spec = parse_spec("http/https://agents.example.org:8443/v2/act")
    assert (spec.kind, spec.name, spec.base_url) == ("outside", "https://agents.example.org:8443/v2/act", None)
    # the URL's own @ is part of it, and its credentials never print
    assert split_url("http/http://me:pw@127.0.0.1:9/act") == ("http/http://me:pw@127.0.0.1:9/act", None)
    assert "pw" not in str(parse_spec("http/http://me:pw@127.0.0.1:9/act"))
    # named by its URL (``--model``), it is shown to others as a neutral player, never as a URL
    assert parse_model_spec("http/http://127.0.0.1:9/act").is_outside and parse_model_spec("http/http://127.0.0.1:9/act").seat_label(1) == "Player B"
    entry = ModelEntry(name="a", spec="http/http://127.0.0.1:9/act")
    assert entry.is_outside and not entry.is_strategy and not entry.is_human and entry.seat_label(1) == "a"
    # the URL is the seat: another URL, another game id
    base = dict(name="outside_ids", game="ultimatum", fixed={"pie": 10, "rounds": 1}, matchups="same_model")
    ids = []
    for port in (9, 10):
        study = load_study(write_study(study_toml(**base, models=[{"name": "a", "spec": f"http/http://127.0.0.1:{port}/act"}])))
        ids.append({s.id for s in study.iter_specs()})
    assert ids[0] and ids[0].isdisjoint(ids[1])
    bad = {
        "http/http://": "not an http(s) URL with a host",
        "http/http://127.0.0.1:notaport/act": "not an http(s) URL with a host",
    }
    for text, said in bad.items():
        with pytest.raises(StudyError, match=re.escape(said)):
            parse_model_spec(text)
    for extra, said in (({"temperature": 0.5}, "temperature: not used by an outside agent"), ({"base_url": "http://127.0.0.1:9/v1"}, "leave base_url out")):
        path = write_study(study_toml(**base, models=[{"name": "a", "spec": "http/http://127.0.0.1:9/act", **extra}]))
        with pytest.raises(StudyError, match=said) as err:
            load_study(path)
        assert "\n" not in str(err.value)
    # a key variable named but unset: one line before anything is played
    path = write_study(study_toml(**base, models=[{"name": "a", "spec": "http/http://127.0.0.1:9/act", "api_key_env": "NO_SUCH_AGENT_KEY_VAR"}]))
    res = run_agora("run", str(path), "--db", str(tmp_path / "k.db"), "--quiet", timeout=120)
    assert res.returncode == 2 and "NO_SUCH_AGENT_KEY_VAR is not set" in res.stderr and "Traceback" not in res.stderr, res.stderr


def test_an_agent_nobody_answers_at_fails_its_games_with_the_reason(write_study, tmp_path):
    """No agent listening: each game is tried ``max_attempts`` times, then stored as an error
    that says the connection was refused; the scripted-only games of the study are done."""
    port = free_port()
    text = study_toml(
        "refused", "ultimatum", matchups="ordered_pairs", fixed={"pie": 10, "rounds": 1},
        models=[
            {"name": "gone", "spec": f"http/http://127.0.0.1:{port}/act", "max_attempts": 2},
            {"name": "fair", "spec": "strategy/fair"},
            {"name": "random", "spec": "strategy/random"},
        ],
    )
    db = str(tmp_path / "r.db")
    res = run_agora("run", str(write_study(text)), "--db", db, "--quiet", timeout=300)
    assert "6 games, 0 already done, 2 played, 4 errors" in res.stdout, res.stdout + res.stderr
    failed = [g for g in _games(db, "refused") if g["status"] == "error"]
    assert len(failed) == 4 and all("gone" in g["seats"].values() for g in failed) and all("connection refused (is the agent running?) (after 2 attempts)" in g["error"] for g in failed), failed

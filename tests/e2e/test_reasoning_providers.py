"""Reasoning models end to end, provider by provider: tiny GLEE bargaining and envy studies run
through the real command line against the loopback servers of ``tests/support/providers.py``
(OpenAI chat completions and Responses, Anthropic thinking, DeepSeek, vLLM with and without a
reasoning parser, Ollama, Gemini), then the server's record of every request and the store's
record of every turn are read back.

The servers answer a pure function of the conversation: :func:`final_answer`, after reasoning
that holds a different :func:`draft_answer`. So a test knows, for every turn, what the move must
be (the final answer, never the draft), and that the draft and the reasoning must never reach a
request or another player's prompt. Checked here, for each provider:

1. no call is refused and no request carries what the provider refuses (OpenAI reasoning: no
   ``max_tokens``, temperature or seed; Claude Opus 5: no temperature; no reasoning or draft in
   any message, no ``reasoning_content`` sent back);
2. every game is done and every model turn's action is the final answer to the prompt stored
   with the turn, which is the prompt that was sent;
3. no draft reaches any stored prompt;
4. the reasoning and its token count are stored per turn where the provider returns them (None,
   not 0, where it reports none; "" for Anthropic's omitted thinking);
5. a budget too small for the reasoning stops the model with one line saying what to raise, and
   none of its games is stored done;
6. under sampling every decision is its own call and its own cache entry; a replay from the
   cache makes no call and stores the same turns, ``--no-cache`` calls again;
7. a list of efforts seats the model once per effort, with game ids of their own, and each seat
   sends its effort;
8. a setting the provider refuses stops the model once, with the provider's message.

Each server is started once for the module (lazily, when a test first needs it), as the
provider's aiohttp application of ``tests/support/providers.py`` served on 127.0.0.1 by a thread
of this process (the same application its command line serves, without an interpreter each)."""

from __future__ import annotations

import json
import re
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agorabench.core.study import load_study
from agorabench.models.model import STOP_AFTER_SPENT
from agorabench.store.store import Store
from support.helpers import agora
from support.providers import _DRAFT_TEXTS, EFFORT_TOKENS, REJECTION, draft_answer, final_answer, make_app, plain_messages, server_stats
from support.studies import envy_points, model, paper_grid, scripted, study_toml
from support.thread_app import fake_openai_app, serving_app

# the SDK warns of the model claude-sonnet-4-5's end of life whenever a request names it
pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")

#: Reasoning tokens of a reply that names no effort (the servers' default effort).
DEFAULT_TOKENS = EFFORT_TOKENS["medium"]
#: Output tokens a reasoning model's request allows by default: max_tokens + the default budget.
DEFAULT_LIMIT = 256 + 16_000
#: A reasoning length no budget of the "tight" studies leaves room for.
LONG_THOUGHTS = 3000

#: The servers, by name: (provider, options). Started on first use, stopped after the module.
SERVERS: dict[str, tuple[str, dict[str, Any]]] = {
    "openai": ("openai", {}),
    "openai-tight": ("openai", {"reasoning_tokens": LONG_THOUGHTS}),
    "anthropic": ("anthropic", {}),
    "anthropic-omitted": ("anthropic", {"display": "omitted"}),
    "anthropic-tight": ("anthropic", {"reasoning_tokens": LONG_THOUGHTS}),
    "deepseek": ("deepseek", {}),
    "vllm": ("vllm", {}),
    "vllm-reasoning": ("vllm", {"field": "reasoning"}),
    "vllm-raw": ("vllm", {"raw_think": True}),
    "vllm-no-opener": ("vllm", {"raw_think": True, "no_opener": True}),
    "vllm-tight": ("vllm", {"reasoning_tokens": LONG_THOUGHTS}),
    "ollama": ("ollama", {}),
    "gemini": ("gemini", {}),
}

#: Words only a draft or a reasoning text holds (final answers never do).
DRAFT_MARKS = ("Draft:", "Drafted an answer", REJECTION, "options once more before settling", "A first guess.", *_DRAFT_TEXTS)


class Servers:
    """Base URLs (``.../v1``) of :data:`SERVERS`, each started the first time it is asked for
    (in a thread of this process: see :func:`support.thread_app.serving_app`)."""

    def __init__(self, stack: ExitStack) -> None:
        self.stack = stack
        self.urls: dict[str, str] = {}

    def __getitem__(self, name: str) -> str:
        if name not in self.urls:
            provider, opts = SERVERS[name]
            self.urls[name] = self.stack.enter_context(serving_app(make_app(provider, keep_bodies=5000, **opts), path="/v1"))
        return self.urls[name]


@pytest.fixture(scope="module")
def servers():
    with ExitStack() as stack:
        yield Servers(stack)


# ---------------------------------------------------------------------------------------------
# Running a study and reading back what happened


@dataclass
class Played:
    """One ``agora run``: its exit status and output, and what its server saw meanwhile."""

    rc: int
    out: str
    err: str
    db: Path
    requests: int  # chat requests (model listings not counted)
    statuses: dict[str, int]
    paths: list[str]
    bodies: list[dict[str, Any]]

    def lines(self) -> list[str]:
        """stderr's lines other than the notes given before a run."""
        return [line for line in self.err.splitlines() if line.strip() and not line.startswith("agora: note: ")]


def play(capsys, tmp_path: Path, url: str, text: str, *flags: str, name: str = "study", db: Path | None = None, concurrency: int = 4) -> Played:
    """Write ``text`` as a study file and run it through the command line (in this process)."""
    path = tmp_path / f"{name}.toml"
    path.write_text(text, encoding="utf-8")
    db = db or tmp_path / f"{name}.db"
    before = server_stats(url)
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet", "--concurrency", str(concurrency), *flags)
    after = server_stats(url, bodies=True)
    n = after["requests"] - before["requests"]
    assert n <= len(after["bodies"]), "the server kept too few bodies"
    statuses = {k: v - before["statuses"].get(k, 0) for k, v in after["statuses"].items() if v - before["statuses"].get(k, 0)}
    tail = slice(len(after["bodies"]) - n, None)
    return Played(rc, out, err, db, n, statuses, [e["path"] for e in after["log"][tail]], after["bodies"][tail])


def stored(db: Path, study: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(games, turns) of ``study``; each turn carries its game's seats as ``seats``."""
    store = Store(db)
    try:
        games = store.games(study)
        turns = store.turns(study)
    finally:
        store.dispose()
    seats = {g["id"]: g["seats"] for g in games}
    for t in turns:
        t["seats"] = seats[t["game_id"]]
    return games, turns


def conversation(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages of a request body, whichever API it was sent to (the Messages API's
    ``system``, the Responses API's ``instructions`` and ``input`` included)."""
    if "input" in body:
        items = body["input"] if isinstance(body["input"], list) else [{"role": "user", "content": body["input"]}]
        return ([{"role": "system", "content": body["instructions"]}] if body.get("instructions") else []) + items
    system = body.get("system")
    return ([{"role": "system", "content": system}] if system else []) + list(body.get("messages") or [])


def key(messages: list[dict[str, Any]]) -> str:
    """A conversation as the servers read it: text by role, whitespace and splits ignored."""
    return json.dumps([[m["role"], " ".join(m["content"].split())] for m in plain_messages(messages)])


def text_of(messages: list[dict[str, Any]]) -> str:
    return "\n".join(m["content"] for m in plain_messages(messages))


def fields(answer: str) -> dict[str, Any]:
    """The values of an answer in the servers' formats (a JSON object or a ``<response>`` block)."""
    answer = answer.strip()
    if answer.startswith("{"):
        return json.loads(answer)
    block = re.search(r"<response>(.*?)</response>", answer, re.S)
    assert block, answer
    return {k: v.strip() for k, v in re.findall(r"<(\w+)>(.*?)</\1>", block.group(1), re.S)}


def distinctive(draft: str) -> bool:
    """Whether a draft holds words no final answer holds (a short ``{"decision": ...}`` may
    rightly be another turn's final answer)."""
    return any(mark in draft for mark in DRAFT_MARKS)


def model_turns(turns: list[dict[str, Any]], names: set[str]) -> list[dict[str, Any]]:
    return [t for t in turns if t["seats"][t["role"]] in names]


def check_no_thoughts_sent(bodies: list[dict[str, Any]]) -> None:
    """No request carries reasoning: no thinking blocks, no ``reasoning_content`` or
    ``reasoning`` in a message, no draft or reasoning words in any message's text."""
    drafts = {d for d in (draft_answer(conversation(b)) for b in bodies) if distinctive(d)}
    for body in bodies:
        messages = conversation(body)
        for m in messages:
            assert not {"reasoning_content", "reasoning", "thinking"} & set(m), m
            if isinstance(m.get("content"), list):
                assert all(b.get("type") in ("text", "input_text") for b in m["content"]), m["content"]
        text = text_of(messages)
        leaked = [mark for mark in DRAFT_MARKS if mark in text] + [d for d in drafts if d in text]
        assert not leaked, leaked


def check_prompts_free_of_drafts(turns: list[dict[str, Any]]) -> None:
    """No stored prompt, of any player, holds a draft or reasoning words."""
    drafts = {d for d in (draft_answer(t["messages"]) for t in turns if t["raw"] is not None) if distinctive(d)}
    for t in turns:
        text = text_of(t["messages"])
        leaked = [mark for mark in DRAFT_MARKS if mark in text] + [d for d in drafts if d in text]
        assert not leaked, (t["game_id"], t["idx"], leaked)


def check_final_answers(turns: list[dict[str, Any]], sent: set[str]) -> None:
    """Every model turn is valid at once, its raw answer is the final answer to its stored
    prompt, its action that answer's values (never the draft's), and its prompt was sent."""
    assert turns
    for t in turns:
        where = (t["game_id"][:8], t["idx"], t["role"], t["phase"])
        final, draft = final_answer(t["messages"]), draft_answer(t["messages"])
        assert t["valid"] and t["retries"] == 0 and t["error"] is None, (where, t["error"], t["raw"])
        assert t["raw"] == final, (where, t["raw"], final)
        chosen = fields(final)
        assert all(t["action"][k] == v for k, v in chosen.items()), (where, t["action"], chosen)
        assert any(t["action"][k] != v for k, v in fields(draft).items()), (where, t["action"], draft)
        assert key(t["messages"]) in sent, where


# ---------------------------------------------------------------------------------------------
# The providers


@dataclass(frozen=True)
class Case:
    """One provider and model as a study names it, and what its requests and turns must show."""

    server: str
    spec: str  # PROVIDER/MODEL; the server's URL is added
    settings: dict[str, Any] = field(default_factory=dict)
    #: The route every request goes to.
    path: str = "/v1/chat/completions"
    #: Request fields no request may carry (what the provider refuses, or must not be sent).
    absent: tuple[str, ...] = ()
    #: Request fields every request carries, with these values.
    sent: dict[str, Any] = field(default_factory=dict)
    #: What each turn's stored reasoning is: "draft" (text holding the draft and its rejection),
    #: "" (hidden thinking kept as empty text) or None (the provider returns none).
    thoughts: str | None = "draft"
    #: Each turn's stored reasoning tokens (None: the provider reports none).
    tokens: int | None = None
    #: Whether the study is told before the run that its temperature of 0 is not sent / ignored.
    note: bool = False
    #: A warning the run ends with (a word of it), if any.
    warning: str | None = None

    @property
    def anthropic(self) -> bool:
        return self.spec.startswith("anthropic/")

    def entry(self, url: str, name: str = "r", **settings: Any) -> dict[str, Any]:
        """The model entry of a study: the model at the server ``url``, temperature 0."""
        base = url.removesuffix("/v1") if self.anthropic else url  # the Anthropic SDK adds /v1 itself
        return model(name, f"{self.spec}@{base}", temperature=0, **{**self.settings, **settings})


OPENAI_REFUSED = ("max_tokens", "temperature", "seed", "top_p")
PLAIN_SAMPLING = {"max_tokens": DEFAULT_LIMIT, "temperature": 0.0, "seed": 3}

CASES = {
    "openai-o3": Case("openai", "openai/o3", absent=OPENAI_REFUSED, sent={"max_completion_tokens": DEFAULT_LIMIT}, thoughts=None, tokens=DEFAULT_TOKENS, note=True),
    "openai-gpt-5-mini": Case("openai", "openai/gpt-5-mini", absent=OPENAI_REFUSED, sent={"max_completion_tokens": DEFAULT_LIMIT}, thoughts=None, tokens=DEFAULT_TOKENS, note=True),
    "openai-responses": Case(
        "openai", "openai/gpt-5-mini", {"transport": "responses"}, path="/v1/responses", absent=(*OPENAI_REFUSED, "reasoning_effort", "messages"),
        sent={"max_output_tokens": DEFAULT_LIMIT, "reasoning": {"summary": "auto"}, "store": False}, tokens=DEFAULT_TOKENS, note=True,
    ),
    "anthropic-opus-5": Case("anthropic", "anthropic/claude-opus-5", path="/v1/messages", absent=("temperature", "thinking", "top_k"), sent={"max_tokens": DEFAULT_LIMIT}, note=True),
    "anthropic-sonnet-thinking-on": Case(
        "anthropic", "anthropic/claude-sonnet-4-5", {"thinking": "on", "reasoning_budget": 2048}, path="/v1/messages", absent=("temperature", "top_k"),
        sent={"max_tokens": 256 + 2048, "thinking": {"type": "enabled", "budget_tokens": 2048}}, note=True,
    ),
    "anthropic-omitted": Case("anthropic-omitted", "anthropic/claude-opus-5", path="/v1/messages", absent=("temperature",), sent={"max_tokens": DEFAULT_LIMIT}, thoughts="", note=True),
    "deepseek-reasoner": Case("deepseek", "deepseek/deepseek-reasoner", absent=("reasoning_effort", "max_completion_tokens"), sent=PLAIN_SAMPLING, tokens=DEFAULT_TOKENS, note=True),
    "vllm-reasoning-content": Case("vllm", "vllm/Qwen/Qwen3-8B", absent=("max_completion_tokens",), sent=PLAIN_SAMPLING),
    "vllm-reasoning-field": Case("vllm-reasoning", "vllm/Qwen/Qwen3-8B", sent=PLAIN_SAMPLING),
    "vllm-raw-think": Case("vllm-raw", "vllm/Qwen/Qwen3-8B", sent=PLAIN_SAMPLING),
    "vllm-raw-think-no-opener": Case("vllm-no-opener", "vllm/Qwen/Qwen3-8B", sent=PLAIN_SAMPLING),
    "ollama-qwen3": Case("ollama", "ollama/qwen3", absent=("max_completion_tokens",), sent=PLAIN_SAMPLING),
    # Gemini returns no reasoning; its count is what total_tokens implies beyond completion_tokens
    "gemini-2.5-flash": Case("gemini", "gemini/gemini-2.5-flash", sent=PLAIN_SAMPLING, thoughts=None, tokens=DEFAULT_TOKENS, warning="completion_tokens"),
}


def bargaining(name: str, entries: list[dict[str, Any]], **settings: Any) -> str:
    """GLEE bargaining, the model against itself: 2 configurations of 2 rounds, offers with
    messages (so an offer's draft holds words no final answer does)."""
    fixed = {"horizon": 2, "money": 100, "messages": True, "delta_b": 0.9, **settings.pop("fixed", {})}
    return study_toml(name, "glee.bargaining", matchups="same_model", repeats=1, seed=3, grid=settings.pop("grid", {"delta_a": [0.8, 0.95]}), fixed=fixed, models=entries, **settings)


def envy(name: str, entry: dict[str, Any], moves: tuple[str, ...] = ("A", "D")) -> str:
    """Envy point allocation (XML answers with a reason): the model and a self-maximiser in
    both orders, one matrix and status, ``moves`` as the peer's moves; the model plays focal in
    ``len(moves)`` games of 3 turns and is the passive peer in as many."""
    grid = paper_grid(matrix=["M1"], peer_status=["leading"], margin=["marginal"], peer_move=list(moves))
    return envy_points(name, [entry, scripted("self-max")], seed=3, repeats=1, grid=grid)


STUDIES = {"bargaining": bargaining, "envy": lambda name, entries: envy(name, entries[0])}


@pytest.mark.parametrize("study", list(STUDIES))
@pytest.mark.parametrize("case_name", list(CASES))
def test_each_provider_plays_on_final_answers_only_and_keeps_its_thoughts_apart(case_name, study, servers, capsys, tmp_path):
    case = CASES[case_name]
    url = servers[case.server]
    played = play(capsys, tmp_path, url, STUDIES[study](study, [case.entry(url)]))
    assert played.rc == 0, played.err
    # the note on the temperature, where one is not sent (or ignored), and nothing else but a warning
    notes = [line for line in played.err.splitlines() if line.startswith("agora: note: ")]
    assert (len(notes) == 1 and "temperature (0.0)" in notes[0] and "'r'" in notes[0]) if case.note else not notes, played.err
    assert [line for line in played.lines() if not (case.warning and line.startswith("  warning: ") and case.warning in line)] == [], played.err

    # 1. nothing refused; no request carries what the provider refuses, or any thought
    assert played.requests > 0 and played.statuses == {"200": played.requests}, played.statuses
    assert set(played.paths) == {case.path}
    for body in played.bodies:
        assert not set(case.absent) & set(body), sorted(set(case.absent) & set(body))
        assert {k: body.get(k) for k in case.sent} == case.sent
    check_no_thoughts_sent(played.bodies)

    # 2. every game done; every model turn is the final answer to the prompt that was sent
    games, turns = stored(played.db, study)
    assert games and all(g["status"] == "done" for g in games), [g["error"] for g in games]
    mine = model_turns(turns, {"r"})
    assert len(mine) == played.requests  # every decision one call: no re-ask, no cached answer
    check_final_answers(mine, {key(conversation(b)) for b in played.bodies})
    # 3. no draft in any player's prompt
    check_prompts_free_of_drafts(turns)

    # 4. the thoughts and their token count, per turn, as the provider returns them
    for t in mine:
        assert t["finish_reason"] in ("stop", "end_turn"), t["finish_reason"]
        if case.tokens is None:
            assert t["reasoning_tokens"] is None  # not reported: unknown, not 0
        else:
            assert t["reasoning_tokens"] == case.tokens
        if case.thoughts == "draft":
            assert draft_answer(t["messages"]) in t["reasoning"] and (REJECTION in t["reasoning"]), t["reasoning"][:200]
            assert final_answer(t["messages"]) not in t["reasoning"]
        else:
            assert t["reasoning"] == case.thoughts
    for t in turns:
        if t["seats"][t["role"]] != "r":  # a scripted player has no thoughts
            assert t["reasoning"] is None and t["reasoning_tokens"] is None


# ---------------------------------------------------------------------------------------------
# 5. A budget too small for the reasoning


TIGHT = {"openai": CASES["openai-o3"], "anthropic": CASES["anthropic-opus-5"], "vllm": CASES["vllm-reasoning-content"]}


@pytest.mark.parametrize("provider", list(TIGHT))
def test_a_budget_the_reasoning_outgrows_stops_the_model_with_one_line(provider, servers, capsys, tmp_path):
    """The server thinks for 3,000 tokens; the study allows 256 + 1,000. Three replies in a row
    spend the whole budget: the model stops with one line saying what to raise, the run fails,
    and every game (3 rounds, so each has a third call) is stored as an error, none as done."""
    case = TIGHT[provider]
    url = servers[f"{case.server}-tight"]
    text = bargaining("tight", [case.entry(url, reasoning_budget=1000)], fixed={"horizon": 3})
    played = play(capsys, tmp_path, url, text)
    assert played.rc == 1, played.out + played.err
    lines = played.lines()
    assert len(lines) == 1 and "raise" in lines[0], played.err
    assert lines[0] == "  model 'r' stopped: 3 replies in a row spent all 1256 output tokens reasoning and gave no answer; raise reasoning_budget (now 1000) or max_tokens, or lower reasoning_effort", lines
    assert played.statuses == {"200": played.requests} and STOP_AFTER_SPENT <= played.requests <= STOP_AFTER_SPENT + 2
    if case.anthropic:
        assert all(b["max_tokens"] == 1256 for b in played.bodies)
    games, turns = stored(played.db, "tight")
    assert len(games) == 2 and all(g["status"] == "error" and "raise reasoning_budget" in g["error"] for g in games), games
    assert turns  # the decisions before the stop: invalid, with why, never re-asked
    stops = [t for t in turns if "3 replies in a row spent all 1256 output tokens" in t["error"]]
    for t in turns:
        assert not t["valid"] and t["retries"] == 0 and t["raw"] == ""
        if t in stops:  # the reply that stopped the model: billed, so its game's record keeps it (issue 40, item 10)
            assert t["completion_tokens"] > 0 and t["cost"] >= 0
            continue
        assert t["error"].startswith("spent 1256 of 1256 output tokens reasoning"), t["error"]
        assert t["finish_reason"] in ("length", "max_tokens")
    assert len(stops) >= 1
    # every call the run paid for is in the database: the tokens stored are the run's own count
    counted = int(re.search(r"model calls, \d+ cache hits, (\d+) tokens", played.out).group(1))
    assert sum(t["prompt_tokens"] + t["completion_tokens"] for t in turns) == counted, played.out


def test_replies_in_flight_when_the_model_stops_end_their_games_too(servers, capsys, tmp_path):
    """Bargaining of one round with the model as the responder only: each game is one call, 8
    at once. The replies that arrive after the model stopped end their games as errors, not as
    done games of forfeits; only the games answered before the stop (fewer than
    STOP_AFTER_SPENT, each a spent reply the game treats as its own outcome) may be done."""
    url = servers["openai-tight"]
    entry = CASES["openai-o3"].entry(url, reasoning_budget=1000)
    grid = {"delta_a": [0.8, 0.9, 0.95, 0.99], "delta_b": [0.8, 0.9]}
    text = study_toml("flight", "glee.bargaining", matchups="seats", seats=[{"alice": "s", "bob": "r"}], repeats=1, seed=3, grid=grid, fixed={"horizon": 1, "money": 100}, models=[entry, scripted("s", "spe")])
    played = play(capsys, tmp_path, url, text, name="flight", concurrency=8)
    assert played.rc == 1 and len(played.lines()) == 1, played.err
    games, _ = stored(played.db, "flight")
    status = Counter(g["status"] for g in games)
    assert len(games) == 8 and status["done"] <= STOP_AFTER_SPENT - 1 and status["error"] >= 8 - (STOP_AFTER_SPENT - 1), status


# ---------------------------------------------------------------------------------------------
# 6. The cache under sampling


def persuasion(name: str, entry: dict[str, Any]) -> str:
    """GLEE persuasion, 8 rounds, a seller who never recommends and a new (myopic) buyer each
    round played by the model: a buyer who does not buy leaves the next buyer's prompt as it was."""
    fixed = {"horizon": 8, "myopic": True, "messages": False, "money": 100}
    return study_toml(name, "glee.persuasion", matchups="seats", seats=[{"alice": "seller", "bob": "r"}], repeats=1, seed=3, fixed=fixed, models=[entry, scripted("seller", "always-reject")])


SAMPLED = {"openai-gpt-4o-mini": ("openai", "openai/gpt-4o-mini"), "vllm-qwen3": ("vllm", "vllm/Qwen/Qwen3-8B")}


def same_turns(a: Path, b: Path, study: str) -> None:
    (ga, ta), (gb, tb) = stored(a, study), stored(b, study)
    strip = lambda g: {k: g[k] for k in ("id", "status", "outcome", "metrics", "n_turns")}  # noqa: E731
    assert [strip(g) for g in ga] == [strip(g) for g in gb]
    cols = ("game_id", "idx", "role", "phase", "messages", "raw", "action", "valid", "retries", "reasoning", "reasoning_tokens", "finish_reason")
    assert [{c: t[c] for c in cols} for t in ta] == [{c: t[c] for c in cols} for t in tb]


@pytest.mark.parametrize("which", list(SAMPLED))
def test_under_sampling_each_decision_is_a_call_and_the_cache_replays_each(which, servers, capsys, tmp_path):
    server, spec = SAMPLED[which]
    url = servers[server]
    entry = model("r", f"{spec}@{url}", temperature="default")
    text = persuasion("sampled", entry)
    first = play(capsys, tmp_path, url, text, name="sampled")
    assert first.rc == 0 and first.statuses == {"200": first.requests}, first.err
    assert all("temperature" not in b and "seed" not in b for b in first.bodies)  # the provider's own sampling
    games, turns = stored(first.db, "sampled")
    buyer = model_turns(turns, {"r"})
    assert len(games) == 1 and games[0]["status"] == "done" and len(buyer) == 8
    prompts = Counter(key(t["messages"]) for t in buyer)
    assert max(prompts.values()) > 1, "the study should repeat a buyer's prompt"  # what this test is about
    # every decision was its own call (plus its re-asks), none answered from another's entry
    assert first.requests == len(buyer) + sum(t["retries"] for t in buyer)
    assert not any(t["cached"] for t in buyer)
    check_final_answers(buyer, {key(conversation(b)) for b in first.bodies})

    # the same study again: nothing to play, no call
    again = play(capsys, tmp_path, url, text, name="sampled", db=first.db)
    assert again.rc == 0 and again.requests == 0 and "1 already done" in again.out, again.out
    # a fresh database replayed from the first one's cache: no call, the same turns
    replay = play(capsys, tmp_path, url, text, "--cache", str(first.db), name="sampled", db=tmp_path / "replay.db")
    assert replay.rc == 0 and replay.requests == 0, replay.out
    same_turns(first.db, replay.db, "sampled")
    # --no-cache on a fresh database: every decision is a call again
    fresh = play(capsys, tmp_path, url, text, "--no-cache", name="sampled", db=tmp_path / "fresh.db")
    assert fresh.rc == 0 and fresh.requests == first.requests, fresh.out
    same_turns(first.db, fresh.db, "sampled")

    # greedy decoding of a model that does not reason: an identical prompt in the game is
    # answered from the cache (that is what temperature 0 means); a reasoning model samples anyway
    greedy = play(capsys, tmp_path, url, persuasion("greedy", model("r", f"{spec}@{url}", temperature=0)), name="greedy")
    _, turns = stored(greedy.db, "greedy")
    buyer = model_turns(turns, {"r"})
    reasons = spec.startswith("vllm/")
    assert greedy.rc == 0 and greedy.requests == (len(buyer) if reasons else len({key(t["messages"]) for t in buyer}))


# ---------------------------------------------------------------------------------------------
# 7. Efforts as a treatment


def test_a_list_of_efforts_seats_the_model_once_per_effort_with_games_of_its_own(servers, capsys, tmp_path):
    url = servers["openai"]
    both = bargaining("efforts", [CASES["openai-o3"].entry(url, reasoning_effort=["low", "high"])], grid={"delta_a": [0.8]})
    played = play(capsys, tmp_path, url, both, name="efforts")
    assert played.rc == 0 and played.statuses == {"200": played.requests}, played.err
    games, turns = stored(played.db, "efforts")
    assert sorted(tuple(set(g["seats"].values())) for g in games) == [("r-high",), ("r-low",)] and all(g["status"] == "done" for g in games)
    # each seat sent its effort, and thought as long as that effort makes the server think
    sent = Counter(b.get("reasoning_effort") for b in played.bodies)
    by_seat = Counter(t["seats"][t["role"]] for t in turns)
    assert sent == {"low": by_seat["r-low"], "high": by_seat["r-high"]}, sent
    for t in turns:
        effort = t["seats"][t["role"]].removeprefix("r-")
        assert t["valid"] and t["reasoning_tokens"] == EFFORT_TOKENS[effort]
    assert all("max_tokens" not in b and "temperature" not in b for b in played.bodies)

    # game ids: each effort's games are games of their own, apart from one effort's or none's
    fixed_url = "http://127.0.0.1:9/v1"

    def ids(**settings: Any) -> set[str]:
        path = tmp_path / "ids.toml"
        path.write_text(bargaining("efforts", [CASES["openai-o3"].entry(fixed_url, **settings)], grid={"delta_a": [0.8]}))
        return {s.id for s in load_study(path).expand()}

    listed, low, high, none = ids(reasoning_effort=["low", "high"]), ids(reasoning_effort="low"), ids(reasoning_effort="high"), ids()
    assert len(listed) == 2 and len(low) == len(high) == len(none) == 1
    assert not listed & (low | high | none) and len(low | high | none) == 3
    assert ids(reasoning_effort=["low", "high"]) == listed  # and they are stable


# ---------------------------------------------------------------------------------------------
# 8. Settings a provider refuses


def test_a_responses_only_model_stops_once_and_plays_with_the_responses_transport(servers, capsys, tmp_path):
    """gpt-5-pro on chat completions: 404, Responses only. Two games in flight, four to play:
    one line with the provider's message and what to do, at most one call per game in flight;
    with ``transport = "responses"`` the same games (ids unchanged) are played."""
    url = servers["openai"]
    entry = model("r", f"openai/gpt-5-pro@{url}", temperature=0)
    played = play(capsys, tmp_path, url, envy("pro", entry, moves=("A", "B", "C", "D")), name="pro", concurrency=2)
    assert played.rc == 1 and played.statuses == {"404": played.requests} and played.requests <= 2, (played.requests, played.err)
    lines = played.lines()
    assert len(lines) == 1 and "only supported in v1/responses" in lines[0] and 'transport = "responses"' in lines[0], played.err
    games, _ = stored(played.db, "pro")
    failed = {g["id"] for g in games if g["status"] == "error"}
    assert len(failed) == 4 and all(g["seats"]["focal"] == "r" for g in games if g["id"] in failed)

    fixed = play(capsys, tmp_path, url, envy("pro", {**entry, "transport": "responses"}, moves=("A", "B", "C", "D")), name="pro", db=played.db, concurrency=2)
    assert fixed.rc == 0 and "4 already done, 4 played, 0 errors" in fixed.out, fixed.out + fixed.err
    assert set(fixed.paths) == {"/v1/responses"} and fixed.statuses == {"200": fixed.requests}
    games, turns = stored(played.db, "pro")
    assert {g["id"] for g in games} >= failed and all(g["status"] == "done" for g in games)
    check_final_answers(model_turns(turns, {"r"}), {key(conversation(b)) for b in fixed.bodies})


def test_an_anthropic_thinking_budget_below_its_minimum_is_refused_before_the_run(servers, capsys, tmp_path):
    url = servers["anthropic"]
    entry = CASES["anthropic-sonnet-thinking-on"].entry(url, reasoning_budget=500)
    played = play(capsys, tmp_path, url, bargaining("small", [entry]), name="small")
    lines = [line for line in played.err.splitlines() if line.strip()]
    assert played.rc == 2 and len(lines) == 1, played.err
    assert lines[0] == "agora: error: model 'r': reasoning_budget 500 is below Anthropic's smallest thinking budget (1024 tokens)", lines
    assert played.requests == 0
    if played.db.exists():
        assert stored(played.db, "small")[0] == []


REFUSED_EFFORTS = {
    "openai-max": ("openai", "openai/o3", "max", "Unsupported value: 'reasoning_effort' does not support 'max'"),
    "gemini-xhigh": ("gemini", "gemini/gemini-2.5-flash", "xhigh", "Invalid reasoning_effort: xhigh"),
    "ollama-minimal": ("ollama", "ollama/qwen3", "minimal", "invalid reasoning value: 'minimal'"),
}


@pytest.mark.parametrize("which", list(REFUSED_EFFORTS))
def test_an_effort_the_provider_refuses_stops_the_model_once(which, servers, capsys, tmp_path):
    """Four games of the model, two in flight: the provider's refusal is said once, the model
    stops (no call beyond those in flight), its games are errors to play again."""
    server, spec, effort, message = REFUSED_EFFORTS[which]
    url = servers[server]
    entry = model("r", f"{spec}@{url}", temperature=0, reasoning_effort=effort)
    played = play(capsys, tmp_path, url, envy("effort", entry, moves=("A", "B", "C", "D")), name="effort", concurrency=2)
    assert played.rc == 1 and played.requests <= 2 and played.statuses == {"400": played.requests}, (played.requests, played.err)
    lines = played.lines()
    assert len(lines) == 1 and lines[0].startswith("  model 'r' stopped: ") and message in lines[0], played.err
    games, _ = stored(played.db, "effort")
    assert sorted(g["status"] for g in games if g["seats"]["focal"] == "r") == ["error"] * 4
    assert all(message in g["error"] for g in games if g["status"] == "error")


# ---------------------------------------------------------------------------------------------
# A model that does not reason: its requests are as they were


@pytest.fixture
def plain_server():
    """(base_url, stats_url) of the fake OpenAI server of tests/support/fake_openai.py without
    options, served by a thread of this process for one test."""
    with serving_app(fake_openai_app(), path="/v1") as url:
        yield url, url.removesuffix("/v1") + "/stats"


def test_a_model_that_does_not_reason_sends_what_it_sent_before(capsys, tmp_path, plain_server):
    """``openai/gpt-4o-mini`` at temperature 0 sends ``max_tokens``, ``temperature`` and
    ``seed`` (the study's) exactly as before reasoning models existed, and no reasoning field."""
    url, stats = plain_server
    entry = model("r", f"openai/gpt-4o-mini@{url}", temperature=0)
    path = tmp_path / "plain.toml"
    path.write_text(envy("plain", entry))
    rc, out, err = agora(capsys, "run", str(path), "--db", str(tmp_path / "plain.db"), "--quiet")
    assert rc == 0 and err == "", err
    import urllib.request

    with urllib.request.urlopen(stats + "?bodies=1", timeout=5) as resp:
        bodies = json.loads(resp.read())["bodies"]
    assert len(bodies) == 6  # 2 focal games of 3 turns
    for body in bodies:
        assert set(body) == {"model", "messages", "max_tokens", "temperature", "seed"}, sorted(body)
        assert (body["model"], body["max_tokens"], body["temperature"], body["seed"]) == ("gpt-4o-mini", 256, 0.0, 3)
        assert all(set(m) == {"role", "content"} for m in body["messages"])
    _, turns = stored(tmp_path / "plain.db", "plain")
    assert all(t["reasoning"] is None and t["reasoning_tokens"] is None and t["finish_reason"] is None for t in turns)

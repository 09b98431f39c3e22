"""The embedded model plays a full commons month end to end under the original protocol (harvest,
private outcome, a chat opened by the manager's report, its own memory notes, ratings and
insights, the next harvest from retrieved memories) in a mixed-model group (agent_0: the embedded model in process;
agent_1: the same weights behind the OpenAI-compatible llama.cpp server), and the study replays
from the cache with no model calls. Plumbing only: the tiny model chooses at about chance.

Two *embedded* entries in one process are avoided on purpose: llama-cpp-python silences its
logging by redirecting file descriptors 1 and 2 around each call, which is not thread-safe across
two models on two executor threads and can leave the CLI's stdout pointing at /dev/null.

Both runs use the command line in this process (the tests are about the game's plumbing, not the
process: a subprocess paid about a second of imports and a model load each)."""

from __future__ import annotations

import contextlib
import io
from types import SimpleNamespace

import pytest
from support.helpers import agora

from agorabench.store.store import Store

STUDY = """
name = "commons_llm"
game = "commons"
matchups = "seats"
seats = [{ "*" = "smol-a", "agent_1" = "smol-b" }]
seed = 1
max_retries = 1

[fixed]
scenario = "fishery"
n_agents = 2
months = 2
max_conversation_steps = 2     # the manager's report and one remark
summariser = false             # keeps the test to the two agents' seats (the extraction is tested with strategies)
# A chance-level model could empty the lake in month 1 and end the game before the chat; with
# C = 0 nothing collapses, so the test always reaches the discussion and the second harvest.
collapse_threshold = 0

[[models]]
name = "smol-a"
spec = "local"
max_tokens = 96
constrained = true

[[models]]
name = "smol-b"
spec = "llamacpp/smollm2"
base_url = "BASE_URL"
max_tokens = 64
constrained = true
"""


@pytest.fixture(scope="module")
def first_run(tmp_path_factory, llama_server):
    folder = tmp_path_factory.mktemp("commons_llm")
    path = folder / "study.toml"
    path.write_text(STUDY.replace("BASE_URL", llama_server), encoding="utf-8")
    db = folder / "first.db"
    from agorabench.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        returncode = main(["run", str(path), "--db", str(db), "--quiet"])
    return path, db, SimpleNamespace(returncode=returncode, stdout=out.getvalue(), stderr=err.getvalue())


@pytest.mark.llm
def test_embedded_model_plays_a_full_month(first_run):
    _, db, result = first_run
    assert result.returncode == 0, result.stderr
    assert "1 played, 0 errors" in result.stdout
    store = Store(db)
    (game,) = store.games("commons_llm")
    assert game["status"] == "done" and game["seats"] == {"agent_0": "smol-a", "agent_1": "smol-b"}
    out = game["outcome"]
    assert out["months_played"] == 2 and not out["collapsed"]
    turns = store.turns(game_id=game["id"])
    harvests = [t for t in turns if t["phase"] == "harvest"]
    chat = [t for t in turns if t["phase"] == "discuss"]
    assert sorted((t["metrics"]["month"], t["role"]) for t in harvests) == [(1, "agent_0"), (1, "agent_1"), (2, "agent_0"), (2, "agent_1")]
    # a chat every month, the last one included: the report, then one remark
    assert len(chat) == 2 and [len(m["report"]) + len(m["discussion"]) for m in out["months"]] == [2, 2]
    # the original's memory (the default): each agent's notes, ratings and insights in month 1;
    # nothing is written after the last month's decisions
    memory = [t for t in turns if t["phase"].startswith("memory_")]
    assert {(t["metrics"].get("month", 1), t["role"], t["phase"]) for t in memory} >= {(1, r, p) for r in ("agent_0", "agent_1") for p in ("memory_note", "memory_rate", "memory_insight")}
    assert game["n_turns"] == len(turns) == len(harvests) + len(chat) + len(memory)
    for t in turns:
        assert t["raw"] is not None
        assert (t["valid"] and t["action"] is not None) or (not t["valid"] and t["error"]), t
    for t in harvests:
        month = out["months"][t["metrics"]["month"] - 1]
        asked = t["action"]["amount"] if t["valid"] else 0
        assert month["requested"][t["role"]] == asked == t["metrics"]["requested"]
        assert t["metrics"]["collected"] == month["collected"][t["role"]] <= asked
    # the second harvest prompt: dated memories the agent wrote itself, no transcript of month 1
    second = next(t for t in harvests if t["metrics"]["month"] == 2 and t["role"] == "agent_0")
    seen = "\n".join(m["content"] for m in second["messages"])
    assert "- 2024-02-01:" in seen and "- 2024-01-" in seen
    assert "Mayor:" not in seen and "meet in town" not in seen and "You asked to catch" not in seen
    assert set(game["metrics"]) >= {"survival_time", "total_gain", "efficiency", "equality", "over_usage"}
    assert game["metrics"]["survival_time"] == 2


@pytest.mark.llm
def test_mixed_model_study_replays_from_cache_without_calls(first_run, tmp_path, capsys):
    path, first_db, result = first_run
    assert result.returncode == 0, result.stderr
    second_db = tmp_path / "second.db"
    rc, out, err = agora(capsys, "run", str(path), "--cache", str(first_db), "--db", str(second_db), "--quiet")
    assert rc == 0, err
    assert " 0 model calls" in out and "1 played" in out
    (a,) = Store(first_db).games("commons_llm")
    (b,) = Store(second_db).games("commons_llm")
    assert a["id"] == b["id"] and a["outcome"] == b["outcome"] and a["metrics"] == b["metrics"]
    # simultaneous answers are recorded in the order they arrive, which a cache changes
    ta = sorted((t["role"], t["phase"], t["raw"], t["valid"]) for t in Store(first_db).turns(game_id=a["id"]))
    tb = sorted((t["role"], t["phase"], t["raw"], t["valid"]) for t in Store(second_db).turns(game_id=b["id"]))
    assert ta == tb and len(ta) == a["n_turns"]

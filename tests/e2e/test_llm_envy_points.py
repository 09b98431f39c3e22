"""The real small model plays the point-allocation game: in-process (embedded) and through the
OpenAI-compatible llama.cpp server. The model chooses at about chance, so these tests check
validity and plumbing, not behaviour.

The runs use the command line in this process (the tests are about the model's plumbing, not
the process: a subprocess paid about a second of imports and a model load each). The
unconstrained runs re-ask an unusable answer once (``max_retries = 1``), not twice: the tiny
model's free answers are unusable at every try, so the third try only added tokens; the re-ask
itself stays exercised. Their answers are capped at 24 tokens, not 96: free text is unusable at
any cap (no XML at all; at 96 it stopped by itself, each try under 50 tokens), so every turn stays
invalid with its error, at about half the generated tokens. The constrained runs keep 96: the
grammar closes their answers at 29 to 42 tokens, all valid."""

import json
import sqlite3

import pandas as pd
import pytest
from support.helpers import agora
from support.studies import envy_points, paper_grid, scripted

from agorabench.store.store import Store

pytestmark = pytest.mark.llm

def llm_study(moves: list[str], constrained: bool, **spec) -> str:
    """The small model (``spec``: its spec, and base_url where served) against always-B on M2,
    lagging by a significant margin, for the peer moves ``moves``; an unconstrained run re-asks
    an unusable answer once and caps answers at 24 tokens (96 under the grammar)."""
    smol = {"name": "smol", **spec, "display_name": "SmolLM2-135M", "max_tokens": 96 if constrained else 24, "constrained": constrained}
    grid = paper_grid(matrix=["M2"], peer_status=["lagging"], margin=["significant"], peer_move=moves)
    retries = {} if constrained else {"max_retries": 1}
    return envy_points("llm", [smol, scripted("b", "always-b", display_name="Model-B")], grid=grid, **retries)


def llm_turns(db):
    """The embedded/served model's turns as tuples (idx, phase, valid, retries, error, raw,
    action JSON, prompt JSON, prompt tokens, completion tokens, cached), each turn's full prompt
    read back through the store (turns point into per-role transcripts)."""
    store = Store(db, read_only=True)
    try:
        focal = {g["id"] for g in store.games() if (g["seats"] or {}).get("focal") == "smol"}
        rows = sorted((t for t in store.turns() if t["game_id"] in focal), key=lambda t: (t["game_id"], t["idx"]))
    finally:
        store.dispose()
    return [
        (t["idx"], t["phase"], t["valid"], t["retries"], t["error"], t["raw"], None if t["action"] is None else json.dumps(t["action"]), json.dumps(t["messages"]), t["prompt_tokens"], t["completion_tokens"], t["cached"])
        for t in rows
    ]


def check_three_turn_conversation(rows):
    assert [r[1] for r in rows] == ["choose", "status", "peer_move"]
    for idx, phase, valid, retries, error, raw, action, messages, pt, ct, cached in rows:
        msgs = json.loads(messages)
        assert msgs[0]["role"] == "system" and msgs[-1]["role"] == "user"
        assert raw is not None and pt > 0 and ct > 0
        if valid:
            assert json.loads(action)["choice"] in "ABCD" and error is None
        else:
            assert action is None and error  # marked invalid with the reason
    # later turns carry the whole earlier conversation
    first, last = json.loads(rows[0][7]), json.loads(rows[-1][7])
    assert last[: len(first)] == first and len(last) >= len(first) + 4
    assert "Model-B" in last[-1]["content"]


def test_embedded_model_plays_a_full_conversation_unconstrained(tmp_path, write_study, capsys):
    path = write_study(llm_study(["C"], False, spec="local"))
    db = tmp_path / "e.db"
    rc, _, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet")
    assert rc == 0, err
    rows = llm_turns(db)
    check_three_turn_conversation(rows)


def test_embedded_replay_from_cache_identical_at_concurrency_1_and_32(tmp_path, write_study, capsys):
    path = write_study(llm_study(["A", "D"], True, spec="local"))
    first, second = tmp_path / "a.db", tmp_path / "b.db"
    rc, out, err = agora(capsys, "run", str(path), "--db", str(first), "--concurrency", "1", "--quiet")
    assert rc == 0 and "4 played" in out, err
    rows = llm_turns(first)
    assert len(rows) >= 6 and all(r[2] for r in rows)  # the grammar makes every answer well-formed
    check_three_turn_conversation(rows[:3])
    rc, out, err = agora(capsys, "run", str(path), "--db", str(second), "--cache", str(first), "--concurrency", "32", "--quiet")
    assert rc == 0 and " 0 model calls" in out, (out, err)
    q = "select id, seats, config, outcome, metrics from games order by id"
    assert pd.read_sql(q, sqlite3.connect(first)).equals(pd.read_sql(q, sqlite3.connect(second)))


def test_openai_path_against_llama_cpp_server(tmp_path, write_study, llama_server, capsys):
    path = write_study(llm_study(["B"], False, spec="llamacpp/smollm2", base_url=llama_server))
    db = tmp_path / "o.db"
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet")
    assert rc == 0, err
    assert "2 played, 0 errors" in out
    rows = llm_turns(db)
    check_three_turn_conversation(rows)
    assert not any(r[10] for r in rows)  # real calls, not cache hits


def test_openai_path_sends_the_grammar_to_a_llama_cpp_server(tmp_path, write_study, llama_server, capsys):
    path = write_study(llm_study(["D"], True, spec="llamacpp/smollm2", base_url=llama_server))
    db = tmp_path / "c.db"
    rc, _, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet")
    assert rc == 0, err
    rows = llm_turns(db)
    assert len(rows) == 3 and all(r[2] and r[3] == 0 for r in rows)  # well-formed at the first try
    assert all(r[5].startswith("<response>") for r in rows)


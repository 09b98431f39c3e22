"""The real small model plays one short game of each GLEE family to the end: in-process (embedded
model, constrained JSON) and through the OpenAI-compatible llama.cpp server. The model plays at
about chance, so these tests check plumbing and validity: every decision is stored, either as a
valid action or marked invalid with its error, and every game finishes.

Both run the command line in this process (the test is about the model's plumbing, not the
process: a subprocess paid about a second of imports and a model load each). The embedded run
caps answers at 16 tokens, not 64: its valid answers take 6 to 10 tokens, and its four invalid
ones (free-text messages that never close, each asked twice) are cut off at any of these caps, so
the same turns are valid with the same actions (checked at 64, 32 and 16), at a quarter of the
generated tokens. The served run keeps 64: its persuasion signals close at about 30 tokens and
are valid there, and its cost is the prompts, not the answers."""

from __future__ import annotations

import pytest
from support.helpers import agora

from agorabench.store.store import Store

pytestmark = pytest.mark.llm

STUDY = """
name = "glee_llm"
matchups = "same_model"
max_retries = 1

[[parts]]
game = "glee.bargaining"
[parts.fixed]
horizon = 2
money = 100
messages = true

[[parts]]
game = "glee.negotiation"
[parts.fixed]
horizon = 1
f_a = 0.8
f_b = 1.2

[[parts]]
game = "glee.persuasion"
[parts.fixed]
horizon = 2
messages = true
myopic = true

[[models]]
name = "smol"
{model}
max_tokens = {max_tokens}
constrained = true
"""

PHASES = {"glee.bargaining": {"offer", "respond"}, "glee.negotiation": {"offer", "respond"}, "glee.persuasion": {"signal", "buy"}}


def check_games(db) -> None:
    store = Store(db)
    try:
        games = store.games("glee_llm")
        assert sorted(g["game"] for g in games) == ["glee.bargaining", "glee.negotiation", "glee.persuasion"]
        for g in games:
            assert g["status"] == "done", g["error"]
            assert g["metrics"] is not None and "efficiency" in g["metrics"]
            turns = store.turns(game_id=g["id"])
            # at least the first proposal (an invalid one forfeits the round and may end a 1-round game)
            assert len(turns) == g["n_turns"] >= 1
            assert {t["phase"] for t in turns} <= PHASES[g["game"]]
            for t in turns:
                assert t["raw"] is not None and t["prompt_tokens"] > 0
                messages = t["messages"]
                assert messages[0]["role"] == "system" and messages[-1]["role"] == "user"
                if t["valid"]:
                    assert t["action"] is not None and t["error"] is None
                else:
                    assert t["action"] is None and t["error"]
            if g["game"] == "glee.persuasion":
                assert g["outcome"]["rounds_played"] == 2 and len(turns) == 4
            if g["game"] == "glee.negotiation":
                assert g["outcome"]["rounds_played"] <= 1
    finally:
        store.dispose()


def test_embedded_model_plays_each_family(write_study, tmp_path, capsys):
    path = write_study(STUDY.replace("{model}", 'spec = "local"').replace("{max_tokens}", "16"))
    rc, _, err = agora(capsys, "run", str(path), "--db", str(tmp_path / "e.db"), "--quiet", "--concurrency", "1")
    assert rc == 0, err
    check_games(tmp_path / "e.db")


def test_openai_compatible_server_plays_each_family(write_study, tmp_path, llama_server, capsys):
    path = write_study(STUDY.replace("{model}", f'spec = "llamacpp/smollm2"\nbase_url = "{llama_server}"').replace("{max_tokens}", "64"))
    rc, _, err = agora(capsys, "run", str(path), "--db", str(tmp_path / "o.db"), "--quiet", "--concurrency", "1")
    assert rc == 0, err
    check_games(tmp_path / "o.db")

"""Envy workplace scenario with the real embedded model: plumbing and validity only (the tiny
model answers at about chance)."""

from __future__ import annotations

import math

import pytest

from agorabench.analysis.frames import games_df, turns_df
from agorabench.core.runner import run_study
from agorabench.core.study import load_study
from agorabench.games.envy.workplace import RATINGS, SCENES
from agorabench.store.store import Store
from support.studies import envy_workplace, model

STUDY = envy_workplace("wp_llm", [model("smol", "local", display_name="SmolLM2-135M", max_tokens=160, constrained=True)], matchups="all_pairs", max_retries=1)


@pytest.mark.llm
@pytest.mark.timeout(1800)  # ~30 s on an idle machine; llama.cpp slows down badly when cores are shared
def test_embedded_model_plays_a_full_seven_scene_conversation(write_study, tmp_path):
    path = write_study(STUDY)
    stats, info = run_study(load_study(path), tmp_path / "llm.db", concurrency=1, progress=False)
    assert stats.errors == 0, stats.error_messages
    assert stats.done == 1 and info["calls"] >= 7
    store = Store(tmp_path / "llm.db")
    games, turns = games_df(store, "wp_llm"), turns_df(store, "wp_llm")
    (game,) = games.to_dict("records")
    assert game["model_subject"] == game["model_peer"] == "smol"
    assert list(turns.sort_values("idx")["phase"]) == [s.key for s in SCENES]
    n_valid = 0
    for _, t in turns.iterrows():
        assert t["raw"], "every scene has the model's answer stored"
        assert "SmolLM2-135M" in t["messages"]
        if t["valid"]:
            n_valid += 1
            for name in RATINGS:
                assert 1 <= t[name] <= 5 and t[name] == t[f"action_{name}"]
        else:
            assert t["error"] and t["retries"] == 1
            assert all(math.isnan(t[name]) for name in RATINGS if name in t)
    assert game["n_valid_scenes"] == n_valid and game["n_invalid"] == 7 - n_valid
    if n_valid:
        assert 1 <= game["envy"] <= 5 and game["envy_norm"] == pytest.approx(game["envy"] / 5)
    else:
        assert math.isnan(game["envy"])
    store.dispose()

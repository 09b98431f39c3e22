"""Envy analyses: switching paths and rates, switch excerpts, report sections of the point
game (terms per turn, cue × move, Fehr–Schmidt), and the workplace per-scene means on both
normalisations."""

from __future__ import annotations

import pandas as pd
import pytest

from agorabench.analysis.frames import turns_df
from agorabench.analysis.report import build_report
from agorabench.analysis.stats import proportion_ci
from agorabench.analysis.switching import choice_paths, switch_excerpts, switch_rates
from agorabench.games.envy.report_points import point_choices
from agorabench.games.envy.report_workplace import scene_means
from agorabench.store.store import Store
from support.studies import ENVY_POINTS, ENVY_WORKPLACE


def test_wilson_interval():
    p, lo, hi = proportion_ci(0, 20)
    assert p == 0 and lo == 0 and 0.15 < hi < 0.17  # 0/20: upper end z²/(n + z²) ≈ 0.161
    p, lo, hi = proportion_ci(10, 20)
    assert p == 0.5 and lo == pytest.approx(1 - hi)


def test_paths_and_rates_by_hand():
    choices = pd.DataFrame(
        [
            ("g1", "m", 1, "A"), ("g1", "m", 2, "B"), ("g1", "m", 3, "B"),
            ("g2", "m", 1, "A"), ("g2", "m", 2, "A"), ("g2", "m", 3, "D"),
            ("g3", "m", 1, "C"), ("g3", "m", 3, "C"),  # turn 2 invalid: neither step is known
        ],
        columns=["game_id", "model", "turn", "choice"],
    ).assign(reasoning=lambda d: "because " + d["choice"])
    paths = choice_paths(choices, context=("model",)).set_index("game_id")
    assert paths.loc["g1", ["switch_12", "switch_23"]].tolist() == [1.0, 0.0]
    assert paths.loc["g2", ["switch_12", "switch_23"]].tolist() == [0.0, 1.0]
    assert paths.loc["g3", ["switch_12", "switch_23"]].isna().all()
    rates = switch_rates(paths.reset_index()).set_index("step")
    assert rates.loc["1→2", ["games", "switches", "rate"]].tolist() == [2, 1, 0.5]
    excerpts = switch_excerpts(choices, paths.reset_index())
    assert set(excerpts["change"]) == {"A → B", "A → D"}
    assert excerpts.set_index("change").loc["A → D", "reasoning"] == "because D"


def test_point_report_sections_and_switching_of_scripted_players(play_study, tmp_path):
    _, db = play_study(ENVY_POINTS)
    store = Store(str(db))
    turns = turns_df(store, "envy_dyn")
    choices = point_choices(turns)
    rates = switch_rates(choice_paths(choices)).set_index(["model", "step"])
    assert rates.loc[("self-max", "1→2"), "rate"] == 0.0 and rates.loc[("self-max", "2→3"), "rate"] == 0.0
    assert rates.loc[("self-max", "1→2"), "high"] < 0.2
    # a uniform chooser switches with probability 3/4
    rnd = rates.loc[("random", "1→2")]
    assert rnd["low"] <= 0.75 <= rnd["high"]
    page = build_report(store, "envy_dyn", tmp_path / "rep").read_text(encoding="utf-8")
    for title in ("Envy terms per turn, status cue and peer move", "Switching between turns", "Which cue makes which model switch", "Fehr–Schmidt estimates", "What the matrices identify", "What models said when they switched"):
        assert title in page, title


def test_workplace_scene_means_on_both_scales(play_study, tmp_path):
    _, db = play_study(ENVY_WORKPLACE)
    store = Store(str(db))
    turns = turns_df(store, "wp_scenes")
    means = scene_means(turns, ("model", "scene_no")).set_index(["model", "scene_no", "rating", "scale"])["mean"]
    # follower: envy = 3 − recognition (scene 1: 0 → 3; scene 3: −2 → 5; scene 7: +2 → 1)
    assert means[("follower", 1, "envy", "÷5")] == pytest.approx(0.6) and means[("follower", 1, "envy", "(x−1)/4")] == pytest.approx(0.5)
    assert means[("follower", 3, "envy", "÷5")] == pytest.approx(1.0) and means[("follower", 3, "envy", "(x−1)/4")] == pytest.approx(1.0)
    assert means[("follower", 7, "envy", "÷5")] == pytest.approx(0.2) and means[("follower", 7, "envy", "(x−1)/4")] == pytest.approx(0.0)
    assert means[("flat", 4, "envy", "(x−1)/4")] == 1.0
    pooled = scene_means(turns).set_index(["scene_no", "rating", "scale"])["mean"]
    assert pooled[(7, "envy", "÷5")] == pytest.approx((0.2 + 1.0) / 2)
    page = build_report(store, "wp_scenes", tmp_path / "rep").read_text(encoding="utf-8")
    assert "Per-scene means on both normalisations" in page

"""The beauty contest's structural models in play: cognitive-hierarchy players whose τ the
report's fit recovers, the report's table with Nagel's first period as the human reference (τ̂
near 1.07, whose interval holds the often quoted 1.5), and the fits in the profile's structural
section with their log-likelihood and BIC."""

from __future__ import annotations

import asyncio

import numpy as np
import pandas as pd
import pytest

from agorabench.analysis.hierarchy import ch_means, fit_poisson_ch
from agorabench.core.game import Prompts
from agorabench.core.table import Table
from agorabench.games.beauty_contest.beauty_contest import BeautyContest, BeautyContestConfig
from agorabench.games.beauty_contest.report import hierarchy_table, profile_rows
from agorabench.games.beauty_contest.strategies import CognitiveHierarchy


def first_round(seats, seed: int, **config) -> tuple[list[float], Table]:
    game = BeautyContest(BeautyContestConfig(**config), Prompts(BeautyContest.prompt_dir))
    table = Table({f"player_{i}": p for i, p in enumerate(seats, start=1)}, seed=seed)
    outcome = asyncio.run(game.play(table))
    return [float(x) for x in outcome["history"][0]["guesses"]], table


def test_cognitive_hierarchy_players_choose_their_levels_means():
    means = ch_means(1.5, 2 / 3, 0, 100)
    seen = set()
    for seed in range(40):
        chosen, _ = first_round([CognitiveHierarchy(tau=1.5, sigma=0) for _ in range(5)], seed, players=5, rounds=1)
        seen |= {round(x, 2) for x in chosen}
    exact = {round(float(m), 2) for m in means[1:]}
    assert {x for x in seen if x in exact} >= {round(float(means[1]), 2), round(float(means[2]), 2)}  # levels 1 and 2 appear
    assert any(x not in exact for x in seen)  # level 0 picks uniformly


def test_the_fit_recovers_tau_from_cognitive_hierarchy_players():
    """The first-round numbers of 120 games of five τ = 1.5, σ = 5 players: the estimate lies
    within 0.3 of 1.5 (its spread over blocks of 60 such games is about 0.11: measured over 20
    blocks, mean 1.49) and its profile interval holds 1.5 (the interval's coverage over 200
    seeds is tested in tests/analysis/test_hierarchy.py)."""
    chosen = []
    for seed in range(120):
        chosen += first_round([CognitiveHierarchy(tau=1.5, sigma=5) for _ in range(5)], seed, players=5, rounds=1)[0]
    fit = fit_poisson_ch(np.array(chosen), 2 / 3)
    assert abs(fit.tau - 1.5) < 0.3 and fit.low <= 1.5 <= fit.high


def test_parameter_errors_are_one_line():
    with pytest.raises(ValueError, match="tau must be a number above 0"):
        CognitiveHierarchy(tau=0)
    with pytest.raises(ValueError, match="sigma must be a number ≥ 0"):
        CognitiveHierarchy(sigma=-1)


def _turns(values: list[float], model: str, p: float = 2 / 3) -> pd.DataFrame:
    return pd.DataFrame({"game_id": [f"{model}{i // 5}" for i in range(len(values))], "model": model, "phase": "guess", "valid": True, "guess": values, "round": 1, "p": p, "low": 0, "high": 100, "players": 5})


def test_the_report_table_fits_each_model_and_nagels_people():
    rng = np.random.default_rng(0)
    turns = pd.concat([_turns(list(rng.uniform(0, 100, 50)), "uniform"), _turns([50 * (2 / 3)] * 25 + [50 * (2 / 3) ** 2] * 25, "levels")], ignore_index=True)
    table = hierarchy_table(turns).set_index("model")
    assert list(table.index) == ["levels", "uniform", "human (reference)"]
    nagel = table.loc["human (reference)"]
    assert nagel["n"] == 67 and nagel["tau"] == pytest.approx(1.07, abs=0.01) and nagel["tau_low"] < 1.5 < nagel["tau_high"]
    assert table.loc["uniform", "tau"] < 0.5  # random numbers: mostly level 0
    # every model's fit also reaches the profile's structural section, with log-likelihood and BIC
    rows = pd.DataFrame(profile_rows(pd.DataFrame(columns=["game", "game_id"]), turns))
    structural = rows[rows["family"] == "structural estimates"]
    measures = set(structural["measure"])
    assert {"beauty_contest: cognitive hierarchy τ", "beauty_contest: cognitive hierarchy BIC", "beauty_contest: level-k level 1 share", "beauty_contest: level-k log-likelihood"} <= measures
    assert set(structural.loc[structural["model"] == "human (reference)", "kind"]) == {"reference"}

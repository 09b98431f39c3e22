"""GLEE preference analyses: the acceptance model recovers the rejection threshold a scripted
subgame-perfect responder plants, and the persuasion benchmarks place scripted sellers and
buyers where theory puts them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from agorabench.analysis import acceptance
from agorabench.analysis.frames import games_df, turns_df
from agorabench.analysis.report import build_report
from agorabench.analysis.persuasion_beliefs import buyer_update, commitment_q, seller_lying
from agorabench.games.glee.report import persuasion_rounds, responder_decisions
from agorabench.store.store import Store


BARGAINING = """
name = "accept"
game = "glee.bargaining"
matchups = "all_pairs"
repeats = 15
seed = 1

[fixed]
delta_a = 0.8
delta_b = 0.8
horizon = "inf"
money = 100

[[models]]
name = "spe"
spec = "strategy/spe"

[[models]]
name = "random"
spec = "strategy/random"
"""


def test_threshold_of_a_logit_responder_is_recovered():
    """Synthetic responder: P(accept) = logistic(λ·(x − α(1 − 2x))) for x < ½ with α = 1
    (τ = 1/3); offers split an even pie."""
    rng = np.random.default_rng(4)
    x = rng.uniform(0, 1, 600)
    est_u = x - 1.0 * np.maximum(1 - 2 * x, 0)
    accept = rng.uniform(size=x.size) < 1 / (1 + np.exp(-12.0 * est_u))
    df = pd.DataFrame({"game_id": np.arange(x.size) // 3, "own": x, "other": 1 - x, "accept": accept})
    est, tau = acceptance.fit_acceptance(df)
    assert tau["threshold_low"] <= 1 / 3 <= tau["threshold_high"]
    assert abs(tau["threshold"] - 1 / 3) < 0.03
    assert est.ci["alpha"][0] <= 1.0 <= est.ci["alpha"][1]


def test_acceptance_model_recovers_the_spe_threshold(play_study, tmp_path):
    _, db = play_study(BARGAINING)
    decisions = responder_decisions("glee.bargaining", turns_df(Store(str(db)), "accept"))
    spe = decisions[decisions["model"] == "spe"]
    assert len(spe) >= 30
    est, tau = acceptance.fit_acceptance(spe)
    planted = 0.8 / 1.8  # δ·(1 − δ)/(1 − δ²): the share an SPE responder needs
    assert abs(tau["threshold"] - planted) < 0.03, tau
    assert tau["threshold_low"] - 0.03 <= planted <= tau["threshold_high"] + 0.03
    assert any("deterministic" in w for w in est.warnings)  # a sharp cut-off
    page = build_report(Store(str(db)), "accept", tmp_path / "rep").read_text(encoding="utf-8")
    assert "Bargaining: responder acceptance (inequity-averse logit)" in page


PERSUASION = """
name = "persuade"
game = "glee.persuasion"
matchups = "all_pairs"
repeats = 3
seed = 2

[fixed]
p = 0.5
v = 1.25
horizon = 20

[[models]]
name = "truthful"
spec = "strategy/truthful"

[[models]]
name = "always-accept"
spec = "strategy/always-accept"
"""


def test_persuasion_benchmarks_place_scripted_players(play_study, tmp_path):
    _, db = play_study(PERSUASION)
    rounds = persuasion_rounds(turns_df(Store(str(db)), "persuade"), games_df(Store(str(db)), "persuade"))
    assert len(rounds) == 4 * 3 * 20 and rounds["high"].between(0, 1).all()
    sellers = seller_lying(rounds).set_index("model_alice")
    assert sellers.loc["truthful", "lying_rate"] == 0.0 and sellers.loc["truthful", "recommend_when_high"] == 1.0
    assert sellers.loc["always-accept", "lying_rate"] == 1.0
    assert sellers.loc["truthful", "commitment_q"] == pytest.approx(commitment_q(0.5, 1.25)) == pytest.approx(0.25)
    buyers = buyer_update(rounds, by=("model_bob", "model_alice")).set_index(["model_bob", "model_alice"])
    # against a truthful seller a recommendation means high quality: Bayes buys, and so does the truthful buyer
    row = buyers.loc[("truthful", "truthful")]
    assert row["posterior_rec"] == 1.0 and row["bayes_buy_rec"] == 1.0 and row["gap_rec"] == 0.0
    assert row["posterior_no_rec"] == 0.0 and row["buy_after_no_rec"] == 0.0
    # against a seller who always recommends, the signal says nothing: posterior = p, 0.5·1.25 < 1
    row = buyers.loc[("truthful", "always-accept")]
    assert row["posterior_rec"] == pytest.approx(0.5) and row["bayes_buy_rec"] == 0.0 and row["gap_rec"] == 1.0
    page = build_report(Store(str(db)), "persuade", tmp_path / "rep").read_text(encoding="utf-8")
    assert "Persuasion: lying and belief updating against the benchmarks" in page

"""Fehr–Schmidt logit estimation: identification on the paper's matrices, parameter recovery
from synthetic subjects drawn with the scripted fehr-schmidt-logit rule, the self-maximiser, the
clustered bootstrap, and one small study end to end through the command line."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from agorabench.analysis import fehr_schmidt as fs
from agorabench.analysis.frames import turns_df
from agorabench.games.envy.point_allocation import MATRICES
from agorabench.games.envy.strategies import FehrSchmidtLogit
from agorabench.store.store import Store



def synthetic_choices(alpha: float, beta: float, lam: float, games_per_matrix: int, rng: np.random.Generator, model: str = "subject") -> pd.DataFrame:
    """The paper's design for one subject: every matrix, three turns per game, each choice drawn
    from the strategy's own logit probabilities."""
    subject = FehrSchmidtLogit(alpha=alpha, beta=beta, lam=lam)
    rows = []
    game = 0
    for matrix, options in MATRICES.items():
        probs = subject.probabilities(options)
        labels = list(probs)
        for _ in range(games_per_matrix):
            game += 1
            for turn in (1, 2, 3):
                rows.append({"game_id": f"{model}-{game}", "model": model, "matrix": matrix, "turn": turn, "choice": rng.choice(labels, p=[probs[k] for k in labels])})
    return pd.DataFrame(rows)


def test_identification_of_the_paper_matrices():
    table = fs.identification(MATRICES).set_index("decisions")["identifies"]
    assert "only α − β" in table["M1"]  # every option but A is 2 points ahead: α and β move together
    assert table["M2"] == table["M3"] == "α, β and λ identified"
    assert table["M1 + M2 + M3"] == "α, β and λ identified"


def test_m1_alone_fixes_beta_and_warns():
    rng = np.random.default_rng(3)
    df = synthetic_choices(0.8, 0.2, 1.0, 30, rng)
    est = fs.fit(fs.choice_set(df[df.matrix == "M1"], MATRICES), ci=None)
    assert est.fixed == {"beta": 0.0} and est.beta == 0.0
    assert any("α − β" in w for w in est.warnings)


def test_probabilities_follow_the_logit_rule():
    subject = FehrSchmidtLogit(alpha=0.5, beta=0.25, lam=2.0)
    probs = subject.probabilities(MATRICES["M1"])
    u = {k: subject.utility(*v) for k, v in MATRICES["M1"].items()}  # A 4, B 3.5, C 0.5, D -3.5
    assert probs["A"] / probs["B"] == pytest.approx(np.exp(2.0 * (u["A"] - u["B"])))
    assert sum(probs.values()) == pytest.approx(1.0)
    assert np.allclose(list(probs.values()), fs.choice_probabilities([v[0] for v in MATRICES["M1"].values()], [v[1] for v in MATRICES["M1"].values()], 0.5, 0.25, 2.0))


def test_parameter_recovery_over_50_synthetic_studies():
    truth = {"alpha": 0.6, "beta": 0.3, "lam": 1.0}
    rng = np.random.default_rng(2024)
    covered = {"alpha": 0, "beta": 0}
    estimates = []
    for _ in range(50):
        df = synthetic_choices(truth["alpha"], truth["beta"], truth["lam"], 16, rng)  # 48 games, 144 choices
        est = fs.fit(fs.choice_set(df, MATRICES), ci="profile", ci_params=("alpha", "beta"))
        estimates.append((est.alpha, est.beta, est.lam))
        for p in covered:
            lo, hi = est.ci[p]
            covered[p] += lo <= truth[p] <= hi
    assert covered["alpha"] >= 45 and covered["beta"] >= 45, covered
    med = np.median(np.array(estimates), axis=0)
    assert abs(med[0] - truth["alpha"]) < 0.1 and abs(med[1] - truth["beta"]) < 0.1 and abs(med[2] - truth["lam"]) < 0.15, med


def test_self_maximiser_is_estimated_as_one():
    rng = np.random.default_rng(5)
    df = synthetic_choices(0.0, 0.0, 20.0, 16, rng)
    assert set(df["choice"]) == {"A"}
    est = fs.fit(fs.choice_set(df, MATRICES), ci="profile")
    assert abs(est.alpha) < 0.05 and abs(est.beta) < 0.05
    assert est.ci["alpha"][0] <= 0 <= est.ci["alpha"][1] and est.ci["beta"][0] <= 0 <= est.ci["beta"][1]
    assert any("deterministic" in w for w in est.warnings)
    assert est.pseudo_r2 > 0.99


def test_clustered_bootstrap_and_groups():
    rng = np.random.default_rng(11)
    df = pd.concat([synthetic_choices(1.0, 0.4, 1.0, 20, rng, "envious"), synthetic_choices(0.0, 0.0, 1.0, 20, rng, "selfish")])
    table = fs.fit_groups(df, MATRICES, by=("model",), ci="bootstrap", n_boot=100).set_index("model")
    assert table.loc["envious", "games"] == 60 and table.loc["envious", "n"] == 180
    for model, (alpha, beta) in {"envious": (1.0, 0.4), "selfish": (0.0, 0.0)}.items():
        row = table.loc[model]
        assert row["alpha_low"] <= alpha <= row["alpha_high"] and row["beta_low"] <= beta <= row["beta_high"], row
    assert table.loc["envious", "alpha"] > table.loc["selfish", "alpha_high"]
    per_turn = fs.fit_groups(df, MATRICES, by=("model", "turn"), ci=None)
    assert len(per_turn) == 6 and set(per_turn["turn"]) == {1, 2, 3}


STUDY = """
name = "fs_e2e"
game = "envy.points"
matchups = "ordered_pairs"
seed = 7

[grid]
matrix = ["M1", "M2", "M3"]
peer_status = ["leading", "lagging"]
margin = ["marginal", "significant"]
peer_move = ["A", "B", "C", "D"]

[[models]]
name = "logit"
spec = "strategy/fehr-schmidt-logit"
params = { alpha = 1.0, beta = 0.3, lam = 1.5 }

[[models]]
name = "self-max"
spec = "strategy/self-max"
"""


def test_end_to_end_study_through_the_cli(play_study, tmp_path):
    _, db = play_study(STUDY)
    choices = fs.point_choices(turns_df(Store(str(db)), "fs_e2e"))
    assert len(choices) == 2 * 48 * 3 and set(choices["turn"]) == {1, 2, 3}
    # a 99% interval: this single study is one draw (the 95% coverage is checked above)
    table = fs.fit_groups(choices, MATRICES, by=("model",), ci="profile", level=0.99).set_index("model")
    assert abs(table.loc["self-max", "alpha"]) < 0.05 and abs(table.loc["self-max", "beta"]) < 0.05
    row = table.loc["logit"]
    assert row["alpha_low"] <= 1.0 <= row["alpha_high"] and row["beta_low"] <= 0.3 <= row["beta_high"], row
    assert row["alpha"] > table.loc["self-max", "alpha"] + 0.3

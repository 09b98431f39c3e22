"""The pooled ``human`` row's intervals are clustered by participant in the three estimators that
used to resample or count games: the responder acceptance shares (``stats.share_ci``, used by the
ultimatum report and the GLEE persuasion rates), the Fehr–Schmidt bootstrap (envy report) and the
meta-game bootstrap (GLEE). Each is tested on a constructed case where every participant plays
several identical games, so clustering must widen the interval (or make an equilibrium less
stable), and on model rows, whose results stay exactly what the unclustered estimator gives."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from agorabench.analysis import fehr_schmidt as fs
from agorabench.analysis import metagame as mg
from agorabench.analysis.persuasion_beliefs import buyer_update, seller_lying
from agorabench.analysis.stats import proportion_ci, row_clusters, share_ci
from agorabench.games.envy.point_allocation import MATRICES
from agorabench.games.envy.report_points import point_choices
from agorabench.games.ultimatum.report import acceptance_by_offer

# ----------------------------------------------------------------------------------------------
# shares (cluster-robust Wilson)


def test_share_ci_without_repeated_clusters_is_wilson_exactly():
    rng = np.random.default_rng(0)
    for n in (1, 2, 7, 40):
        x = rng.random(n) < 0.3
        k = int(x.sum())
        assert share_ci(x) == (*proportion_ci(k, n), n)
        assert share_ci(x, clusters=[f"row:{i}" for i in range(n)]) == (*proportion_ci(k, n), n)
    assert share_ci([])[3] == 0 and np.isnan(share_ci([])[0])
    assert share_ci([1.0, np.nan, 0.0]) == (*proportion_ci(1, 2), 2)  # a missing value is left out


def test_share_ci_widens_for_participants_with_identical_games():
    # 8 participants, 5 identical decisions each: 3 always accept, 5 always reject
    outcomes = np.repeat([1, 1, 1, 0, 0, 0, 0, 0], 5)
    people = np.repeat([f"human:p{i}" for i in range(8)], 5)
    p, lo, hi, n = share_ci(outcomes, clusters=people)
    _, wlo, whi = proportion_ci(15, 40)
    assert n == 40 and p == pytest.approx(15 / 40)
    assert lo < wlo and hi > whi and (hi - lo) > 1.5 * (whi - wlo)
    # identical games of G participants: n_eff = G − 1 (the CR1 variance p(1 − p)/(G − 1))
    assert (lo, hi) == pytest.approx(proportion_ci(15 / 40 * 7, 7)[1:])
    # everyone rejects: no variance to compare, each participant counts once
    assert share_ci(np.zeros(40), clusters=people)[1:3] == pytest.approx(proportion_ci(0, 8)[1:])
    # one participant: no interval
    p1 = share_ci([1, 0, 1], clusters=["human:a"] * 3)
    assert p1[0] == pytest.approx(2 / 3) and np.isnan(p1[1]) and np.isnan(p1[2]) and p1[3] == 3


def test_share_ci_clustering_never_narrows():
    # participants whose games disagree within (negative intra-class correlation): n_eff capped at n
    outcomes = np.tile([1, 0], 10)
    people = np.repeat([f"human:p{i}" for i in range(10)], 2)
    assert share_ci(outcomes, clusters=people)[1:3] == pytest.approx(proportion_ci(10, 20)[1:])


def _ultimatum_turns() -> pd.DataFrame:
    """Responder turns: a model with varied decisions (participant None) and 6 people who each
    answer the same offer band 4 times alike."""
    rows = []
    rng = np.random.default_rng(1)
    for i in range(30):
        rows.append({"role": "responder", "valid": True, "offered_share": 0.35, "model": "bot", "accepted": int(rng.random() < 0.6), "participant": None})
    for person, answer in enumerate([1, 1, 0, 1, 0, 0]):
        for _ in range(4):
            rows.append({"role": "responder", "valid": True, "offered_share": 0.35, "model": "human", "accepted": answer, "participant": f"human:p{person}"})
    return pd.DataFrame(rows)


def test_ultimatum_acceptance_human_clustered_models_unchanged():
    turns = _ultimatum_turns()
    table = acceptance_by_offer(turns).set_index("model")
    bot = turns[turns["model"] == "bot"]
    assert tuple(table.loc["bot", ["acceptance rate", "low", "high", "n"]]) == (*proportion_ci(int(bot["accepted"].sum()), 30), 30)
    unclustered = acceptance_by_offer(turns.drop(columns="participant")).set_index("model")
    assert tuple(unclustered.loc["bot"]) == tuple(table.loc["bot"])
    assert unclustered.loc["human", "low"] == pytest.approx(proportion_ci(12, 24)[1])
    assert table.loc["human", "acceptance rate"] == 0.5 and table.loc["human", "n"] == 24
    assert table.loc["human", "high"] - table.loc["human", "low"] > 1.5 * (unclustered.loc["human", "high"] - unclustered.loc["human", "low"])


def test_persuasion_rates_human_clustered_models_unchanged():
    rows = []
    rng = np.random.default_rng(2)
    for i in range(40):  # a model buyer and a model seller
        rows.append({"game_id": f"m{i}", "high": bool(i % 2), "recommended": bool(rng.random() < 0.7), "bought": bool(rng.random() < 0.5), "p": 0.5, "v": 1.5, "model_alice": "seller", "model_bob": "bot", "participant_alice": None, "participant_bob": None})
    for person in range(6):  # people as buyers, each 4 alike games
        for g in range(4):
            rows.append({"game_id": f"h{person}-{g}", "high": True, "recommended": True, "bought": person < 3, "p": 0.5, "v": 1.5, "model_alice": "seller", "model_bob": "human", "participant_alice": None, "participant_bob": f"human:p{person}"})
    rounds = pd.DataFrame(rows)
    plain = rounds.drop(columns=["participant_alice", "participant_bob"])
    clustered, unclustered = buyer_update(rounds, by=("model_bob",)).set_index("model_bob"), buyer_update(plain, by=("model_bob",)).set_index("model_bob")
    pd.testing.assert_series_equal(clustered.loc["bot"], unclustered.loc["bot"])
    assert clustered.loc["human", "buy_after_rec"] == 0.5
    assert clustered.loc["human", "high"] - clustered.loc["human", "low"] > 1.5 * (unclustered.loc["human", "high"] - unclustered.loc["human", "low"])
    # the sellers are models only: their lying rates are the same either way
    pd.testing.assert_frame_equal(seller_lying(rounds, by=("model_alice",)), seller_lying(plain, by=("model_alice",)))


# ----------------------------------------------------------------------------------------------
# Fehr–Schmidt bootstrap over participants


def _fs_choices() -> pd.DataFrame:
    """A model subject with independent games, and 12 people (one Fehr–Schmidt logit chooser,
    α = 0.8, β = 0.2, λ = 1) who each play every matrix once, that game copied 4 times (4
    identical games per matrix and person)."""
    rng = np.random.default_rng(5)
    rows = []
    labels = {m: list(opts) for m, opts in MATRICES.items()}

    def draw(matrix: str, alpha: float, lam: float) -> str:
        opts = MATRICES[matrix]
        p = fs.choice_probabilities([v[0] for v in opts.values()], [v[1] for v in opts.values()], alpha, 0.2, lam)
        return labels[matrix][rng.choice(len(opts), p=p)]

    game = 0
    for matrix in MATRICES:
        for _ in range(16):
            game += 1
            for turn in (1, 2, 3):
                rows.append({"game_id": f"m{game}", "model": "bot", "matrix": matrix, "turn": turn, "choice": draw(matrix, 0.5, 0.8), "participant": None})
    for person in range(12):
        for matrix in MATRICES:
            picks = [draw(matrix, 0.8, 1.0) for _ in (1, 2, 3)]
            for copy in range(4):
                for turn, pick in zip((1, 2, 3), picks):
                    rows.append({"game_id": f"h{person}-{matrix}-{copy}", "model": "human", "matrix": matrix, "turn": turn, "choice": pick, "participant": f"human:p{person}"})
    return pd.DataFrame(rows)


def test_fehr_schmidt_bootstrap_draws_people_and_leaves_models_alone():
    choices = _fs_choices()
    kw = dict(ci="bootstrap", n_boot=120, ci_params=("alpha", "lam"))
    clustered = fs.fit_groups(choices, MATRICES, by=("model",), **kw).set_index("model")
    by_games = fs.fit_groups(choices.drop(columns="participant"), MATRICES, by=("model",), **kw).set_index("model")
    # the model row: exactly the fit that draws games (no participant column at all)
    pd.testing.assert_series_equal(clustered.loc["bot"], by_games.loc["bot"])
    alone = fs.fit_groups(choices[choices["model"] == "bot"].drop(columns="participant"), MATRICES, by=("model",), **kw).set_index("model")
    pd.testing.assert_series_equal(clustered.loc["bot"], alone.loc["bot"])
    # the human row: same point estimate and games, wider intervals (12 people, not 144 games)
    h, g = clustered.loc["human"], by_games.loc["human"]
    assert not h["warning"] or "deterministic" not in h["warning"], h["warning"]
    assert h["alpha"] == g["alpha"] and h["games"] == g["games"] == 144
    assert (h["alpha_high"] - h["alpha_low"]) > 1.3 * (g["alpha_high"] - g["alpha_low"]), (h, g)
    assert (h["lam_high"] - h["lam_low"]) > 1.3 * (g["lam_high"] - g["lam_low"]), (h, g)


def test_choice_set_units_and_point_choices_keep_the_participant():
    df = pd.DataFrame({"game_id": ["g1", "g2", "g3"], "matrix": ["M1"] * 3, "choice": ["A", "A", "B"], "participant": ["human:x", "human:x", None]})
    data = fs.choice_set(df, MATRICES)
    assert list(data.cluster) == [0, 1, 2] and data.unit is not None and data.unit[0] == data.unit[1] != data.unit[2]
    assert fs.choice_set(df.assign(participant=None), MATRICES).unit is None
    turns = pd.DataFrame({"game_id": ["g1"], "role": ["focal"], "valid": [True], "action_choice": ["A"], "phase": ["choose"], "model": ["human"], "participant": ["human:x"], "matrix": ["M1"], "peer_status": ["leading"], "margin": ["significant"], "peer_move": ["B"]})
    assert point_choices(turns)["participant"].tolist() == ["human:x"]
    assert "participant" not in point_choices(turns.drop(columns="participant"))


# ----------------------------------------------------------------------------------------------
# meta-game bootstrap over participants


def _metagame_case(people: bool):
    """Models ``a`` and ``human``. Bob always gains most with ``a``; Alice picks ``human`` over
    ``a`` when the (human, a) cell's mean (0.55 over 10 people × 10 identical games: 5 people at
    0.9, 5 at 0.2) beats the (a, a) cell (0.5): an equilibrium that game-level resampling of 100
    games finds stable, and resampling 10 people does not."""
    cells, alice, bob, strata, labels = [], [], [], [], []
    rng = np.random.default_rng(7)
    for i in range(30):  # model cells, games varying
        for cell in ((0, 0), (0, 1), (1, 1)):
            cells.append(cell)
            alice.append(0.5 + (rng.normal(0, 0.05) if cell == (0, 0) else 0.0) - (0.4 if cell == (1, 1) else 0.0))
            bob.append(1.0 if cell[1] == 0 else 0.0)
            strata.append(f"{cell}")
            labels.append(f"row:{len(labels)}")
    for person in range(10):
        for _ in range(10):
            cells.append((1, 0))
            alice.append(0.9 if person < 5 else 0.2)
            bob.append(1.0)
            strata.append("(1, 0)")
            labels.append(f"human:p{person}" if people else f"row:{len(labels)}")
    cells_a = np.array(cells)
    alice_a, bob_a = np.array(alice), np.array(bob)
    shift = 0.5 - alice_a[[i for i, c in enumerate(cells) if c == (0, 0)]].mean()
    alice_a[[i for i, c in enumerate(cells) if c == (0, 0)]] += shift  # the (a, a) cell's mean exactly 0.5

    def payoffs(index: np.ndarray):
        A, B = np.zeros((2, 2)), np.zeros((2, 2))
        for r in (0, 1):
            for c in (0, 1):
                sel = index[(cells_a[index, 0] == r) & (cells_a[index, 1] == c)]
                A[r, c], B[r, c] = alice_a[sel].mean(), bob_a[sel].mean()
        return A, B

    return payoffs, len(cells), strata, labels


def test_metagame_bootstrap_draws_people_and_leaves_models_alone():
    payoffs, n, strata, labels = _metagame_case(people=False)
    plain = mg.bootstrap_equilibria(payoffs, n, ["a", "human"], ["a", "human"], reps=150, strata=strata)
    own = mg.bootstrap_equilibria(payoffs, n, ["a", "human"], ["a", "human"], reps=150, strata=strata, clusters=labels)
    pd.testing.assert_frame_equal(plain, own)  # every game its own cluster: the same draws exactly
    payoffs, n, strata, labels = _metagame_case(people=True)
    people = mg.bootstrap_equilibria(payoffs, n, ["a", "human"], ["a", "human"], reps=150, strata=strata, clusters=labels)
    share = lambda t: float(t.set_index("equilibrium")["share_of_resamples"].get("human vs a", 0.0))  # noqa: E731
    A, _ = payoffs(np.arange(n))
    assert A[1, 0] == pytest.approx(0.55) and A[0, 0] == pytest.approx(0.5)
    assert share(plain) > 0.85 and share(people) < share(plain) - 0.15, (plain, people)
    with pytest.raises(ValueError, match="cluster labels"):
        mg.bootstrap_equilibria(payoffs, n, ["a", "human"], ["a", "human"], reps=2, strata=strata, clusters=labels[:-1])


def test_row_clusters_of_a_glee_games_frame_name_the_alice_participant_first():
    games = pd.DataFrame({"model_alice": ["human", "a", "human"], "model_bob": ["a", "human", "human"], "participant_alice": ["human:x", None, "human:y"], "participant_bob": [None, "human:z", "human:w"]})
    assert row_clusters(games, ["model_alice", "model_bob"]).tolist() == ["human:x", "human:z", "human:y"]

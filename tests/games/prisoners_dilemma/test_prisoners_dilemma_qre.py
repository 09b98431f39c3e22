"""The prisoner's dilemma's logit QRE in the report and the profile: fitted per model to its
one-shot choices (the game's own payoffs), Shafir & Tversky's people as the human reference
(equal to pygambit's estimate on their counts), repeated games left out, and the fits in the
profile's structural section with their log-likelihood and BIC."""

from __future__ import annotations

import pandas as pd
import pytest

from agorabench.games.prisoners_dilemma.report import qre_table, SHAFIR_TVERSKY, stage_game
from support.helpers import agora
from support.studies import study_toml


def _turns(model: str, cooperations: list[int], horizon: str = "one-shot", **payoffs) -> pd.DataFrame:
    points = {**SHAFIR_TVERSKY, **payoffs}
    return pd.DataFrame({"game_id": [f"{model}{i // 2}" for i in range(len(cooperations))], "model": model, "phase": "choose", "valid": True, "cooperate": [float(c) for c in cooperations], "round": 1, "horizon": horizon, **points})


def test_each_model_and_the_people_get_a_logit_qre():
    turns = pd.concat([
        _turns("mixed", [1] * 10 + [0] * 30),
        _turns("defector", [0] * 20),
        _turns("repeated", [1] * 20, horizon="known"),  # a repeated game's first round is another decision
    ], ignore_index=True)
    table = qre_table(pd.DataFrame(), turns).set_index("model")
    assert list(table.index) == ["defector", "mixed", "human (reference)"]
    assert table.loc["defector", "at_bound"] and table.loc["defector", "qre_cooperation"] < 1e-6
    mixed = table.loc["mixed"]
    assert mixed["qre_cooperation"] == pytest.approx(0.25, abs=1e-6)  # a λ that reproduces its share
    assert mixed["lam_low"] <= mixed["lam"] <= mixed["lam_high"] and mixed["n"] == 40
    people = table.loc["human (reference)"]
    assert people["n"] == 444 and people["qre_cooperation"] == pytest.approx(164 / 444, abs=1e-6)
    import pygambit as gbt

    game = gbt.StrategicGame.from_arrays(*stage_game(**SHAFIR_TVERSKY))
    data = game.mixed_strategy_profile(data=[[164.0, 280.0], [164.0, 280.0]])
    oracle = gbt.qre.logit_estimate(data)
    # pygambit fits the two seats' counts; pooled, the same λ maximises the one population's likelihood
    assert people["lam"] == pytest.approx(float(oracle.lam), abs=1e-3)


def test_a_study_reports_and_profiles_the_fits(tmp_path, capsys):
    study = tmp_path / "pd.toml"
    study.write_text(study_toml("pd", game="prisoners_dilemma", matchups="same_model", repeats=15, fixed={"horizon": "one-shot"}, models=[{"name": "people", "spec": "strategy/human-resampler"}, {"name": "selfish", "spec": "strategy/selfish"}]))
    db = tmp_path / "pd.db"
    assert agora(capsys, "run", str(study), "--db", str(db))[0] == 0
    rc, _, err = agora(capsys, "report", str(study), "--db", str(db), "--out", str(tmp_path / "rep"))
    assert rc == 0, err
    table = pd.read_csv(tmp_path / "rep" / "logit-qre-per-model.csv").set_index("model")
    assert list(table.index) == ["people", "selfish", "human (reference)"] and table.loc["people", "n"] == 30
    rc, _, err = agora(capsys, "profile", str(db), "--out", str(tmp_path / "prof"))
    assert rc == 0, err
    rows = pd.read_csv(tmp_path / "prof" / "profile.csv")
    structural = rows[rows["family"] == "structural estimates"].set_index(["model", "measure"])
    assert {("people", "prisoners_dilemma: logit QRE λ"), ("people", "prisoners_dilemma: logit QRE log-likelihood"), ("people", "prisoners_dilemma: logit QRE BIC")} <= set(structural.index)
    assert structural.loc[("human (reference)", "prisoners_dilemma: logit QRE λ"), "kind"] == "reference"

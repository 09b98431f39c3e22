"""``agora profile`` over three scripted studies (envy, GLEE, commons) in three databases: every
section is on the page and in the CSV, models are matched across databases by name, and the
scripted strategies sit where theory puts them."""

from __future__ import annotations

import pandas as pd
import pytest

from agorabench.games.glee.bargaining import spe_share_infinite
from support.helpers import run_agora
from support.studies import commons, envy_workplace, fehr_schmidt_points, scripted


# the envy study of the estimator's end-to-end test: a self-maximiser and a noisy envious chooser
ENVY = fehr_schmidt_points("profile_envy")

WORKPLACE = envy_workplace("profile_workplace", [scripted("self-max", "fixed", params={"envy": 1}), scripted("logit", "recognition")], seed=1)

GLEE = """
name = "profile_glee"
game = "glee.bargaining"
matchups = "all_pairs"
repeats = 2
seed = 1

[grid]
delta_a = [0.8, 0.95]

[fixed]
delta_b = 0.9
horizon = "inf"

[[models]]
name = "spe"
spec = "strategy/spe"

[[models]]
name = "self-max"
spec = "strategy/always-accept"
"""

COMMONS = commons(
    "profile_commons",
    repeats=2,
    seed=1,
    fixed={"scenario": "fishery", "months": 4, "max_conversation_steps": 1},
    models=[scripted("sustainable"), scripted("self-max", "greedy")],
)


@pytest.fixture(scope="module")
def profile(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("profile")
    dbs = []
    for name, text, db in (("envy", ENVY, "envy.db"), ("workplace", WORKPLACE, "envy.db"), ("glee", GLEE, "glee.db"), ("commons", COMMONS, "commons.db")):
        path = tmp / f"{name}.toml"
        path.write_text(text, encoding="utf-8")
        res = run_agora("run", str(path), "--db", str(tmp / db), "--quiet", timeout=300)
        assert res.returncode == 0, res.stderr
        if str(tmp / db) not in dbs:
            dbs.append(str(tmp / db))
    res = run_agora("profile", *dbs, "--out", str(tmp / "out"), timeout=300)
    assert res.returncode == 0, res.stderr
    return (tmp / "out" / "profile.html").read_text(encoding="utf-8"), pd.read_csv(tmp / "out" / "profile.csv")


def test_every_section_is_present(profile):
    page, rows = profile
    for title in (
        "envy: point allocation: envy terms and Fehr–Schmidt",
        "envy: workplace ratings",
        "Bargaining: self-gain, fairness, efficiency (design-adjusted)",
        "Bargaining: responder acceptance",
        "commons: survival and over-usage",
    ):
        assert title in page, title
    assert {"self-maximiser", "subgame-perfect (SPE)", "sustainable (each takes f(t)/N)", "neutral answer (3)"} <= set(rows.loc[rows["kind"] == "theory", "model"])
    # "self-max" is one name in three databases: one profile with envy, GLEE and commons rows
    assert {"envy", "Bargaining", "commons"} <= set(rows.loc[rows["model"] == "self-max", "family"])
    assert rows["source"].str.contains("envy.db").any() and rows["source"].str.contains("commons.db").any()


def value(rows: pd.DataFrame, model: str, measure: str, role: str | None = None) -> pd.Series:
    sel = (rows["model"] == model) & (rows["measure"] == measure)
    if role is not None:
        sel &= rows["role"] == role
    match = rows[sel]
    assert len(match) == 1, (model, measure, role, match)
    return match.iloc[0]


def test_scripted_strategies_sit_where_theory_puts_them(profile):
    _, rows = profile
    rows["role"] = rows["role"].fillna("")
    # the self-maximiser's Fehr–Schmidt α and β are 0, and its T1 is 0 like the theory row
    alpha = value(rows, "self-max", "α (envy)")
    assert abs(alpha["estimate"]) < 0.05 and alpha["low"] <= 0 <= alpha["high"]
    assert abs(value(rows, "self-max", "β (guilt)")["estimate"]) < 0.05
    assert value(rows, "self-max", "T1")["estimate"] == 0.0 == value(rows, "self-maximiser", "T1")["estimate"]
    assert value(rows, "logit", "α (envy)")["estimate"] > 0.3
    # the SPE proposer keeps p* (both opponents accept it), averaged over the two designs
    p_star = (spe_share_infinite(0.8, 0.9) + spe_share_infinite(0.95, 0.9)) / 2
    spe = value(rows, "spe", "self-gain", "Alice")
    assert spe["estimate"] == pytest.approx(p_star, abs=1e-6)
    assert value(rows, "subgame-perfect (SPE)", "self-gain", "Alice")["estimate"] == pytest.approx(p_star)
    # commons: the sustainable group lasts every month, the greedy one collapses at once
    assert value(rows, "sustainable", "P(survives 4 months), Kaplan–Meier")["estimate"] == 1.0
    assert value(rows, "sustainable", "over-usage (%)")["estimate"] == 0.0
    assert value(rows, "self-max", "P(survives 4 months), Kaplan–Meier")["estimate"] == 0.0
    # workplace: a fixed envy of 1 is 0.2 on ÷5 and 0 on (x−1)/4
    assert value(rows, "self-max", "envy/jealousy (÷5)")["estimate"] == pytest.approx(0.2)
    assert value(rows, "self-max", "envy/jealousy ((x−1)/4)")["estimate"] == pytest.approx(0.0)


def test_profile_of_a_missing_database_is_a_clear_error(tmp_path):
    res = run_agora("profile", str(tmp_path / "nope.db"), "--out", str(tmp_path / "o"))
    assert res.returncode == 2 and res.stderr.startswith("agora: error: database not found")

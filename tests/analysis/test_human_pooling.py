"""Issue 30: people are one group, ``human``, in every analysis. A study served to 12 people
through the web app's Manager (each plays Alice in one bargaining game against a scripted Bob,
beside two scripted Alices: tests/support/people.py) is reported, analysed and profiled with one
``human`` row that says how many people and games it pools; the intervals of that row are
clustered by participant; the CSVs of `agora analyze` keep a row per person."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from agorabench.analysis.frames import analysis_model, games_df, people_line, pool_people, turns_df
from agorabench.analysis.regression import cluster_labels
from agorabench.analysis.stats import mean_ci, row_clusters, summarise
from agorabench.store.store import Store
from support.helpers import agora
from support.people import served_study

PEOPLE = 12


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pooling")
    return served_study(folder, people=PEOPLE)


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_analysis_model_pools_every_person_and_nothing_else():
    assert analysis_model("human:3d95ab") == analysis_model("human") == "human"
    assert analysis_model("gpt-4o") == "gpt-4o" and analysis_model("humanoid") == "humanoid"
    assert analysis_model(None) is None


def test_the_frames_pool_people_and_keep_who_they_were(study):
    _, db, crowd = study
    store = Store(str(db), read_only=True)
    try:
        pooled, each = games_df(store, "pooling"), games_df(store, "pooling", people="each")
        turns = turns_df(store, "pooling", transcripts=False)
    finally:
        store.dispose()
    assert len(pooled) == len(each) == 3 * PEOPLE
    people = each["model_alice"][each["model_alice"].str.startswith("human:")]
    assert people.nunique() == PEOPLE
    assert set(pooled["model_alice"]) == {"human", "spe", "bot"}
    # who the person was stays beside the pooled name, row for row
    assert list(pooled["participant_alice"].dropna()) == list(people)
    assert pooled["participant_bob"].isna().all()
    assert "human" in set(turns["model"]) and not turns["model"].astype(str).str.startswith("human:").any()
    assert set(turns["participant"].dropna()) == set(people)
    assert pooled.attrs["valid_turns"]["human"][0] == int((turns["model"] == "human").sum())
    assert people_line(pooled) == f"human: {PEOPLE} people, {PEOPLE} games"
    assert pool_people(pooled) is pooled  # pooling twice changes nothing


def test_the_report_has_one_human_row_with_its_participant_count(study, tmp_path, capsys):
    path, db, _ = study
    rc, out, err = agora(capsys, "report", str(path), "--db", str(db), "--out", str(tmp_path / "rep"))
    assert rc == 0, err
    rep = tmp_path / "rep"
    page = (rep / "index.html").read_text(encoding="utf-8")
    assert f"human: {PEOPLE} people, {PEOPLE} games" in page
    seats = {r["model"]: r["seats taken"] for r in _rows(rep / "seats-per-model.csv")}
    assert seats == {"human": str(PEOPLE), "spe": str(PEOPLE), "bot": str(PEOPLE), "opponent": str(3 * PEOPLE)}
    # no table, figure or CSV of the report names a person
    for file in rep.iterdir():
        assert "human:" not in file.read_text(encoding="utf-8").replace(f"human: {PEOPLE} people", ""), file.name
    means = pd.read_csv(rep / "bargaining-raw-means-by-model-and-role.csv")
    assert sorted(means.loc[means["role"] == "Alice", "model"].unique()) == ["bot", "human", "spe"]
    assert set(means.loc[means["model"] == "human", "n"]) == {PEOPLE}
    table6 = _rows(rep / "bargaining-table-6-model-effects.csv")
    assert [r["model"] for r in table6 if r["role"] == "Alice"].count("human") == 1
    assert "clustered 95% CI (pair; person)" in table6[0]
    # the regression's clusters: the two scripted pairs and each person
    fit = pd.read_csv(rep / "bargaining-regression-fit.csv")
    assert set(fit["clusters"]) == {2 + PEOPLE}
    turns = {r["model"]: int(r["turns"]) for r in _rows(rep / "turns-per-model.csv")}
    assert set(turns) == {"human", "spe", "bot", "opponent"} and turns["human"] >= PEOPLE


def test_analyze_pools_people_and_keeps_a_row_per_person_in_its_csvs(study, tmp_path, capsys):
    path, db, crowd = study
    rc, out, err = agora(capsys, "analyze", "glee", str(path), "--db", str(db), "--out", str(tmp_path / "an"), "--reps", "5")
    assert rc == 0, err
    assert f"human: {PEOPLE} people, {PEOPLE} games" in out
    table6 = _rows(tmp_path / "an" / "bargaining_table6.csv")
    assert [r["model"] for r in table6].count("human") == 1 and not any(r["model"].startswith("human:") for r in table6)
    assert {"low_cluster", "high_cluster"} <= set(table6[0])
    people = _rows(tmp_path / "an" / "bargaining_people.csv")
    assert len(people) == PEOPLE and len({r["participant"] for r in people}) == PEOPLE
    assert all(r["participant"].startswith("human:") and r["role"] == "Alice" and r["games"] == "1" for r in people)
    # the per-person rows are the games' own numbers
    store = Store(str(db), read_only=True)
    try:
        games = games_df(store, "pooling", people="each").set_index("model_alice")
    finally:
        store.dispose()
    for r in people:
        assert math.isclose(float(r["self_gain"]), float(games.loc[r["participant"], "self_gain_alice"]), rel_tol=1e-9)


def test_profile_pools_people_and_says_how_many(study, tmp_path, capsys):
    _, db, _ = study
    rc, out, err = agora(capsys, "profile", str(db), "--out", str(tmp_path / "prof"))
    assert rc == 0, err
    rows = pd.read_csv(tmp_path / "prof" / "profile.csv")
    models = set(rows.loc[rows["kind"] == "model", "model"])
    assert "human" in models and not any(str(m).startswith("human:") for m in models)
    assert rows.loc[rows["model"] == "human", "note"].str.contains(f"human: {PEOPLE} people, {PEOPLE} games").all()


def test_a_clustered_mean_counts_a_person_once_however_many_rows():
    """Each of 8 people's value repeated 5 times, clustered by person, gives the interval of the
    8 values (CR1 with G − 1 degrees of freedom is then exactly the t interval); unclustered, the
    repeats would fake a narrower one. Rows that are each their own cluster change nothing."""
    rng = np.random.default_rng(3)
    values = rng.normal(0.4, 0.2, size=8)
    once = mean_ci(values)
    repeated = np.repeat(values, 5)
    people = np.repeat([f"human:{i}" for i in range(8)], 5)
    clustered = mean_ci(repeated, clusters=people)
    assert clustered[:3] == pytest.approx(once[:3], rel=1e-12) and clustered[3] == 40
    naive = mean_ci(repeated)
    assert naive[2] - naive[1] < 0.6 * (clustered[2] - clustered[1])
    assert mean_ci(values, clusters=[f"row:{i}" for i in range(8)]) == once
    # bounded: the bootstrap over people is as wide as the one over the 8 values, not narrower
    bounded = mean_ci(repeated, bounds=(0.0, 1.0), clusters=people)
    plain = mean_ci(values, bounds=(0.0, 1.0))
    assert bounded[2] - bounded[1] == pytest.approx(plain[2] - plain[1], rel=0.25)
    assert bounded[2] - bounded[1] > 1.5 * (mean_ci(repeated, bounds=(0.0, 1.0))[2] - mean_ci(repeated, bounds=(0.0, 1.0))[1])


def test_summaries_and_regressions_cluster_a_persons_rows():
    frame = pool_people(pd.DataFrame({
        "game_id": [f"g{i}" for i in range(12)],
        "model_alice": ["human:a"] * 3 + ["human:b"] * 3 + ["human:c"] * 3 + ["m"] * 3,
        "model_bob": ["x"] * 12,
        "gain": [0.1, 0.2, 0.3, 0.5, 0.6, 0.7, 0.2, 0.2, 0.4, 0.9, 0.8, 0.7],
    }))
    clusters = row_clusters(frame, "model_alice")
    assert list(clusters[:9]) == ["human:a"] * 3 + ["human:b"] * 3 + ["human:c"] * 3 and clusters[9:].nunique() == 3
    table = summarise(frame, "model_alice", ["gain"]).set_index("model_alice")
    assert table.loc["human", "n"] == 9
    human = frame[frame["model_alice"] == "human"]
    assert (table.loc["human", "low"], table.loc["human", "high"]) == pytest.approx(mean_ci(human["gain"], clusters=human["participant_alice"])[1:3])
    assert (table.loc["m", "low"], table.loc["m", "high"]) == pytest.approx(mean_ci(frame.loc[frame["model_alice"] == "m", "gain"])[1:3])
    labels = cluster_labels(frame)
    assert labels.nunique() == 4 and set(labels[:9]) == {"person human:a", "person human:b", "person human:c"}

"""Analyses that never break or hide data (issue 29, items 8-11): figures draw whatever interval
an estimator gives (an estimate a rounding error outside it included); Table 5 shows every market
a study played, the paper's first; the commons intervals stay within each metric's range and a
group that caught nothing has no equality (as the original's Gini); the reference model is named
with its reason wherever a regression is printed, never silently replaced after a merge or a CSV
round trip, and never a model none of whose answers was valid."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from agorabench.analysis.frames import games_df, study_spec, turns_df, with_study
from agorabench.analysis.plots import artifacts, bars_with_ci, forest, whiskers
from agorabench.analysis.stats import mean_ci
from agorabench.core.agents import Strategy
from agorabench.core.runner import run_study
from agorabench.core.study import load_study
from agorabench.core.table import Reply
from agorabench.games.glee import analysis as ga
from agorabench.games.glee.analyze import analyze_glee
from agorabench.games.glee.strategies import BARGAINING as BARGAINING_STRATEGIES
from agorabench.store.store import Store
from support.helpers import agora
from support.studies import scripted, study_toml


# -- item 8: figures take what the estimators give ------------------------------------------


def test_whiskers_are_never_negative():
    err = whiskers([1.0000000000000009, 0.4000000000000001, 0.5, np.nan], [0.9, 0.4, None, 0.1], [1.0, 0.4, 0.7, 0.2])
    assert (err >= 0).all()
    assert err[:, 0].tolist() == pytest.approx([0.1, 0.0]) and err[:, 2].tolist() == pytest.approx([0.0, 0.2])


def test_forest_and_bars_draw_an_estimate_a_hair_outside_its_interval():
    # the estimates of the issue: 1.0000000000000009 against [.., 1.0]; a bootstrap 0.4000000000000001 in [0.4, 0.4]
    df = pd.DataFrame({"who": ["a", "b", "c"], "measure": "m", "estimate": [1.0000000000000009, 0.4000000000000001, 0.2], "low": [0.9, 0.4, 0.25], "high": [1.0, 0.4, np.nan]})
    assert "<figure>" in forest(df, "who", "measure", "t", "x")
    bars = df.rename(columns={"estimate": "mean"}).assign(metric="m")
    assert "<figure>" in bars_with_ci(bars, "who", "t")


def test_a_bounded_mean_holds_its_estimate_inside_its_interval():
    for values in ([0.4] * 7, [0.1] * 10, [1.0, 1.0, 1.0], [0.1, 0.2, 0.7, 0.3]):
        m, lo, hi, _ = mean_ci(values, bounds=(0.0, 1.0))
        assert lo <= m <= hi and 0.0 <= lo and hi <= 1.0, (values, m, lo, hi)


# -- item 9: Table 5 shows every market played, the paper's first ------------------------------

SHORT_HORIZON = study_toml(
    "h4", "glee.bargaining", matchups="all_pairs", repeats=2, seed=2,
    grid={"horizon": [4, "inf"], "complete_info": [True, False], "messages": [True, False]}, fixed={"infinite_rounds": 6},
    models=[scripted("spe"), scripted("random")],
)


@pytest.fixture(scope="module")
def short_horizon(tmp_path_factory):
    folder = tmp_path_factory.mktemp("h4")
    path = folder / "h4.toml"
    path.write_text(SHORT_HORIZON, encoding="utf-8")
    db = folder / "h4.db"
    stats, _ = run_study(load_study(path), db, progress=False)
    assert stats.errors == 0 and stats.done == 64
    return path, db


def test_table5_lists_a_market_outside_the_paper_after_the_paper_ones(short_horizon, tmp_path, capsys):
    path, db = short_horizon
    store = Store(db, read_only=True)
    try:
        games = games_df(store, "h4")
    finally:
        store.dispose()
    t5 = ga.market_effects(ga.regressions(games, "glee.bargaining"), "glee.bargaining")
    assert t5["paper"].tolist() == [True] * 8 + [False] * 4  # the paper's 8 markets, then the 4 of T = 4
    assert t5[["CI", "MA", "T"]].iloc[0].tolist() == ["yes", "no", "∞"] and set(t5.loc[~t5["paper"], "T"]) == {"4"}
    played = t5[t5["played"]]
    assert len(played) == 8 and played["efficiency"].notna().all()  # every market played has its effect
    assert t5.loc[t5["T"] == "12", "efficiency"].isna().all() and not t5.loc[t5["T"] == "12", "played"].any()
    # agora analyze writes the same rows
    rc, out, err = agora(capsys, "analyze", "glee", str(path), "--db", str(db), "--reps", "5", "--out", str(tmp_path / "csv"))
    assert rc == 0, err
    csv5 = pd.read_csv(tmp_path / "csv" / "bargaining_table5.csv")
    assert len(csv5) == 12 and (csv5["T"].astype(str) == "4").sum() == 4
    # and the report: the T = 4 markets with their effects, marked as beyond the paper
    rc, _, err = agora(capsys, "report", str(path), "--db", str(db), "--out", str(tmp_path / "rep"))
    assert rc == 0, err
    shown = pd.read_csv(tmp_path / "rep" / "bargaining-table-5-market-effects.csv", dtype=str)
    beyond = shown[shown["T"] == "4"]
    assert len(beyond) == 4 and set(beyond["in the paper"]) == {"no"} and not beyond.iloc[:, -1].str.contains("not played").any()
    assert (shown.loc[shown["T"] == "12", "efficiency (pp) [95% CI]"] == "not played").all()
    assert "were played by this study but are not in the paper's Table 5" in (tmp_path / "rep" / "index.html").read_text(encoding="utf-8")


# -- item 10: commons intervals within range; no equality without a catch ------------------------


def _commons_data() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Five fishery runs of three agents over three months, made by hand: "steady" (three runs,
    the lake at or near its capacity of 100, near-equal catches) and "idle" (two runs in which
    nobody caught anything; the stored equality is the game's 0)."""
    games, turns = [], []
    stock = {"s1": [100, 100, 100], "s2": [100, 100, 100], "s3": [60, 60, 60], "i1": [100] * 3, "i2": [100] * 3}
    catch = {"s1": [10, 10, 10], "s2": [10, 10, 12], "s3": [10, 10, 10], "i1": [0, 0, 0], "i2": [0, 0, 0]}
    for gid in stock:
        model = "steady" if gid.startswith("s") else "idle"
        total = 3 * sum(catch[gid])
        games.append({
            "game_id": gid, "game": "commons", "repeat": 0, "status": "done", "n_invalid": 0, "scenario": "fishery", "language": "en",
            "universalization": False, "months": 3, "model_agent_0": model, "model_agent_1": model, "model_agent_2": model,
            "survival_time": 3.0, "survival_time_harvested": 3.0 if total else 0.0, "censored": 0.0, "survived": 1.0, "collapsed": False,
            "total_gain": total / 3, "total_gain_sum": float(total), "efficiency": 50.0, "equality": 0.0 if total == 0 else 98.0, "over_usage": 0.0,
        })
        for month in (1, 2, 3):
            for agent, caught in enumerate(catch[gid]):
                turns.append({"game_id": gid, "idx": 3 * month + agent, "role": f"agent_{agent}", "model": model, "phase": "harvest", "valid": True, "month": month, "collected": float(caught), "stock_after": float(stock[gid][month - 1])})
    return pd.DataFrame(games), pd.DataFrame(turns)


def test_commons_intervals_stay_within_each_metric_range(tmp_path):
    from agorabench.games.commons import report as commons_report

    games, turns = _commons_data()
    with artifacts(tmp_path):
        commons_report.sections(games, turns)
    resource = pd.read_csv(tmp_path / "mean-resource-left-per-model-and-month.csv")
    assert (resource["high"] <= 100).all() and (resource["low"] >= 0).all()
    assert (resource["low"] <= resource["mean"]).all() and (resource["mean"] <= resource["high"]).all()
    gini = pd.read_csv(tmp_path / "gini-of-harvests-per-model-and-month.csv")
    assert gini.loc[gini["model"] == "idle", "gini"].isna().all()  # nobody caught anything: no Gini
    gini = gini.dropna(subset=["gini"])
    assert len(gini) == 3 and (gini["low"] >= 0).all() and (gini["high"] <= 1).all() and (gini["low"] <= gini["gini"]).all()
    # the t interval of the same numbers leaves both ranges: the cases of the issue
    assert mean_ci([100, 100, 60])[2] > 100 and mean_ci([0, 0.0606, 0])[1] < 0
    rows = commons_report.profile_rows(games, turns)
    for measure, (lo, hi) in (("survival time (months)", (0, 3)), ("over-usage (%)", (0, 100)), ("equality (%)", (0, 100))):
        sub = rows[(rows["measure"] == measure) & rows["low"].notna()]
        assert ((sub["low"] >= lo) & (sub["high"] <= hi)).all(), measure


def test_a_group_that_caught_nothing_has_no_equality(tmp_path):
    from agorabench.games.commons import report as commons_report

    games, turns = _commons_data()
    with artifacts(tmp_path):
        commons_report.sections(games, turns)
    table = pd.read_csv(tmp_path / "metrics-per-model-and-condition.csv", dtype=str).set_index("model")
    assert table.loc["idle", "equality"] == "–" and table.loc["steady", "equality"].startswith("98.00")
    rows = commons_report.profile_rows(games, turns).set_index(["model", "measure"])
    assert math.isnan(rows.loc[("idle", "equality (%)"), "estimate"]) and rows.loc[("steady", "equality (%)"), "estimate"] == 98.0
    assert "undefined" in commons_report.DEFINITIONS and "0 when ΣR = 0" not in commons_report.DEFINITIONS


# -- item 11: the reference model, named, never silently changed, never all-invalid --------------


class Mute(Strategy):
    """Answers every bargaining turn with text no parser reads: all its turns are invalid."""

    async def act(self, request):
        return Reply(text="I would rather not say.")


MUTE_FIRST = study_toml(
    "mute_first", "glee.bargaining", matchups="all_pairs", repeats=2, seed=4,
    grid={"delta_a": [0.8, 0.9], "horizon": [3, "inf"]}, fixed={"infinite_rounds": 4},
    models=[scripted("mute"), scripted("spe"), scripted("random")],
)


@pytest.fixture(scope="module")
def mute_first(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mute")
    path = folder / "mute_first.toml"
    path.write_text(MUTE_FIRST, encoding="utf-8")
    db = folder / "mute_first.db"
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(BARGAINING_STRATEGIES, "mute", Mute)
        stats, _ = run_study(load_study(path), db, progress=False)
    assert stats.errors == 0 and stats.done > 0
    store = Store(db, read_only=True)
    try:
        games, turns = games_df(store, "mute_first"), turns_df(store, "mute_first", transcripts=False)
        spec = study_spec(store, "mute_first")
    finally:
        store.dispose()
    assert not turns.loc[turns["model"] == "mute", "valid"].any()  # 100 % invalid
    return path, db, games, turns, spec


def test_a_first_listed_model_without_a_valid_turn_is_never_the_reference(mute_first, tmp_path, capsys):
    path, db, games, turns, _ = mute_first
    choice = ga.reference_choice(games)
    assert choice.model == "spe" and "passed over mute" in choice.line()
    assert ga.reference_model(games, turns=turns) == "spe"
    assert ga.fit_summary(ga.regressions(games, "glee.bargaining"))["reference_model"].eq("spe").all()
    # the report and agora analyze name it, and why, in one line
    rc, _, err = agora(capsys, "report", str(path), "--db", str(db), "--out", str(tmp_path / "rep"))
    assert rc == 0, err
    page = (tmp_path / "rep" / "index.html").read_text(encoding="utf-8")
    assert "Reference model: <b>spe</b>" in page and "passed over mute: none of its turns was valid" in page
    rc, out, err = agora(capsys, "analyze", "glee", str(path), "--db", str(db), "--reps", "5")
    assert rc == 0, err
    assert "reference model spe (the first model of the study file's list that played; passed over mute: none of its turns was valid)" in out
    # a reference named explicitly is kept, with a note
    named = ga.reference_choice(games, override="mute")
    assert named.model == "mute" and "none of mute's turns was valid" in named.line()


def test_a_frame_that_lost_its_study_file_asks_for_it(mute_first, tmp_path):
    path, db, games, turns, spec = mute_first
    merged = games.merge(pd.DataFrame({"game_id": games["game_id"], "note": "x"}), on="game_id")  # with a frame of other attrs: pandas drops them
    games.to_csv(tmp_path / "g.csv", index=False)
    round_trip = pd.read_csv(tmp_path / "g.csv")
    for frame in (merged, round_trip):
        assert "spec" not in frame.attrs
        for call in (lambda: ga.reference_model(frame), lambda: ga.regressions(frame, "glee.bargaining"), lambda: ga.adjusted_self_gain(frame, "glee.bargaining")):
            with pytest.raises(ValueError, match=r"no study file .*pass spec="):
                call()
    # the study name puts both attributes back: the rule gives what the report gives
    store = Store(db, read_only=True)
    try:
        restored = with_study(merged, store, "mute_first")
    finally:
        store.dispose()
    assert ga.reference_model(restored) == "spe" and ga.fit_summary(ga.regressions(restored, "glee.bargaining"))["reference_model"].eq("spe").all()
    # the study file alone (as stored, or its path) knows no turns: the line says so
    choice = ga.reference_choice(merged, spec)
    assert choice.model == ga.reference_model(merged, str(path)) == "mute" and "turn validity unknown" in choice.line()
    assert ga.reference_model(merged, spec, turns=turns) == "spe"
    assert ga.regressions(round_trip, "glee.bargaining", reference="spe")["efficiency"].references["model_alice"] == "spe"
    # spec={} says "no study file": the first name in sorted order that is no person's seat
    assert ga.reference_choice(merged, {}).line().startswith("reference model mute (no study file")
    with pytest.raises(ValueError, match="no study file"):
        analyze_glee(merged, reps=2)
    assert "reference model spe" in analyze_glee(games, reps=2)

"""Commons analyses: Kaplan–Meier against a hand computation and statsmodels, censoring of the
cut-off fixture runs, Gini, Welch/BH factor tests with a planted and a null difference, and the
report sections over a scripted study."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from agorabench.analysis.factor_tests import bh_adjust, factor_differences, welch
from agorabench.analysis.frames import games_df
from agorabench.analysis.survival import collapsed_by_month, gini, kaplan_meier, km_by_group, runs_table, survival_at
from agorabench.store.store import Store
from support.helpers import run_agora
from support.studies import commons

# ten runs: collapses at months 2, 3, 5, 8, 9; censored at 3, 6 and three full runs of 12
DURATIONS = [2, 3, 3, 5, 6, 8, 9, 12, 12, 12]
EVENTS = [True, True, False, True, False, True, True, False, False, False]


def test_kaplan_meier_matches_the_textbook_product_limit():
    km = kaplan_meier(DURATIONS, EVENTS).set_index("time")
    # S(t) = prod (1 - d_i/n_i): 9/10, then 8/9, 6/7, 4/5, 3/4
    expected = {2: 0.9, 3: 0.8, 5: 0.8 * 6 / 7, 6: 0.8 * 6 / 7, 8: 0.8 * 6 / 7 * 4 / 5, 9: 0.8 * 6 / 7 * 4 / 5 * 3 / 4, 12: 0.8 * 6 / 7 * 4 / 5 * 3 / 4}
    for t, s in expected.items():
        assert km.loc[t, "survival"] == pytest.approx(s)
    assert km.loc[3, ["at_risk", "events", "censored"]].tolist() == [9, 1, 1]
    assert km.loc[12, ["at_risk", "events", "censored"]].tolist() == [3, 0, 3]
    # Greenwood at t = 3: var(log S) = 1/(10*9) + 1/(9*8); log(-log) interval
    var = 1 / 90 + 1 / 72
    se = math.sqrt(var) / abs(math.log(0.8))
    assert km.loc[3, "low"] == pytest.approx(0.8 ** math.exp(1.959964 * se), rel=1e-5)
    assert km.loc[3, "high"] == pytest.approx(0.8 ** math.exp(-1.959964 * se), rel=1e-5)
    assert survival_at(km.reset_index(), 7)[0] == pytest.approx(0.8 * 6 / 7)


def test_kaplan_meier_agrees_with_statsmodels():
    from statsmodels.duration.survfunc import SurvfuncRight

    sm = SurvfuncRight(np.array(DURATIONS, float), np.array(EVENTS, float))
    km = kaplan_meier(DURATIONS, EVENTS).set_index("time")
    for t, s, se in zip(sm.surv_times, sm.surv_prob, sm.surv_prob_se):
        assert km.loc[t, "survival"] == pytest.approx(s)
        # statsmodels reports the Greenwood standard error of S itself: S * sqrt(var(log S))
        lo, hi = km.loc[t, "low"], km.loc[t, "high"]
        assert lo < s < hi or s in (0.0, 1.0)
        assert se == pytest.approx(s * math.sqrt(sum(d / (n * (n - d)) for tt, n, d in _risk_table() if tt <= t)))


def _risk_table():
    km = kaplan_meier(DURATIONS, EVENTS)
    return [(r.time, r.at_risk, r.events) for r in km.itertuples() if r.events]


def test_collapsed_by_month_counts_censored_runs_only_while_observed():
    runs = pd.DataFrame({"game_id": range(10), "model": "m", "duration": DURATIONS, "event": EVENTS, "censored": [not e for e in EVENTS]})
    share = collapsed_by_month(runs, 12).set_index("month")
    # month 4: collapsed 2 of the runs known at month 4 (9 = all but the run censored at 3)
    assert share.loc[4, "runs_known"] == 9 and share.loc[4, "share_collapsed"] == pytest.approx(2 / 9)
    assert share.loc[4, "km_collapsed"] == pytest.approx(0.2)
    assert share.loc[12, "km_collapsed"] == pytest.approx(1 - 0.8 * 6 / 7 * 4 / 5 * 3 / 4)


def test_gini():
    assert gini([10, 10, 10, 10, 10]) == 0.0
    assert gini([0, 0, 0, 0, 50]) == pytest.approx(0.8)  # (n − 1)/n for one agent taking all
    assert math.isnan(gini([0, 0, 0]))


def test_cut_off_fixture_runs_are_censored(shared_fixtures, tmp_path):
    from agorabench.games.commons.importer import import_logs

    store = Store(tmp_path / "govsim.db")
    store.save_records(import_logs(shared_fixtures / "govsim", "govsim"))
    games = games_df(store, "govsim")
    games["model"] = games["model_agent_0"]
    runs = runs_table(games).set_index("game_id")
    g = games.set_index("game_id")
    cut = g[~g["collapsed"].astype(bool) & (g["survival_time"] < 12)]
    assert len(cut) > 0
    assert runs.loc[cut.index, "censored"].all() and not runs.loc[cut.index, "event"].any()
    collapsed = g[g["collapsed"].astype(bool)]
    assert runs.loc[collapsed.index, "event"].all()
    assert (runs.loc[collapsed.index, "duration"] == collapsed["survival_time"]).all()
    km = km_by_group(runs.reset_index())
    assert set(km["model"]) == set(games["model"])
    assert km.groupby("model")["survival"].apply(lambda s: s.is_monotonic_decreasing).all()


def test_bh_adjust_matches_statsmodels():
    from statsmodels.stats.multitest import multipletests

    p = [0.001, 0.04, 0.03, 0.2, 0.5, 0.012, float("nan")]
    ours = bh_adjust(p)
    theirs = multipletests([x for x in p if not math.isnan(x)], method="fdr_bh")[1]
    assert np.allclose(ours[:-1], theirs) and math.isnan(ours[-1])


def test_welch_matches_scipy():
    from scipy import stats

    rng = np.random.default_rng(0)
    a, b = rng.normal(0, 1, 12), rng.normal(0.5, 2, 20)
    res = welch(a, b)
    ref = stats.ttest_ind(b, a, equal_var=False)
    assert res["t"] == pytest.approx(ref.statistic) and res["p"] == pytest.approx(ref.pvalue)
    assert res["low"] < res["delta"] < res["high"]


def test_planted_factor_difference_is_found_and_null_ones_are_not():
    rng = np.random.default_rng(7)
    n = 30
    on = np.repeat([False, True], n)
    games = pd.DataFrame({"universalization": on, "model": "m"})
    games["survival_time"] = rng.normal(6, 2, 2 * n) + np.where(on, 3.0, 0.0)  # planted: +3 months
    for k in range(5):
        games[f"null_{k}"] = rng.normal(50, 10, 2 * n)
    table = factor_differences(games, "universalization", ["survival_time", *[f"null_{k}" for k in range(5)]], by=("model",)).set_index("metric")
    assert table.loc["survival_time", "significant"] and table.loc["survival_time", "low"] > 1.0
    assert table.loc["survival_time", "level_a"] == False and table.loc["survival_time", "level_b"] == True  # noqa: E712
    assert not table.drop(index="survival_time")["significant"].any()
    assert (table["p_bh"] >= table["p"]).all()
    with pytest.raises(ValueError, match="binary factor"):
        factor_differences(games.assign(language=np.arange(2 * n) % 3), "language", ["survival_time"])


STUDY = commons(
    "commons_km",
    repeats=2,
    seed=3,
    grid={"universalization": [False, True]},
    fixed={"scenario": "fishery", "n_agents": 5, "months": 6, "max_conversation_steps": 2},
)


def test_commons_report_has_survival_and_factor_sections(play_study, tmp_path):
    path, db = play_study(STUDY)
    res = run_agora("report", str(path), "--db", str(db), "--out", str(tmp_path / "rep"), timeout=300)
    assert res.returncode == 0, res.stderr
    page = (tmp_path / "rep" / "index.html").read_text(encoding="utf-8")
    for title in ("Survival (Kaplan–Meier, censored runs)", "Resource trajectory and inequality per month", "Factor effects (Welch, BH)", "Kaplan–Meier survival of the resource per model"):
        assert title in page
    games = games_df(Store(str(db)), "commons_km")
    games["model"] = games["model_agent_0"]
    runs = runs_table(games)
    km = km_by_group(runs).groupby("model")["survival"].last()
    assert km["sustainable"] == 1.0 and km["greedy"] == 0.0  # greedy empties the lake in month 1
    assert runs[runs.model == "greedy"]["event"].all() and runs[runs.model == "sustainable"]["censored"].all()

"""The commons report's leadership section (``leadership``, :mod:`.election`): each leadership
condition's measures with 95 % intervals, the change from no leader with Welch intervals (as
AgentElect compares elected leaders with none), and the elections' SVO measures."""

from __future__ import annotations

import math

import pandas as pd

from ...analysis.factor_tests import bh_adjust, welch
from ...analysis.plots import table_html
from ...analysis.report import Section
from ...analysis.stats import declared_ranges, mean_ci, row_clusters

#: The measures compared across conditions (AgentElect's social welfare and survival time first).
MEASURES = ["social_welfare", "survival_time", "efficiency", "equality", "over_usage"]
#: The elections' measures (per run), shown for the conditions with a leader.
ELECTION_MEASURES = ["elections", "wins_altruistic", "wins_prosocial", "wins_individualistic", "wins_competitive", "winner_svo_angle", "repeat_wins", "abstentions"]

NOTE = (
    "<p class='note'><b>Leadership</b>: <i>none</i> (GovSim: no leader), <i>fixed</i> (one candidate leads every month) "
    "or <i>elected</i> (the agents that do not stand vote each election month, first past the post), with the candidates' "
    "social value orientations (the population) and, where set, disinformation. <b>social_welfare</b> = ΣR, the total "
    "harvested by the group (AgentElect's measure: each month's total capped at the stock, which the allocation never "
    "exceeds). Means over runs with a 95 % interval (percentile bootstrap within the measure's range, clustered by "
    "participant where people played). <b>Δ vs none</b>: mean(condition) − mean(none) for the same model and scenario, "
    "Welch interval, BH-adjusted p over the table; <b>change %</b> = 100·Δ/mean(none). <b>wins_&lt;category&gt;</b>: the "
    "share of a run's elections won by a candidate of that SVO category; <b>winner_svo_angle</b>: the winners' mean SVO "
    "angle (degrees); <b>repeat_wins</b>: elections won by the previous election's winner; <b>abstentions</b>: votes "
    "naming no candidate.</p>"
)


def condition_of(row: pd.Series) -> str:
    """A run's leadership condition: ``none``, or the kind, population and ``disinfo``."""
    kind = row.get("leadership")
    if not isinstance(kind, str) or kind == "none":
        return "none"
    pop = row.get("svo_population")
    pop = pop if isinstance(pop, str) else ("balanced" if kind == "elected" else "one_prosocial")
    every = row.get("election_every")
    parts = [kind, pop]
    if isinstance(every, (int, float)) and not math.isnan(float(every)) and int(every) != 1:
        parts.append(f"every {int(every)}")
    disinfo = row.get("disinformation")
    if isinstance(disinfo, (bool, int, float)) and not (isinstance(disinfo, float) and math.isnan(disinfo)) and bool(disinfo):
        parts.append("disinfo")
    return " / ".join(parts)


def leader_ranges(g: pd.DataFrame) -> dict[str, tuple[float | None, float | None]]:
    """The leadership measures' ranges (social welfare and :data:`ELECTION_MEASURES`) as the
    game declares them over the configurations of ``g`` that have leaders
    (``Commons.metric_ranges``; none of them readable: a default configuration with leaders)."""
    from .commons import Commons

    declared = declared_ranges(Commons, g[g["leadership"].isin(["fixed", "elected"])])
    if "social_welfare" not in declared:  # stored configurations this version no longer reads
        declared = Commons.ranges_over([{"leadership": "elected", "n_agents": 8}])
    return {m: declared[m] for m in ["social_welfare", *ELECTION_MEASURES] if m in declared}


def sections(g: pd.DataFrame, bounds: dict[str, tuple[float | None, float | None]]) -> list[Section]:
    """Nothing when no run has a leader; else the section (module doc)."""
    if "leadership" not in g or not g["leadership"].isin(["fixed", "elected"]).any():
        return []
    g = g.copy()
    g["leadership_condition"] = g.apply(condition_of, axis=1)
    if "social_welfare" not in g or g["social_welfare"].isna().any():  # a run without leaders: ΣR
        sw = pd.to_numeric(g.get("social_welfare"), errors="coerce") if "social_welfare" in g else pd.Series(float("nan"), index=g.index)
        g["social_welfare"] = sw.fillna(pd.to_numeric(g["total_gain_sum"], errors="coerce"))
    keys = ["model", "scenario"] if "scenario" in g else ["model"]
    clusters = row_clusters(g, "model")
    limits = {**bounds, **leader_ranges(g)}
    rows = []
    for key, sub in g.groupby(keys + ["leadership_condition"]):
        for m in MEASURES + ELECTION_MEASURES:
            if m not in sub or pd.to_numeric(sub[m], errors="coerce").isna().all():
                continue
            mean, lo, hi, n = mean_ci(pd.to_numeric(sub[m], errors="coerce"), bounds=limits.get(m), clusters=clusters.loc[sub.index] if clusters is not None else None)
            rows.append({**dict(zip(keys + ["condition"], key)), "measure": m, "mean": mean, "low": lo, "high": hi, "runs": n})
    body = NOTE + table_html(pd.DataFrame(rows), name="leadership conditions measures")
    diffs = []
    for key, sub in g.groupby(keys):
        keyvals = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
        base = sub[sub["leadership_condition"] == "none"]
        if base.empty:
            continue
        for cond, other in sub[sub["leadership_condition"] != "none"].groupby("leadership_condition"):
            for m in MEASURES:
                res = welch(pd.to_numeric(base[m], errors="coerce"), pd.to_numeric(other[m], errors="coerce"))
                change = 100.0 * res["delta"] / res["mean_a"] if res["mean_a"] else float("nan")
                diffs.append({**keyvals, "condition": cond, "measure": m, "none": res["mean_a"], "with leader": res["mean_b"], "delta": res["delta"], "low": res["low"], "high": res["high"], "change %": change, "p": res["p"], "runs none/with": f"{res['n_a']}/{res['n_b']}"})
    if diffs:
        d = pd.DataFrame(diffs)
        d["p_bh"] = bh_adjust(d["p"])
        body += "<h3>Change from no leader (Welch)</h3>" + table_html(d, name="leadership change from none welch")
    else:
        body += "<p class='note'>No model has runs without a leader beside runs with one in this study: no change from none is computed.</p>"
    return [Section("Leadership conditions (AgentElect)", body)]

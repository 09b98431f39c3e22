"""Report sections of the commons game: resource after harvesting per month with per-agent
harvest bars (one figure per run, then a summary over runs), the paper-style metrics table per
model (mean ± sd), the change when universalization is switched on, Kaplan–Meier survival with
censoring, the share collapsed and the Gini of harvests per month, the mean resource trajectory
with a band, and Welch/BH tests of every binary factor (universalization, language, mixed
groups)."""

from __future__ import annotations

import html
from collections import Counter

import matplotlib.pyplot as plt
from matplotlib.ticker import MaxNLocator
import numpy as np
import pandas as pd

from ...analysis.factor_tests import bh_adjust, binary_factors, factor_differences
from ...analysis.plots import MAX_LINES, bands, figure_html, table_html
from ...analysis.report import Section
from ...analysis.stats import declared_ranges
from ...analysis.survival import collapsed_by_month, gini_by_month, km_by_group, resource_trajectory, runs_table
from . import election_report
from .config import CommonsConfig

METRICS = ["survival_time", "survival_time_harvested", "survival_rate", "total_gain", "total_loss", "efficiency", "equality", "over_usage"]
#: Column headings that name which counting a survival figure uses.
LABELS = {
    "survival_time": "survival_time (all months played)",
    "survival_time_harvested": "survival_time (months with a request > 0; Tables 1–2 counting)",
    "survival_rate": "survival_rate (censored runs left out)",
}
MAX_RUN_FIGURES = 24

#: Metric definitions shown at the top of the report.
DEFINITIONS = """
<p>N agents share a resource over at most T months (a run). h(t) is the stock at the start of month
t, r<sub>i</sub>(t) what agent i collected that month (in the trash scenario: what it removed),
n<sub>t</sub> the agents present in month t. The sustainability threshold f(t) is the most the
group can take without the stock shrinking next month: f(t) = h(t)·(1 − 1/g) when the stock
regrows by the factor g (f = 50 at h = 100, g = 2), f(t) = min(a, h(t)) when a units are added
each month; in the trash scenario f(t) is the <i>least</i> the group must remove. f<sub>0</sub> =
f(initial stock). The resource <i>collapses</i> in month m when what is left after harvesting is
below the collapse threshold C (trash: the pile is above C; a study with the inclusive rule also
counts reaching C); the run ends there.</p>
<ul>
<li><b>survival_time</b> (months) = m, the month whose harvest collapsed the resource, else the
number of months played (T for a full run). <b>survival_time_harvested</b> counts only the months
in which some agent asked for more than 0 (the reproduction's Tables 1–2).</li>
<li><b>censored</b> = 1 for a run that stopped before month T without a collapse (an imported log
cut off early): its survival time is a lower bound. <b>survival_rate</b> (%) = 100 × (runs lasting
all T months) / (runs not censored).</li>
<li><b>total_gain</b> (units per agent) = (1/N)·Σ<sub>i</sub> R<sub>i</sub> with R<sub>i</sub> =
Σ<sub>t</sub> r<sub>i</sub>(t), the mean total an agent collected. In mixed groups,
<b>mean_total_gain</b> is R<sub>i</sub> averaged over the agents of one seat model, <b>sd</b> their
sample standard deviation.</li>
<li><b>efficiency</b> (%) = 100·(1 − max(0, T·f<sub>0</sub> − ΣR)/(T·f<sub>0</sub>)), ΣR =
Σ<sub>i</sub> R<sub>i</sub>: how much of the sustainable total T·f<sub>0</sub> the group used.
Trash scenario: 100·ΣR/(T·f<sub>0</sub>) while ΣR ≤ T·f<sub>0</sub>, 100·T·f<sub>0</sub>/ΣR once the
group removes more, 0 when it removes nothing.</li>
<li><b>total_loss</b> (trash scenario, units per agent) = (M − ΣR)/N with M the most a group can
remove by clearing everything every month (initial + (T − 1)·min(a, capacity) when a units are added each month: 650 for trash over
12 months):
0 when a group clears everything.</li>
<li><b>equality</b> (%) = 100·(1 − Gini) = 100·(1 − Σ<sub>i</sub>Σ<sub>j</sub>|R<sub>i</sub> −
R<sub>j</sub>| / (2·N²·R̄)), R̄ = ΣR/N; 100 = everyone collected the same; undefined (–, left out
of means) when ΣR = 0, as the original's Gini (0/0), not 0 (maximal inequality).</li>
<li><b>over_usage</b> (%) = 100 × #{(i, t): r<sub>i</sub>(t) &gt; f(t)/n<sub>t</sub>} /
#{(i, t): t ≤ m}, the share of agent-months above the sustainable per-agent share (the study may
use the group threshold r<sub>i</sub>(t) &gt; f(t) instead; trash: removing <i>less</i> than the
share); 100 when no month was played.</li>
<li><b>invalid_harvests</b>, <b>invalid_remarks</b> (per run): answers that stayed unusable after
the re-asks. Here an unusable harvest answer is asked again with the reason (twice by default) and
then counts as taking nothing, and an unusable remark as an empty remark after which the chat
goes on. The original instead turned an unparsable answer at once into a default that ends the
chat (and a harvest of 0), without asking again; runs of weak models therefore differ in chat
length, and these counts say how often it happened.</li>
<li><b>Metrics per model</b>: mean ± sample sd over runs; <b>runs off/on</b> and the
<code>off</code> / <code>on</code> columns: means without and with universalization, <b>Δ</b> = on −
off.</li>
<li><b>Kaplan–Meier survival</b> Ŝ(t) = Π<sub>t<sub>k</sub> ≤ t</sub>(1 − d<sub>k</sub>/n<sub>k</sub>),
the estimated probability that the resource has not collapsed by month t; d<sub>k</sub> collapses in
month t<sub>k</sub>, n<sub>k</sub> runs still at risk just before it. A collapse is the event; runs
that lasted every month or were cut off are censored at their last month (<b>collapsed</b> /
<b>censored</b> count them). 95 % band from Greenwood's variance Σ d<sub>k</sub>/(n<sub>k</sub>(n<sub>k</sub> −
d<sub>k</sub>)) on the log(−log) scale: Ŝ<sup>exp(±1.96·se)</sup>, se = √Var / |log Ŝ|.</li>
<li><b>Collapsed by month</b>: <b>share_collapsed</b> = runs collapsed by month m / runs known at m
(<b>runs_known</b>: runs observed through m or collapsed earlier); <b>km_collapsed</b> = 1 − Ŝ(m)
with <b>km_low</b>, <b>km_high</b> = 1 − the band's ends.</li>
<li><b>Mean resource left</b> (units) per model and month: mean over runs of the stock left after
harvesting; a collapsed run keeps its last value, a censored run leaves the mean after its last
month.</li>
<li><b>gini</b> per month = Σ<sub>i</sub>Σ<sub>j</sub>|r<sub>i</sub>(t) − r<sub>j</sub>(t)| /
(2·n<sub>t</sub>²·r̄(t)) of that month's harvests in one run (0 = equal shares,
(n<sub>t</sub> − 1)/n<sub>t</sub> when one agent takes all; undefined when nobody took anything), then
averaged over runs.</li>
<li><b>Factor tests</b>: for a factor with two levels a, b (universalization, language, mixed
groups) and a metric, <b>mean_a</b> and <b>mean_b</b> are the means at the two levels, <b>delta</b> =
mean_b − mean_a; Welch's <b>t</b> = Δ / √(s<sub>a</sub>²/n<sub>a</sub>
+ s<sub>b</sub>²/n<sub>b</sub>) with Welch–Satterthwaite degrees of freedom <b>df</b>, two-sided
<b>p</b>, interval Δ ± t<sub>df, 0.975</sub>·se; <b>p_bh</b> = Benjamini–Hochberg adjusted p over every
row of the table (p<sub>(i)</sub>·m/i, made monotone, capped at 1); <b>significant</b> = p_bh &lt; 0.05.</li>
<li><b>mean</b>, <b>low</b>, <b>high</b> elsewhere (the resource left, the Gini per month, the
profile's survival time, over-usage and equality): mean over runs (<b>runs</b> = n) with the 95 %
percentile-bootstrap interval (2,000 resamples of the runs), which lies between the smallest and
the largest run and so within the metric's range: the resource 0 to the scenario's capacity, the
Gini 0–1, percentages 0–100, survival times 0 to T.</li>
</ul>
"""


def model_label(row: pd.Series) -> str:
    """The model of a game: its name when every agent has it, else e.g. ``A×4 + B×1``."""
    seats = [row[c] for c in row.index if c.startswith("model_agent_") and isinstance(row[c], str)]
    counts = Counter(seats)
    if len(counts) == 1:
        return next(iter(counts))
    return " + ".join(f"{m}×{k}" for m, k in sorted(counts.items(), key=lambda p: (-p[1], p[0])))


def _condition(row: pd.Series) -> str:
    parts = [str(row.get("scenario", "")), str(row.get("language", ""))]
    if bool(row.get("universalization", False)):
        parts.append("univ.")
    return "/".join(p for p in parts if p)


def _prepare(games: pd.DataFrame) -> pd.DataFrame:
    g = games.copy()
    g["model"] = g.apply(model_label, axis=1)
    people = [c for c in g.columns if isinstance(c, str) and c.startswith("participant_")]
    if people and "participant" not in g:  # the people of a run (pooled as human): its cluster in the intervals
        g["participant"] = g[people].apply(lambda r: " & ".join(sorted(str(v) for v in r if isinstance(v, str) and v)) or None, axis=1)
    g["condition"] = g.apply(_condition, axis=1)
    if "universalization" not in g:
        g["universalization"] = False
    g["universalization"] = g["universalization"].fillna(False).astype(bool)
    # a censored run (cut off without collapse) has survived = NaN: left out of the rate
    g["survival_rate"] = 100.0 * pd.to_numeric(g["survived"], errors="coerce") if "survived" in g else np.nan
    g["censored"] = pd.to_numeric(g["censored"], errors="coerce").fillna(0.0) if "censored" in g else 0.0
    g["mixed"] = g["model"].str.contains("×", regex=False)
    if "equality" in g:  # undefined when nobody collected anything, as the original's Gini (0/0)
        g["equality"] = pd.to_numeric(g["equality"], errors="coerce").where(~_nothing_collected(g))
    return g


def _nothing_collected(g: pd.DataFrame) -> pd.Series:
    """Runs in which no agent collected anything (ΣR = 0)."""
    for column in ("total_gain_sum", "total_gain"):
        if column in g:
            return pd.to_numeric(g[column], errors="coerce").fillna(-1.0).eq(0.0)
    return pd.Series(False, index=g.index)


def ranges(games: pd.DataFrame) -> dict[str, tuple[float | None, float | None]]:
    """The range of each commons metric (low, high; None: open) for these games, as the game
    declares them: its metrics over these games' configurations (``Commons.metric_ranges``),
    and what this report derives from the runs (``Commons.derived_ranges``: the survival rate,
    the Gini per month, the resource left up to the largest capacity of the games' scenarios)."""
    from .commons import Commons

    declared = declared_ranges(Commons, games)
    metrics = ("survival_time", "survival_time_harvested", "total_gain", "total_loss", "efficiency", "equality", "over_usage")
    return {**{m: declared[m] for m in metrics}, **derived_ranges(games)}


def derived_ranges(games: pd.DataFrame) -> dict[str, tuple[float | None, float | None]]:
    """``Commons.derived_ranges`` joined over the games' scenarios (scenario, language): the
    largest capacity bounds the resource; an unknown scenario, or games without one, leave it
    open."""
    from .commons import Commons

    found = []
    if {"scenario", "language"} <= set(games):
        for scenario, language in games[["scenario", "language"]].drop_duplicates().itertuples(index=False):
            try:
                found.append(Commons.derived_ranges(CommonsConfig(scenario=str(scenario), language=str(language))))
            except (KeyError, ValueError):
                found = []
                break
    if not found:
        return {**Commons.derived_ranges(CommonsConfig()), "resource": (0.0, None)}
    return {name: (min(f[name][0] for f in found), max(f[name][1] for f in found)) for name in found[0]}  # type: ignore[type-var]


def _harvests(turns: pd.DataFrame) -> pd.DataFrame:
    if turns.empty or "phase" not in turns or "collected" not in turns:
        return pd.DataFrame()
    h = turns[(turns["phase"] == "harvest") & turns["month"].notna()].copy()
    h["month"] = h["month"].astype(int)
    return h


def unit_of(games: pd.DataFrame) -> str:
    """The resource's unit (e.g. "tons of fish") when the games share one scenario and language,
    else "units"."""
    from .scenario import get_scenario

    if {"scenario", "language"} <= set(games) and games[["scenario", "language"]].drop_duplicates().shape[0] == 1:
        try:
            return get_scenario(str(games["scenario"].iloc[0]), str(games["language"].iloc[0])).unit
        except (KeyError, ValueError):
            return "units"
    return "units"


def _run_figure(run: pd.DataFrame, title: str, unit: str) -> str:
    """One run: each agent's harvest per month as bars, the resource left as a line."""
    roles = sorted(run["role"].unique(), key=lambda r: int(r.split("_")[-1]))
    months = sorted(run["month"].unique())
    fig, ax = plt.subplots(figsize=(6.5, 3.2))
    width = 0.8 / max(1, len(roles))
    for k, role in enumerate(roles):
        sub = run[run["role"] == role].set_index("month").reindex(months)
        ax.bar(np.array(months) - 0.4 + width * (k + 0.5), sub["collected"].fillna(0).to_numpy(), width, label=f"{role} harvest")
    stock = run.groupby("month")["stock_after"].first().reindex(months)
    ax.plot(months, stock.to_numpy(), color="black", marker="o", label="left after harvest")
    ax.set_xlabel("month")
    ax.set_ylabel(unit)
    ax.set_xticks(months)
    ax.legend(fontsize=7, bbox_to_anchor=(1.02, 1), loc="upper left")
    ax.set_title(title, fontsize=9)
    return figure_html(fig, title)


def _summary_figures(games: pd.DataFrame, harvests: pd.DataFrame, horizon: int) -> list[str]:
    """Per condition (scenario/language/universalization), small multiples with one panel per
    model: the stock left after harvesting per month, averaged over runs (bold), with each run as
    a thin line when there are few (at most ``MAX_LINES`` − 1), else the min–max range of the runs
    as a band. After a collapse the run's last value is carried forward."""
    stock = harvests.groupby(["game_id", "month"])["stock_after"].first().unstack("month")
    stock = stock.reindex(columns=range(1, horizon + 1)).ffill(axis=1)
    figs = []
    for cond, cond_games in games.groupby("condition"):
        panels = [(model, stock.reindex([x for x in sub["game_id"] if x in stock.index])) for model, sub in cond_games.groupby("model")]
        panels = [(m, rows) for m, rows in panels if not rows.empty]
        if not panels:
            continue
        cols = min(3, len(panels))
        nrows = -(-len(panels) // cols)
        fig, axes = plt.subplots(nrows, cols, figsize=(3.6 * cols + 0.6, 2.9 * nrows + 0.7), sharex=True, sharey=True, squeeze=False)
        for ax, (model, rows) in zip(axes.flat, panels):
            if len(rows) < MAX_LINES:
                for _, r in rows.iterrows():
                    ax.plot(rows.columns, r.to_numpy(), color="C0", alpha=0.35, linewidth=0.8)
            else:
                ax.fill_between(rows.columns, rows.min().to_numpy(dtype=float), rows.max().to_numpy(dtype=float), color="C0", alpha=0.2)
            ax.plot(rows.columns, rows.mean().to_numpy(), color="C3", linewidth=2.2, marker="o")
            ax.set_title(f"{model} (n={len(rows)} runs)", fontsize=9)
            ax.set_ylim(-3, 103)
            ax.grid(alpha=0.3)
        for ax in axes.flat[len(panels):]:
            ax.set_visible(False)
        for ax in axes[-1]:
            ax.set_xlabel("month")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        for ax in axes[:, 0]:
            ax.set_ylabel(f"left after harvest ({unit_of(cond_games)})", fontsize=8)
        title = f"Resource after harvesting per month: {cond} (runs and mean per model)"
        fig.suptitle(f"{title}\nbold: mean over runs; thin lines: single runs, or band: their range", fontsize=9)
        fig.tight_layout()
        figs.append(figure_html(fig, title))
    return figs


def metrics_table(games: pd.DataFrame) -> pd.DataFrame:
    """Mean ± sd of each metric per model and condition (paper-style table); ``censored`` counts
    the runs cut off without a collapse (left out of the survival rate; their survival time is
    a lower bound). Survival columns are headed with the counting they use (:data:`LABELS`)."""
    rows = []
    for (model, cond), sub in games.groupby(["model", "condition"]):
        row = {"model": model, "condition": cond, "runs": len(sub), "censored": int(sub["censored"].astype(float).sum()) if "censored" in sub else 0}
        for m in METRICS:
            if m in sub:
                vals = pd.to_numeric(sub[m], errors="coerce").dropna()
                sd = vals.std(ddof=1) if len(vals) > 1 else float("nan")
                row[LABELS.get(m, m)] = f"{vals.mean():.2f} ± {sd:.2f}" if len(vals) > 1 else (f"{vals.mean():.2f}" if len(vals) else "–")
        rows.append(row)
    return pd.DataFrame(rows)


def universalization_table(games: pd.DataFrame) -> pd.DataFrame:
    """Per model, scenario and language: mean metric without and with universalization, and Δ."""
    rows = []
    keys = ["model", "scenario", "language"]
    for key, sub in games.groupby([k for k in keys if k in games]):
        off, on = sub[~sub["universalization"]], sub[sub["universalization"]]
        if off.empty or on.empty:
            continue
        row = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
        row["runs off/on"] = f"{len(off)}/{len(on)}"
        for m in METRICS:
            if m in sub:
                a, b = off[m].astype(float).mean(), on[m].astype(float).mean()
                row[f"{m} off"], row[f"{m} on"], row[f"Δ {m}"] = a, b, b - a
        rows.append(row)
    return pd.DataFrame(rows)


def seat_gains(games: pd.DataFrame, harvests: pd.DataFrame) -> pd.DataFrame:
    """In mixed groups: each seat model's mean total gain per agent (MultiGov comparison)."""
    if harvests.empty or "model" not in harvests:
        return pd.DataFrame()
    per_agent = harvests.groupby(["game_id", "role", "model"], as_index=False)["collected"].sum()
    per_agent = per_agent.merge(games[["game_id", "model", "condition"]].rename(columns={"model": "group"}), on="game_id")
    mixed = per_agent[per_agent["group"].str.contains("×", regex=False)]
    if mixed.empty:
        return pd.DataFrame()
    out = mixed.groupby(["group", "condition", "model"]).agg(agents=("collected", "size"), mean_total_gain=("collected", "mean"), sd=("collected", "std")).reset_index()
    return out.rename(columns={"model": "seat model"})


def sections(games: pd.DataFrame, turns: pd.DataFrame) -> list[Section]:
    g = _prepare(games)
    h = _harvests(turns)
    out = []
    if not h.empty:
        h = h[h["game_id"].isin(g["game_id"])]
        horizon = int(g["months"].max()) if "months" in g and g["months"].notna().any() else int(h["month"].max())
        figs = []
        for _, row in g.head(MAX_RUN_FIGURES).iterrows():
            run = h[h["game_id"] == row["game_id"]]
            if not run.empty:
                title = f"Harvest per agent and resource left: {row['model']} · {row['condition']} · repeat {row.get('repeat', 0)} · {str(row['game_id'])[:8]}"
                figs.append(_run_figure(run, title, unit_of(g[g["game_id"] == row["game_id"]])))
        note = f"<p class='note'>First {MAX_RUN_FIGURES} of {len(g)} runs shown.</p>" if len(g) > MAX_RUN_FIGURES else ""
        out.append(Section("Resource per month", "\n".join(_summary_figures(g, h, horizon)) + "<h3>Per run: harvest per agent (bars) and resource left (line)</h3>" + note + "\n".join(figs)))
    table = metrics_table(g)
    legend = (
        "<p class='note'>Survival time in months, counted two ways (each column names its counting): all "
        "months played up to the collapse, and only the months in which some agent asked for more than 0 "
        "(the counting of the reproduction's Tables 1 and 2). Survival rate = % of runs lasting all months, "
        "over the runs that were not censored; a censored run (an imported log cut off before its horizon "
        "without a collapse) is never counted as a collapse. Total gain = mean per agent (units removed in "
        "the trash scenario, where total loss = the most an agent could remove minus what it removed, as "
        "in Table 5); efficiency, equality and over-usage on the 0–100 scale. Mean ± sample sd over runs.</p>"
    )
    mixed = seat_gains(g, h)
    if not mixed.empty:
        legend += "<h3>Mixed groups: total gain per agent by seat model</h3>" + table_html(mixed, name="mixed groups total gain per seat model")
    out.append(Section("Metrics per model", legend + table_html(table, name="metrics per model and condition")))
    uni = universalization_table(g)
    if not uni.empty:
        note = "<p class='note'>survival_time counts all months played; survival_time_harvested only the months with a request above 0 (the reproduction's Tables 1–2).</p>"
        out.append(Section("Universalization on vs off", note + table_html(uni, name="universalization on vs off")))
    else:
        out.append(Section("Universalization on vs off", "<p class='note'>" + html.escape("This study has no model with runs both with and without universalization.") + "</p>"))
    out += survival_sections(g, h)
    out += factor_sections(g)
    out += election_report.sections(g, ranges(g))  # leadership conditions, when a run had leaders
    return out


FACTORS = ["universalization", "language", "mixed"]


def survival_sections(g: pd.DataFrame, h: pd.DataFrame) -> list[Section]:
    """Kaplan–Meier survival, share collapsed and Gini per month, mean trajectory with band."""
    runs = runs_table(g)
    horizon = int(g["months"].max()) if "months" in g and g["months"].notna().any() else int(runs["duration"].max())
    km = km_by_group(runs)
    out = []
    body = (
        "<p class='note'>A collapse is the event; runs that lasted every month, and runs cut off early without a collapse "
        "(e.g. imported logs that stop), are censored at their last month. Kaplan–Meier estimate with a 95% log(−log) "
        "Greenwood band.</p>"
    )
    body += bands(km.rename(columns={"time": "month"}), "month", "survival", "model", "Kaplan–Meier survival of the resource per model", "P(not collapsed by month), Ŝ", step=True, ylim=(-0.03, 1.03))
    counts = runs.groupby("model").agg(runs=("event", "size"), collapsed=("event", "sum"), censored=("censored", "sum")).reset_index()
    body += table_html(counts, name="runs collapsed and censored per model")
    share = collapsed_by_month(runs, horizon)
    body += "<h3>Share of runs collapsed by month</h3>" + table_html(share, name="share of runs collapsed by month")
    out.append(Section("Survival (Kaplan–Meier, censored runs)", body))
    if not h.empty:
        group_of = g.set_index("game_id")["model"]
        bounds = ranges(g)
        gin = gini_by_month(h, group_of, bounds=bounds["gini"])
        traj = resource_trajectory(h.groupby(["game_id", "month"], as_index=False)["stock_after"].first(), runs, horizon, bounds=bounds["resource"])
        body = bands(traj, "month", "mean", "model", "Mean resource left after harvesting per model (95% band)", f"left after harvest ({unit_of(g)})")
        body += "<p class='note'>A collapsed run keeps its last value; a censored run leaves the mean after its last month.</p>" + table_html(traj, name="mean resource left per model and month")
        body += bands(gin.rename(columns={"group": "model"}), "month", "gini", "model", "Gini of the month's harvests per model (95% band)", "Gini of harvests (0 = equal shares)", ylim=(-0.03, 1.03))
        body += table_html(gin.rename(columns={"group": "model"}), name="gini of harvests per model and month")
        out.append(Section("Resource trajectory and inequality per month", body))
    return out


def factor_sections(g: pd.DataFrame) -> list[Section]:
    """Welch tests of every metric between the two levels of each binary factor, per model
    (mixed groups: over all groups), BH-adjusted over the whole table."""
    factors = binary_factors(g, FACTORS)
    if not factors:
        return [Section("Factor effects (Welch, BH)", "<p class='note'>No factor of this study takes exactly two values (universalization, language, mixed groups).</p>")]
    metrics = [m for m in METRICS if m in g]
    parts = []
    for factor in factors:
        by = () if factor == "mixed" else ("model",)
        parts.append(factor_differences(g, factor, metrics, by=by))
    table = pd.concat(parts, ignore_index=True)
    table["p_bh"] = bh_adjust(table["p"])
    table["significant"] = table["p_bh"] < 0.05
    body = "<p class='note'>Δ = mean(level b) − mean(level a) per model, Welch's t-test, Benjamini–Hochberg over every row of the table.</p>"
    return [Section("Factor effects (Welch, BH)", body + table_html(table, name="factor effects welch bh"))]


def profile_rows(games: pd.DataFrame, turns: pd.DataFrame) -> pd.DataFrame:
    """Profile rows (``analysis/profile.py``): per model (a mixed group is its own entry) the
    Kaplan–Meier probability that the resource lasts every month, the mean survival time,
    over-usage and equality; the sustainable group (every agent takes its share f(t)/N) as
    the reference row."""
    from ...analysis.profile import row
    from ...analysis.stats import mean_ci, row_clusters
    from ...analysis.survival import kaplan_meier, survival_at

    g = _prepare(games)
    runs = runs_table(g)
    horizon = int(g["months"].max()) if "months" in g and g["months"].notna().any() else int(runs["duration"].max())
    family, section = "commons", "survival and over-usage"
    rows = []
    for model, sub in runs.groupby("model"):
        s, lo, hi = survival_at(kaplan_meier(sub["duration"], sub["event"]), horizon)
        rows.append(row(family, section, f"P(survives {horizon} months), Kaplan–Meier", model, s, lo, hi, len(sub)))
    bounds = ranges(g)
    clusters = row_clusters(g, "model")  # runs with people: clustered by participant
    for model, sub in g.groupby("model"):
        for measure, column in (("survival time (months)", "survival_time"), ("over-usage (%)", "over_usage"), ("equality (%)", "equality")):
            if column in sub:
                m, lo, hi, n = mean_ci(sub[column], bounds=bounds[column], clusters=clusters.loc[sub.index] if clusters is not None else None)
                rows.append(row(family, section, measure, model, m, lo, hi, n))
    name = "sustainable (each takes f(t)/N)"
    for measure, value in ((f"P(survives {horizon} months), Kaplan–Meier", 1.0), ("survival time (months)", float(horizon)), ("over-usage (%)", 0.0), ("equality (%)", 100.0)):
        rows.append(row(family, section, measure, name, value, kind="theory"))
    return pd.DataFrame(rows)

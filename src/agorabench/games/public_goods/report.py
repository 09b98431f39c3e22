"""Report sections and profile rows of the public goods game: each model's contributions (all
rounds, the first and the last), punishment and payoffs with and without punishment, its
contribution round by round, and the groups' efficiency."""

from __future__ import annotations

import math

import pandas as pd

from ...analysis.plots import grid_table, lines, table_html
from ...analysis.report import guarded, Section
from ...analysis.stats import summarise
from .public_goods import PublicGoods, PublicGoodsConfig

#: Per-model measures, in the order shown.
MEASURES = ["contribution_share", "contribution_share_first", "contribution_share_last", "punishment_points", "payoff_share"]

#: Measures on 0–1 (bootstrap intervals that stay within it); the others get the t interval.
#: As the game declares them (``PublicGoods.metric_ranges``; they do not depend on the configuration).
RANGES = {m: PublicGoods.metric_ranges(PublicGoodsConfig())[m] for m in MEASURES[:3]}

#: Metric definitions shown at the top of the report.
DEFINITIONS = """
<p>Each round every player of a fixed group of N receives E tokens and puts a whole number c of
them into a group account; each token in the account pays every player <code>mpcr</code> tokens,
so a round pays E − c + mpcr · (sum of contributions). With <code>punishment</code> a second stage
follows in which each player may assign each other player punishment points; each point costs
the punisher <code>punish_cost</code> tokens and takes <code>punish_effect</code> tokens from the
punished (never more in a round than the punished player's first-stage payoff).</p>
<p>Per model (tables by model and condition): each value is first averaged over the model's
seats in a game, then over games, with 95% intervals from resampling games (percentile bootstrap
for shares, which stays within 0–1; the t interval otherwise); the pooled <code>human</code> row
is clustered by participant.</p>
<ul>
<li><b>contribution_share</b> = c / E over the model's valid contributions (an answer that stays
invalid becomes 0 and is left out); <b>contribution_share_first</b> and
<b>contribution_share_last</b> = the same in the first and the last round.</li>
<li><b>punishment_points</b> = points a player assigned in all in a round (its valid decisions);
empty without punishment.</li>
<li><b>payoff_share</b> = a player's payoff in a round (after punishment) / E: 1 = kept the
endowment; mpcr · N when everyone contributes everything and nobody punishes.</li>
<li><b>efficiency</b> (per group) = the group's payoff over all rounds after punishment / its
payoff had everyone contributed everything (N² · mpcr · E per round): 1 for full contribution,
1 / (mpcr · N) when nobody contributes and nobody punishes.</li>
<li><b>contribution by round</b>: mean c / E of the model's valid contributions in each round.</li>
</ul>
<p>Reference: with mpcr &lt; 1 contributing nothing is dominant (contribution_share = 0) and a
money-maximiser never punishes; with mpcr · N &gt; 1 the group earns most when all contribute
everything.</p>
"""


def _condition(frame: pd.DataFrame) -> pd.Series:
    on = frame["punishment"].astype(bool) if "punishment" in frame else pd.Series(False, index=frame.index)
    return on.map({True: "with punishment", False: "no punishment"})


def seat_values(turns: pd.DataFrame) -> pd.DataFrame:
    """One row per game and model (and participant, for people): the mean of each measure over
    that model's seats and rounds in the game (NaN where it has no such decision)."""
    if turns is None or turns.empty or "contribution_share" not in turns:
        return pd.DataFrame()
    t = turns.copy()
    t["condition"] = _condition(t)
    valid = t["valid"].astype(bool)
    contribute = (t["phase"] == "contribute") & valid
    last_round = t["rounds"] if "rounds" in t else t.groupby("game_id")["round"].transform("max")
    t["contribution_share_first"] = t["contribution_share"].where(contribute & (t["round"] == 1))
    t["contribution_share_last"] = t["contribution_share"].where(contribute & (t["round"] == last_round))
    t["contribution_share"] = t["contribution_share"].where(contribute)
    t["punishment_points"] = t["punishment_points"].where((t["phase"] == "punish") & valid) if "punishment_points" in t else math.nan
    if "payoff_share" not in t:
        t["payoff_share"] = math.nan
    keys = ["game_id", "model", "condition"] + (["participant"] if "participant" in t else [])
    return t.groupby(keys, dropna=False)[MEASURES].mean().reset_index()


def model_table(turns: pd.DataFrame) -> pd.DataFrame:
    """Mean and 95% CI of each measure per model and condition (long format), over games."""
    seats = seat_values(turns)
    if seats.empty:
        return seats
    out = summarise(seats, ["model", "condition"], MEASURES, bounds=RANGES)
    return _in_order(out[out["n"] > 0], MEASURES)


def by_round(turns: pd.DataFrame) -> pd.DataFrame:
    """Mean contribution share per model, condition and round, over games (95% CI)."""
    if turns is None or turns.empty or "contribution_share" not in turns:
        return pd.DataFrame()
    t = turns[(turns["phase"] == "contribute") & turns["valid"].astype(bool)].dropna(subset=["contribution_share"]).copy()
    if t.empty:
        return pd.DataFrame()
    t["condition"] = _condition(t)
    t["round"] = t["round"].astype(int)
    keys = ["game_id", "model", "condition", "round"] + (["participant"] if "participant" in t else [])
    per_game = t.groupby(keys, dropna=False)["contribution_share"].mean().reset_index()
    out = summarise(per_game, ["model", "condition", "round"], ["contribution_share"], bounds=RANGES)
    return out.drop(columns="metric").rename(columns={"mean": "contribution_share"})


def group_table(games: pd.DataFrame) -> pd.DataFrame:
    """Each group composition's efficiency, contribution share, punishment and payoff (95% CI)."""
    seats = sorted(c for c in games.columns if c.startswith("model_player_"))
    g = games.copy()
    g["group"] = [_composition(row) for row in g[seats].itertuples(index=False)]
    g["condition"] = _condition(g)
    columns = [c for c in ("efficiency", "contribution_share", "punishment_points", "payoff_share") if c in g]
    out = summarise(g, ["group", "condition"], columns, bounds={"contribution_share": RANGES["contribution_share"]})
    return _in_order(out[out["n"] > 0], columns)


def _in_order(long: pd.DataFrame, metrics: list[str]) -> pd.DataFrame:
    """A long table's rows with the metrics in the given order (so a grid's columns keep it
    when the first group lacks one, as games without punishment lack punishment_points)."""
    rank = {m: i for i, m in enumerate(metrics)}
    return long.sort_values("metric", key=lambda col: col.map(rank), kind="stable").reset_index(drop=True)


def _composition(models: tuple) -> str:
    """A group as its models with their counts: "full ×1 + selfish ×3"."""
    counts: dict[str, int] = {}
    for m in models:
        if isinstance(m, str):
            counts[m] = counts.get(m, 0) + 1
    return " + ".join(f"{m} ×{k}" for m, k in sorted(counts.items()))


def sections(games: pd.DataFrame, turns: pd.DataFrame) -> list[Section]:
    if games.empty:
        return []

    def per_model() -> Section | None:
        table = model_table(turns)
        if table.empty:
            return None
        return Section("Contributions, punishment and payoffs per model", grid_table(table, ["model", "condition"], name="public goods per model"))

    def rounds() -> Section | None:
        table = by_round(turns)
        if table.empty:
            return None
        body = table_html(table, name="contribution by round")
        if table["round"].nunique() > 1:
            shown = table.assign(line=table["model"] + " (" + table["condition"] + ")")
            body = lines(shown, "round", "contribution_share", "line", "Contribution share by round", ylabel="contribution / endowment", ylim=(0, 1), xlabel="round") + body
        return Section("Contribution by round", body)

    def groups() -> Section | None:
        table = group_table(games)
        return Section("Groups: efficiency and contributions", grid_table(table, ["group", "condition"], name="public goods per group")) if not table.empty else None

    return guarded("Contributions, punishment and payoffs per model", per_model) + guarded("Contribution by round", rounds) + guarded("Groups: efficiency and contributions", groups)


def profile_rows(games: pd.DataFrame, turns: pd.DataFrame) -> pd.DataFrame:
    """Each model's measures per condition (mean, 95% CI), and the money-maximising reference
    as theory rows: no contribution, no punishment (with mpcr < 1)."""
    from ...analysis.profile import row

    family, section = "public_goods", "public goods: contributions and punishment"
    rows = [
        row(family, section, f"{r['metric']} ({r['condition']})", r["model"], r["mean"], r["low"], r["high"], r["n"])
        for _, r in model_table(turns).iterrows()
    ]
    rows += [row(family, section, "contribution_share", "selfish", 0.0, kind="theory", note="dominant when mpcr < 1"), row(family, section, "punishment_points", "selfish", 0.0, kind="theory")]
    return pd.DataFrame(rows)

"""Report sections and profile rows of the beauty contest: each model's numbers (first round,
last round, distance from the equilibrium, points won) per p, its mean number round by round
beside the equilibrium path, and each group's targets, convergence and winners."""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

from ...analysis.plots import grid_table, lines, table_html, with_interval
from ...analysis.report import guarded, Section
from ...analysis.stats import declared_ranges, summarise
from .beauty_contest import BeautyContest, ratio_text

#: Per-model measures, in the order shown.
MEASURES = ["guess_first", "guess_last", "equilibrium_distance", "at_equilibrium", "points_share"]
#: Measures with a range, as the game declares it for the per-seat measures derived from its
#: turns (``BeautyContest.seat_ranges``: shares 0–1, the same under every configuration; the
#: percentile bootstrap keeps their intervals inside it); the others get the t interval.
RANGES = BeautyContest.seat_ranges(BeautyContest.Config())
#: Per-group measures (game metrics), in the order shown.
GROUP = ["mean_guess_first", "mean_guess_last", "target_first", "convergence", "winners_share", "top_points_share"]

#: Metric definitions shown at the top of the report.
DEFINITIONS = """
<p>Each round every player of a fixed group of N chooses a number x from <code>low</code> to
<code>high</code> (at most two decimals); the <i>target</i> is <code>p</code> times the average of
the round's numbers, and the player(s) closest to it share the round's <code>prize</code>. After a
round everyone sees all numbers (without names), their average, the target and the winning
number. The <i>equilibrium</i> number is <code>low</code> for p &lt; 1 and <code>high</code> for p &gt; 1
(none for p = 1). A number that stays invalid becomes the midpoint (low + high) / 2; it counts in
the average but is left out of every mean of numbers below.</p>
<p>Per model (by p): each value is first averaged over the model's seats in a game, then over
games, with 95% intervals from resampling games (percentile bootstrap for shares, which stays
within 0–1; the t interval otherwise); the pooled <code>human</code> row is clustered by
participant.</p>
<ul>
<li><b>guess_first</b> / <b>guess_last</b> = the model's valid numbers in the first / the last round.</li>
<li><b>equilibrium_distance</b> = |x − equilibrium| over the model's valid numbers, all rounds, in the numbers' units.</li>
<li><b>at_equilibrium</b> = share of the model's valid numbers equal to the equilibrium number.</li>
<li><b>points_share</b> = the points a seat won in a round / the prize (1 alone, 1/k when k tie, 0
otherwise), every round; a group of N shares 1 per round, so 1/N is an even share.</li>
<li><b>mean number by round</b>: the mean of the model's valid numbers in each round; the
<code>level-k path</code> lines are 50·p<sup>k</sup> (k = 1, 2) carried forward by the
reference-point rule (the previous round's average times p<sup>k</sup>) on 0–100.</li>
</ul>
<p>Per group (game metrics, by composition and p): <b>mean_guess_first</b> / <b>mean_guess_last</b>
= the mean valid number of round 1 / of the last round; <b>target_first</b> = round 1's target;
<b>convergence</b> = mean_guess_last / mean_guess_first (Nagel's rate of decrease is 1 −
convergence); <b>winners_share</b> = winners per round / N; <b>top_points_share</b> = the most
points one player won / all points paid (prize · rounds). The exported games also hold
<b>target_last</b> (the last round's target) and <b>equilibrium_distance_first</b> /
<b>equilibrium_distance_last</b> (mean |x − equilibrium| over the valid numbers of round 1 / of the
last round; empty for p = 1).</p>
<p><b>Cognitive hierarchy and level-k</b> (fitted to each model's valid first-round numbers, per
p): in the Poisson cognitive hierarchy (Camerer, Ho &amp; Chong 2004) a share f(k) of players,
Poisson with mean <b>tau</b>, reasons k steps: level 0 picks uniformly over the range, level k
believes the others are the lower levels in proportion to f and chooses p times the average it
expects, observed with a normal error of standard deviation <b>sigma</b> (truncated to the
range); τ and σ by maximum likelihood, τ's 95 % interval from the profile likelihood. In
level-k, level k chooses 50·p<sup>k</sup> (level 0 uniform) and the shares of levels 0–3
(<b>level_0</b>…<b>level_3</b>, 95 % bootstrap intervals over 100 resamples) are free, with one
error σ. <b>ch_log_likelihood</b>, <b>level_k_log_likelihood</b> = the maximised ℓ̂;
<b>ch_bic</b>, <b>level_k_bic</b> = k·ln n − 2ℓ̂ (k = 2 and 5 parameters; lower is better). The
human reference row fits Nagel's (1995) first-period choices of the same p (τ̂ ≈ 1.07 [0.62,
1.61] at p = 2/3; Camerer, Ho &amp; Chong's often quoted τ ≈ 1.5 lies inside).</p>
<p>Reference: with p &lt; 1 equilibrium play chooses low every round (all tie: winners_share 1);
level-k players starting from 50 choose 50·p<sup>k</sup> and, round after round, p<sup>k</sup>
times the last average, unravelling towards low.</p>
"""


def _condition(frame: pd.DataFrame) -> pd.Series:
    """Each row's p in words ("p = 2/3")."""
    if "p" not in frame:
        return pd.Series("", index=frame.index, dtype=object)
    return frame["p"].astype(float).map(lambda p: f"p = {ratio_text(p)}")


def _equilibrium(frame: pd.DataFrame) -> pd.Series:
    p, low, high = frame["p"].astype(float), frame["low"].astype(float), frame["high"].astype(float)
    return low.where(p < 1, high.where(p > 1, math.nan))


def seat_values(turns: pd.DataFrame) -> pd.DataFrame:
    """One row per game and model (and participant, for people): the mean of each measure over
    that model's seats and rounds in the game (NaN where it has no such choice)."""
    if turns is None or turns.empty or "guess" not in turns or "phase" not in turns:
        return pd.DataFrame()
    t = turns[turns["phase"] == "guess"].copy()
    if t.empty:
        return pd.DataFrame()
    t["condition"] = _condition(t)
    valid = t["valid"].astype(bool) & t["guess"].notna()
    last = t["rounds"] if "rounds" in t else t.groupby("game_id")["round"].transform("max")
    goal = _equilibrium(t)
    x = t["guess"].astype(float)
    t["guess_first"] = x.where(valid & (t["round"] == 1))
    t["guess_last"] = x.where(valid & (t["round"] == last))
    t["equilibrium_distance"] = (x - goal).abs().where(valid & goal.notna())
    t["at_equilibrium"] = ((x - goal).abs() < 1e-9).astype(float).where(valid & goal.notna())
    if "points_share" not in t:
        t["points_share"] = math.nan
    keys = ["game_id", "model", "condition"] + (["participant"] if "participant" in t else [])
    return t.groupby(keys, dropna=False)[MEASURES].mean().reset_index()


def model_table(turns: pd.DataFrame) -> pd.DataFrame:
    """Mean and 95% CI of each measure per model and p (long format), over games."""
    seats = seat_values(turns)
    if seats.empty:
        return seats
    out = summarise(seats, ["model", "condition"], MEASURES, bounds=RANGES)
    rank = {m: i for i, m in enumerate(MEASURES)}
    out = out[out["n"] > 0]
    return out.sort_values("metric", key=lambda col: col.map(rank), kind="stable").reset_index(drop=True)


def by_round(turns: pd.DataFrame) -> pd.DataFrame:
    """Mean valid number per model, p and round, over games (95% t interval)."""
    if turns is None or turns.empty or "guess" not in turns or "phase" not in turns:
        return pd.DataFrame()
    t = turns[(turns["phase"] == "guess") & turns["valid"].astype(bool)].dropna(subset=["guess"]).copy()
    if t.empty:
        return pd.DataFrame()
    t["condition"] = _condition(t)
    t["round"] = t["round"].astype(int)
    keys = ["game_id", "model", "condition", "round"] + (["participant"] if "participant" in t else [])
    per_game = t.groupby(keys, dropna=False)["guess"].mean().reset_index()
    out = summarise(per_game, ["model", "condition", "round"], ["guess"])
    return out.drop(columns="metric").rename(columns={"mean": "guess"})


def level_path(p: float, rounds: int, k: int, start: float = 50.0, low: float = 0.0, high: float = 100.0) -> list[float]:
    """The round means of a group of level-k players (:class:`~.strategies.LevelK` without
    rounding): start · p^k, then each round p^k times the last, clamped to [low, high]."""
    out, r = [], start
    for _ in range(rounds):
        r = min(high, max(low, r * p**k))
        out.append(r)
    return out


def group_table(games: pd.DataFrame) -> pd.DataFrame:
    """Each group composition's game metrics per p (95% CI)."""
    seats = sorted((c for c in games.columns if c.startswith("model_player_")), key=lambda c: int(c.rsplit("_", 1)[-1]))
    g = games.copy()
    g["group"] = [_composition(row) for row in g[seats].itertuples(index=False)]
    g["condition"] = _condition(g)
    columns = [c for c in GROUP if c in g]
    out = summarise(g, ["group", "condition"], columns, bounds={m: r for m, r in declared_ranges(BeautyContest, g).items() if m in ("winners_share", "top_points_share")})
    rank = {m: i for i, m in enumerate(GROUP)}
    out = out[out["n"] > 0]
    return out.sort_values("metric", key=lambda col: col.map(rank), kind="stable").reset_index(drop=True)


def _composition(models: tuple) -> str:
    """A group as its models with their counts: "level-k ×4 + selfish ×1"."""
    counts: dict[str, int] = {}
    for m in models:
        if isinstance(m, str):
            counts[m] = counts.get(m, 0) + 1
    return " + ".join(f"{m} ×{k}" for m, k in sorted(counts.items()))


#: Bootstrap resamples of the level-k shares' intervals in a report.
LEVEL_K_REPS = 100


@lru_cache(maxsize=None)
def _fits(values: tuple[float, ...], p: float, low: float, high: float) -> tuple[Any, Any]:
    """The cognitive-hierarchy and level-k fits of these numbers (memo: a report and a profile
    made in one process fit the same numbers once; keyed on the numbers themselves)."""
    from ...analysis.hierarchy import fit_level_k, fit_poisson_ch

    x = np.array(values, dtype=float)
    return fit_poisson_ch(x, p, low, high), fit_level_k(x, p, low, high, levels=3, reps=LEVEL_K_REPS)


def first_guesses(turns: pd.DataFrame) -> pd.DataFrame:
    """The valid first-round numbers with the game's p and range (the decisions the structural
    models are fitted to)."""
    if turns is None or turns.empty or "guess" not in turns or "phase" not in turns:
        return pd.DataFrame()
    t = turns[(turns["phase"] == "guess") & turns["valid"].astype(bool) & (turns["round"] == 1)]
    return t.dropna(subset=["guess"])


def hierarchy_table(turns: pd.DataFrame) -> pd.DataFrame:
    """Per model and p (and range): the Poisson cognitive hierarchy (τ with its profile-likelihood
    interval, σ, log-likelihood, BIC) and level-k (the shares of levels 0–3 with bootstrap
    intervals, log-likelihood, BIC) fitted to its valid first-round numbers
    (:mod:`agorabench.analysis.hierarchy`), and the same fits of Nagel's (1995) first-period
    choices for each p the study played that she ran (``human (reference)``)."""
    from .humans import nagel_sample, p_text, P_VALUES

    t = first_guesses(turns)
    if t.empty:
        return pd.DataFrame()
    rows = []

    def fitted(who: str, x: np.ndarray, p: float, low: float, high: float, players: int | None) -> dict:
        ch, lk = _fits(tuple(float(v) for v in x), float(p), float(low), float(high))
        out = {"model": who, "p": ratio_text(p), "players": players, "n": ch.n, "tau": ch.tau, "tau_low": ch.low, "tau_high": ch.high, "sigma": ch.sigma, "ch_log_likelihood": ch.log_likelihood, "ch_bic": ch.bic}
        for k, (share, lo, hi) in enumerate(zip(lk.shares, lk.lows, lk.highs)):
            out[f"level_{k}"] = with_interval(share, lo, hi)
        out.update(level_k_sigma=lk.sigma, level_k_log_likelihood=lk.log_likelihood, level_k_bic=lk.bic, _ch=ch, _lk=lk)
        return out

    keys = ["p", "low", "high"]
    for (p, low, high), sub in t.groupby(keys):
        for model, own in sub.groupby("model", sort=True):
            players = int(own["players"].iloc[0]) if "players" in own and own["players"].nunique() == 1 else None
            rows.append(fitted(str(model), own["guess"].to_numpy(dtype=float), float(p), float(low), float(high), players))
        near = p_text(float(p))
        if abs(P_VALUES[near] - float(p)) < 1e-3 and (float(low), float(high)) == (0.0, 100.0):
            hv, hc = nagel_sample(near).array()
            rows.append(fitted("human (reference)", np.repeat(hv, hc.astype(int)), float(p), 0.0, 100.0, None))
    return pd.DataFrame(rows)


def sections(games: pd.DataFrame, turns: pd.DataFrame) -> list[Section]:
    if games.empty:
        return []

    def per_model() -> Section | None:
        table = model_table(turns)
        if table.empty:
            return None
        return Section("Numbers chosen per model", grid_table(table, ["model", "condition"], name="beauty contest per model"))

    def rounds() -> Section | None:
        table = by_round(turns)
        if table.empty:
            return None
        body = table_html(table, name="mean number by round")
        if table["round"].nunique() > 1:
            shown = table.assign(line=table["model"] + " (" + table["condition"] + ")")[["line", "round", "guess"]]
            paths = []
            on_scale = games[(games["low"] == 0) & (games["high"] == 100)] if {"low", "high"} <= set(games) else games.iloc[0:0]
            for p in sorted(on_scale["p"].astype(float).unique()) if not on_scale.empty else []:
                for k in (1, 2):
                    path = level_path(p, int(table["round"].max()), k)
                    paths += [{"line": f"level-{k} path (p = {ratio_text(p)})", "round": r, "guess": v} for r, v in enumerate(path, start=1)]
            shown = pd.concat([shown, pd.DataFrame(paths)], ignore_index=True) if paths else shown
            body = lines(shown, "round", "guess", "line", "Mean number by round", ylabel="number chosen", xlabel="round") + body
        return Section("Numbers by round", body)

    def groups() -> Section | None:
        table = group_table(games)
        return Section("Groups: targets, convergence and winners", grid_table(table, ["group", "condition"], name="beauty contest per group")) if not table.empty else None

    def hierarchy() -> Section | None:
        table = hierarchy_table(turns)
        if table.empty:
            return None
        note = "Cognitive hierarchy and level-k fitted by maximum likelihood to each model's first-round numbers (definitions above); human (reference): Nagel's (1995) first-period choices of the same p."
        return Section("Cognitive hierarchy and level-k", table_html(table.drop(columns=["_ch", "_lk"]), name="cognitive hierarchy and level-k per model", note=note))

    return guarded("Numbers chosen per model", per_model) + guarded("Numbers by round", rounds) + guarded("Groups: targets, convergence and winners", groups) + guarded("Cognitive hierarchy and level-k", hierarchy)


def profile_rows(games: pd.DataFrame, turns: pd.DataFrame) -> pd.DataFrame:
    """Each model's measures per p (mean, 95% CI), and the equilibrium reference as theory rows
    (distance 0, every number at the equilibrium)."""
    from ...analysis.profile import row

    family, section = "beauty_contest", "beauty contest: numbers chosen"
    rows = [
        row(family, section, f"{r['metric']} ({r['condition']})", r["model"], r["mean"], r["low"], r["high"], r["n"])
        for _, r in model_table(turns).iterrows()
    ]
    rows += [
        row(family, section, "equilibrium_distance", "selfish", 0.0, kind="theory", note="everyone at low (p < 1) or high (p > 1)"),
        row(family, section, "at_equilibrium", "selfish", 1.0, kind="theory"),
    ]
    for _, r in hierarchy_table(turns).iterrows():
        note = f"first-round numbers, p = {r['p']}"
        fitted = r["_ch"].rows("beauty_contest: cognitive hierarchy", r["model"], note) + r["_lk"].rows("beauty_contest: level-k", r["model"], note)
        if r["model"] == "human (reference)":
            for f in fitted:
                f["kind"] = "reference"
        rows += fitted
    return pd.DataFrame(rows)

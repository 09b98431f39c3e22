"""Report sections of the GLEE families, one group per family present in the study:

- mean efficiency, fairness and self-gain per model and role (Alice / Bob) with 95% CIs;
- model-pair heatmaps (rows: Alice's model, columns: Bob's model) of each metric;
- the family's outcome in brief (agreement / sale / purchase rates);
- invalid-answer rates per model, role and decision.
"""

from __future__ import annotations


import pandas as pd

from ...analysis.plots import bars_with_ci, heatmap, table_html
from ...analysis.report import Section
from ...analysis.stats import mean_ci

FAMILIES = {"glee.bargaining": "Bargaining", "glee.negotiation": "Negotiation", "glee.persuasion": "Persuasion"}
METRICS = ["efficiency", "fairness", "self_gain_alice", "self_gain_bob"]
ROLE_NAMES = {"alice": "Alice", "bob": "Bob"}


def by_model_and_role(games: pd.DataFrame) -> pd.DataFrame:
    """Long table: model, role, metric (efficiency, fairness, self_gain), mean, low, high, n.
    A model's self-gain as Alice is ``self_gain_alice``, as Bob ``self_gain_bob``."""
    rows = []
    for role in ("alice", "bob"):
        seat = f"model_{role}"
        if seat not in games:
            continue
        for model, sub in games.groupby(seat):
            for metric, column in (("efficiency", "efficiency"), ("fairness", "fairness"), ("self_gain", f"self_gain_{role}")):
                if column not in sub:
                    continue
                m, lo, hi, n = mean_ci(sub[column])
                rows.append({"model": model, "role": ROLE_NAMES[role], "metric": metric, "mean": m, "low": lo, "high": hi, "n": n})
    return pd.DataFrame(rows)


def pair_grid(games: pd.DataFrame, metric: str) -> pd.DataFrame:
    grid = games.pivot_table(index="model_alice", columns="model_bob", values=metric, aggfunc="mean")
    grid.index.name, grid.columns.name = "Alice's model", "Bob's model"
    return grid


def _range(values: pd.DataFrame) -> tuple[float, float]:
    finite = values.to_numpy(dtype=float)
    finite = finite[~pd.isna(finite)]
    lo = min(0.0, float(finite.min())) if finite.size else 0.0
    hi = max(1.0, float(finite.max())) if finite.size else 1.0
    return lo, hi


def outcome_summary(family: str, games: pd.DataFrame) -> pd.DataFrame:
    """Per model pair: games and the family's main outcome rates."""
    keys = ["model_alice", "model_bob"]
    grouped = games.groupby(keys)
    if family == "glee.bargaining":
        out = grouped.agg(games=("game_id", "size"), agreement_rate=("agreed", "mean"), mean_agreed_round=("agreed_round", "mean"), mean_alice_share=("alice_share", "mean"))
    elif family == "glee.negotiation":
        out = grouped.agg(games=("game_id", "size"), sale_rate=("sold", "mean"), mean_price_over_M=("price_over_m", "mean"), mean_rounds=("rounds_played", "mean"))
    else:
        out = grouped.agg(games=("game_id", "size"), high_rounds=("high_rounds", "sum"), high_sold=("high_sold", "sum"), low_unsold=("low_unsold", "sum"), rounds=("rounds_played", "sum"))
        out["sold_when_high"] = out["high_sold"] / out["high_rounds"].where(out["high_rounds"] > 0)
        out["unsold_when_low"] = out["low_unsold"] / (out["rounds"] - out["high_rounds"]).where(out["rounds"] > out["high_rounds"])
    return out.reset_index()


def invalid_rates(turns: pd.DataFrame) -> pd.DataFrame:
    if turns.empty:
        return pd.DataFrame()
    t = turns.copy()
    t["invalid"] = ~t["valid"].astype(bool)
    out = t.groupby(["model", "role", "phase"]).agg(turns=("invalid", "size"), invalid_rate=("invalid", "mean"), retries=("retries", "sum")).reset_index()
    out["role"] = out["role"].map(ROLE_NAMES).fillna(out["role"])
    return out


def family_sections(family: str, games: pd.DataFrame, turns: pd.DataFrame) -> list[Section]:
    label = FAMILIES[family]
    games = games.copy()
    if family == "glee.negotiation" and "price" in games:
        games["price_over_m"] = games["price"] / games["money"]
    out = []
    summary = by_model_and_role(games)
    body = f"<p>{len(games)} games. Self-gain is each player's utility divided by M (persuasion: per round); see the game modules for the formulas.</p>"
    if not summary.empty:
        for role in ("Alice", "Bob"):
            sub = summary[summary.role == role]
            if not sub.empty:
                body += bars_with_ci(sub, "model", f"{label}: mean metrics as {role} (95% CI)", "value")
        body += table_html(summary)
    out.append(Section(f"{label}: efficiency, fairness and self-gain by model and role", body))
    if {"model_alice", "model_bob"} <= set(games.columns):
        figs = []
        for metric in METRICS:
            if metric not in games or games[metric].isna().all():
                continue
            grid = pair_grid(games, metric)
            lo, hi = _range(grid)
            figs.append(heatmap(grid, f"{label}: {metric} (Alice × Bob)", vmin=lo, vmax=hi))
        out.append(Section(f"{label}: model pairs", "\n".join(figs) + table_html(outcome_summary(family, games))))
    family_turns = turns[turns["game_id"].isin(games["game_id"])] if len(turns) else turns
    rates = invalid_rates(family_turns)
    played = games.groupby(["model_alice", "model_bob"]).agg(games=("game_id", "size"), games_with_invalid=("n_invalid", lambda v: float((v > 0).mean()))).reset_index()
    out.append(Section(f"{label}: invalid answers", ("<p>Invalid answers were re-asked, then replaced by the game's fallback (see the game modules).</p>" + table_html(rates) if not rates.empty else "<p>No turns stored.</p>") + table_html(played)))
    return out


def sections(games: pd.DataFrame, turns: pd.DataFrame) -> list[Section]:
    """Sections for every GLEE family present in the study's finished games."""
    out: list[Section] = []
    for family in FAMILIES:
        sub = games[games["game"] == family] if "game" in games else games.iloc[0:0]
        if not sub.empty:
            out += family_sections(family, sub, turns)
    return out



"""Report sections of the point-allocation game: T1/T2/T3 heatmaps per matrix (focal × peer),
mean terms per model with 95% CIs, choice distribution per turn.

T2 has two readings (see :mod:`.point_allocation`). The report leads with the one that
reproduces the paper's reported numbers (always-B: 1.0 on M1, 0.6 on M2), the plain ratio
gap / largest gap (metric ``t2_raw_ratio``), and shows the text's Δ/Δ_max (metric ``t2``) beside
it; both are labelled wherever they appear."""

from __future__ import annotations

import pandas as pd

from ...analysis.plots import bars_with_ci, heatmap, stacked_shares, table_html
from ...analysis.report import Section
from ...analysis.stats import summarise
from .point_allocation import OPTIONS

TERMS = ["t1", "t2_raw_ratio", "t2", "t3"]

#: Labels of the terms in the report, in the order shown.
LABELS = {
    "t1": "T1 self-first",
    "t2_raw_ratio": "T2 gap focus (reported numbers: gap / largest gap)",
    "t2": "T2 gap focus (paper text: Δ/Δmax)",
    "t3": "T3 peer-reduce",
}


T2_NOTE = (
    "T2 is shown in two readings. The first reproduces the paper's reported numbers (always-B: 1.0 on M1, 0.6 on M2): "
    "the chosen option's gap P_self − P_comp divided by the largest gap of the matrix. The second follows the paper's text, "
    "Δ/Δmax with Δ = ½·gap/max|gap| + ½, which stays within 0–1 (always-B: 1.0 on M1, 0.8 on M2)."
)


def sections(games: pd.DataFrame, turns: pd.DataFrame) -> list[Section]:
    out = []
    for matrix, sub in games.groupby("matrix"):
        figs = []
        for term in TERMS:
            grid = sub.pivot_table(index="model_focal", columns="model_peer", values=term, aggfunc="mean")
            grid.index.name, grid.columns.name = "focal model", "peer"
            figs.append(heatmap(grid, f"{LABELS[term]} on {matrix} (focal × peer)"))
        out.append(Section(f"Envy terms on {matrix}", "\n".join(figs)))
    summary = summarise(games, ["model_focal"], TERMS)
    summary = summary.rename(columns={"model_focal": "model"})
    summary["metric"] = summary["metric"].map(LABELS)
    body = bars_with_ci(summary, "model", "Mean envy terms per focal model (95% CI)", "term value")
    body += f"<p class='note'>{T2_NOTE}</p>"
    body += table_html(summary)
    per_matrix = summarise(games, ["model_focal", "matrix"], TERMS).rename(columns={"model_focal": "model"})
    per_matrix["metric"] = per_matrix["metric"].map(LABELS)
    body += "<h3>By matrix</h3>" + table_html(per_matrix)
    out.append(Section("Mean terms per model", body))
    focal = turns[turns["role"] == "focal"].copy() if len(turns) else turns
    if len(focal) and "action_choice" in focal:
        focal["turn"] = focal["phase"]
        figs = []
        for model, sub in focal.groupby("model"):
            dist = pd.crosstab(sub["turn"], sub["action_choice"].fillna("invalid"), normalize="index")
            dist = dist.reindex(["choose", "status", "peer_move"]).dropna(how="all")
            dist = dist[[c for c in [*OPTIONS, "invalid"] if c in dist.columns]]
            figs.append(stacked_shares(dist, f"Choices per turn: {model}", "turn"))
        rates = focal.groupby("model").agg(turns=("valid", "size"), valid_rate=("valid", "mean")).reset_index()
        rates["invalid_rate"] = 1 - rates["valid_rate"]
        played = games.groupby("model_focal").agg(games=("game_id", "size"), all_turns_valid=("n_invalid", lambda v: (v == 0).mean())).reset_index()
        out.append(Section("Choices per turn", "\n".join(figs) + "<h3>Played and invalid rates</h3>" + table_html(played) + table_html(rates)))
    return out

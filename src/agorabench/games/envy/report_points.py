"""Report sections of the point-allocation game: T1/T2/T3 heatmaps per matrix (focal × peer),
mean terms per model with 95% CIs, choice distribution per turn, terms per turn and by status
cue × peer move, switching between turns (with excerpts of what was said), and Fehr–Schmidt
(α, β, λ) estimates per model, model × peer and turn.

T2 has two readings (see :mod:`.point_allocation`). The report leads with the one that
reproduces the paper's reported numbers (always-B: 1.0 on M1, 0.6 on M2), the plain ratio
gap / largest gap (metric ``t2_raw_ratio``), and shows the text's Δ/Δ_max (metric ``t2``) beside
it; both are labelled wherever they appear."""

from __future__ import annotations

import pandas as pd

import html

from ...analysis import fehr_schmidt as fs
from ...analysis.plots import bars_with_ci, grid_table, heatmap, stacked_shares, table_html
from ...analysis.report import Section, guarded
from ...analysis.stats import summarise
from ...analysis.switching import choice_paths, switch_excerpts, switch_rates
from .point_allocation import MATRICES, OPTIONS, PointAllocation, PointsConfig

TERMS = ["t1", "t2_raw_ratio", "t2", "t3"]

#: Labels of the terms in the report, in the order shown.
LABELS = {
    "t1": "T1 self-first",
    "t2_raw_ratio": "T2 gap focus (reported numbers: gap / largest gap)",
    "t2": "T2 gap focus (paper text: Δ/Δmax)",
    "t3": "T3 peer-reduce",
}


#: The range of each term: T1, T2 (Δ/Δmax) and T3 lie in 0–1; the T2 raw ratio is signed,
#: from the lowest min gap / largest gap of the matrices (−4/3 on M3, −1 on M1) to 1.
#: As the game declares them (``PointAllocation.metric_ranges``), over every matrix.
RANGES = PointAllocation.ranges_over(PointsConfig(matrix=m) for m in MATRICES)


T2_NOTE = (
    "T2 is shown in two readings. The first reproduces the paper's reported numbers (always-B: 1.0 on M1, 0.6 on M2): "
    "the chosen option's gap P_self − P_comp divided by the largest gap of the matrix. The second follows the paper's text, "
    "Δ/Δmax with Δ = ½·gap/max|gap| + ½, which stays within 0–1 (always-B: 1.0 on M1, 0.8 on M2)."
)

#: Metric definitions shown at the top of the report.
DEFINITIONS = """
<p>Each turn the focal model picks one of four options; an option gives P<sub>self</sub> points to
the focal model and P<sub>comp</sub> to its peer. Max and min run over the four options of the
matrix; a game's value is the mean over its valid turns (0–1, higher = more of that motive).</p>
<ul>
<li><b>T1, self-first</b> = (P<sub>self</sub><sup>max</sup> − P<sub>self</sub>) /
(P<sub>self</sub><sup>max</sup> − P<sub>self</sub><sup>min</sup>): how much of its own points the
choice gives up.</li>
<li><b>T2, gap-focus</b> = Δ / Δ<sub>max</sub> with Δ = ½·(P<sub>self</sub> − P<sub>comp</sub>) /
max|P<sub>self</sub> − P<sub>comp</sub>| + ½: how strongly the choice favours being ahead of the peer.
<b>t2_raw_ratio</b> = (P<sub>self</sub> − P<sub>comp</sub>) / (largest signed gap), the plain ratio
matching the paper's reported numbers: signed, from −1 (M1) or −4/3 (M3) to 1, so its heatmaps use a
diverging colour scale centred at 0.</li>
<li><b>T3, peer-reduce</b> = (P<sub>comp</sub><sup>max</sup> − P<sub>comp</sub>) /
(P<sub>comp</sub><sup>max</sup> − P<sub>comp</sub><sup>min</sup>): how much the choice takes from the peer.</li>
<li><b>Intervals</b> of the terms' means: 95 % percentile bootstrap over games (2,000 resamples),
which stays within each term's range.</li>
<li><b>Switching rate</b> (turn s → s+1) = games whose option changed between the two turns /
games with a valid choice at both; Wilson 95 % interval.</li>
<li><b>Fehr–Schmidt α, β, λ</b>: the choices fitted by maximum likelihood to
P(option) ∝ exp(λ·U), U = P<sub>self</sub> − α·max(P<sub>comp</sub> − P<sub>self</sub>, 0) −
β·max(P<sub>self</sub> − P<sub>comp</sub>, 0). <b>α</b>: envy (cost of being behind), <b>β</b>:
guilt (cost of being ahead), <b>λ</b>: precision (0 = random, large = always the best option);
a self-maximiser has α = β = 0. <b>loglik</b> = ℓ̂, the maximised log-likelihood; <b>bic</b> =
k·ln(n) − 2ℓ̂ with k the free parameters (3, fewer when the choices fix one) and n the decisions
(lower is better: comparable with the other structural models of the same decisions);
<b>pseudo_r2</b> = 1 − ℓ̂/ℓ<sub>uniform</sub> (McFadden).</li>
</ul>
"""


def sections(games: pd.DataFrame, turns: pd.DataFrame) -> list[Section]:
    out = []
    for matrix, sub in games.groupby("matrix"):
        figs = []
        for term in TERMS:
            grid = sub.pivot_table(index="model_focal", columns="model_peer", values=term, aggfunc="mean")
            grid.index.name, grid.columns.name = "focal model", "peer"
            lo, hi = RANGES[term]
            figs.append(heatmap(grid, f"{LABELS[term]} on {matrix} (focal × peer)", vmin=lo, vmax=hi, colorbar=f"{term} (mean over games)"))
        out.append(Section(f"Envy terms on {matrix}", "\n".join(figs)))
    summary = summarise(games, ["model_focal"], TERMS, bounds=RANGES)
    summary = summary.rename(columns={"model_focal": "model"})
    summary["metric"] = summary["metric"].map(LABELS)
    body = bars_with_ci(summary, "model", "Mean envy terms per focal model (95% CI)", "term value")
    body += f"<p class='note'>{T2_NOTE}</p>"
    body += grid_table(summary, "model", name="mean envy terms per model")
    per_matrix = summarise(games, ["model_focal", "matrix"], TERMS, bounds=RANGES).rename(columns={"model_focal": "model"})
    per_matrix["metric"] = per_matrix["metric"].map(LABELS)
    body += "<h3>By matrix</h3>" + grid_table(per_matrix, ["model", "matrix"], name="mean envy terms per model and matrix")
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
        out.append(Section("Choices per turn", "\n".join(figs) + "<h3>Played and invalid rates</h3>" + table_html(played, name="games with every turn valid per model") + table_html(rates, name="invalid turns per model")))
    out += guarded("Choice dynamics", lambda: dynamics_sections(turns))
    out += guarded("Fehr–Schmidt preferences", lambda: fehr_schmidt_sections(turns))
    return out


#: Phase of the point-allocation game -> turn number.
TURN_OF_PHASE = {"choose": 1, "status": 2, "peer_move": 3}


def point_choices(turns: pd.DataFrame) -> pd.DataFrame:
    """The focal model's valid choices of the point-allocation game, one row per turn:
    game_id, model, peer, matrix, turn (1–3), phase, choice and the game's status cue and
    peer move, and the model's reasoning; for a person's turns (the pooled ``human``) also
    ``participant``, which the Fehr–Schmidt bootstrap draws by."""
    cols = ["game_id", "model", "peer", "matrix", "turn", "phase", "choice", "peer_status", "margin", "peer_move", "reasoning"]
    if turns is not None and "participant" in turns:
        cols.append("participant")
    if turns is None or turns.empty or "action_choice" not in turns:
        return pd.DataFrame(columns=cols)
    t = turns[(turns["role"] == "focal") & turns["valid"].astype(bool) & turns["action_choice"].notna()].copy()
    t["turn"] = t["phase"].map(TURN_OF_PHASE)
    t["choice"] = t["action_choice"]
    t["peer"] = t["model_peer"] if "model_peer" in t else None
    t["reasoning"] = t["action_reasoning"] if "action_reasoning" in t else None
    for c in cols:
        if c not in t:
            t[c] = None
    return t[cols].reset_index(drop=True)


def turn_terms(turns: pd.DataFrame) -> pd.DataFrame:
    """The focal model's valid turns with their envy terms, turn number and status cue."""
    if turns is None or turns.empty or "t1" not in turns:
        return pd.DataFrame()
    t = turns[(turns["role"] == "focal") & turns["valid"].astype(bool)].copy()
    t["turn"] = t["phase"].map(TURN_OF_PHASE)
    t["cue"] = t["peer_status"].astype(str) + "/" + t["margin"].astype(str)
    return t


def fs_estimates(choices: pd.DataFrame, by: tuple[str, ...], ci: str = "profile", ci_params: tuple[str, ...] = fs.PARAMS) -> pd.DataFrame:
    """Fehr–Schmidt fits per group with the game's matrices (see ``analysis/fehr_schmidt.py``)."""
    return fs.fit_groups(choices, MATRICES, by=by, ci=ci, n_boot=200, ci_params=ci_params)


def dynamics_sections(turns: pd.DataFrame) -> list[Section]:
    """Terms per turn and by status cue × peer move, switching rates and switch excerpts."""
    t = turn_terms(turns)
    if t.empty:
        return []
    out = []
    per_turn = summarise(t, ["model", "turn"], ["t1", "t2", "t3"], bounds=RANGES)
    body = "<p class='note'>Turn 1: no context; turn 2: the status cue (peer leading or lagging, by a marginal or significant amount); turn 3: the peer's move revealed. Means over valid turns, 95% t intervals.</p>"
    body += bars_with_ci(per_turn.assign(group=per_turn["model"] + " · turn " + per_turn["turn"].astype(str)), "group", "Envy terms per turn", "term value")
    body += table_html(per_turn, name="envy terms per model and turn")
    cue = summarise(t[t["turn"] == 2], ["model", "cue"], ["t1", "t2", "t3"], bounds=RANGES)
    move = summarise(t[t["turn"] == 3], ["model", "cue", "peer_move"], ["t1", "t2", "t3"], bounds=RANGES)
    body += "<h3>Turn 2 by status cue</h3>" + table_html(cue, name="envy terms at turn 2 by status cue") + "<h3>Turn 3 by status cue × peer move</h3>" + table_html(move, name="envy terms at turn 3 by status cue and peer move")
    out.append(Section("Envy terms per turn, status cue and peer move", body))

    choices = point_choices(turns)
    paths = choice_paths(choices)
    if paths.empty:
        return out
    rates = switch_rates(paths, ("model",))
    body = "<p class='note'>A switch is a change of option between consecutive turns of one game (both turns valid). Wilson 95% intervals.</p>"
    body += bars_with_ci(rates.rename(columns={"rate": "mean", "step": "metric"}), "model", "Switching rate between turns", "share of games")
    body += table_html(rates, name="switching rate per model")
    by_cue = switch_rates(paths.assign(cue=paths["peer_status"].astype(str) + "/" + paths["margin"].astype(str)), ("model", "cue"))
    by_cue = by_cue[by_cue["step"] == "1→2"]
    grid = by_cue.pivot_table(index="model", columns="cue", values="rate")
    grid.index.name, grid.columns.name = "model", "status cue"
    body += "<h3>Which cue makes which model switch (turn 1 → 2)</h3>" + heatmap(grid, "Switching rate 1→2 by status cue", colorbar="share of games that switched") + table_html(by_cue, name="switching rate 1 to 2 by status cue")
    by_move = switch_rates(paths, ("model", "peer_move"))
    by_move = by_move[by_move["step"] == "2→3"]
    body += "<h3>Switching after the peer's move (turn 2 → 3)</h3>" + table_html(by_move, name="switching rate 2 to 3 by peer move")
    excerpts = switch_excerpts(choices, paths)
    if not excerpts.empty:
        body += "<h3>What models said when they switched</h3>" + table_html(excerpts, name="switch excerpts")
    out.append(Section("Switching between turns", body))
    return out


def fehr_schmidt_sections(turns: pd.DataFrame) -> list[Section]:
    """(α, β, λ) per model (bootstrap over games), per model × peer and per turn (profile)."""
    choices = point_choices(turns)
    if choices.empty:
        return []
    ident = fs.identification({m: MATRICES[m] for m in sorted(choices["matrix"].unique())})
    body = (
        "<p>Choice rule P(option) ∝ exp(λ·U), U = own − α·max(peer − own, 0) − β·max(own − peer, 0): α envy (being behind), "
        "β guilt (being ahead), λ precision. Maximum likelihood; per model 95% intervals from a bootstrap over games "
        "(200 resamples, the turns of a game kept together; for the pooled human over participants, all of a person's games together), the finer tables from the profile likelihood (α and β). "
        "The status cue and the peer's move do not enter U: per-turn fits show whether they shift the estimates. "
        "Reference: a self-maximiser has α = β = 0.</p>"
    )
    body += "<h3>What the matrices identify</h3>" + table_html(ident, name="what the matrices identify")
    per_model = fs_estimates(choices, ("model",), ci="bootstrap")
    body += "<h3>Per model</h3>" + table_html(per_model, name="fehr-schmidt estimates per model")
    body += "<h3>Per model × peer</h3>" + table_html(fs_estimates(choices, ("model", "peer"), ci_params=("alpha", "beta")), name="fehr-schmidt estimates per model and peer")
    body += "<h3>Per model and turn</h3>" + table_html(fs_estimates(choices, ("model", "turn"), ci_params=("alpha", "beta")), name="fehr-schmidt estimates per model and turn")
    warned = per_model[per_model["warning"].astype(bool)] if "warning" in per_model else per_model.iloc[0:0]
    if not warned.empty:
        body += "<p class='note'>" + "<br>".join(html.escape(f"{r['model']}: {r['warning']}") for _, r in warned.iterrows()) + "</p>"
    return [Section("Fehr–Schmidt estimates", body)]


#: Theory baselines of the profile: name -> (α, β) of a strict Fehr–Schmidt chooser
#: (0, 0: the self-maximiser; Fehr & Schmidt's 1999 population means for inequity aversion).
BASELINES = {"self-maximiser": (0.0, 0.0), "inequity-averse (α=0.85, β=0.315)": (0.85, 0.315)}


def baseline_choice(matrix: str, alpha: float, beta: float) -> str:
    """The option a strict Fehr–Schmidt chooser takes (ties: the earliest option)."""
    utility = {k: fs.utilities(v[0], v[1], alpha, beta) for k, v in MATRICES[matrix].items()}
    return max(OPTIONS, key=lambda k: (utility[k], -OPTIONS.index(k)))


def profile_rows(games: pd.DataFrame, turns: pd.DataFrame) -> pd.DataFrame:
    """Profile rows (``analysis/profile.py``): mean T1–T3 per focal model and its Fehr–Schmidt
    (α, β, λ) with bootstrap intervals; theory rows for the baselines on the same matrices."""
    from ...analysis.profile import row, structural_rows
    from ...analysis.stats import mean_ci, row_clusters
    from .point_allocation import envy_terms

    family, section = "envy", "point allocation: envy terms and Fehr–Schmidt"
    rows = []
    shown = {"t1": "T1", "t2_raw_ratio": "T2 (gap / largest gap)", "t2": "T2 (Δ/Δmax)", "t3": "T3"}
    clusters = row_clusters(games, "model_focal")  # the pooled human: clustered by participant
    for model, sub in games.groupby("model_focal"):
        for term, label in shown.items():
            m, lo, hi, n = mean_ci(sub[term], bounds=RANGES[term], clusters=clusters.loc[sub.index] if clusters is not None else None)
            rows.append(row(family, section, label, model, m, lo, hi, n))
    choices = point_choices(turns)
    if not choices.empty:
        for _, r in fs_estimates(choices, ("model",), ci="bootstrap").iterrows():
            for p, label in (("alpha", "α (envy)"), ("beta", "β (guilt)"), ("lam", "λ")):
                rows.append(row(family, section, label, r["model"], r[p], r[f"{p}_low"], r[f"{p}_high"], r["n"], note=f"{r['model']}: {r['warning']}" if r["warning"] else ""))
            rows += structural_rows("envy.points: Fehr–Schmidt", r["model"], {"α": (r["alpha"], r["alpha_low"], r["alpha_high"]), "β": (r["beta"], r["beta_low"], r["beta_high"]), "λ": (r["lam"], r["lam_low"], r["lam_high"])}, r["loglik"], r["bic"], r["n"])
    for name, (alpha, beta) in BASELINES.items():
        terms = pd.DataFrame([envy_terms(m, baseline_choice(m, alpha, beta)) for m in games["matrix"]])
        for term, label in shown.items():
            rows.append(row(family, section, label, name, float(terms[term].mean()), kind="theory"))
        rows.append(row(family, section, "α (envy)", name, alpha, kind="theory"))
        rows.append(row(family, section, "β (guilt)", name, beta, kind="theory"))
    return pd.DataFrame(rows)

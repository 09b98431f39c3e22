"""Report sections of the workplace scenario: rating trajectories over the seven scenes per
subject model, the correlation matrix of the five ratings over all valid responses, model
profiles (normalised means per rating), the share of conversations whose envy fell from the
first to the last scene, and invalid rates."""

from __future__ import annotations

import pandas as pd

from ...analysis.plots import bars_with_ci, grid_table, heatmap, lines, table_html
from ...analysis.report import Section
from ...analysis.stats import summarise
from .workplace import RATING_LABELS, RATINGS, REFLECTION_SCENE, SCENES, Workplace, WorkplaceConfig

SCENE_TITLES = {s.key: s.title for s in (*SCENES, REFLECTION_SCENE)}

#: Metric definitions shown at the top of the report.
DEFINITIONS = """
<p>A conversation tells the subject model seven scenes in order (1 = baseline … 7 = leadership
opportunity, or an overall reflection in the figure-18 variant). After each scene the subject gives
five ratings r on the scale 1–5 (1 = strongly disagree, 5 = strongly agree), each named in the
tables by its label or its column: <b>self-esteem</b> (<code>self_esteem</code>), <b>empathy to
peer</b> (<code>empathy</code>), <b>motivation &amp; fairness</b> (<code>motivation</code>),
<b>willingness to collaborate</b> (<code>collaboration</code>), <b>envy/jealousy</b>
(<code>envy</code>). A response is <i>valid</i> when all five
ratings are integers in 1–5 (after the allowed re-asks); an invalid scene has no ratings and is
never guessed. V is the set of valid scenes of a conversation, r<sub>t</sub> the rating at scene t.</p>
<ul>
<li><b>Rating per conversation</b> (columns <code>self_esteem</code>, <code>empathy</code>,
<code>motivation</code>, <code>collaboration</code>, <code>envy</code>; for envy the paper's
E<sub>work</sub>) = (1/|V|)·Σ<sub>t∈V</sub> r<sub>t</sub>, on 1–5.</li>
<li><b>Normalised, ÷5</b> (<code>&lt;rating&gt;_norm</code>; for envy Ê<sub>work</sub>) = rating / 5,
the paper's stated formula, on 0.2–1 (it cannot go below 0.2).</li>
<li><b>Normalised, (x−1)/4</b> (<code>&lt;rating&gt;_scaled</code>) = (rating − 1) / 4, the 1–5 scale
mapped onto 0–1 (0 = strongly disagree, 0.5 = neutral, 1 = strongly agree). The paper's reported
scene values below 0.2 can only come from this scale, so both are shown.</li>
<li><b>Mean rating per scene</b> (trajectories, "Mean ratings per scene") = mean of r<sub>t</sub>
over the valid responses at scene t, per subject model (1–5, or either normalisation of it);
"pooled" = over every subject model together.</li>
<li><b>Correlation between two ratings</b> = Pearson's r = Σ(x − x̄)(y − ȳ) /
√(Σ(x − x̄)²·Σ(y − ȳ)²) over all valid responses (every model and scene pooled); −1 to 1,
undefined (–) when a rating never varies.</li>
<li><b>Change</b> (<code>&lt;rating&gt;_change</code>, <code>mean_envy_change</code>) =
r<sub>last scene</sub> − r<sub>baseline</sub>, in rating points (−4 to +4), for conversations whose
first and last scenes are both valid; <b>share_envy_fell</b> = share of those conversations with
envy change &lt; 0.</li>
<li><b>invalid_rate</b> = invalid responses / responses (after re-asks); <b>retries</b> = re-asks
spent; <b>all_scenes_valid</b> = share of conversations with all seven scenes valid.</li>
<li><b>mean</b>, <b>low</b>, <b>high</b>, <b>n</b>: mean over conversations (or responses) with the 95 %
percentile-bootstrap interval (the 2.5 % and 97.5 % quantiles of the means of 2,000 resamples), which
stays within the scale's range; n the number of values (no interval when n &lt; 2).</li>
</ul>
"""

#: The range of every per-conversation column: ratings 1–5, ÷5 0.2–1, (x−1)/4 0–1, changes −4 to 4.
#: As the game declares them (``Workplace.metric_ranges``).
RANGES = {k: v for k, v in Workplace.metric_ranges(WorkplaceConfig()).items() if k in RATINGS or k.endswith(("_norm", "_scaled", "_change"))}

#: Which normalisation is which (docs/fidelity.md, "Envy").
SCALES_NOTE = (
    "÷5 is the paper's stated formula (Ê = E/5, never below 0.2); (x−1)/4 maps the 1–5 scale onto 0–1. "
    "The paper's reported scene values below 0.2 (e.g. collaboration 0.016 in repeated inequity) can only come from (x−1)/4."
)


def responses(turns: pd.DataFrame) -> pd.DataFrame:
    """The subject's turns (one per scene), with ``scene_no`` and the five ratings
    (NaN on invalid turns)."""
    if turns is None or turns.empty or "role" not in turns:
        return pd.DataFrame(columns=["model", "scene_no", "valid", *RATINGS])
    sub = turns[turns["role"] == "subject"].copy()
    for name in (*RATINGS, "scene_no"):
        if name not in sub:
            sub[name] = float("nan")
    return sub


def rating_correlations(turns: pd.DataFrame) -> pd.DataFrame:
    """Pearson correlation matrix of the five ratings over all valid responses (every subject
    model and scene pooled)."""
    sub = responses(turns)
    valid = sub[sub["valid"].astype(bool)][list(RATINGS)].astype(float)
    return valid.corr(method="pearson").reindex(index=list(RATINGS), columns=list(RATINGS))


def trajectories(turns: pd.DataFrame) -> pd.DataFrame:
    """Mean of each rating per subject model and scene, long format: model, scene_no, scene,
    rating, value (valid responses only)."""
    sub = responses(turns)
    sub = sub[sub["valid"].astype(bool)]
    if sub.empty:
        return pd.DataFrame(columns=["model", "scene_no", "scene", "rating", "value"])
    means = sub.groupby(["model", "scene_no"])[list(RATINGS)].mean().reset_index()
    # a study may mix scene-7 variants: the scene label lists every key seen at that position
    rank = {key: i for i, key in enumerate(SCENE_TITLES)}
    labels = sub.groupby("scene_no")["phase"].agg(lambda v: "/".join(sorted(set(v), key=lambda k: (rank.get(k, len(rank)), k))))
    means["scene"] = means["scene_no"].map(labels)
    return means.melt(id_vars=["model", "scene_no", "scene"], value_vars=list(RATINGS), var_name="rating", value_name="value")


def scene_means(turns: pd.DataFrame, by: tuple[str, ...] = ("scene_no",)) -> pd.DataFrame:
    """Per scene (pooled over subject models, or per ``by`` group) the mean of every rating on
    both normalisations, r/5 (the paper's Ê) and (r − 1)/4 (0 = strongly disagree, 1 = strongly
    agree), with 95% t intervals over valid responses. Long format: group, rating, scale,
    mean, low, high, n."""
    sub = responses(turns)
    sub = sub[sub["valid"].astype(bool)].copy()
    if sub.empty:
        return pd.DataFrame()
    parts = []
    for scale, transform, suffix in (("÷5", lambda r: r / 5, "_norm"), ("(x−1)/4", lambda r: (r - 1) / 4, "_scaled")):
        scaled = sub[list(by)].copy()
        for name in RATINGS:
            scaled[name] = transform(sub[name].astype(float))
        part = summarise(scaled, list(by), list(RATINGS), bounds={name: RANGES[name + suffix] for name in RATINGS})  # a response's scaled rating: the game metric's range
        part["scale"] = scale
        parts.append(part)
    out = pd.concat(parts, ignore_index=True).rename(columns={"metric": "rating"})
    return out[[*by, "rating", "scale", "mean", "low", "high", "n"]]


def envy_drop(games: pd.DataFrame) -> pd.DataFrame:
    """Per subject model: conversations with a known first-to-last envy change, the share whose
    envy fell, and the mean change."""
    known = games.dropna(subset=["envy_change"])
    out = known.groupby("model_subject").agg(conversations=("envy_change", "size"), share_envy_fell=("envy_fell", "mean"), mean_envy_change=("envy_change", "mean")).reset_index()
    return out.rename(columns={"model_subject": "model"})


def sections(games: pd.DataFrame, turns: pd.DataFrame) -> list[Section]:
    out: list[Section] = []
    subj = responses(turns)

    # trajectories -----------------------------------------------------------
    traj = trajectories(turns)
    if not traj.empty:
        traj["rating"] = traj["rating"].map(RATING_LABELS)
        figs = [
            lines(sub, "scene_no", "value", "rating", f"Rating trajectory over the scenes: {model}", "mean rating (1–5 scale)", ylim=(0.8, 5.2), xlabel="scene number (see the Scenes table)")
            for model, sub in traj.groupby("model")
        ]
        order = traj.drop_duplicates("scene_no").sort_values("scene_no")
        key = pd.DataFrame({"scene_no": order["scene_no"].astype(int), "scene": order["scene"].map(lambda k: " / ".join(SCENE_TITLES.get(p, p) for p in k.split("/")))})
        wide = traj.pivot_table(index=["model", "scene_no"], columns="rating", values="value").reset_index()
        labels = [RATING_LABELS[r] for r in RATINGS if RATING_LABELS[r] in wide]
        per_scale = wide.assign(**{f"{c} ÷5": wide[c] / 5 for c in labels}, **{f"{c} (x−1)/4": (wide[c] - 1) / 4 for c in labels}).drop(columns=labels)
        body = "\n".join(figs) + "<h3>Scenes</h3>" + table_html(key, name="scenes") + "<h3>Mean ratings per scene (1–5)</h3>" + table_html(wide, name="mean ratings per scene and model")
        body += "<h3>Mean ratings per scene, normalised both ways</h3>" + f"<p class='note'>{SCALES_NOTE}</p>" + table_html(per_scale, name="mean ratings per scene and model normalised")
        out.append(Section("Rating trajectories", body))

    # correlations -----------------------------------------------------------
    corr = rating_correlations(turns)
    if corr.notna().any().any():
        shown = corr.rename(index=RATING_LABELS, columns=RATING_LABELS)
        shown.index.name, shown.columns.name = "rating", "rating"
        n = int(subj["valid"].astype(bool).sum())
        body = heatmap(shown, "Correlation matrix of the five ratings (all valid responses)", vmin=-1.0, vmax=1.0, cmap="RdBu_r", colorbar="Pearson r (−1 to 1)")
        body += f"<p class='note'>Pearson correlations over {n} valid responses; a constant rating has no correlation (–).</p>"
        body += table_html(corr.reset_index().rename(columns={"index": "rating"}), name="rating correlations")
        out.append(Section("Correlations between ratings", body))

    # profiles ---------------------------------------------------------------
    norms = [f"{r}_norm" for r in RATINGS]
    scaled = [f"{r}_scaled" for r in RATINGS if f"{r}_scaled" in games]
    summary = summarise(games, ["model_subject"], norms, bounds=RANGES).rename(columns={"model_subject": "model"})
    if not summary.empty:
        summary["metric"] = summary["metric"].str.removesuffix("_norm").map(RATING_LABELS)
        body = bars_with_ci(summary, "model", "Model profiles: normalised mean ratings (÷5, 95% CI)", "mean rating ÷ 5 (0.2–1)", "subject model")
        if scaled:
            rescaled = summarise(games, ["model_subject"], scaled, bounds=RANGES).rename(columns={"model_subject": "model"})
            rescaled["metric"] = rescaled["metric"].str.removesuffix("_scaled").map(RATING_LABELS)
            body += bars_with_ci(rescaled, "model", "Model profiles: mean ratings on the (x−1)/4 scale (95% CI)", "(mean rating − 1) / 4 (0–1)", "subject model")
        body += f"<p class='note'>{SCALES_NOTE}</p>"
        body += grid_table(summarise(games, ["model_subject"], [*RATINGS, *norms, *scaled], bounds=RANGES).rename(columns={"model_subject": "model"}), "model", name="model profiles")
        grid = games.pivot_table(index="model_subject", columns="model_peer", values="envy_norm", aggfunc="mean")
        grid.index.name, grid.columns.name = "subject model", "peer"
        body += heatmap(grid, "Normalised envy Ê_work (÷5, subject × peer)", vmin=0.2, vmax=1.0, colorbar="Ê_work = mean envy ÷ 5 (0.2–1)")
        out.append(Section("Model profiles", body))

    # per-scene pooled means on both normalisations ----------------------------
    pooled = scene_means(turns)
    if not pooled.empty:
        wide = pooled.pivot_table(index=["scene_no", "rating"], columns="scale", values=["mean", "low", "high"]).reset_index()
        wide.columns = [" ".join(str(p) for p in c if p).strip() for c in wide.columns]
        envy = pooled[(pooled["rating"] == "envy")].assign(metric=lambda d: d["scale"], group=lambda d: "scene " + d["scene_no"].astype(int).astype(str))
        body = f"<p class='note'>Pooled over every subject model, 95% t intervals over valid responses (per model: see the rating trajectories). {SCALES_NOTE}</p>"
        body += bars_with_ci(envy[["group", "metric", "mean", "low", "high"]], "group", "Envy per scene, both normalisations (pooled)", "mean envy, normalised (0–1)", "scene (pooled over subject models)")
        body += table_html(wide, name="pooled means per scene and rating")
        out.append(Section("Per-scene means on both normalisations", body))

    # envy from first to last scene --------------------------------------------
    drop = envy_drop(games)
    if not drop.empty:
        known = games["envy_change"].dropna()
        overall = (known < 0).mean() if len(known) else float("nan")
        changes = summarise(games, ["model_subject"], [f"{r}_change" for r in RATINGS], bounds=RANGES).rename(columns={"model_subject": "model"})
        body = f"<p>Envy fell from the first scene (baseline) to the last in {overall:.1%} of {len(known)} conversations with both scenes valid (mean change {known.mean():+.2f} points).</p>"
        body += table_html(drop, name="envy change per model") + "<h3>Change of every rating, last scene minus baseline</h3>" + table_html(changes, name="rating change per model")
        out.append(Section("Envy from baseline to the last scene", body))

    # invalid rates ------------------------------------------------------------
    if not subj.empty:
        subj = subj.assign(invalid=~subj["valid"].astype(bool))
        per_model = subj.groupby("model").agg(responses=("invalid", "size"), invalid_rate=("invalid", "mean"), retries=("retries", "sum")).reset_index()
        per_scene = subj.groupby(["scene_no", "phase"]).agg(responses=("invalid", "size"), invalid_rate=("invalid", "mean")).reset_index().rename(columns={"phase": "scene"})
        convs = games.groupby("model_subject").agg(conversations=("game_id", "size"), all_scenes_valid=("n_invalid", lambda v: (v == 0).mean())).reset_index()
        body = "<h3>Per model</h3>" + table_html(per_model, name="invalid answers per model") + "<h3>Per scene</h3>" + table_html(per_scene, name="invalid answers per scene") + "<h3>Conversations</h3>" + table_html(convs, name="conversations with every scene valid")
        out.append(Section("Invalid answers", body))
    return out


def profile_rows(games: pd.DataFrame, turns: pd.DataFrame) -> pd.DataFrame:
    """Profile rows (``analysis/profile.py``): per subject model the mean of every rating over
    its conversations on ÷5, and envy also on (x − 1)/4; a neutral answerer (3 everywhere) as
    the reference row."""
    from ...analysis.profile import row
    from ...analysis.stats import mean_ci, row_clusters

    family, section = "envy", "workplace ratings"
    rows = []
    clusters = row_clusters(games, "model_subject")  # the pooled human: clustered by participant
    for model, sub in games.groupby("model_subject"):
        labels = clusters.loc[sub.index] if clusters is not None else None
        for name in RATINGS:
            m, lo, hi, n = mean_ci(sub[f"{name}_norm"], bounds=RANGES[f"{name}_norm"], clusters=labels)
            rows.append(row(family, section, f"{RATING_LABELS[name]} (÷5)", model, m, lo, hi, n))
        m, lo, hi, n = mean_ci((sub["envy"].astype(float) - 1) / 4, bounds=RANGES["envy_scaled"], clusters=labels)
        rows.append(row(family, section, "envy/jealousy ((x−1)/4)", model, m, lo, hi, n))
    for name in RATINGS:
        rows.append(row(family, section, f"{RATING_LABELS[name]} (÷5)", "neutral answer (3)", 0.6, kind="theory"))
    rows.append(row(family, section, "envy/jealousy ((x−1)/4)", "neutral answer (3)", 0.5, kind="theory"))
    return pd.DataFrame(rows)

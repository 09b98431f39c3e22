"""Report sections and profile rows of the sub-skill tests: pass rate per test and model with
Wilson 95% intervals (a table and the original's kind of figure, a bar per model in each test),
and, across the databases given to ``agora profile``, each model's mean pass rate beside its
resource survival time with the Spearman correlation across models (:func:`relate`)."""

from __future__ import annotations

import math

import pandas as pd

from ...analysis.plots import bars_with_ci, table_html
from ...analysis.report import guarded, Section
from ...analysis.stats import proportion_ci

#: Short labels of the tests, in the order the original lists them.
LABELS = {
    "consequence": "consequence",
    "shrinking_limit": "shrinking limit",
    "shrinking_limit_assumption": "shrinking limit (assumption)",
    "sustainable_action": "sustainable action",
    "sustainable_action_universalization": "sustainable action (universalization)",
}

#: The survival measure of the resource game's profile rows that :func:`relate` pairs with.
SURVIVAL = "survival time (months)"
#: The profile measure of a model's mean pass rate over the tests.
MEAN = "mean pass rate"
SECTION, RELATED = "pass rates", "sub-skills and survival"

DEFINITIONS = """
<p>Each game is one question about a shared resource (five agents, stock S, capacity C,
regrowth) answered with a last line <code>Answer: N</code>, in a <b>math</b> form (the dynamics
stated, no persona) or a <b>simulation</b> form (the scenario's own wording and persona), at
S = 100 (<b>fixed</b>) or S drawn from 10–100 (<b>random</b>).</p>
<ul>
<li><b>consequence</b>: every agent takes X; right answer <code>min(C, max(0, S − 5X) × 2)</code>
(trash: <code>min(C, max(0, S − 5X) + 50)</code>).</li>
<li><b>shrinking limit</b>, <b>shrinking limit (assumption)</b>: the most each may take so the
stock does not shrink, <code>(S // 2) // 5</code> (trash: the least each must take out,
<code>ceil(min(50, S) / 5)</code>); the second states that everyone takes the same.</li>
<li><b>sustainable action</b>, with and without the universalization sentence: the agent's own
harvest passes when <code>0 &lt; answer ≤ (S // 2) // 5</code>, or <code>answer = 0</code> when
that bound is 0 (trash: bound ≤ answer ≤ S).</li>
<li><b>pass rate</b> = games passed / games; an answer that stays invalid fails. Interval:
Wilson 95% (<b>low</b>, <b>high</b>).</li>
</ul>
"""


def _label(df: pd.DataFrame) -> pd.Series:
    return df["form"].astype(str) + " · " + df["test"].map(LABELS).fillna(df["test"].astype(str)) + " · S " + df["draw"].astype(str)


def pass_rates(games: pd.DataFrame, by: tuple[str, ...] = ("scenario", "language")) -> pd.DataFrame:
    """Pass rate per (``by``, test label, model) with its Wilson 95% interval and n."""
    if games.empty or "passed" not in games:
        return pd.DataFrame()
    g = games.assign(label=_label(games), model=games["model_agent"])
    rows = []
    keys = [*by, "label", "model"]
    for key, sub in g.groupby(keys, sort=False):
        k, n = int((sub["passed"] == 1).sum()), len(sub)
        rate, low, high = proportion_ci(k, n)
        rows.append({**dict(zip(keys, key)), "pass rate": rate, "low": low, "high": high, "n": n})
    out = pd.DataFrame(rows).rename(columns={"label": "test"})
    order = {name: i for i, name in enumerate(LABELS.values())}
    out["_order"] = out["test"].map(lambda t: (t.split(" · ")[0], order.get(t.split(" · ")[1], 99), t.split(" · ")[-1]))
    return out.sort_values([*by, "_order", "model"]).drop(columns="_order").reset_index(drop=True)


def figure(rates: pd.DataFrame, title: str) -> str:
    """The original's figure: a bar per model in each test (pass rate, Wilson whiskers)."""
    data = rates.rename(columns={"pass rate": "mean", "model": "metric"})
    return bars_with_ci(data[["test", "metric", "mean", "low", "high"]], "test", title, ylabel="pass rate")


def sections(games: pd.DataFrame, turns: pd.DataFrame) -> list[Section]:
    if games.empty:
        return []
    rates = pass_rates(games)
    out = [Section("Pass rate per test and model", table_html(rates, name="sub-skill pass rates"))]
    if games[["scenario", "language"]].drop_duplicates().shape[0] > 1:
        pooled = pass_rates(games, by=())
        out.append(Section("Pass rate per test and model, scenarios and languages pooled", table_html(pooled, name="sub-skill pass rates pooled")))

    def figures() -> Section:
        body = ""
        for (scenario, language), sub in rates.groupby(["scenario", "language"], sort=False):
            body += figure(sub, f"sub-skill pass rates, {scenario} ({language})")
        return Section("Pass rates, figure", body)

    def overall() -> Section:
        per = rates.groupby("model")["pass rate"].mean().rename(MEAN).reset_index()
        return Section("Mean pass rate per model", table_html(per, name="mean pass rate per model", note="The unweighted mean of the model's pass rates over the tests, forms, draws, scenarios and languages it played."))

    return out + guarded("Pass rates, figure", figures) + guarded("Mean pass rate per model", overall)


def profile_rows(games: pd.DataFrame, turns: pd.DataFrame) -> pd.DataFrame:
    """Per model: the pass rate of each test label (pooled over scenarios and languages; Wilson
    95%) and the mean pass rate over the tests; the knowing player's 1.0 as the theory row."""
    from ...analysis.profile import row

    family = "subskills"
    rates = pass_rates(games, by=())
    rows = [row(family, SECTION, r["test"], r["model"], r["pass rate"], r["low"], r["high"], r["n"]) for _, r in rates.iterrows()]
    for model, sub in rates.groupby("model"):
        rows.append(row(family, SECTION, MEAN, model, float(sub["pass rate"].mean()), n=int(sub["n"].sum()), note="unweighted mean of the model's pass rates over the tests"))
    rows += [row(family, SECTION, label, "knowing (does the arithmetic)", 1.0, kind="theory") for label in dict.fromkeys(rates["test"])]
    return pd.DataFrame(rows)


def spearman(x: list[float], y: list[float]) -> float:
    """Spearman's rank correlation (average ranks for ties); NaN when either side is constant."""
    rx, ry = pd.Series(x).rank(), pd.Series(y).rank()
    if rx.nunique() < 2 or ry.nunique() < 2:
        return math.nan
    return float(rx.corr(ry))


def relate(rows: pd.DataFrame) -> pd.DataFrame:
    """Rows of the whole profile (every family, every database) -> for each model with both a
    mean sub-skill pass rate and a resource survival time, the two beside each other, and the
    Spearman correlation across those models when there are at least 3."""
    from ...analysis.profile import row

    family = "subskills"
    if rows.empty:
        return pd.DataFrame()
    models = rows[rows["kind"] == "model"]
    passed = models[(models["family"] == family) & (models["measure"] == MEAN)].groupby("model")["estimate"].mean()
    survived = models[models["measure"] == SURVIVAL].groupby("model")["estimate"].mean()
    both = sorted(set(passed.index) & set(survived.index))
    if not both:
        return pd.DataFrame()
    out = []
    for m in both:
        out.append(row(family, RELATED, MEAN, m, float(passed[m])))
        out.append(row(family, RELATED, SURVIVAL, m, float(survived[m])))
    if len(both) >= 3:
        rho = spearman([passed[m] for m in both], [survived[m] for m in both])
        out.append(row(family, RELATED, "Spearman ρ (mean pass rate, survival time)", f"across {len(both)} models", rho, n=len(both), note="rank correlation across models of the mean sub-skill pass rate and the mean survival time"))
    return pd.DataFrame(out)


#: The whole-profile hook :func:`agorabench.analysis.profile.collect` calls after every
#: family's rows are in (``profile_rows.relate``).
profile_rows.relate = relate  # type: ignore[attr-defined]

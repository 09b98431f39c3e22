"""Report sections and profile rows of the dictator game: each dictator model's giving and payoffs
(95 % CIs, by framing when a study plays both), and how its decisions fall between giving
nothing, something below half, exactly half and more than half."""

from __future__ import annotations

import pandas as pd

from ...analysis.plots import grid_table
from ...analysis.report import guarded, Section
from ...analysis.stats import row_clusters, share_ci, summarise
from .dictator import Dictator, DictatorConfig

#: The metrics of a game shown per dictator model.
METRICS = ["given_share", "dictator_payoff", "recipient_payoff"]
#: The range of every metric, as the game declares it (``Dictator.metric_ranges``).
RANGES = {m: Dictator.metric_ranges(DictatorConfig())[m] for m in METRICS}
#: The kinds of decision of :func:`decision_kinds`, in order.
KINDS = ("nothing", "below half", "exactly half", "above half")

#: Metric definitions shown at the top of the report.
DEFINITIONS = """
<p>Each round the dictator holds <code>endowment</code> points and gives the recipient a whole
number of them; the recipient, who decides nothing, receives it and the dictator keeps the rest.
In the <code>anonymous</code> framing nobody learns who decided; in the <code>observed</code> framing
the dictator is told that the recipient will learn the decision and that it was the dictator's. A
game's value is taken over its R rounds; tables show means over games with 95% percentile-bootstrap
intervals (2,000 resamples of the games), which stay within 0–1.</p>
<ul>
<li><b>given_share</b> = mean of give / endowment over the rounds with a valid decision (the fallback
gift 0 that replaces an invalid answer is left out).</li>
<li><b>dictator_payoff</b> = dictator's points / (endowment·R); <b>recipient_payoff</b> = recipient's
points / (endowment·R) = 1 − dictator_payoff.</li>
<li><b>decisions by kind</b>: the share of a model's valid decisions that give <b>nothing</b>, less than
half but something (<b>below half</b>), <b>exactly half</b> (2·give = endowment) and more than half
(<b>above half</b>), each with Wilson's 95% interval (<b>low</b>, <b>high</b>; for the pooled
<code>human</code>, cluster-robust by participant).</li>
</ul>
<p>Reference: a money-maximising dictator gives 0 (given_share = 0, dictator_payoff = 1).</p>
"""


def _by(games: pd.DataFrame) -> list[str]:
    """Group by the dictator's model, and by framing when the games hold both."""
    return ["model_dictator", "framing"] if "framing" in games and games["framing"].nunique() > 1 else ["model_dictator"]


def giving_table(games: pd.DataFrame) -> pd.DataFrame:
    """Mean and 95% percentile-bootstrap CI of each metric per dictator model (long format)."""
    return summarise(games, _by(games), METRICS, bounds=RANGES).rename(columns={"model_dictator": "model"})


def kind_of(share: float) -> str:
    """The kind of a decision giving ``share`` of the endowment (:data:`KINDS`)."""
    if share <= 0:
        return KINDS[0]
    if abs(share - 0.5) < 1e-9:
        return KINDS[2]
    return KINDS[1] if share < 0.5 else KINDS[3]


def decision_kinds(turns: pd.DataFrame) -> pd.DataFrame:
    """Per dictator model, the share of its valid decisions of each kind (:func:`kind_of`)."""
    if turns is None or turns.empty or "given_share" not in turns:
        return pd.DataFrame()
    t = turns[(turns["phase"] == "give") & turns["valid"].astype(bool)].dropna(subset=["given_share"])
    if t.empty:
        return pd.DataFrame()
    kinds = t["given_share"].map(kind_of)
    clusters = row_clusters(t, "model")  # the pooled human: clustered by participant
    rows = []
    for model, sub in t.groupby("model"):
        labels = clusters.loc[sub.index] if clusters is not None else None
        for kind in KINDS:
            share, low, high, n = share_ci(kinds.loc[sub.index] == kind, clusters=labels)
            rows.append({"model": model, "kind": kind, "share": share, "low": low, "high": high, "n": n})
    return pd.DataFrame(rows)


def sections(games: pd.DataFrame, turns: pd.DataFrame) -> list[Section]:
    if games.empty:
        return []
    table = giving_table(games)
    index = ["model", "framing"] if "framing" in table else "model"
    out = [Section("Giving and payoffs", grid_table(table, index, name="giving and payoffs per dictator model"))]

    def by_kind() -> Section | None:
        kinds = decision_kinds(turns)
        if kinds.empty:
            return None
        return Section("Decisions by kind", grid_table(kinds, "model", column="kind", est="share", name="decisions by kind"))

    return out + guarded("Decisions by kind", by_kind)


def profile_rows(games: pd.DataFrame, turns: pd.DataFrame) -> pd.DataFrame:
    """Each dictator model's metrics (mean, 95% CI), and the money-maximising reference as
    theory rows: give 0, keep everything."""
    from ...analysis.profile import row

    family, section = "dictator", "dictator: giving"
    rows = [
        row(family, section, r["metric"], r["model"], r["mean"], r["low"], r["high"], r["n"], role="dictator", note=f"framing {r['framing']}" if "framing" in r else "")
        for _, r in giving_table(games).iterrows()
    ]
    theory = {"given_share": 0.0, "dictator_payoff": 1.0, "recipient_payoff": 0.0}
    rows += [row(family, section, metric, "selfish", value, role="dictator", kind="theory") for metric, value in theory.items()]
    return pd.DataFrame(rows)

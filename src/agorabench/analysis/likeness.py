"""Models beside people: the comparison of a game's stored decisions with its human reference
data (:mod:`agorabench.analysis.yardstick`), as report sections and profile rows.

For every measure of a game's :class:`~agorabench.analysis.yardstick.Yardstick` and every human
sample of it, :func:`compare` gives one row per model that made such decisions (the lab's own
participants pooled as ``human``, clustered by participant) and one ``human (reference)`` row:
decisions and clusters, the mean with its 95 % interval, the behavioural Turing shares (win,
tie, lose) and the likeness (win + tie/2, 0.5 = as people do), each with its interval, the
Wasserstein distance and the Kolmogorov–Smirnov test. A model's decisions are those of its
valid turns of the measure's phase in the games the sample is a yardstick for (the sample's and
the measure's ``where``); each game is one cluster (a person's decisions are clustered by
participant).
"""

from __future__ import annotations

import json
import math
from typing import Any, Iterable, Iterator, Mapping

import numpy as np
import pandas as pd

from ..families import references
from .frames import HUMAN
from .plots import figure_html, number, table_html, with_interval
from .sections import guarded, Section
from .stats import mean_ci
from .yardstick import (bin_shares, HumanSample, human_baseline, ks_test, Measure, REFERENCE, turing, wasserstein, Yardstick)

#: Kinds of comparison rows: a played model, the lab's own people (pooled), the shipped human data.
MODEL, PEOPLE, REFERENCE_KIND = "model", "people", "reference"

DEFINITIONS = """
<h4>People as the yardstick</h4>
<p>Games with human reference data (decisions people made in published experiments, shipped
inside agorabench with their source and licence) compare every model with people, decision by
decision, on the game's first round unless a measure says otherwise:</p>
<ul>
<li><b>human (reference)</b>: the shipped human decisions (its source and licence are listed
under the table); <b>human</b> (pooled): the people who played this study, clustered by participant.</li>
<li><b>Turing win / tie / lose</b> (Mei, Xie, Yuan &amp; Jackson 2024, PNAS 121(9) e2313925121): one
human and one model decision are drawn and both placed in the bins of the human histogram (10 equal
bins over the measure's range, 2 for a yes/no choice); the model <i>wins</i> when its decision's bin
holds a larger share of the human decisions, <i>ties</i> when the shares are equal, <i>loses</i> otherwise.
Computed exactly from the two histograms; 95 % intervals from 2,000 bootstrap resamples of the model's
games (the human data is the yardstick and is held fixed; with a small human sample its bins are
ranked less surely than the interval says). The <b>human (reference)</b> row is people against
people: its interval is that of as many decisions drawn from the people's own distribution.</li>
<li><b>likeness</b> = win + tie / 2: 0.5 for decisions distributed as the people's (the human
baseline), lower for a model people would tell apart, up to 1 for one that always picks the
most common human choice.</li>
<li><b>W1</b>: the Wasserstein (earth mover's) distance between the model's and the people's
decisions, in the measure's units; <b>KS D</b> and <b>KS p</b>: the two-sample
Kolmogorov–Smirnov statistic and its p-value (conservative for whole-number decisions with ties).</li>
<li><b>published</b>: values a publication reports where its decisions are not public, with the
publication's n, beside the same statistic of each model on the same games.</li>
</ul>
"""


def _matches(column: pd.Series, value: Any) -> pd.Series:
    """Rows whose ``column`` equals ``value`` (numbers within 1e-3: ``p = 0.667`` is 2/3)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        numbers = pd.to_numeric(column, errors="coerce")
        return pd.Series(np.isclose(numbers.to_numpy(dtype=float), float(value), rtol=0.0, atol=1e-3), index=column.index)
    return column.astype(object) == value


def decisions(measure: Measure, turns: pd.DataFrame, where: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """The decisions of ``measure`` in ``turns``: columns ``model``, ``value``, ``cluster`` (the
    game, or the participant for a person's turn). Only valid turns of the measure's phase whose
    ``where`` columns (the measure's and the sample's) match; none when a column is missing."""
    empty = pd.DataFrame(columns=["model", "value", "cluster"])
    if turns is None or turns.empty or measure.column not in turns or "phase" not in turns:
        return empty
    keep = (turns["phase"] == measure.phase) & turns["valid"].astype(bool)
    for column, value in {**dict(measure.where), **dict(where or {})}.items():
        if column not in turns:
            return empty
        keep &= _matches(turns[column], value)
    t = turns[keep]
    values = pd.to_numeric(t[measure.column], errors="coerce")
    t, values = t[values.notna()], values[values.notna()]
    cluster = t["game_id"].astype(str)
    if "participant" in t:
        cluster = t["participant"].where(t["participant"].notna(), cluster).astype(str)
    return pd.DataFrame({"model": t["model"].astype(str).to_numpy(), "value": values.to_numpy(dtype=float), "cluster": cluster.to_numpy()})


def _row(measure: Measure, sample: HumanSample, who: str, kind: str, n: int, clusters: int, mean: tuple[float, float, float], score: Any, w1: float, ks: tuple[float, float]) -> dict[str, Any]:
    return {
        "measure": measure.name, "sample": sample.source.key, "condition": sample.condition, "who": who, "kind": kind,
        "decisions": n, "clusters": clusters, "mean": mean[0], "mean_low": mean[1], "mean_high": mean[2],
        "win": score.win, "win_low": score.win_ci[0], "win_high": score.win_ci[1],
        "tie": score.tie, "tie_low": score.tie_ci[0], "tie_high": score.tie_ci[1],
        "lose": score.lose, "lose_low": score.lose_ci[0], "lose_high": score.lose_ci[1],
        "likeness": score.likeness, "likeness_low": score.likeness_ci[0], "likeness_high": score.likeness_ci[1],
        "wasserstein": w1, "ks_d": ks[0], "ks_p": ks[1],
    }


def reference_mean(sample: HumanSample, bounds: tuple[float, float]) -> tuple[float, float, float]:
    """The human sample's mean with its 95 % t interval (its decisions independent)."""
    v, c = sample.array()
    n = c.sum()
    m = float((v * c).sum() / n)
    if n < 2:
        return (m, math.nan, math.nan)
    sd = math.sqrt(float((c * (v - m) ** 2).sum() / (n - 1)))
    from scipy import special

    half = float(special.stdtrit(n - 1, 0.975) * sd / math.sqrt(n))
    return (m, max(bounds[0], m - half), min(bounds[1], m + half))


def compare(yardstick: Yardstick, turns: pd.DataFrame) -> pd.DataFrame:
    """One row per (measure, human sample, model or reference) as described in the module doc;
    a sample whose games none of the study played gives no rows."""
    rows = []
    for measure in yardstick.measures:
        for sample in yardstick.samples_of(measure.name):
            found = decisions(measure, turns, sample.where)
            if found.empty:
                continue
            bounds = (measure.lo, measure.hi)
            base = human_baseline(sample, measure)
            rows.append(_row(measure, sample, REFERENCE, REFERENCE_KIND, sample.n, sample.n, reference_mean(sample, bounds), base, 0.0, (0.0, 1.0)))
            for model, sub in found.groupby("model", sort=True):
                values, clusters = sub["value"].to_numpy(), sub["cluster"].to_numpy()
                mean = mean_ci(values, bounds=bounds, clusters=clusters)[:3]
                score = turing(sample, values, measure, clusters=clusters)
                rows.append(_row(measure, sample, str(model), PEOPLE if model == HUMAN else MODEL, len(values), len(set(clusters)), mean, score, wasserstein(sample, values), ks_test(sample, values)))
    return pd.DataFrame(rows)


def published_table(yardstick: Yardstick, turns: pd.DataFrame, applying: bool | None = None) -> pd.DataFrame:
    """Every published value beside the same statistic of each model on the games it applies to
    (``mean``, ``median``, and a share whose value says which decisions it counts: ``test``;
    another statistic is shown for people only). ``applying``: True keeps the values whose
    games (their ``where``) the study played, False the others, None all."""
    rows = []
    memo: dict[tuple[str, str], pd.DataFrame] = {}  # one selection per measure and condition (keyed on their values)
    for p in yardstick.published:
        measure = yardstick.measure(p.measure)
        row: dict[str, Any] = {"measure": p.measure, "condition": p.condition, "statistic": p.statistic, "people (published)": p.value, "n": p.n, "source": p.source.key}
        key = (p.measure, json.dumps(dict(p.where), sort_keys=True, default=str))
        if key not in memo:
            memo[key] = decisions(measure, turns, p.where)
        found = memo[key]
        if applying is not None and applying == found.empty:
            continue
        for model, sub in found.groupby("model", sort=True):
            if p.test is not None:
                row[str(model)] = float(np.mean(p.test(sub["value"].to_numpy(dtype=float))))
            elif p.statistic in ("mean", "median"):
                row[str(model)] = float(getattr(sub["value"], p.statistic)())
        rows.append(row)
    out = pd.DataFrame(rows)
    if "n" in out:  # whole numbers, empty where the source gives none
        out["n"] = out["n"].astype("Int64")
    return out


def sources_table(yardstick: Yardstick) -> pd.DataFrame:
    """Each source of the human data once: its key, citation, where in it, licence."""
    seen: dict[str, Any] = {}
    for s in [*yardstick.samples, *yardstick.published]:
        seen.setdefault(s.source.key, s.source)
    return pd.DataFrame([{"source": s.key, "citation": s.citation, "where": s.where, "licence": s.licence, "url": s.url} for s in seen.values()])


def comparison_grid(table: pd.DataFrame) -> pd.DataFrame:
    """The comparison as the report shows it: one line per (measure, sample, who), cells
    ``estimate [low, high]``."""
    out = pd.DataFrame({
        "measure": table["measure"], "human data": table["sample"], "who": table["who"], "decisions": table["decisions"],
        "mean": [with_interval(m, lo, hi) for m, lo, hi in zip(table["mean"], table["mean_low"], table["mean_high"])],
    })
    for name in ("win", "tie", "lose", "likeness"):
        out[f"Turing {name}" if name != "likeness" else "likeness"] = [with_interval(e, lo, hi) for e, lo, hi in zip(table[name], table[f"{name}_low"], table[f"{name}_high"])]
    out["W1"] = [number(v) if k != REFERENCE_KIND else "–" for v, k in zip(table["wasserstein"], table["kind"])]
    out["KS D"] = [number(v) if k != REFERENCE_KIND else "–" for v, k in zip(table["ks_d"], table["kind"])]
    out["KS p"] = [number(v) if k != REFERENCE_KIND else "–" for v, k in zip(table["ks_p"], table["kind"])]
    return out


def distributions_figure(game: str, yardstick: Yardstick, turns: pd.DataFrame) -> str:
    """One panel per (measure, human sample): the human decisions' bin shares as bars and each
    model's as a line with markers; '' when no sample applies to the stored games."""
    import matplotlib.pyplot as plt

    panels = []
    for measure in yardstick.measures:
        for sample in yardstick.samples_of(measure.name):
            found = decisions(measure, turns, sample.where)
            if not found.empty:
                panels.append((measure, sample, found))
    if not panels:
        return ""
    fig, axes = plt.subplots(len(panels), 1, figsize=(7.6, 3.1 * len(panels) + 0.5), squeeze=False)  # one panel per row: fits the page
    for ax, (measure, sample, found) in zip(axes[:, 0], panels):
        edges = np.linspace(measure.lo, measure.hi, measure.bins + 1)
        centres = (edges[:-1] + edges[1:]) / 2
        width = (measure.hi - measure.lo) / measure.bins
        hv, hc = sample.array()
        ax.bar(centres, bin_shares(hv, hc, measure.lo, measure.hi, measure.bins), width=width * 0.9, color="#c8c8c8", edgecolor="#888888", label=f"{REFERENCE} ({sample.source.key}, n = {sample.n:,})")
        for model, sub in found.groupby("model", sort=True):
            ax.plot(centres, bin_shares(sub["value"].to_numpy(), None, measure.lo, measure.hi, measure.bins), marker="o", linewidth=1.2, label=f"{model} (n = {len(sub):,})")
        ax.set_title(f"{measure.label}\n{sample.condition}", fontsize=9)
        ax.set_xlabel(measure.label)
        ax.set_ylabel("share of decisions")
        ax.set_ylim(0, 1)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)  # beside the axes, never over the bars
    fig.suptitle(f"{game}: each model's decisions over the people's")
    fig.tight_layout()
    return figure_html(fig, f"{game} decisions against human reference data")


def sections(game: str, yardstick: Yardstick, games: pd.DataFrame, turns: pd.DataFrame) -> list[Section]:
    """The report section of one game with human reference data: the comparison table, the
    published values, the distributions figure and the sources; a note instead when none of
    the data applies to the stored games."""

    def build() -> Section:
        table = compare(yardstick, turns)
        parts = []
        if table.empty:
            parts.append("<p class='note'>No decision of these games is comparable with the human data (the data's conditions are listed below): nothing compared.</p>")
        else:
            parts.append(table_html(comparison_grid(table), name=f"{game} against people", note="Each model's decisions beside the people's (see the definitions under Metrics above); the human (reference) row is people against people."))
            parts.append(distributions_figure(game, yardstick, turns))
        published = published_table(yardstick, turns, applying=True)
        if not published.empty:
            parts.append("<h3>Published values</h3>" + table_html(published, name=f"{game} published human values", note="Values publications report (their decisions are not public), with the publication's n; a model's column holds the same statistic of its decisions in the games each value applies to."))
        other = published_table(yardstick, turns, applying=False)
        if not other.empty:
            parts.append(f"<details><summary>{len(other)} published value(s) of conditions these games did not play</summary>" + table_html(other, name=f"{game} published human values of other conditions") + "</details>")
        parts.append("<h3>Sources</h3>" + table_html(sources_table(yardstick), name=f"{game} human data sources"))
        return Section(f"People as the yardstick: {game}", "\n".join(parts))

    return guarded(f"People as the yardstick: {game}", build)


def with_references(games: pd.DataFrame, turns: pd.DataFrame) -> Iterator[tuple[str, Yardstick, pd.DataFrame, pd.DataFrame]]:
    """(game, its yardstick, its games, their turns) for every game of ``games`` that declares
    human reference data, in the order the games come."""
    if games is None or games.empty:
        return
    for game in dict.fromkeys(games["game"].astype(str)):
        stick = references(game)
        if stick is None:
            continue
        mine = games[games["game"] == game]
        yield game, stick, mine, turns[turns["game_id"].isin(set(mine["game_id"]))] if turns is not None and len(turns) else turns


def report_sections(games: pd.DataFrame, turns: pd.DataFrame) -> list[Section]:
    """The people-as-yardstick sections of every game of the study that declares human
    reference data (in the order the games come)."""
    return [section for game, stick, mine, theirs in with_references(games, turns) for section in sections(game, stick, mine, theirs)]


def has_references(games: Iterable[str]) -> bool:
    """Whether some of the games declares human reference data."""
    return any(references(g) is not None for g in games)


def likeness_rows(games: pd.DataFrame, turns: pd.DataFrame) -> pd.DataFrame:
    """Human-likeness per model and game measure, long: ``measure`` (``GAME: MEASURE (SOURCE)``),
    ``model``, ``kind`` (``model``, or ``reference`` for the people-against-people 0.5; the
    lab's pooled people are a model, ``human``), ``estimate`` (likeness), ``low``, ``high``,
    ``n`` (decisions). The profile turns them into its rows."""
    rows = []
    for game, stick, _, theirs in with_references(games, turns):
        for _, r in compare(stick, theirs).iterrows():
            rows.append({"measure": f"{game}: {r['measure']} ({r['sample']})", "model": str(r["who"]), "kind": "reference" if r["kind"] == REFERENCE_KIND else "model", "estimate": r["likeness"], "low": r["likeness_low"], "high": r["likeness_high"], "n": r["decisions"]})
    return pd.DataFrame(rows, columns=["measure", "model", "kind", "estimate", "low", "high", "n"])

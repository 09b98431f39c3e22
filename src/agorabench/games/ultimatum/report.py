"""Report sections and profile rows of the ultimatum game: offers and acceptance per model and
seat (95% CIs), acceptance by proposer × responder, and acceptance by the share offered."""

from __future__ import annotations

import pandas as pd

from ...analysis.plots import grid_table, table_html
from ...analysis.report import guarded, Section
from ...analysis.stats import row_clusters, share_ci, summarise

#: Metrics of each seat, as (seat, metrics shown for the model in that seat).
SEATS = (("proposer", ["offer_share", "proposer_payoff"]), ("responder", ["accepted", "responder_payoff"]))

#: The range of every seat metric (shares of the pie or of the rounds).
RANGES: dict[str, tuple[float, float]] = {"offer_share": (0.0, 1.0), "proposer_payoff": (0.0, 1.0), "accepted": (0.0, 1.0), "responder_payoff": (0.0, 1.0)}

#: Metric definitions shown at the top of the report.
DEFINITIONS = """
<p>Each round the proposer offers the responder a whole number of the <code>pie</code> points; the
responder accepts (responder gets the offer, proposer the rest) or rejects (both get 0). A game's
value is taken over its R rounds; tables show means over games with 95% percentile-bootstrap
intervals (2,000 resamples of the games), which stay within 0–1.</p>
<ul>
<li><b>offer_share</b> = mean of offer / pie over the rounds with a valid offer (the fallback offer
pie // 2 that replaces an invalid one is left out).</li>
<li><b>accepted</b> = accepted rounds / R; a decision that stays invalid counts as a rejection.</li>
<li><b>proposer_payoff</b> = proposer's points / (pie·R); <b>responder_payoff</b> = responder's points / (pie·R).</li>
<li><b>efficiency</b> = (proposer's + responder's points) / (pie·R), the share of the pie realised
(here equal to accepted).</li>
<li><b>acceptance rate</b> by offered share = valid responder decisions that accept / valid responder
decisions, with offers grouped by offer / pie; Wilson 95% interval (<b>low</b>, <b>high</b>; for the
pooled <code>human</code>, cluster-robust by participant: Wilson's on the effective sample size).</li>
</ul>
<p>Reference: subgame-perfect play offers 1 point (offer_share = 1/pie) and accepts it.</p>
"""


def seat_table(games: pd.DataFrame) -> pd.DataFrame:
    """Mean and 95% percentile-bootstrap CI of each seat's metrics per model in that seat (long
    format)."""
    parts = []
    for seat, columns in SEATS:
        part = summarise(games, [f"model_{seat}"], columns, bounds=RANGES).rename(columns={f"model_{seat}": "model"})
        part.insert(1, "seat", seat)
        parts.append(part)
    return pd.concat(parts, ignore_index=True)


def acceptance_by_offer(turns: pd.DataFrame) -> pd.DataFrame:
    """Acceptance rate per responder model and offered-share band: tenths of the pie, each band
    holding its lower end, the last one also 1.0."""
    if turns is None or turns.empty or "offered_share" not in turns:
        return pd.DataFrame()
    t = turns[(turns["role"] == "responder") & turns["valid"].astype(bool)].dropna(subset=["offered_share"])
    tenth = (t["offered_share"] * 10 + 1e-9).astype(int).clip(0, 9)  # [0, 0.1), …, [0.9, 1.0]
    bands = tenth.map(lambda b: f"{b / 10:.1f}–{(b + 1) / 10:.1f}")
    rows = []
    clusters = row_clusters(t, "model")  # the pooled human: clustered by participant
    for (model, band), sub in t.groupby([t["model"], bands]):
        rate, low, high, n = share_ci(sub["accepted"] == 1, clusters=clusters.loc[sub.index] if clusters is not None else None)
        rows.append({"model": model, "offered share": band, "acceptance rate": rate, "low": low, "high": high, "n": n})
    return pd.DataFrame(rows)


def sections(games: pd.DataFrame, turns: pd.DataFrame) -> list[Section]:
    if games.empty:
        return []
    seats = seat_table(games)
    body = grid_table(seats, "model", column=["seat", "metric"], name="offers and acceptance per model")
    pairs = games.pivot_table(index="model_proposer", columns="model_responder", values="accepted", aggfunc="mean").reset_index()
    pairs.columns = ["proposer \\ responder", *pairs.columns[1:]]
    body += "<h3>accepted by proposer × responder</h3>" + table_html(pairs, name="accepted by pairing")
    out = [Section("Offers and acceptance", body)]

    def by_offer() -> Section | None:
        table = acceptance_by_offer(turns)
        return Section("Acceptance by offered share", table_html(table, name="acceptance by offered share")) if not table.empty else None

    return out + guarded("Acceptance by offered share", by_offer)


def profile_rows(games: pd.DataFrame, turns: pd.DataFrame) -> pd.DataFrame:
    """Each seat's metrics per model (mean, 95% CI), and the subgame-perfect reference as theory
    rows: offer 1 point, always accepted (shares averaged over the games' pies)."""
    from ...analysis.profile import row

    family, section = "ultimatum", "ultimatum: offers and acceptance"
    rows = [
        row(family, section, r["metric"], r["model"], r["mean"], r["low"], r["high"], r["n"], role=r["seat"])
        for _, r in seat_table(games).iterrows()
    ]
    unit = float((1 / games["pie"]).mean())
    theory = {"proposer": {"offer_share": unit, "proposer_payoff": 1 - unit}, "responder": {"accepted": 1.0, "responder_payoff": unit}}
    for seat, values in theory.items():
        rows += [row(family, section, metric, "subgame-perfect", value, role=seat, kind="theory") for metric, value in values.items()]
    return pd.DataFrame(rows)

"""Report sections of the investment game (a trust game): what each model sends and returns in its seat (means with
95% intervals), the payoffs of each pairing, and how often each seat's answers were rejected."""

from __future__ import annotations

import pandas as pd

from agorabench.analysis.plots import table_html
from agorabench.analysis.report import Section, guarded
from agorabench.analysis.stats import Bounds, declared_ranges, mean_ci, proportion_ci, row_clusters, summarise

#: The metrics shown with a range (the percentile bootstrap keeps their intervals inside it); the
#: payoffs get t intervals.
BOUNDED = ("sent_share", "returned_share", "efficiency")


def ranges(games: pd.DataFrame) -> dict[str, Bounds]:
    """Each bounded metric's range as the game declares it (``InvestmentGame.metric_ranges``) over
    these games' configurations: the report writes no range of its own."""
    from .investment import InvestmentGame

    declared = declared_ranges(InvestmentGame, games)
    return {m: declared[m] for m in BOUNDED}

#: Metric definitions shown at the top of the report.
DEFINITIONS = """
<p>The investor holds <code>endowment</code> points and sends some to the trustee, who receives
<code>multiplier</code> times the amount and sends back part of it. Tables show means over games
with 95% intervals.</p>
<ul>
<li><b>sent_share</b> = points sent / endowment (an invalid send is left out).</li>
<li><b>returned_share</b> = points returned / points received (games where nothing was received,
or the repayment was invalid, are left out).</li>
<li><b>investor_payoff</b>, <b>trustee_payoff</b> = the player's points / endowment (0 to the multiplier).</li>
<li><b>efficiency</b> = (both players' points) / (multiplier · endowment).</li>
<li><b>rejected</b> = a seat's answers that stayed invalid / its turns, with Wilson's interval.</li>
</ul>
<p>Reference: with money-maximising players nothing is sent (sent_share 0, efficiency 1 / multiplier).</p>
"""


def seat_table(games: pd.DataFrame) -> pd.DataFrame:
    """Mean and interval of each seat's share per model in that seat (long format)."""
    parts = []
    bounds = ranges(games)
    for seat, column in (("investor", "sent_share"), ("trustee", "returned_share")):
        part = summarise(games, [f"model_{seat}"], [column], bounds=bounds).rename(columns={f"model_{seat}": "model"})
        part.insert(1, "seat", seat)
        parts.append(part)
    return pd.concat(parts, ignore_index=True)


def pairing_table(games: pd.DataFrame) -> pd.DataFrame:
    """Each pairing's mean payoffs and efficiency, with ``mean_ci`` intervals (a person's games
    clustered by participant: ``row_clusters``; None when no person played)."""
    rows = []
    bounds = ranges(games)
    seats = ["model_investor", "model_trustee"]
    clusters = row_clusters(games, seats)
    for (investor, trustee), sub in games.groupby(seats):
        row = {"investor": investor, "trustee": trustee}
        labels = clusters.loc[sub.index] if clusters is not None else None
        for column in ("investor_payoff", "trustee_payoff", "efficiency"):
            mean, low, high, n = mean_ci(sub[column], bounds=bounds.get(column), clusters=labels)
            row.update({column: mean, f"{column} low": low, f"{column} high": high})
        rows.append({**row, "games": n})
    return pd.DataFrame(rows)


def rejected_table(turns: pd.DataFrame) -> pd.DataFrame:
    """Share of each model's turns per seat whose answer stayed invalid (Wilson interval)."""
    if turns is None or turns.empty:
        return pd.DataFrame()
    rows = []
    for (model, role), sub in turns.groupby(["model", "role"]):
        bad = int((~sub["valid"].astype(bool)).sum())
        share, low, high = proportion_ci(bad, len(sub))
        rows.append({"model": model, "seat": role, "rejected": share, "low": low, "high": high, "turns": len(sub)})
    return pd.DataFrame(rows)


def sections(games: pd.DataFrame, turns: pd.DataFrame) -> list[Section]:
    """The family's sections of a study's report, given its finished games and their turns."""
    if games.empty:
        return []
    out = [Section("Sending and returning", table_html(seat_table(games), name="shares per model and seat"))]
    out += guarded("Payoffs by pairing", lambda: Section("Payoffs by pairing", table_html(pairing_table(games), name="payoffs by pairing")))

    def rejected() -> Section | None:
        table = rejected_table(turns)
        return Section("Rejected answers", table_html(table, name="rejected answers")) if not table.empty else None

    return out + guarded("Rejected answers", rejected)

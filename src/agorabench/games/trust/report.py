"""Report sections and profile rows of the trust game: what each model sends and returns in its
seat and the payoffs (means with 95 % intervals), payoffs and efficiency by pairing, the share
returned by the amount sent, and the strategy method's stated returns for every amount."""

from __future__ import annotations

import re

import pandas as pd

from ...analysis.plots import grid_table, table_html
from ...analysis.report import guarded, Section
from ...analysis.stats import Bounds, declared_ranges, mean_ci, row_clusters, share_ci, summarise

#: Metrics of each seat, as (seat, metrics shown for the model in that seat).
SEATS = (("investor", ["sent_share", "investor_payoff"]), ("trustee", ["returned_share", "trustee_payoff"]))

#: The metrics shown with the range the game declares for them (``Trust.metric_ranges`` over the
#: study's configurations; the percentile bootstrap keeps their intervals inside it); the payoffs
#: get t intervals.
BOUNDED = ("sent_share", "returned_share", "efficiency")


def ranges(games: pd.DataFrame) -> dict[str, Bounds]:
    """The range of each bounded metric (:data:`BOUNDED`) as the game declares it over these
    games' configurations."""
    from .trust import Trust

    declared = declared_ranges(Trust, games)
    return {m: declared[m] for m in BOUNDED}


def returned_range(turns: pd.DataFrame) -> Bounds:
    """The range of a return's share of what the trustee received, per round (the turns'
    noted ``returned_share``) or stated for an amount k (strategy method: stated / (m·k)): the
    game's ``returned_share`` metric is its mean over rounds of that very share, so its
    declared range (``Trust.metric_ranges``, over these turns' configurations) is theirs."""
    from .trust import Trust

    return declared_ranges(Trust, turns)["returned_share"]

#: Metric definitions shown at the top of the report.
DEFINITIONS = """
<p>Each round the investor holds <code>endowment</code> points (E) and sends s of them; the
trustee, who holds <code>trustee_endowment</code> points (T) of its own, receives m·s
(<code>multiplier</code> m) and returns r of them: the investor ends the round with E − s + r
points, the trustee with T + m·s − r. Under <code>method = "direct"</code> the trustee decides on
the amount sent (and is not asked when nothing was sent); under <code>method = "strategy"</code>
it states beforehand a return for every amount 1..E, and the one for the amount sent is carried
out. A game's value is taken over its R rounds; tables show means over games with 95 %
intervals (percentile bootstrap for shares, which stays within 0–1; t intervals for payoffs).</p>
<ul>
<li><b>sent_share</b> = mean of s / E over the rounds with a valid send (the fallback send of 0
that replaces an invalid answer is left out).</li>
<li><b>returned_share</b> = mean of r / (m·s) over the rounds with something sent and a valid
return (undefined, and left out, when nothing was ever sent).</li>
<li><b>investor_payoff</b>, <b>trustee_payoff</b> = the player's points / (R·E): 1 and T / E when
nothing is sent.</li>
<li><b>efficiency</b> = both players' points / (R·(m·E + T)), the share of the most the pair can
hold (everything sent).</li>
<li><b>returned share by share sent</b>: valid direct returns' r / (m·s), grouped by s / E in
tenths of the endowment (each band holds its lower end, the last one also 1).</li>
<li><b>stated return by amount</b> (strategy method): for each amount k, the mean of the stated
return / (m·k) over the valid plans.</li>
</ul>
<p>Reference: with money-maximising players nothing is sent and nothing returned (sent_share 0,
payoffs 1 and T / E, efficiency (E + T) / (m·E + T)). A trustee returning more than 1 / m of what
it received makes sending everything the investor's best reply. In Berg, Dickhaut &amp; McCabe's
(1995) no-history pairs ($10 each, m = 3) the mean sent was $5.16 (sent_share 0.516) and the
mean payback $4.66.</p>
"""


def seat_table(games: pd.DataFrame, bounds: dict[str, Bounds] | None = None) -> pd.DataFrame:
    """Mean and 95 % interval of each seat's metrics per model in that seat (long format);
    ``bounds`` the metrics' ranges (default: :func:`ranges` of ``games``)."""
    bounds = ranges(games) if bounds is None else bounds
    parts = []
    for seat, columns in SEATS:
        part = summarise(games, [f"model_{seat}"], columns, bounds=bounds).rename(columns={f"model_{seat}": "model"})
        part.insert(1, "seat", seat)
        parts.append(part)
    return pd.concat(parts, ignore_index=True)


def pairing_table(games: pd.DataFrame, bounds: dict[str, Bounds] | None = None) -> pd.DataFrame:
    """Each pairing's mean payoffs and efficiency with their intervals (a person's games
    clustered by participant); ``bounds`` as in :func:`seat_table`."""
    bounds = ranges(games) if bounds is None else bounds
    rows = []
    seats = ["model_investor", "model_trustee"]
    clusters = row_clusters(games, seats)
    for (investor, trustee), sub in games.groupby(seats):
        row = {"investor": investor, "trustee": trustee}
        labels = clusters.loc[sub.index] if clusters is not None else None
        n = 0
        for column in ("investor_payoff", "trustee_payoff", "efficiency"):
            mean, low, high, n = mean_ci(sub[column], bounds=bounds.get(column), clusters=labels)
            row.update({column: mean, f"{column} low": low, f"{column} high": high})
        rows.append({**row, "games": n})
    return pd.DataFrame(rows)


def returned_by_sent(turns: pd.DataFrame) -> pd.DataFrame:
    """Mean returned share per trustee model and band of the share sent (direct method), with
    its interval; empty when no valid return was made."""
    if turns is None or turns.empty or "returned_share" not in turns or "invested_share" not in turns:
        return pd.DataFrame()
    t = turns[(turns["role"] == "trustee") & (turns["phase"] == "return") & turns["valid"].astype(bool)].dropna(subset=["returned_share", "invested_share"])
    if t.empty:
        return pd.DataFrame()
    bounds = returned_range(t)
    tenth = (t["invested_share"] * 10 + 1e-9).astype(int).clip(0, 9)  # [0.1, 0.2), …, [0.9, 1.0]
    t = t.assign(_band=tenth.map(lambda b: f"{b / 10:.1f}–{(b + 1) / 10:.1f}"))
    rows = []
    clusters = row_clusters(t, "model")
    for (model, band), sub in t.groupby(["model", "_band"]):
        mean, low, high, n = mean_ci(sub["returned_share"], bounds=bounds, clusters=clusters.loc[sub.index] if clusters is not None else None)
        rows.append({"model": model, "share sent": band, "returned share": mean, "low": low, "high": high, "n": n})
    return pd.DataFrame(rows)


_PLAN = re.compile(r"action_back_if_(\d+)$")


def stated_returns(turns: pd.DataFrame) -> pd.DataFrame:
    """Strategy method: per trustee model and amount k, the mean stated return / (m·k) over its
    valid plans, with the share of plans that return nothing for k; empty without plans."""
    if turns is None or turns.empty or "phase" not in turns:
        return pd.DataFrame()
    t = turns[(turns["role"] == "trustee") & (turns["phase"] == "plan") & turns["valid"].astype(bool)]
    amounts = sorted((int(m.group(1)), c) for c in t.columns if (m := _PLAN.match(str(c))))
    if t.empty or not amounts:
        return pd.DataFrame()
    rows = []
    bounds = returned_range(t)
    for model, sub in t.groupby("model"):
        for k, column in amounts:
            stated = pd.to_numeric(sub[column], errors="coerce").dropna()
            if stated.empty:
                continue
            share = stated / (sub.loc[stated.index, "multiplier"] * k)
            mean, low, high, n = mean_ci(share, bounds=bounds)
            nothing, _, _, _ = share_ci(stated == 0)
            rows.append({"model": model, "amount sent": k, "stated return share": mean, "low": low, "high": high, "returns nothing": nothing, "plans": n})
    return pd.DataFrame(rows)


def sections(games: pd.DataFrame, turns: pd.DataFrame) -> list[Section]:
    """The family's sections of a study's report, given its finished games and their turns."""
    if games.empty:
        return []
    bounds = ranges(games)
    body = grid_table(seat_table(games, bounds), "model", column=["seat", "metric"], name="sending and returning per model")
    out = [Section("Sending and returning", body)]
    out += guarded("Payoffs by pairing", lambda: Section("Payoffs by pairing", table_html(pairing_table(games, bounds), name="payoffs by pairing")))

    def by_sent() -> Section | None:
        table = returned_by_sent(turns)
        return Section("Returned share by share sent", table_html(table, name="returned share by share sent")) if not table.empty else None

    def plans() -> Section | None:
        table = stated_returns(turns)
        return Section("Stated returns by amount (strategy method)", table_html(table, name="stated returns by amount")) if not table.empty else None

    return out + guarded("Returned share by share sent", by_sent) + guarded("Stated returns by amount (strategy method)", plans)


def profile_rows(games: pd.DataFrame, turns: pd.DataFrame) -> pd.DataFrame:
    """Each seat's metrics per model (mean, 95 % CI), and the money-maximisers' play as theory
    rows: nothing sent or returned, payoffs of 1 and T / E (averaged over the games)."""
    from ...analysis.profile import row

    family, section = "trust", "trust: sending and returning"
    rows = [
        row(family, section, r["metric"], r["model"], r["mean"], r["low"], r["high"], r["n"], role=r["seat"])
        for _, r in seat_table(games).iterrows()
    ]
    kept = float((games["trustee_endowment"] / games["endowment"]).mean())
    theory = {"investor": {"sent_share": 0.0, "investor_payoff": 1.0}, "trustee": {"returned_share": 0.0, "trustee_payoff": kept}}
    for seat, values in theory.items():
        rows += [row(family, section, metric, "selfish", value, role=seat, kind="theory") for metric, value in values.items()]
    return pd.DataFrame(rows)

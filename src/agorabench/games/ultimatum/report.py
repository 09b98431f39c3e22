"""Report sections and profile rows of the ultimatum game: offers, minimums and acceptance per
model and seat (95% CIs, by method when a study plays both), acceptance by proposer × responder,
acceptance by the share offered (direct method), and under the strategy method each model's
minimum acceptable shares and the acceptance curve they imply."""

from __future__ import annotations

import pandas as pd

from ...analysis.plots import grid_table, table_html
from ...analysis.report import guarded, Section
from ...analysis.stats import proportion_ci, row_clusters, share_ci, summarise
from .ultimatum import Ultimatum, UltimatumConfig

#: Metrics of each seat, as (seat, metrics shown for the model in that seat).
SEATS = (("proposer", ["offer_share", "proposer_payoff"]), ("responder", ["accepted", "min_share", "responder_payoff"]))

#: The range of every seat metric, as the game declares it (``Ultimatum.metric_ranges``).
RANGES = {m: Ultimatum.metric_ranges(UltimatumConfig())[m] for _seat, columns in SEATS for m in columns}

#: The offers of the acceptance curve, as shares of the pie: 0, 0.1, …, 1.
CURVE = tuple(k / 10 for k in range(11))

#: Metric definitions shown at the top of the report.
DEFINITIONS = """
<p>Each round the proposer offers the responder a whole number of the <code>pie</code> points.
Under the <code>direct</code> method the responder sees the offer and accepts (responder gets the
offer, proposer the rest) or rejects (both get 0). Under the <code>strategy</code> method the
responder states, without seeing the offer, the smallest offer it accepts (its <i>minimum</i>), and
the offer is accepted iff offer ≥ minimum. A game's value is taken over its R rounds; tables show
means over games with 95% percentile-bootstrap intervals (2,000 resamples of the games), which stay
within 0–1; a study that plays both methods shows them apart.</p>
<ul>
<li><b>offer_share</b> = mean of offer / pie over the rounds with a valid offer (the fallback offer
pie // 2 that replaces an invalid one is left out).</li>
<li><b>min_share</b> = mean of minimum / pie over the rounds with a valid minimum (strategy method
only; the fallback minimum, the whole pie, is left out).</li>
<li><b>accepted</b> = accepted rounds / R; a decision that stays invalid counts as a rejection, a
minimum that stays invalid as the whole pie.</li>
<li><b>proposer_payoff</b> = proposer's points / (pie·R); <b>responder_payoff</b> = responder's points / (pie·R).</li>
<li><b>efficiency</b> = (proposer's + responder's points) / (pie·R), the share of the pie realised
(here equal to accepted).</li>
<li><b>acceptance rate</b> by offered share (direct method) = valid responder decisions that accept /
valid responder decisions, with offers grouped by offer / pie; Wilson 95% interval (<b>low</b>,
<b>high</b>; for the pooled <code>human</code>, cluster-robust by participant: Wilson's on the
effective sample size).</li>
<li><b>minimum acceptable share</b> (strategy method) = per responder model, the mean of its valid
minimums / pie over every round, with the share of them at 0 (accepts anything), at most half and
above half.</li>
<li><b>acceptance curve</b> (strategy method) = for an offer of x of the pie (x = 0, 0.1, …, 1), the
share of a model's valid stated minimums that accept it (minimum / pie ≤ x), every round; Wilson
95% interval as above. The <code>human (reference)</code> row holds the MobLab players' first-round
minimums over 100 points (Mei et al. 2024; the people-as-yardstick section gives their source).</li>
</ul>
<p>Reference: subgame-perfect play offers 1 point (offer_share = 1/pie), accepts it, and under the
strategy method states a minimum of 1 point (min_share = 1/pie).</p>
"""


def _method(frame: pd.DataFrame) -> pd.Series:
    """Each row's method: the stored ``method``, and ``direct`` where there is none (the rules
    leave the default out of a game's stored configuration)."""
    if "method" not in frame:
        return pd.Series("direct", index=frame.index, dtype=object)
    return frame["method"].astype(object).where(frame["method"].notna(), "direct")


def _by_method(games: pd.DataFrame) -> bool:
    """Whether the games hold both methods (then tables show them apart)."""
    return _method(games).nunique() > 1


def seat_table(games: pd.DataFrame) -> pd.DataFrame:
    """Mean and 95% percentile-bootstrap CI of each seat's metrics per model in that seat (long
    format), per method when the games hold both; ``min_share`` only where some game states a
    minimum (strategy method)."""
    split = _by_method(games)
    frame = games.assign(method=_method(games)) if split else games
    parts = []
    for seat, columns in SEATS:
        by = [f"model_{seat}", "method"] if split else [f"model_{seat}"]
        part = summarise(frame, by, columns, bounds=RANGES).rename(columns={f"model_{seat}": "model"})
        part.insert(1, "seat", seat)
        parts.append(part)
    out = pd.concat(parts, ignore_index=True)
    return out[~((out["metric"] == "min_share") & (out["n"] == 0))].reset_index(drop=True)


def strategy_turns(turns: pd.DataFrame) -> pd.DataFrame:
    """The valid strategy-method minimums of ``turns`` (phase ``minimum``) with their ``min_share``."""
    if turns is None or turns.empty or "min_share" not in turns or "phase" not in turns:
        return pd.DataFrame()
    t = turns[(turns["phase"] == "minimum") & turns["valid"].astype(bool)]
    return t.dropna(subset=["min_share"])


def minimum_table(games: pd.DataFrame, turns: pd.DataFrame) -> pd.DataFrame:
    """Per responder model of the strategy-method games: the mean ``min_share`` over games
    (95% percentile bootstrap), and over its valid minimums the share at 0, at most half and
    above half (Wilson 95%; by participant for the pooled human). Long format: model, measure,
    mean, low, high, n."""
    rows = []
    strategy = games[_method(games) == "strategy"] if "min_share" in games else games.iloc[0:0]
    if not strategy.empty:
        part = summarise(strategy, ["model_responder"], ["min_share"], bounds=RANGES).rename(columns={"model_responder": "model"})
        rows += [{"model": r["model"], "measure": "min_share (mean over games)", "mean": r["mean"], "low": r["low"], "high": r["high"], "n": r["n"]} for _, r in part.iterrows() if r["n"] > 0]
    t = strategy_turns(turns)
    if not t.empty:
        clusters = row_clusters(t, "model")
        for model, sub in t.groupby("model"):
            labels = clusters.loc[sub.index] if clusters is not None else None
            share = sub["min_share"].astype(float)
            for label, hit in (("share at 0", share <= 0), ("share at most half", share <= 0.5 + 1e-9), ("share above half", share > 0.5 + 1e-9)):
                est, low, high, n = share_ci(hit, clusters=labels)
                rows.append({"model": model, "measure": label, "mean": est, "low": low, "high": high, "n": n})
    return pd.DataFrame(rows)


def acceptance_curve(turns: pd.DataFrame, reference: bool = True) -> pd.DataFrame:
    """Per responder model, for each offer x of :data:`CURVE`: the share of its valid stated
    minimums that accept an offer of x of the pie (min_share ≤ x), Wilson 95% (by participant
    for the pooled human); with ``reference``, a ``human (reference)`` row from the MobLab
    first-round minimums (:mod:`.humans`). Long format: model, offer, accepting, low, high, n."""
    t = strategy_turns(turns)
    if t.empty:
        return pd.DataFrame()
    rows = []
    clusters = row_clusters(t, "model")
    for model, sub in t.groupby("model"):
        labels = clusters.loc[sub.index] if clusters is not None else None
        share = sub["min_share"].astype(float)
        for x in CURVE:
            est, low, high, n = share_ci(share <= x + 1e-9, clusters=labels)
            rows.append({"model": model, "offer": f"{x:.1f}", "accepting": est, "low": low, "high": high, "n": n})
    if reference:
        from ...analysis.yardstick import REFERENCE
        from .humans import moblab_sample

        sample = moblab_sample("min_share")
        for x in CURVE:
            k = round(sample.share(lambda v, x=x: v <= x + 1e-9) * sample.n)
            est, low, high = proportion_ci(k, sample.n)
            rows.append({"model": REFERENCE, "offer": f"{x:.1f}", "accepting": est, "low": low, "high": high, "n": sample.n})
    return pd.DataFrame(rows)


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
    body = grid_table(seats, ["model", "method"] if "method" in seats else "model", column=["seat", "metric"], name="offers and acceptance per model")
    pairs = games.pivot_table(index="model_proposer", columns="model_responder", values="accepted", aggfunc="mean").reset_index()
    pairs.columns = ["proposer \\ responder", *pairs.columns[1:]]
    body += "<h3>accepted by proposer × responder</h3>" + table_html(pairs, name="accepted by pairing")
    out = [Section("Offers and acceptance", body)]

    def by_offer() -> Section | None:
        table = acceptance_by_offer(turns)
        return Section("Acceptance by offered share", table_html(table, name="acceptance by offered share")) if not table.empty else None

    def minimums() -> Section | None:
        table = minimum_table(games, turns)
        if table.empty:
            return None
        return Section("Minimum acceptable offers (strategy method)", grid_table(table, "model", column="measure", name="minimum acceptable shares per model"))

    def curve() -> Section | None:
        table = acceptance_curve(turns)
        if table.empty:
            return None
        note = "Share of each model's stated minimums that accept an offer of x of the pie (x in tenths), every round; human (reference): MobLab's first-round minimums."
        return Section("Acceptance curve (strategy method)", grid_table(table, "model", column="offer", est="accepting", name="acceptance curve", note=note))

    return out + guarded("Acceptance by offered share", by_offer) + guarded("Minimum acceptable offers (strategy method)", minimums) + guarded("Acceptance curve (strategy method)", curve)


def profile_rows(games: pd.DataFrame, turns: pd.DataFrame) -> pd.DataFrame:
    """Each seat's metrics per model (mean, 95% CI; min_share where some game used the strategy
    method; the method in the note when the games hold both), and the subgame-perfect reference
    as theory rows: offer 1 point, always accepted, a minimum of 1 point (shares averaged over
    the games' pies)."""
    from ...analysis.profile import row

    family, section = "ultimatum", "ultimatum: offers and acceptance"
    rows = [
        row(family, section, r["metric"], r["model"], r["mean"], r["low"], r["high"], r["n"], role=r["seat"], note=f"method {r['method']}" if "method" in r else "")
        for _, r in seat_table(games).iterrows()
    ]
    unit = float((1 / games["pie"]).mean())
    theory = {"proposer": {"offer_share": unit, "proposer_payoff": 1 - unit}, "responder": {"accepted": 1.0, "responder_payoff": unit}}
    if (_method(games) == "strategy").any():
        theory["responder"]["min_share"] = float((1 / games.loc[_method(games) == "strategy", "pie"]).mean())
    for seat, values in theory.items():
        rows += [row(family, section, metric, "subgame-perfect", value, role=seat, kind="theory") for metric, value in values.items()]
    return pd.DataFrame(rows)

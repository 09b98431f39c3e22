"""Report sections of the GLEE families, one group per family present in the study:

- mean efficiency, fairness and self-gain per model and role (Alice / Bob) with 95% CIs;
- raw model-pair heatmaps (rows: Alice's model, columns: Bob's model) of each metric;
- the family's outcome in brief (agreement / sale / purchase rates);
- the regression analysis of :mod:`.analysis`: Table 5 (market effects), Table 6 (model
  effects), design-adjusted pair effects, the meta-game, linear vs boosted-trees check;
- invalid-answer rates per model, role and decision;
- bargaining and negotiation: each model's accept/reject decisions as responder fitted with the
  inequity-averse logit acceptance rule (``analysis/acceptance.py``), with its rejection
  threshold;
- persuasion: the seller's lying rate against the commitment policy q and the buyer's buy rate
  after a recommendation against a Bayesian buyer (``analysis/persuasion_beliefs.py``);
- corpus statistics (Table 4) and the anchoring analysis over all families.
"""

from __future__ import annotations

import html
import math
from typing import Any, Callable, Iterable

import numpy as np
import pandas as pd

from ...analysis import acceptance
from ...analysis.descriptive import corpus_stats, message_words
from ...analysis.frames import people_line
from ...analysis.persuasion_beliefs import buyer_update, seller_lying
from ...analysis.plots import bars_with_ci, forest, grid_table, heatmap, histograms, table_html
from ...analysis.regression import predictive_check
from ...analysis.report import Section, guarded
from ...analysis.stats import clip_interval, leaves_range, mean_ci, row_clusters
from . import analysis as ga

#: The opening of the GLEE definitions, whichever games are present.
DEFINITIONS_OPENING = """
<p>Every GLEE metric is a share of the amount at stake M, so 0.05 = 5 % of M; effects are in
percentage points (pp) of M. Raw means carry 95 % percentile-bootstrap intervals (2,000
resamples of the games), which stay within the metric's range.</p>
"""

#: Each game's metrics (an item of the definitions list).
GAME_DEFINITIONS = {
    "glee.bargaining": """<li><b>Bargaining.</b> Alice and Bob alternate offers to divide M; an agreement in round t giving
Alice the share p is worth δ<sub>A</sub><sup>t−1</sup>·p to Alice and
δ<sub>B</sub><sup>t−1</sup>·(1−p) to Bob. <i>Self-gain</i> = that value (0–1);
<i>efficiency</i> = δ<sub>A</sub><sup>t−1</sup>p + δ<sub>B</sub><sup>t−1</sup>(1−p) (0 without
agreement; 0–1); <i>fairness</i> = 1 − 4(p − ½)² (1 without agreement; 0–1).</li>""",
    "glee.negotiation": """<li><b>Negotiation.</b> Seller Alice values the good at V<sub>A</sub> = F<sub>A</sub>·M, buyer
Bob at V<sub>B</sub> = F<sub>B</sub>·M. A sale at price P gives self-gains (P − V<sub>A</sub>)/M
and (V<sub>B</sub> − P)/M (0 and 0 without a sale; signed); <i>efficiency</i> = 1 when there is a sale
with V<sub>A</sub> ≤ P ≤ V<sub>B</sub> or no sale while V<sub>A</sub> ≥ V<sub>B</sub>, else 0;
<i>fairness</i> = 1 − 4·((P − (V<sub>A</sub>+V<sub>B</sub>)/2)/M)² with a sale, 1 without (at most 1).</li>""",
    "glee.persuasion": """<li><b>Persuasion.</b> In each of T rounds the product is of high quality with probability p;
seller Alice sees it and recommends (or writes), buyer Bob buys at price M or not; a high product
is worth v·M to him, a low one 0. With n high rounds, k of them sold, r low rounds unsold and
s low rounds sold: <i>efficiency</i> = k/n, <i>fairness</i> = r/(T − n), Alice's self-gain =
(k + s)/T (sales per round; all three 0–1), Bob's = (k·(v − 1) − s)/T (his gain per round over M;
at least −1).</li>""",
}

#: The regression analysis, after the games' items.
DEFINITIONS_REGRESSION = f"""
<p><b>Regression analysis (paper App. C).</b> One linear model per family and outcome:
outcome = β<sub>0</sub> + Σ β·[parameter = level] + Σ β·[market = level] + Σ β·[Alice = model]
+ Σ β·[Bob = model] + ε, each factor one-hot with a reference level (Table 8 defaults; the
reference model for identities: {html.escape(ga.REFERENCE_RULE)}). A coefficient is the change of
the outcome, all else equal, when that level replaces the reference. Classical 95 % intervals
β ± t·SE; clustered intervals use standard errors robust to correlation among the games of one
model pair (few pairs make them unreliable). p<sub>BH</sub>: Benjamini–Hochberg adjusted within
each model. <b>Design-adjusted</b> means: the model's mean prediction over all of the family's
games with the seat(s) set to the given model(s); their intervals are cut to the metric's range
where they would leave it (the table says so).</p>
"""


def definitions(games: Iterable[str]) -> str:
    """The metric definitions of the GLEE games given (the others left out), in the family's
    order: the opening, one item per game, the regression analysis."""
    present = set(games)
    items = "".join(text for game, text in GAME_DEFINITIONS.items() if game in present)
    return DEFINITIONS_OPENING + (f"<ul>\n{items}\n</ul>" if items else "") + DEFINITIONS_REGRESSION


#: Every GLEE game's definitions (a study of all three games).
DEFINITIONS = definitions(GAME_DEFINITIONS)

FAMILIES = {"glee.bargaining": "Bargaining", "glee.negotiation": "Negotiation", "glee.persuasion": "Persuasion"}
METRICS = ["efficiency", "fairness", "self_gain_alice", "self_gain_bob"]
ROLE_NAMES = {"alice": "Alice", "bob": "Bob"}


def by_model_and_role(games: pd.DataFrame, family: str | None = None) -> pd.DataFrame:
    """Long table: model, role, metric (efficiency, fairness, self_gain), mean, low, high, n.
    A model's self-gain as Alice is ``self_gain_alice``, as Bob ``self_gain_bob``. With the
    ``family``, a metric with a range (:data:`.analysis.RANGES`) gets the percentile-bootstrap
    interval, which stays within it; otherwise the t interval. The pooled ``human`` rows are
    clustered by participant (:func:`~agorabench.analysis.stats.row_clusters`)."""
    ranges = ga.RANGES.get(family or "", {})
    rows = []
    for role in ("alice", "bob"):
        seat = f"model_{role}"
        if seat not in games:
            continue
        clusters = row_clusters(games, seat)
        for model, sub in games.groupby(seat):
            labels = clusters.loc[sub.index] if clusters is not None else None
            for metric, column in (("efficiency", "efficiency"), ("fairness", "fairness"), ("self_gain", f"self_gain_{role}")):
                if column not in sub:
                    continue
                m, lo, hi, n = mean_ci(sub[column], bounds=_bounded(ranges.get(column)), clusters=labels)
                rows.append({"model": model, "role": ROLE_NAMES[role], "metric": metric.replace("_", "-"), "mean": m, "low": lo, "high": hi, "n": n})
    return pd.DataFrame(rows)


def pair_grid(games: pd.DataFrame, metric: str) -> pd.DataFrame:
    grid = games.pivot_table(index="model_alice", columns="model_bob", values=metric, aggfunc="mean")
    grid.index.name, grid.columns.name = "Alice's model", "Bob's model"
    return grid


def _bounded(bounds: tuple[float | None, float | None] | None) -> tuple[float | None, float | None] | None:
    """``bounds`` when at least one end is closed, else None (an unbounded metric: t interval)."""
    return bounds if bounds is not None and any(v is not None for v in bounds) else None


def clipped(table: pd.DataFrame, family: str, outcome_of: Callable[[pd.Series], str], pairs: tuple[tuple[str, str], ...] = (("low", "high"), ("low_cluster", "high_cluster"))) -> tuple[pd.DataFrame, str]:
    """The table with every interval of a bounded outcome cut to the outcome's range
    (``outcome_of(row)`` names the row's outcome), and a note saying how many were cut ('' if none)."""
    ranges = ga.RANGES[family]
    out = table.copy()
    cut = 0
    for i, r in out.iterrows():
        bounds = ranges.get(outcome_of(r))
        for lo, hi in pairs:
            if lo in out and pd.notna(r[lo]) and leaves_range(r[lo], r[hi], bounds):
                out.loc[i, [lo, hi]] = clip_interval(r[lo], r[hi], bounds)
                cut += 1
    note = f"{cut} interval(s) reached outside the outcome's range and are cut to it." if cut else ""
    return out, note


def outcome_summary(family: str, games: pd.DataFrame) -> pd.DataFrame:
    """Per model pair: games and the family's main outcome rates."""
    keys = ["model_alice", "model_bob"]
    grouped = games.groupby(keys)
    if family == "glee.bargaining":
        out = grouped.agg(games=("game_id", "size"), agreement_rate=("agreed", "mean"), mean_agreed_round=("agreed_round", "mean"), mean_alice_share=("alice_share", "mean"))
    elif family == "glee.negotiation":
        out = grouped.agg(games=("game_id", "size"), sale_rate=("sold", "mean"), mean_price_over_M=("price_over_m", "mean"), mean_rounds=("rounds_played", "mean"))
    else:
        out = grouped.agg(games=("game_id", "size"), high_rounds=("high_rounds", "sum"), high_sold=("high_sold", "sum"), low_unsold=("low_unsold", "sum"), rounds=("rounds_played", "sum"))
        out["sold_when_high"] = out["high_sold"] / out["high_rounds"].where(out["high_rounds"] > 0)
        out["unsold_when_low"] = out["low_unsold"] / (out["rounds"] - out["high_rounds"]).where(out["rounds"] > out["high_rounds"])
    return out.reset_index()


def invalid_rates(turns: pd.DataFrame) -> pd.DataFrame:
    if turns.empty:
        return pd.DataFrame()
    t = turns.copy()
    t["invalid"] = ~t["valid"].astype(bool)
    out = t.groupby(["model", "role", "phase"]).agg(turns=("invalid", "size"), invalid_rate=("invalid", "mean"), retries=("retries", "sum")).reset_index()
    out["role"] = out["role"].map(ROLE_NAMES).fillna(out["role"])
    return out


def family_sections(family: str, games: pd.DataFrame, turns: pd.DataFrame, reference: str | None = None) -> list[Section]:
    label = FAMILIES[family]
    games = games.copy()
    if family == "glee.negotiation" and "price" in games:
        games["price_over_m"] = games["price"] / games["money"]
    out = []
    summary = by_model_and_role(games, family)
    body = f"<p>{len(games)} games. Raw means: not adjusted for the design (see the regression sections below for adjusted values).</p>"
    if not summary.empty:
        for role in ("Alice", "Bob"):
            sub = summary[summary.role == role]
            if not sub.empty:
                body += bars_with_ci(sub, "model", f"{label}: raw mean metrics as {role} (95% CI)", "share of M (0–1)")
        body += grid_table(summary, ["model", "role"], name=f"{label} raw means by model and role")
    out.append(Section(f"{label}: efficiency, fairness and self-gain by model and role", body))
    if {"model_alice", "model_bob"} <= set(games.columns):
        figs = []
        for metric in METRICS:
            if metric not in games or games[metric].isna().all():
                continue
            grid = pair_grid(games, metric)
            lo, hi = ga.RANGES[family].get(metric, (None, None))
            figs.append(heatmap(grid, f"{label}: raw mean {ga.OUTCOME_NAMES[metric]} (Alice × Bob)", vmin=lo, vmax=hi, colorbar=f"{ga.OUTCOME_NAMES[metric]} (share of M)"))
        out.append(Section(f"{label}: model pairs (raw means)", "\n".join(figs) + table_html(outcome_summary(family, games), name=f"{label} outcomes by model pair")))
    family_turns = turns[turns["game_id"].isin(games["game_id"])] if len(turns) else turns
    rates = invalid_rates(family_turns)
    played = games.groupby(["model_alice", "model_bob"]).agg(games=("game_id", "size"), games_with_invalid=("n_invalid", lambda v: float((v > 0).mean()))).reset_index()
    choice = ga.reference_choice(games, override=reference, turns=family_turns)
    out += analysis_sections(family, games, choice, reference_warning(choice.model, family_turns))
    out.append(Section(f"{label}: invalid answers", ("<p>Invalid answers were re-asked, then replaced by the game's fallback (see the game modules).</p>" + table_html(rates, name=f"{label} invalid rates") if not rates.empty else "<p>No turns stored.</p>") + table_html(played, name=f"{label} games with invalid answers")))
    return out


def _guard(title: str, build: Callable[[], str]) -> Section:
    """A section whose analysis may not be possible on this data (too few games, a pair never
    played): the reason is shown instead."""
    try:
        return Section(title, build())
    except (ValueError, np.linalg.LinAlgError) as exc:
        return Section(title, f"<p class='note'>Not available for these games: {html.escape(str(exc))}</p>")


def _fmt_effect(df: pd.DataFrame, est: str, low: str, high: str) -> pd.Series:
    """"2.8 [2.3, 3.3]" with ▲ for best and ▼ for worst within the interval; no estimate:
    "not played", or "not identified" for a level that was played (``played`` true) but whose
    effect the data cannot separate from others'."""
    def one(r: pd.Series) -> str:
        if pd.isna(r[est]):
            return "not identified" if r.get("played", False) else "not played"
        mark = (" ▲" if r.get(f"{est}_best") else "") + (" ▼" if r.get(f"{est}_worst") else "")
        return f"{r[est]:.1f} [{r[low]:.1f}, {r[high]:.1f}]{mark}"

    return df.apply(one, axis=1)


def reference_warning(reference: str, turns: pd.DataFrame) -> str:
    """A sentence when the reference model's answers were mostly invalid (above the report's
    warning threshold): its effects then compare every model with the game's fallbacks."""
    from ...analysis.report import INVALID_WARNING

    if turns is None or turns.empty or "model" not in turns:
        return ""
    own = turns.loc[turns["model"] == reference, "valid"]
    rate = 1 - own.astype(bool).mean() if len(own) else 0.0
    if rate <= INVALID_WARNING:
        return ""
    return (f"{reference} answered {rate:.0%} of its turns invalidly: the effects compare every model with the game's fallbacks. "
            "Name another reference with [analysis] reference_model in the study file.")


def analysis_sections(family: str, games: pd.DataFrame, reference: "str | ga.Reference | None", warning: str = "") -> list[Section]:
    """Regression tables and figures of one family (see :mod:`.analysis`); ``reference``:
    the reference model, or the rule's choice with its reason (default:
    :func:`.analysis.reference_choice`), named with its rule and why it was chosen."""
    label = FAMILIES[family]
    choice = reference if isinstance(reference, ga.Reference) else ga.reference_choice(games, override=reference)
    ref = choice.model
    why = "; ".join([choice.source, *choice.passed_over, *([choice.note] if choice.note else [])])
    state: dict[str, Any] = {}

    def fits() -> dict:
        if "fits" not in state:
            state["fits"] = ga.regressions(games, family, ref)
        return state["fits"]

    def regression() -> str:
        f = fits()
        summary = ga.fit_summary(f)
        few = summary["clusters"].min() < 10
        seats = ga.seat_reference_note(f, ref)  # a seat the reference never sat in has its own
        note = (f"<p id='reference-model'>Reference model: <b>{html.escape(ref)}</b>, chosen by the rule: {html.escape(ga.REFERENCE_RULE)}. Here: {html.escape(why)}."
                + (f" {html.escape(seats)}." if seats else "") + "</p>"
                + (f"<p class='note'>{html.escape(warning)}</p>" if warning else "") + "<p>Reference levels (Table 8): ") + html.escape("; ".join(f"{k} = {v}" for k, v in next(iter(f.values())).references.items())) + ".</p>"
        if few:
            note += "<p class='note'>Fewer than 10 clusters (model pairs; a person's games are one cluster): the clustered errors rest on very few clusters and are unreliable.</p>"
        coefs = ga.coefficients(f)
        return note + table_html(summary, name=f"{label} regression fit") + "<p>All coefficients (share of M; classical and pair-clustered intervals, a person's games clustered by participant):</p>" + table_html(coefs, name=f"{label} regression coefficients")

    def table5() -> str:
        t = ga.market_effects(fits(), family)
        shown = t[[f.name for f in ga.DESIGNS[family].composite]].copy()
        beyond = t[~t["paper"]]
        if len(beyond):  # markets the paper's Table 5 does not have, after the paper's
            shown["in the paper"] = t["paper"].map({True: "yes", False: "no"})
        for o in ("efficiency", "fairness"):
            if o in t:
                shown[f"{o} (pp) [95% CI]"] = _fmt_effect(t, o, f"{o}_low", f"{o}_high")
        long = []
        for o in ("efficiency", "fairness"):
            if o in t:
                names = [f.name for f in ga.DESIGNS[family].composite]
                market = t[names].apply(lambda r: ", ".join(f"{n}={r[n]}" for n in names), axis=1)
                long.append(pd.DataFrame({"market": market, "outcome": o, "estimate": t[o], "low": t[f"{o}_low"], "high": t[f"{o}_high"]}))
        fig = forest(pd.concat(long), "market", "outcome", f"{label}: market effects vs the Table 8 default (95% CI)", "effect (pp of M)") if long else ""
        names = ", ".join(f.name for f in ga.DESIGNS[family].composite)
        extra = (f" The paper's {len(t) - len(beyond)} markets come first; the {len(beyond)} after them (<i>in the paper</i>: no) were played by this study "
                 "but are not in the paper's Table 5." if len(beyond) else "")
        return (f"<p>Effect of each market ({names}) on efficiency and fairness in percentage points relative to the default market "
                f"(first row); ▲ marks values whose interval reaches the best estimate, ▼ the worst; <i>not played</i>: no game of this market, "
                f"<i>not identified</i>: played, but its effect cannot be separated from others'.{extra}</p>" + fig + table_html(shown, name=f"{label} table 5 market effects") + table_html(t, name=f"{label} table 5 market effects numeric"))

    def table6() -> str:
        t = ga.model_effects(fits())
        shown = t[["model", "role"]].copy()
        pooled = people_line(games, of=f" of {label}")
        if pooled and "low_cluster" in t:  # the human row pools people: its participant-clustered interval beside
            shown["clustered 95% CI (pair; person)"] = _fmt_effect(t, "effect", "low_cluster", "high_cluster")
        shown["self-gain effect (pp) [95% CI]"] = _fmt_effect(t, "effect", "low", "high")
        people = (f" People are one model, <b>human</b> ({html.escape(pooled)}); the clustered interval counts a person's games as one cluster." if pooled else "")
        fig = forest(t.rename(columns={"effect": "estimate"}), "model", "role", f"{label}: model effect on own self-gain vs {ref} (95% CI)", "effect (pp of M)")
        adj, cut = clipped(ga.adjusted_self_gain(games, family, ref), family, lambda r: f"self_gain_{r['role'].lower()}")
        others = "".join(f" (as {role}, where {html.escape(ref)} never played: <b>{html.escape(m)}</b>)" for role, m in ga.seat_references(fits(), ref).items())
        return (f"<p>Each model's effect on its own self-gain as Alice and as Bob, in percentage points relative to <b>{html.escape(ref)}</b>{others}; ▲/▼ best/worst within the interval. "
                f"Below, the design-adjusted mean self-gain beside the raw mean.{people}</p>" + fig + table_html(shown, name=f"{label} table 6 model effects") + table_html(adj, name=f"{label} adjusted self-gain", note=cut))

    def pairs() -> str:
        figs = []
        for o in ga.OUTCOMES:
            if o in games and games[o].notna().any():
                grid = 100 * ga.pair_effects(games, family, o, ref)
                top = float(np.nanmax(np.abs(grid.to_numpy()))) if grid.size else 1.0
                figs.append(heatmap(grid, f"{label}: design-adjusted {ga.OUTCOME_NAMES[o]} relative to the mean", vmin=-top or -1, vmax=top or 1, fmt="{:+.1f}", cmap="RdBu", colorbar="pp of M vs the family mean"))
        return "<p>Each cell: the pair's mean prediction over all of the family's games (its own parameters replaced by the whole design) minus the mean outcome, in pp.</p>" + "\n".join(figs)

    def meta() -> str:
        m = ga.metagame(games, family, ref)
        body = (f"<p>Alice and Bob each choose the model that plays for them; payoffs are design-adjusted expected self-gains (pp of M) over the {m['games']} games. "
                f"Equilibria from support enumeration (nashpy) plus a direct check of pure profiles; stability over {m['reps']} bootstrap resamples of games within pairs; α-Rank as a second ranking.</p>")
        body += heatmap(m["A"].rename_axis(index="Alice's model", columns="Bob's model"), f"{label} meta-game: Alice's payoff", vmin=None, vmax=None, fmt="{:.1f}", colorbar="Alice's self-gain (pp of M)")
        body += heatmap(m["B"].rename_axis(index="Alice's model", columns="Bob's model"), f"{label} meta-game: Bob's payoff", vmin=None, vmax=None, fmt="{:.1f}", colorbar="Bob's self-gain (pp of M)")
        eq = m["equilibria"].drop(columns=["row_mix", "column_mix"]).rename(columns={"payoff_row": "Alice's payoff (pp)", "payoff_column": "Bob's payoff (pp)"})
        body += "<h3>Nash equilibria</h3>" + table_html(eq, name=f"{label} meta-game equilibria")
        body += "<h3>Bootstrap stability</h3>" + table_html(m["bootstrap"], name=f"{label} meta-game bootstrap")
        body += "<h3>α-Rank</h3><p>Stationary mass of each model per role, and of each profile (α = 50 per pp of M, population 50).</p>" + table_html(m["alpha_rank"], name=f"{label} meta-game alpha-rank")
        body += heatmap(m["alpha_profiles"], f"{label} meta-game: α-Rank mass of each profile", vmin=0, vmax=1, fmt="{:.2f}", colorbar="stationary probability")
        return body

    def check() -> str:
        rows = [predictive_check(games, o, ga.DESIGNS[family], ref, seeds=2, max_rows=2000) for o in ga.OUTCOMES if o in games and games[o].notna().sum() >= 20]
        if not rows:
            raise ValueError("fewer than 20 games per outcome")
        return "<p>Out-of-sample root-mean-squared error (share of M) of the linear model and of gradient-boosted trees on the same inputs, mean and sd over 2 random 80/20 splits of at most 2,000 games (App. C.3; <code>agora analyze glee</code> uses more).</p>" + table_html(pd.DataFrame(rows), name=f"{label} linear vs boosting")

    return [
        _guard(f"{label}: regression analysis", regression),
        _guard(f"{label}: Table 5 — market effects on efficiency and fairness", table5),
        _guard(f"{label}: Table 6 — model effects on self-gain", table6),
        _guard(f"{label}: design-adjusted pair effects", pairs),
        _guard(f"{label}: meta-game", meta),
        _guard(f"{label}: linear model vs gradient boosting", check),
    ]


def corpus_section(games: pd.DataFrame, turns: pd.DataFrame) -> Section:
    """Table 4: games, decisions, messages and words per family, and message lengths."""
    stats = corpus_stats(games, turns).replace({"game": FAMILIES})
    body = "<p>Decisions: stored answers; messages: answers with a non-empty free-text message; words: whitespace-separated tokens of the messages.</p>" + table_html(stats, name="table 4 corpus statistics")
    if len(turns) and "action_message" in turns:
        words = message_words(turns)
        family = turns.loc[words.index, "game_id"].map(games.set_index("game_id")["game"])
        series = {FAMILIES.get(f, f): words[family == f] for f in FAMILIES}
        if any(len(v) for v in series.values()):
            body += histograms(series, "Words per message by family", "words per message")
    return Section("Corpus statistics (Table 4)", body)


def anchoring_section(games: pd.DataFrame, turns: pd.DataFrame) -> Section | None:
    """Q3: correlation of Alice's first offer with her final self-gain, per player type."""
    if not len(turns):
        return None
    t = ga.anchoring_table(games, turns)
    if t.empty:
        return None
    t["family"] = t["family"].map(FAMILIES)
    return Section("Anchoring: first offer vs final gain", "<p>Per family and Alice's player type: Pearson correlation r between Alice's first offer (share of M she asks for in bargaining; price / M in negotiation) and her final self-gain, with a Fisher-z 95 % interval, the p-value of r = 0 and the slope.</p>" + table_html(t, name="anchoring first offer vs final gain"))


#: The study file's reference candidates (kept here for callers of the report module).
study_reference = ga.study_reference


def responder_decisions(family: str, turns: pd.DataFrame) -> pd.DataFrame:
    """The valid accept/reject answers of bargaining or negotiation, one row each: game_id,
    round, role and model of the responder, accept, and the payoffs of accepting in units of M
    (``own``, ``other``). Bargaining: the discounted shares δ^(t−1)·gain/M of responder and
    proposer; negotiation: the seller gets p/M − F_A, the buyer F_B − p/M. A ``quit`` counts as a
    rejection."""
    cols = ["game_id", "round", "role", "model", "accept", "own", "other"]
    if turns is None or turns.empty or "phase" not in turns:
        return pd.DataFrame(columns=cols)
    rows = []
    for game_id, t in turns.sort_values(["game_id", "idx"]).groupby("game_id", sort=False):
        offer, t_round = None, 0
        for r in t.itertuples(index=False):
            r = r._asdict()
            if r["phase"] == "offer":
                t_round += 1
                offer = r if r["valid"] else None
                continue
            if r["phase"] != "respond" or offer is None or not r["valid"]:
                continue
            role, money = r["role"], float(r["money"])
            if family == "glee.bargaining":
                delta = {"alice": float(r["delta_a"]), "bob": float(r["delta_b"])}
                proposer = "bob" if role == "alice" else "alice"
                own = delta[role] ** (t_round - 1) * float(offer[f"action_{role}_gain"]) / money
                other = delta[proposer] ** (t_round - 1) * float(offer[f"action_{proposer}_gain"]) / money
            else:
                seller_gain = float(offer["action_price"]) / money - float(r["f_a"])
                buyer_gain = float(r["f_b"]) - float(offer["action_price"]) / money
                own, other = (seller_gain, buyer_gain) if role == "alice" else (buyer_gain, seller_gain)
            rows.append({"game_id": game_id, "round": t_round, "role": role, "model": r["model"], "accept": r["action_decision"] == "accept", "own": own, "other": other})
    return pd.DataFrame(rows, columns=cols)


def persuasion_rounds(turns: pd.DataFrame, games: pd.DataFrame) -> pd.DataFrame:
    """One row per persuasion round of the games with binary messages (a yes/no recommendation;
    free text would need a classifier of what it recommends): game_id, round, high (quality),
    recommended (what the buyer was told), seller_valid, bought, buyer_valid, p, v, the two
    seats and, when a person played, ``participant_alice`` / ``participant_bob``."""
    cols = ["game_id", "round", "high", "recommended", "seller_valid", "bought", "buyer_valid", "p", "v", "model_alice", "model_bob"]
    if turns is None or turns.empty or "high_quality" not in turns:
        return pd.DataFrame(columns=cols)
    people = [c for c in ("participant_alice", "participant_bob") if c in turns]  # who a pooled human was: the rates' clusters
    rows = []
    binary_games = games.loc[~games["messages"].fillna(False).astype(bool), "game_id"] if "messages" in games else games["game_id"]
    binary = turns[turns["game_id"].isin(binary_games)]
    for game_id, t in binary.sort_values(["game_id", "idx"]).groupby("game_id", sort=False):
        signals = t[t["phase"] == "signal"].to_dict("records")
        buys = t[t["phase"] == "buy"].to_dict("records")
        for k, (sig, buy) in enumerate(zip(signals, buys), start=1):
            said = sig.get("action_decision")
            rows.append({
                "game_id": game_id, "round": k, "high": bool(sig["high_quality"] == 1), "recommended": bool(sig["valid"]) and said == "yes",
                "seller_valid": bool(sig["valid"]), "bought": buy.get("action_decision") == "yes", "buyer_valid": bool(buy["valid"]),
                "p": float(sig["p"]), "v": float(sig["v"]), "model_alice": sig["model_alice"], "model_bob": sig["model_bob"],
                **{c: sig.get(c) for c in people},
            })
    return pd.DataFrame(rows, columns=cols + people)


def acceptance_section(family: str, label: str, turns: pd.DataFrame) -> list[Section]:
    decisions = responder_decisions(family, turns)
    if decisions.empty:
        return []
    per_model = acceptance.fit_groups(decisions, ("model",))
    per_role = acceptance.fit_groups(decisions, ("model", "role"))
    body = (
        "<p>Every valid accept/reject answer as responder, fitted with P(accept) = 1/(1 + exp(−λ·U)), U the Fehr–Schmidt "
        "utility of the offer's payoffs (units of M; bargaining discounted) and a rejection worth 0 to both. The threshold "
        "τ = α/(1 + 2α) is the own share of an even pie the responder accepts half the time; profile-likelihood 95% intervals. "
        "Reference: a self-maximiser accepts anything (τ = 0); a subgame-perfect bargainer with δ = 0.9 rejects shares "
        "below δ/(1 + δ) ≈ 0.47.</p>"
    )
    body += table_html(per_model, name=f"{label} responder acceptance per model") + "<h3>Per model and role</h3>" + table_html(per_role, name=f"{label} responder acceptance per model and role")
    return [Section(f"{label}: responder acceptance (inequity-averse logit)", body)]


def persuasion_section(turns: pd.DataFrame, games: pd.DataFrame) -> list[Section]:
    rounds = persuasion_rounds(turns, games)
    if rounds.empty:
        return []
    sellers = seller_lying(rounds[rounds["seller_valid"]])
    buyers = buyer_update(rounds[rounds["buyer_valid"]])
    body = (
        "<p>Seller: lying rate P(recommend | low quality) against the commitment policy q = min(p/(1 − p)·(v − 1), 1). "
        "Buyer: buy rate after a recommendation against a Bayesian buyer facing the sellers it met (posterior from their "
        "recommendation rates; buys when posterior·v ≥ 1). Wilson 95% intervals. Games with binary messages only: what a "
        "free-text message recommends is not read here.</p>"
    )
    body += "<h3>Sellers</h3>" + table_html(sellers, name="persuasion seller lying rate") + "<h3>Buyers</h3>" + table_html(buyers, name="persuasion buyer updating")
    return [Section("Persuasion: lying and belief updating against the benchmarks", body)]


def sections(games: pd.DataFrame, turns: pd.DataFrame) -> list[Section]:
    """Sections for every GLEE family present in the study's finished games, then corpus
    statistics and anchoring. The study file, when the report builder has it, is in
    ``games.attrs["spec"]`` (:func:`.analysis.reference_model` reads its reference setting)."""
    out: list[Section] = []
    for family in FAMILIES:
        sub = games[games["game"] == family] if "game" in games else games.iloc[0:0]
        if not sub.empty:
            label = FAMILIES[family]
            out += guarded(label, lambda: family_sections(family, sub, turns))
            family_turns = turns[turns["game_id"].isin(sub["game_id"])] if len(turns) else turns
            if family == "glee.persuasion":
                out += guarded("Persuasion: lying and belief updating", lambda: persuasion_section(family_turns, sub))
            else:
                out += guarded(f"{label}: responder acceptance", lambda: acceptance_section(family, label, family_turns))
    present = games[games["game"].isin(list(FAMILIES))] if "game" in games else games
    if len(present):
        out += guarded("Corpus statistics", lambda: corpus_section(present, turns))
        out += guarded("Anchoring", lambda: anchoring_section(present, turns))
    return out


def theory_rows(family: str, games: pd.DataFrame) -> list[dict]:
    """Reference rows for the same designs: subgame-perfect play in bargaining (Alice keeps p*,
    Bob accepts at once; a subgame-perfect Bob rejects round-1 shares below δ_B·p*_Bob), and
    Bayesian persuasion with commitment (the seller recommends a low product with probability q,
    the Bayesian buyer follows: seller gain p + (1 − p)·q, buyer gain p·(v − 1) − (1 − p)·q = 0,
    efficiency 1, fairness 1 − q)."""
    from ...analysis.persuasion_beliefs import commitment_q
    from ...analysis.profile import row
    from .bargaining import spe_share_finite, spe_share_infinite

    label = FAMILIES[family]
    rows = []
    if family == "glee.bargaining":
        name = "subgame-perfect (SPE)"
        shares, taus = [], []
        for _, g in games.iterrows():
            da, db = float(g["delta_a"]), float(g["delta_b"])
            inf = str(g["horizon"]) == "inf"
            p = spe_share_infinite(da, db) if inf else spe_share_finite(da, db, int(g["horizon"]))
            bob_next = spe_share_infinite(db, da) if inf else (spe_share_finite(da, db, int(g["horizon"]), start=2) if int(g["horizon"]) > 1 else 0.0)
            shares.append(p)
            taus.append(db * bob_next)
        p = float(np.mean(shares))
        for role, value in (("Alice", p), ("Bob", 1 - p)):
            rows.append(row(label, "self-gain, fairness, efficiency (design-adjusted)", "self-gain", name, value, role=role, kind="theory"))
            rows.append(row(label, "self-gain, fairness, efficiency (design-adjusted)", "fairness", name, float(np.mean([1 - 4 * (s - 0.5) ** 2 for s in shares])), role=role, kind="theory"))
            rows.append(row(label, "self-gain, fairness, efficiency (design-adjusted)", "efficiency", name, 1.0, role=role, kind="theory"))
        rows.append(row(label, "responder acceptance", "rejection threshold τ", name, float(np.mean(taus)), role="Bob", kind="theory"))
        rows.append(row(label, "responder acceptance", "rejection threshold τ", "self-maximiser", 0.0, kind="theory"))
    if family == "glee.persuasion":
        name = "Bayesian persuasion (commitment)"
        qs = np.array([commitment_q(float(p), float(v)) for p, v in zip(games["p"], games["v"])])
        ps, vs = games["p"].astype(float).to_numpy(), games["v"].astype(float).to_numpy()
        values = {"Alice": (float(np.mean(ps + (1 - ps) * qs)), float(np.mean(1 - qs))), "Bob": (float(np.mean(ps * (vs - 1) - (1 - ps) * qs)), float(np.mean(1 - qs)))}
        for role, (gain, fair) in values.items():
            rows.append(row(label, "self-gain, fairness, efficiency (design-adjusted)", "self-gain", name, gain, role=role, kind="theory"))
            rows.append(row(label, "self-gain, fairness, efficiency (design-adjusted)", "fairness", name, fair, role=role, kind="theory"))
            rows.append(row(label, "self-gain, fairness, efficiency (design-adjusted)", "efficiency", name, 1.0, role=role, kind="theory"))
        rows.append(row(label, "lying and belief updating", "lying rate P(rec | low)", name, float(qs.mean()), role="Alice", kind="theory"))
        rows.append(row(label, "lying and belief updating", "buy after rec − Bayes", name, 0.0, role="Bob", kind="theory"))
    return rows


def profile_rows(games: pd.DataFrame, turns: pd.DataFrame) -> pd.DataFrame:
    """Profile rows (``analysis/profile.py``) of every GLEE family present: per model and role
    the design-adjusted self-gain, fairness and efficiency (OLS on the model, its opponent and
    every varying design parameter, intervals clustered by model pair); the responder's
    rejection threshold (bargaining, negotiation); the seller's lying rate and the buyer's gap
    to Bayes (persuasion); theory rows (:func:`theory_rows`)."""
    from ...analysis.profile import row
    from ...analysis.regression import adjusted_means
    from .analysis import DESIGNS, reference_model

    rows: list[dict] = []
    for family, label in FAMILIES.items():
        sub = games[games["game"] == family]
        if sub.empty:
            continue
        fam_turns = turns[turns["game_id"].isin(sub["game_id"])] if len(turns) else turns
        section = "self-gain, fairness, efficiency (design-adjusted)"
        note = "Design-adjusted by the GLEE regression (model, opponent, the family's design factors and market; SEs clustered by model pair, a person's games by participant)."
        # adjusted means do not depend on the reference (only the coding does): a frame without
        # its study file still gets its rows
        ref = reference_model(sub, spec=sub.attrs.get("spec") or {}, turns=fam_turns)
        for role in ("alice", "bob"):
            for measure, column in (("self-gain", f"self_gain_{role}"), ("fairness", "fairness"), ("efficiency", "efficiency")):
                if column not in sub or sub[column].isna().all():
                    continue
                try:
                    adj = adjusted_means(sub, column, DESIGNS[family], f"model_{role}", ref)
                except ValueError as err:  # too few games for the design's coefficients
                    rows.append(row(label, section, measure, "—", math.nan, role=ROLE_NAMES[role], note=str(err)))
                    continue
                lo, hi = ("low_cluster", "high_cluster") if "low_cluster" in adj else ("low", "high")
                bounds = ga.RANGES[family].get(column)
                for _, r in adj.iterrows():
                    low, high = r[lo], r[hi]
                    if leaves_range(low, high, bounds):  # a model-based interval: cut to the range, and said
                        low, high = clip_interval(low, high, bounds)
                        rows.append(row(label, section, measure, r["level"], r["adjusted"], low, high, r["n"], role=ROLE_NAMES[role], note=note + " Intervals that reached outside the metric's range are cut to it."))
                    else:
                        rows.append(row(label, section, measure, r["level"], r["adjusted"], low, high, r["n"], role=ROLE_NAMES[role], note=note))
        if family == "glee.persuasion":
            rounds = persuasion_rounds(fam_turns, sub)
            if not rounds.empty:
                for _, r in seller_lying(rounds[rounds["seller_valid"]], by=("model_alice",)).iterrows():
                    rows.append(row(label, "lying and belief updating", "lying rate P(rec | low)", r["model_alice"], r["lying_rate"], r["low"], r["high"], r["low_rounds"], role="Alice"))
                for _, r in buyer_update(rounds[rounds["buyer_valid"]], by=("model_bob",)).iterrows():
                    rows.append(row(label, "lying and belief updating", "buy after rec − Bayes", r["model_bob"], r["gap_rec"], r["low"] - r["bayes_buy_rec"], r["high"] - r["bayes_buy_rec"], r["rounds_rec"], role="Bob"))
        else:
            decisions = responder_decisions(family, fam_turns)
            if not decisions.empty:
                for _, r in acceptance.fit_groups(decisions, ("model",)).iterrows():
                    rows.append(row(label, "responder acceptance", "rejection threshold τ", r["model"], r["threshold"], r["threshold_low"], r["threshold_high"], r["n"], note=f"{r['model']}: {r['warning']}" if r["warning"] else ""))
                    rows.append(row(label, "responder acceptance", "accept rate", r["model"], r["accept_rate"], n=r["n"]))
        rows += theory_rows(family, sub)
    return pd.DataFrame(rows)

"""Report sections and profile rows of the prisoner's dilemma: each model's cooperation and
payoff over both seats (95 % intervals; by horizon when a study plays several), mutual
cooperation, efficiency and length by pairing, and cooperation round by round."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...analysis.plots import grid_table, table_html
from ...analysis.report import guarded, Section
from ...analysis.stats import Bounds, declared_ranges, mean_ci, row_clusters, share_ci, summarise

ROLES = ("player_1", "player_2")
#: The metrics shown with the range the game declares for them (the percentile bootstrap keeps
#: their intervals inside it); a seat's ``payoff_share`` is its ``payoff_player_1`` or
#: ``payoff_player_2``, with the range of both; ``rounds_played`` gets t intervals.
BOUNDED = ("cooperation", "mutual_cooperation", "efficiency")


def ranges(games: pd.DataFrame) -> dict[str, Bounds]:
    """The range of each bounded metric as the game declares it over these games'
    configurations (``PrisonersDilemma.metric_ranges``), ``payoff_share`` the join of the seats'."""
    from .prisoners_dilemma import PrisonersDilemma

    declared = declared_ranges(PrisonersDilemma, games)
    lows, highs = zip(*(declared[f"payoff_{role}"] for role in ROLES))
    seat = (None if None in lows else min(lows), None if None in highs else max(highs))
    return {**{m: declared[m] for m in BOUNDED}, "payoff_share": seat}

#: Metric definitions shown at the top of the report.
DEFINITIONS = """
<p>Each round both players choose at the same time to cooperate or to defect (under the game's
labels, "cooperate" and "defect" by default). Both cooperating pays each the <code>reward</code>
R, both defecting the <code>punishment</code> P; a defector facing a cooperator gets the
<code>temptation</code> T and the cooperator the <code>sucker</code> S (T &gt; R &gt; P &gt; S and
2R &gt; T + S). The <code>horizon</code> is <code>one-shot</code> (one round), <code>known</code>
(<code>rounds</code> rounds, told to both) or <code>random</code> (after each round the game goes on
with probability <code>continue_prob</code>, up to <code>max_rounds</code>, which the players are
not told). A game's value is taken over its N rounds played; tables show means over games (each
seat of a game counts for the model in it) with 95 % percentile-bootstrap intervals, which stay
within 0–1; a study that plays several horizons shows them apart. A choice that stays invalid
becomes a defection.</p>
<ul>
<li><b>cooperation</b> = the seat's cooperating choices / its valid choices (the fallback
defection is left out).</li>
<li><b>cooperation_first</b> = the share of valid first-round choices that cooperate (Wilson 95 %
interval; for the pooled <code>human</code>, cluster-robust by participant).</li>
<li><b>payoff_share</b> = the seat's points / (T·N), a share of the most a player can earn (defecting
against a cooperator every round): R / T under mutual cooperation, P / T under mutual defection.</li>
<li><b>mutual_cooperation</b> = rounds in which both cooperated / N (fallbacks count as the
defections they became).</li>
<li><b>efficiency</b> = both players' points / (2R·N), a share of the most the pair can earn.</li>
<li><b>rounds_played</b> = N (t interval).</li>
<li><b>cooperation by round</b> = per model and round, the share of its valid choices that
cooperate (Wilson 95 % interval, as above).</li>
<li><b>Logit QRE</b> (McKelvey &amp; Palfrey 1995): each player chooses with probabilities
∝ exp(λ · expected points), given the other's probabilities; λ = 0 is random play, a large λ
nearly always the best reply (here: defection). λ is fitted by maximum likelihood to a model's
one-shot choices on the principal branch of the one-round game (as pygambit's
<code>logit_estimate</code>; both seats one population), with its 95 % profile-likelihood
interval (the λ along the branch whose log-likelihood is within χ²₁(0.95)/2 of the best; an end at
0 or at the search bound 10⁶ means the choices do not bound λ on that side); <b>qre_cooperation</b> is the cooperation the fitted equilibrium
predicts; <b>log_likelihood</b> ℓ̂ and <b>bic</b> = ln n − 2ℓ̂ compare it with other models of the
same choices. <b>at_bound</b>: the choices never cooperate, so λ is at its search bound.</li>
</ul>
<p>Reference: defecting is strictly dominant in every round, and under a known horizon defecting
throughout is the unique subgame-perfect play: cooperation 0, payoff_share P / T, efficiency P / R.
Two tit-for-tat or grim players cooperate in every round (payoff_share R / T, efficiency 1). In
Shafir &amp; Tversky's (1992) one-shot games 37 % of choices cooperated when the other's choice was
unknown (164 of 444).</p>
"""


def _horizons(frame: pd.DataFrame) -> bool:
    """Whether the frame holds several horizons (then tables show them apart)."""
    return "horizon" in frame and frame["horizon"].nunique() > 1


def seat_frame(games: pd.DataFrame) -> pd.DataFrame:
    """One row per game and seat: ``model`` in it (``participant`` for a person), ``horizon``,
    that seat's ``cooperation`` and ``payoff_share``."""
    parts = []
    for role in ROLES:
        if f"model_{role}" not in games:
            continue
        part = pd.DataFrame({
            "game_id": games["game_id"], "model": games[f"model_{role}"],
            "horizon": games["horizon"] if "horizon" in games else "one-shot",
            "cooperation": games.get(f"cooperation_{role}"), "payoff_share": games.get(f"payoff_{role}"),
        })
        if f"participant_{role}" in games:
            part["participant"] = games[f"participant_{role}"]
        parts.append(part)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def choice_turns(turns: pd.DataFrame) -> pd.DataFrame:
    """The valid choices of ``turns`` with their noted ``cooperate`` and ``round``."""
    if turns is None or turns.empty or "cooperate" not in turns or "phase" not in turns:
        return pd.DataFrame()
    t = turns[(turns["phase"] == "choose") & turns["valid"].astype(bool)]
    return t.dropna(subset=["cooperate", "round"])


def model_table(games: pd.DataFrame, turns: pd.DataFrame, bounds: dict[str, Bounds] | None = None) -> pd.DataFrame:
    """Per model (and horizon, when several): mean cooperation and payoff_share over its seats
    (bootstrap), and the share of its first-round choices that cooperate (Wilson). Long format:
    model[, horizon], metric, mean, low, high, n. ``bounds``: the metrics' ranges (default:
    :func:`ranges` of ``games``)."""
    bounds = ranges(games) if bounds is None else bounds
    by = ["model", "horizon"] if _horizons(games) else ["model"]
    seats = seat_frame(games)
    out = summarise(seats, by, ["cooperation", "payoff_share"], bounds=bounds) if not seats.empty else pd.DataFrame()
    t = choice_turns(turns)
    rows = []
    if not t.empty:
        t = t[t["round"].astype(float) == 1]
        if "horizon" not in t:
            t = t.assign(horizon="one-shot")
        clusters = row_clusters(t, "model")
        for key, sub in t.groupby(by):
            keys = key if isinstance(key, tuple) else (key,)
            labels = clusters.loc[sub.index] if clusters is not None else None
            est, low, high, n = share_ci(sub["cooperate"].astype(float) >= 0.5, clusters=labels)
            rows.append({**dict(zip(by, keys)), "metric": "cooperation_first", "mean": est, "low": low, "high": high, "n": n})
    return pd.concat([out, pd.DataFrame(rows)], ignore_index=True) if rows else out


def pairing_table(games: pd.DataFrame, bounds: dict[str, Bounds] | None = None) -> pd.DataFrame:
    """Per pair of models (in either seat; and horizon, when several): mean mutual_cooperation,
    efficiency and rounds_played with their intervals (a person's games clustered by
    participant); ``bounds`` as in :func:`model_table`."""
    bounds = ranges(games) if bounds is None else bounds
    frame = games.assign(pair=[" vs ".join(sorted((str(a), str(b)))) for a, b in zip(games["model_player_1"], games["model_player_2"])])
    by = ["pair", "horizon"] if _horizons(games) else ["pair"]
    clusters = row_clusters(frame, ["model_player_1", "model_player_2"])
    rows = []
    for key, sub in frame.groupby(by):
        keys = key if isinstance(key, tuple) else (key,)
        row = dict(zip(by, keys))
        labels = clusters.loc[sub.index] if clusters is not None else None
        n = 0
        for column in ("mutual_cooperation", "efficiency", "rounds_played"):
            mean, low, high, n = mean_ci(sub[column], bounds=bounds.get(column), clusters=labels)
            row.update({column: mean, f"{column} low": low, f"{column} high": high})
        rows.append({**row, "games": n})
    return pd.DataFrame(rows)


def by_round(turns: pd.DataFrame) -> pd.DataFrame:
    """Per model (and horizon, when several) and round: the share of its valid choices that
    cooperate, Wilson 95 % (by participant for the pooled human)."""
    t = choice_turns(turns)
    if t.empty:
        return pd.DataFrame()
    t = t.assign(round=t["round"].astype(int))
    by = ["model", "horizon", "round"] if _horizons(t) else ["model", "round"]
    clusters = row_clusters(t, "model")
    rows = []
    for key, sub in t.groupby(by):
        labels = clusters.loc[sub.index] if clusters is not None else None
        est, low, high, n = share_ci(sub["cooperate"].astype(float) >= 0.5, clusters=labels)
        rows.append({**dict(zip(by, key)), "cooperation": est, "low": low, "high": high, "n": n})
    return pd.DataFrame(rows)


#: Shafir & Tversky's (1992) points (their Fig. 2), which their people's one-shot choices were made under.
SHAFIR_TVERSKY = {"reward": 75, "temptation": 85, "sucker": 25, "punishment": 30}


def stage_game(reward: float, temptation: float, sucker: float, punishment: float) -> list[np.ndarray]:
    """The one-round game as payoff arrays (strategy 0 cooperates, 1 defects)."""
    row = np.array([[reward, sucker], [temptation, punishment]], dtype=float)
    return [row, row.T.copy()]


def qre_table(games: pd.DataFrame, turns: pd.DataFrame) -> pd.DataFrame:
    """Logit QRE fitted per model to its valid one-shot choices (both seats, one population:
    the game is symmetric) under each payoff matrix the study played, and to Shafir &
    Tversky's one-shot choices (the ``human (reference)`` row): λ with its profile-likelihood interval,
    the equilibrium's cooperation, n, log-likelihood and BIC. Only one-shot games: the first
    round of a repeated game is not the one-round game's decision."""
    from ...analysis.qre import fit_logit_qre
    from .humans import cooperated, games as shafir_games

    t = choice_turns(turns)
    if t.empty or "horizon" not in t:
        return pd.DataFrame()
    t = t[t["horizon"] == "one-shot"]
    keys = list(SHAFIR_TVERSKY)
    rows = []
    for payoff, sub in t.groupby(keys) if not t.empty else []:
        game = stage_game(*payoff)
        for model, own in sub.groupby("model", sort=True):
            c = int((own["cooperate"].astype(float) >= 0.5).sum())
            fit = fit_logit_qre(game, [c, len(own) - c], pooled=True, interval="profile")
            rows.append({"model": model, **dict(zip(keys, payoff)), "lam": fit.lam, "lam_low": fit.low, "lam_high": fit.high, "qre_cooperation": float(fit.profile[0][0]), "n": fit.n, "log_likelihood": fit.log_likelihood, "bic": fit.bic, "at_bound": fit.at_bound})
    if rows:
        c, n = cooperated("if_unknown"), shafir_games()
        fit = fit_logit_qre(stage_game(**SHAFIR_TVERSKY), [c, n - c], pooled=True, interval="profile")
        rows.append({"model": "human (reference)", **SHAFIR_TVERSKY, "lam": fit.lam, "lam_low": fit.low, "lam_high": fit.high, "qre_cooperation": float(fit.profile[0][0]), "n": fit.n, "log_likelihood": fit.log_likelihood, "bic": fit.bic, "at_bound": fit.at_bound})
    return pd.DataFrame(rows)


def sections(games: pd.DataFrame, turns: pd.DataFrame) -> list[Section]:
    """The family's sections of a study's report, given its finished games and their turns."""
    if games.empty:
        return []
    index = ["model", "horizon"] if _horizons(games) else "model"
    bounds = ranges(games)
    body = grid_table(model_table(games, turns, bounds), index, name="cooperation and payoffs per model")
    out = [Section("Cooperation and payoffs per model", body)]
    out += guarded("Pairings: mutual cooperation and efficiency", lambda: Section("Pairings: mutual cooperation and efficiency", table_html(pairing_table(games, bounds), name="pairings")))

    def rounds() -> Section | None:
        table = by_round(turns)
        if table.empty or table["round"].max() < 2:
            return None
        return Section("Cooperation by round", table_html(table, name="cooperation by round"))

    def qre() -> Section | None:
        table = qre_table(games, turns)
        if table.empty:
            return None
        note = "Logit QRE of the one-round game fitted by maximum likelihood to each model's one-shot choices (definitions above); human (reference): Shafir &amp; Tversky's 444 one-shot choices under their points."
        return Section("Logit quantal response equilibrium", table_html(table, name="logit qre per model", note=note))

    return out + guarded("Cooperation by round", rounds) + guarded("Logit quantal response equilibrium", qre)


def profile_rows(games: pd.DataFrame, turns: pd.DataFrame) -> pd.DataFrame:
    """Each model's cooperation, first-round cooperation and payoff share (mean, 95 % CI; the
    horizon in the note when the games hold several), and the selfish play as theory rows:
    cooperation 0, payoff_share P / T (averaged over the games)."""
    from ...analysis.profile import row

    family, section = "prisoners_dilemma", "prisoner's dilemma: cooperation"
    split = _horizons(games)
    rows = [
        row(family, section, r["metric"], r["model"], r["mean"], r["low"], r["high"], r["n"], note=f"horizon {r['horizon']}" if split else "")
        for _, r in model_table(games, turns).iterrows()
    ]
    floor = float((games["punishment"] / games["temptation"]).mean()) if {"punishment", "temptation"} <= set(games.columns) else float("nan")
    theory = {"cooperation": 0.0, "cooperation_first": 0.0, "payoff_share": floor}
    rows += [row(family, section, metric, "selfish", value, kind="theory") for metric, value in theory.items()]
    from ...analysis.profile import structural_rows

    for _, r in qre_table(games, turns).iterrows():
        payoff = f"R {r['reward']:g}, T {r['temptation']:g}, S {r['sucker']:g}, P {r['punishment']:g}"
        fitted = structural_rows("prisoners_dilemma: logit QRE", r["model"], {"λ": (r["lam"], r["lam_low"], r["lam_high"])}, r["log_likelihood"], r["bic"], r["n"], note=f"one-shot games, {payoff}")
        if r["model"] == "human (reference)":
            for f in fitted:
                f["kind"] = "reference"
        rows += fitted
    return pd.DataFrame(rows)

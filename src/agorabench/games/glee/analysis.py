"""GLEE's statistical analysis (paper §3–4, App. C) over a games dataframe.

Each function takes the games of one family (rows of :func:`agorabench.analysis.frames.games_df`)
and returns plain dataframes; the report and ``agora analyze glee`` format them.

Encoding (App. C.1, C.2): per family, every game-defining parameter is one-hot with the paper's
Table 8 default as reference; the market parameters are crossed into one *market* factor —
bargaining CI × MA × T (T ∈ {∞, 12}: 8 levels), negotiation CI × MA × T (T ∈ {1, 10, ∞}: 12
levels), persuasion CI × MA × MY (8 levels); Alice's and Bob's identities are one-hot with a
reference model (a human seat is one more identity). Outcomes: efficiency, fairness, Alice's and
Bob's self-gain, each a share of the amount at stake (effects are reported in percentage points
of it).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...analysis import metagame as mg
from ...analysis.anchoring import anchoring
from ...analysis.regression import PAIR, Design, Factor, Fit, adjusted_means, fit_ols, level, pair_labels
from ...analysis.stats import Bounds, row_clusters
from ...core.seats import SeatKind, seat_kind
from .bargaining import Bargaining
from .negotiation import Negotiation
from .persuasion import Persuasion

OUTCOMES = ("efficiency", "fairness", "self_gain_alice", "self_gain_bob")
OUTCOME_NAMES = {"efficiency": "efficiency", "fairness": "fairness", "self_gain_alice": "Alice's self-gain", "self_gain_bob": "Bob's self-gain"}
YES_NO = ((True, "yes"), (False, "no"))

CI = Factor("complete_info", True, "CI", YES_NO)
MA = Factor("messages", False, "MA", YES_NO)

#: Table 8 defaults as references; the market factors crossed. Parameters beyond Table 8 (the
#: negotiation walk-away option, persuasion's c, buyer_knows_p, buyer_messages) take the game's
#: default as reference; a parameter that does not vary in the data adds no column.
DESIGNS: dict[str, Design] = {
    "glee.bargaining": Design(
        factors=(Factor("delta_a", 0.9, "δ_A"), Factor("delta_b", 0.9, "δ_B"), Factor("money", 10_000, "M")),
        composite=(CI, MA, Factor("horizon", "inf", "T")),
        composite_levels=((True, False), (False, True), ("inf", 12)),
    ),
    "glee.negotiation": Design(
        factors=(Factor("f_a", 1.0, "F_A"), Factor("f_b", 1.0, "F_B"), Factor("money", 10_000, "M"), Factor("outside_option", True, "walk-away", YES_NO)),
        composite=(CI, MA, Factor("horizon", 1, "T")),
        composite_levels=((True, False), (False, True), (1, 10, "inf")),
    ),
    "glee.persuasion": Design(
        factors=(
            Factor("p", 0.5, "p"), Factor("v", 1.25, "v"), Factor("money", 10_000, "M"), Factor("horizon", 20, "T"),
            Factor("c", 0.0, "c"), Factor("buyer_knows_p", True, "buyer knows p", YES_NO), Factor("buyer_messages", False, "buyer messages", YES_NO),
        ),
        composite=(CI, Factor("messages", False, "MA", ((True, "text"), (False, "binary"))), Factor("myopic", False, "MY", YES_NO)),
        composite_levels=((True, False), (False, True), (False, True)),
    ),
}

#: The range of each outcome per family (None: open), as each game declares it
#: (``metric_ranges``; the GLEE games' ranges do not depend on the configuration): bargaining's
#: four lie in 0–1; negotiation's self-gains are signed and unbounded, its fairness at most 1;
#: persuasion's are 0–1 but Bob's self-gain, (k·(v − 1) − s)/T, at least −1.
RANGES: dict[str, dict[str, Bounds]] = {
    cls.name: {m: r for m, r in cls.ranges_over([]).items() if m in OUTCOMES} for cls in (Bargaining, Negotiation, Persuasion)
}

#: The first move of each family that opens the bargaining: (phase, action column, scale).
FIRST_OFFER = {"glee.bargaining": ("offer", "action_alice_gain"), "glee.negotiation": ("offer", "action_price")}


#: The rule choosing the reference model, as the report and docs/analysis.md state it.
REFERENCE_RULE = (
    "the study file's [analysis] reference_model (agora analyze --reference before it); else the first "
    "LLM of the study file's model list (an entry whose spec is no strategy/… and no person); else the "
    "first model of that list; each only if it played these games, and the automatic choices pass over a "
    "model none of whose turns was valid; without a study file (imported logs, a frame built by hand): "
    "the first model name in sorted order that is no person's seat (human…)"
)



def _not_scripted_or_person(entry: dict[str, Any]) -> bool:
    """Whether a study file's model entry is played by a model (not a strategy, not a person)."""
    return seat_kind(entry) not in (SeatKind.STRATEGY, SeatKind.PERSON)

def study_reference(spec: dict[str, Any] | None) -> list[str]:
    """The study file's candidates for the reference model in the order of
    :data:`REFERENCE_RULE`: ``[analysis] reference_model``, its LLMs in file order, then its
    other models in file order."""
    spec = spec or {}
    models = spec.get("models") or []
    setting = (spec.get("analysis") or {}).get("reference_model")
    out = [setting] if setting else []
    out += [m["name"] for m in models if _not_scripted_or_person(m)]
    out += [m["name"] for m in models]
    return list(dict.fromkeys(out))


#: What the study file is when a frame carries none and none is given (see :func:`study_file`).
NO_STUDY_FILE = (
    "the games carry no study file (games.attrs['spec'], which games_df sets, is gone: a merge, a CSV "
    "round trip or a frame built by hand drops it), so the reference model cannot be chosen by its rule; "
    "put it back with analysis.frames.with_study(games, store, 'STUDY'), or pass spec= (the study file as a "
    "dict or its path; spec={} for data without one) or reference='MODEL'"
)


def study_file(games: pd.DataFrame, spec: dict[str, Any] | str | Path | None = None) -> dict[str, Any]:
    """The study file the reference rule reads: ``spec`` when given (a dict, or the path of a
    study file), else ``games.attrs["spec"]`` (set by :func:`~agorabench.analysis.frames.games_df`
    and the report; {} for data without one). A frame whose attributes are gone (pandas' ``merge``,
    a CSV round trip) and no ``spec`` is a ValueError (:data:`NO_STUDY_FILE`), never a silent
    change of the reference to another model."""
    if isinstance(spec, (str, Path)):
        from ...core.study import load_study

        try:
            return load_study(spec).file.model_dump(mode="json")
        except (OSError, ValueError) as exc:
            raise ValueError(f"spec={str(spec)!r}: not a readable study file ({' '.join(str(exc).split())[:200]})") from None
    if spec is not None:
        return dict(spec)
    if "spec" not in games.attrs:
        raise ValueError(NO_STUDY_FILE)
    return games.attrs["spec"] or {}


def turn_counts(turns: pd.DataFrame) -> dict[str, tuple[int, int]]:
    """Model name -> (turns, valid turns) of a turns frame (columns ``model``, ``valid``)."""
    if turns is None or turns.empty or not {"model", "valid"} <= set(turns.columns):
        return {}
    counts = turns.assign(valid=turns["valid"].astype(bool)).groupby("model")["valid"].agg(["size", "sum"])
    return {str(m): (int(n), int(v)) for m, (n, v) in counts.iterrows()}


@dataclass(frozen=True)
class Reference:
    """The reference model chosen by :data:`REFERENCE_RULE` and why: ``source`` the step of
    the rule that chose it, ``passed_over`` the candidates it skipped (a model none of whose turns
    was valid; a named reference that did not play), ``note`` anything a reader must know (a
    reference named explicitly none of whose turns was valid)."""

    model: str
    source: str
    passed_over: tuple[str, ...] = ()
    note: str = ""

    def line(self) -> str:
        """One line for a report or a printed analysis: ``reference model X (why; ...)``."""
        parts = [self.source, *self.passed_over, *([self.note] if self.note else [])]
        return f"reference model {self.model} ({'; '.join(parts)})"


def reference_choice(games: pd.DataFrame, spec: dict[str, Any] | str | Path | None = None, override: str | None = None, turns: pd.DataFrame | None = None) -> Reference:
    """The reference identity of these games by :data:`REFERENCE_RULE` — the one rule of the
    report, ``agora analyze`` and the Python API — with the reason: ``override``
    (``--reference``, ``reference=``), the study file's ``[analysis] reference_model``, its first
    LLM that played, its first model that played, else (no study file) the first sorted name that
    is no person's seat. The study file is :func:`study_file` (``spec``, else
    ``games.attrs["spec"]``; neither is a ValueError). The automatic steps pass over a model none
    of whose turns was valid (its effects would be those of the game's fallbacks): validity from
    ``turns`` (a turns frame) or ``games.attrs["valid_turns"]`` (set by ``games_df``); a model named
    explicitly is kept, with a note."""
    if override is None or spec is not None or "spec" in games.attrs:
        file = study_file(games, spec)
    else:
        file = {}
    seats = [c for c in ("model_alice", "model_bob") if c in games]
    played = sorted({str(m) for m in pd.unique(games[seats].to_numpy().ravel()) if m is not None and m == m})
    if not played:
        raise ValueError("no model played these games")
    known = turns is not None or "valid_turns" in games.attrs
    counts = turn_counts(turns) if turns is not None else dict(games.attrs.get("valid_turns") or {})

    def invalid(model: str) -> bool:
        n, valid = counts.get(model, (0, 0))
        return n > 0 and valid == 0

    skipped: list[str] = []
    named = [(override, "named by --reference / reference=")] if override else []
    setting = (file.get("analysis") or {}).get("reference_model")
    if setting:
        named.append((setting, "the study file's [analysis] reference_model"))
    for model, source in named:
        if model in played:
            note = f"none of {model}'s turns was valid: every effect compares with the game's fallbacks" if invalid(model) else ""
            return Reference(model, source, tuple(skipped), note)
        skipped.append(f"{model} ({source}) did not play these games")
    entries = file.get("models") or []
    steps = [
        ("the first language model of the study file's list that played", [m["name"] for m in entries if _not_scripted_or_person(m)]),
        ("the first model of the study file's list that played", [m["name"] for m in entries]),
    ]
    people = "the first model name in sorted order that is no person's seat"
    steps.append((people if entries else f"no study file: {people}", [m for m in played if seat_kind(m) is SeatKind.MODEL]))
    steps.append(("the first model name in sorted order", played))
    passed: list[str] = []
    for source, candidates in steps:
        for model in candidates:
            if model not in played or model in passed:
                continue
            if invalid(model):
                passed.append(model)
                continue
            if passed:
                skipped.append(f"passed over {', '.join(passed)}: none of its turns was valid")
            unknown = "" if known else "turn validity unknown (no turns given): a model without a valid turn is not passed over"
            return Reference(model, source, tuple(skipped), unknown)
    # every model that played answered only invalidly: the rule's first candidate, said so
    first = next((m for _, candidates in steps for m in candidates if m in played), played[0])
    return Reference(first, "every model that played answered only invalidly; the rule's first candidate", tuple(skipped))


def reference_model(games: pd.DataFrame, spec: dict[str, Any] | str | Path | None = None, override: str | None = None, turns: pd.DataFrame | None = None) -> str:
    """The name of :func:`reference_choice`'s model (the one rule of the report, ``agora
    analyze`` and the Python API); ``spec`` defaults to ``games.attrs["spec"]`` and a frame
    without it is a ValueError (pass ``spec=`` or ``override=``)."""
    return reference_choice(games, spec, override, turns).model


def regressions(games: pd.DataFrame, family: str, reference: str | None = None, outcomes: tuple[str, ...] = OUTCOMES, pair: bool = False, spec: dict[str, Any] | str | Path | None = None) -> dict[str, Fit]:
    """One OLS per outcome of the family's games (App. C.1 encoding, Table 8 references),
    classical and model-pair-clustered errors, BH-adjusted p-values per outcome. ``reference``:
    the reference model (default: :func:`reference_choice` over ``spec``, else the frame's
    study file; a frame that lost it is a ValueError)."""
    design = DESIGNS[family]
    ref = reference or reference_model(games, spec)
    return {o: fit_ols(games, o, design, ref, pair=pair) for o in outcomes if o in games and games[o].notna().sum() > 0}


def coefficients(fits: dict[str, Fit]) -> pd.DataFrame:
    """All coefficients of the fits in one long table: outcome, term, level (readable), the
    estimate with classical and clustered errors, intervals and p-values (shares of M)."""
    d = pd.concat([f.coefs.assign(outcome=o) for o, f in fits.items()], ignore_index=True)
    d = d.drop(columns=["column", "level"]).rename(columns={"level_name": "level"})
    return d[["outcome"] + [c for c in d.columns if c != "outcome"]]


def _fit_reference(f: Fit) -> Any:
    """The model a fit's identity effects are relative to: one name when both seats share it,
    else ``Alice: X; Bob: Y``."""
    seats = {role: f.references.get(f"model_{role.lower()}") for role in ("Alice", "Bob")}
    named = {role: m for role, m in seats.items() if m is not None}
    if len(set(named.values())) <= 1:
        return next(iter(named.values()), None)
    return "; ".join(f"{role}: {m}" for role, m in named.items())


def fit_summary(fits: dict[str, Fit]) -> pd.DataFrame:
    """Per outcome: games, coefficients, R², adjusted R², clusters, the columns left out and the
    reference model the identity effects are relative to (per seat where the seats' differ:
    :func:`seat_references`)."""
    return pd.DataFrame([{"outcome": o, "games": f.n, "coefficients": len(f.beta), "r2": f.r2, "adj_r2": f.adj_r2, "clusters": f.clusters, "left_out": "; ".join(f.dropped), "reference_model": _fit_reference(f)} for o, f in fits.items()])


def seat_references(fits: dict[str, Fit], reference: str) -> dict[str, str]:
    """The seats (``Alice``, ``Bob``) whose identity effects are not relative to ``reference``
    because it never sat there, each with the model they are relative to instead (the seat's
    most frequent model: the encoding's rule, :func:`~agorabench.analysis.regression.encode`)."""
    out: dict[str, str] = {}
    for role in ("Alice", "Bob"):
        for f in fits.values():
            actual = f.references.get(f"model_{role.lower()}")
            if actual is not None and str(actual) != reference:
                out[role] = str(actual)
                break
    return out


def seat_reference_note(fits: dict[str, Fit], reference: str) -> str:
    """One sentence per seat of :func:`seat_references` ("" when both seats use ``reference``)."""
    return "; ".join(
        f"As {role}, where {reference} never played, the model effects are relative to {actual} (the seat's most frequent model)"
        for role, actual in seat_references(fits, reference).items()
    )


def _mark(df: pd.DataFrame, est: str, low: str, high: str) -> pd.DataFrame:
    """best: its interval reaches the largest estimate; worst: it reaches the smallest."""
    ok = df[est].notna()
    top, bottom = df.loc[ok, est].max(), df.loc[ok, est].min()
    df[f"{est}_best"] = ok & (df[high] >= top - 1e-12)
    df[f"{est}_worst"] = ok & (df[low] <= bottom + 1e-12)
    return df


def market_levels(fits: dict[str, Fit], family: str) -> list[tuple[Any, ...]]:
    """The market levels of Table 5 in order: the paper's (8 / 12 / 8, the Table 8 default
    first), then every other market the games played (a horizon the paper did not use, say
    T = 4), in sorted order."""
    design = DESIGNS[family]
    paper = design.composite_grid()
    played = {tuple(c) for f in fits.values() for c in f.levels.get(design.composite_label, []) if isinstance(c, tuple) and len(c) == len(design.composite)}
    known = [[level(v) for v in values] for values in design.composite_levels]

    def order(combo: tuple[Any, ...]) -> tuple:
        # each factor's levels in the paper's order, then the levels it lacks by value
        return tuple((known[i].index(v), 0.0, "") if v in known[i] else (len(known[i]), *_by_value(v)) for i, v in enumerate(combo))

    return paper + sorted((c for c in played if c not in paper), key=order)


def _by_value(value: Any) -> tuple[float, str]:
    """Sort key of a level the paper lacks: numbers by value before text."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (float(value), "")
    return (float("inf"), str(value))


def market_effects(fits: dict[str, Fit], family: str, outcomes: tuple[str, ...] = ("efficiency", "fairness"), clustered: bool = False) -> pd.DataFrame:
    """Table 5: for every market level, its effect on each outcome in percentage points with
    the 95 % interval, relative to the reference market (effect 0). The rows are the paper's
    markets (8 / 12 / 8, the Table 8 default first) and then every other market the games
    played (:func:`market_levels`; e.g. T = 4 of a study with ``horizon = [4, "inf"]``), so no
    played market is hidden. ``paper``: whether the paper's Table 5 has the market; ``played``:
    whether any game played it (a played market whose effect the data cannot separate from
    others is NaN with ``played`` true; one never played is NaN with ``played`` false).
    ``clustered`` uses the pair-clustered interval."""
    design = DESIGNS[family]
    paper = set(design.composite_grid())
    played = {tuple(c) for f in fits.values() for c in f.levels.get(design.composite_label, []) if isinstance(c, tuple)}
    rows: list[dict[str, Any]] = []
    for combo in market_levels(fits, family):
        row: dict[str, Any] = {f.name: f.level_name(v) for f, v in zip(design.composite, combo)}
        row["paper"] = combo in paper
        row["played"] = combo in played
        for o in outcomes:
            if o not in fits:
                continue
            f = fits[o]
            ref = f.references.get(design.composite_label)
            hit = f.coefs[(f.coefs["term"] == design.composite_label) & (f.coefs["level"].map(lambda v: v == combo))]
            lo_c, hi_c = ("low_cluster", "high_cluster") if clustered and "low_cluster" in f.coefs else ("low", "high")
            if combo == ref:
                row.update({o: 0.0, f"{o}_low": 0.0, f"{o}_high": 0.0})
            elif len(hit):
                h = hit.iloc[0]
                row.update({o: 100 * h["estimate"], f"{o}_low": 100 * h[lo_c], f"{o}_high": 100 * h[hi_c]})
            else:
                row.update({o: np.nan, f"{o}_low": np.nan, f"{o}_high": np.nan})
        rows.append(row)
    out = pd.DataFrame(rows)
    for o in outcomes:
        if o in out:
            out = _mark(out, o, f"{o}_low", f"{o}_high")
    return out


def model_effects(fits: dict[str, Fit], clustered: bool = False) -> pd.DataFrame:
    """Table 6: each model's effect on its own self-gain as Alice (``model_alice`` terms of the
    Alice self-gain fit) and as Bob, in percentage points relative to the reference model, with
    the 95 % interval and best/worst marks per role. People are one identity, ``human`` (pooled by
    :func:`~agorabench.analysis.frames.games_df`), a row beside the models as in the paper;
    ``low_cluster`` / ``high_cluster`` (where the fit has clustered errors) are the interval with
    games clustered by model pair, and a person's games by participant."""
    parts = []
    for role, outcome in (("Alice", "self_gain_alice"), ("Bob", "self_gain_bob")):
        if outcome not in fits:
            continue
        f = fits[outcome]
        column = f"model_{role.lower()}"
        lo_c, hi_c = ("low_cluster", "high_cluster") if clustered and "low_cluster" in f.coefs else ("low", "high")
        both = "low_cluster" in f.coefs
        sub = f.term(column)
        rows = [{"model": f.references.get(column), "role": role, "effect": 0.0, "low": 0.0, "high": 0.0, "reference": True, **({"low_cluster": 0.0, "high_cluster": 0.0} if both else {})}]
        rows += [{"model": r["level"], "role": role, "effect": 100 * r["estimate"], "low": 100 * r[lo_c], "high": 100 * r[hi_c], "reference": False, **({"low_cluster": 100 * r["low_cluster"], "high_cluster": 100 * r["high_cluster"]} if both else {})} for _, r in sub.iterrows()]
        parts.append(_mark(pd.DataFrame(rows), "effect", "low", "high"))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def adjusted_self_gain(games: pd.DataFrame, family: str, reference: str | None = None, spec: dict[str, Any] | str | Path | None = None) -> pd.DataFrame:
    """Design-adjusted mean self-gain of each model as Alice and as Bob: the mean over all of the
    family's games of the regression's prediction with that model in the seat (see
    :func:`agorabench.analysis.regression.adjusted_means`). Columns: model, role, adjusted, low,
    high (classical 95 %), low_cluster, high_cluster (pair-clustered), raw (plain mean), n."""
    design = DESIGNS[family]
    ref = reference or reference_model(games, spec)
    parts = []
    for role in ("alice", "bob"):
        out = adjusted_means(games, f"self_gain_{role}", design, f"model_{role}", ref)
        parts.append(out.rename(columns={"level": "model"}).assign(role=role.capitalize()))
    return pd.concat(parts, ignore_index=True)


def pair_effects(games: pd.DataFrame, family: str, outcome: str, reference: str | None = None, spec: dict[str, Any] | str | Path | None = None) -> pd.DataFrame:
    """Design-adjusted outcome of every ordered model pair relative to the family's mean
    outcome (Figures 1–6): the pair regression's mean prediction over all games with that pair
    seated, minus the mean observed outcome. Rows: Alice's model; columns: Bob's model."""
    data = games.assign(**{PAIR: pair_labels(games)})
    adj = adjusted_means(data, outcome, DESIGNS[family], PAIR, reference or reference_model(games, spec))
    first = data.drop_duplicates(PAIR).set_index(PAIR)
    adj["alice"] = adj["level"].map(first["model_alice"])
    adj["bob"] = adj["level"].map(first["model_bob"])
    adj["relative"] = adj["adjusted"] - data[outcome].mean()
    grid = adj.pivot(index="alice", columns="bob", values="relative")
    grid.index.name, grid.columns.name = "Alice's model", "Bob's model"
    return grid


def _payoff_builder(games: pd.DataFrame, family: str, reference: str | None, spec: dict[str, Any] | str | Path | None = None):
    """Meta-game payoffs: for each outcome (Alice's and Bob's self-gain) fit the pair
    regression once; a cell is the mean over the cell's games of y − x_param·β_param plus the mean
    of x_param·β_param over all games (with all games, exactly the pair's adjusted mean). The
    bootstrap redraws games and keeps β_param fixed, so it measures how the pair cells vary."""
    models = sorted(set(games["model_alice"]) & set(games["model_bob"]))
    data = games[games["model_alice"].isin(models) & games["model_bob"].isin(models)].reset_index(drop=True)
    if len(models) < 2 or data.empty:
        raise ValueError(f"{family}: the meta-game needs at least two models that each played both roles")
    ref = reference or reference_model(data, spec)
    r = data["model_alice"].map({m: i for i, m in enumerate(models)}).to_numpy()
    c = data["model_bob"].map({m: i for i, m in enumerate(models)}).to_numpy()
    k = len(models)
    adjusted: dict[str, np.ndarray] = {}
    for o in ("self_gain_alice", "self_gain_bob"):
        fit = fit_ols(data, o, DESIGNS[family], ref, pair=True, cluster=None, keep_data=True)
        assert fit.encoded is not None
        param = np.array([t.term not in ("intercept", PAIR) for t in fit.encoded.terms])
        contrib = fit.encoded.X.to_numpy(float)[:, param] @ fit.beta[param]
        adjusted[o] = data[o].to_numpy(float) - contrib + contrib.mean()

    def payoffs(index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        cell = r[index] * k + c[index]
        count = np.bincount(cell, minlength=k * k).astype(float)
        out = []
        for o in ("self_gain_alice", "self_gain_bob"):
            total = np.bincount(cell, weights=adjusted[o][index], minlength=k * k)
            with np.errstate(invalid="ignore", divide="ignore"):
                out.append((total / count).reshape(k, k))
        return out[0], out[1]

    return models, data, payoffs


def metagame(games: pd.DataFrame, family: str, reference: str | None = None, reps: int = 200, seed: int = 0, spec: dict[str, Any] | str | Path | None = None) -> dict[str, Any]:
    """The meta-game of §4 Q2: Alice and Bob each pick a model; payoffs are design-adjusted
    expected self-gains (percentage points of the amount at stake). Returns the models, payoff
    matrices, every pure and mixed equilibrium, their bootstrap frequencies (games redrawn within
    each model pair; a person's games by participant, all of one person's together) and α-Rank. Needs
    every ordered pair of the models to have played."""
    models, data, payoffs = _payoff_builder(games, family, reference, spec)
    A, B = payoffs(np.arange(len(data)))
    if len(models) < 2 or np.isnan(A).any() or np.isnan(B).any():
        missing = int(np.isnan(A).sum())
        raise ValueError(f"{family}: the meta-game needs every ordered pair of at least two models ({missing} of {len(models) ** 2} pairs never played)")
    A, B = 100 * A, 100 * B
    eq = mg.equilibria_table(A, B, models, models)
    people = row_clusters(data, ["model_alice", "model_bob"])  # a person's games are drawn by participant
    boot = mg.bootstrap_equilibria(lambda i: tuple(100 * m for m in payoffs(i)), len(data), models, models, reps=reps, seed=seed, strata=pair_labels(data), clusters=people)
    grid, marg = mg.alpha_rank(A, B)
    k = len(models)
    rank = pd.DataFrame({"model": models, "mass_as_alice": marg[:k], "mass_as_bob": marg[k:]})
    rank["mass_total"] = (rank["mass_as_alice"] + rank["mass_as_bob"]) / 2
    rank = rank.sort_values("mass_total", ascending=False, ignore_index=True)
    profiles = pd.DataFrame(grid, index=models, columns=models).rename_axis(index="Alice's model", columns="Bob's model")
    return {"models": models, "A": pd.DataFrame(A, index=models, columns=models), "B": pd.DataFrame(B, index=models, columns=models), "equilibria": eq, "bootstrap": boot, "alpha_rank": rank, "alpha_profiles": profiles, "games": len(data), "reps": reps}


def per_person(games: pd.DataFrame, family: str | None = None) -> pd.DataFrame:
    """One row per person and role of a pooled games frame (``participant_alice`` /
    ``participant_bob``): the person's seat name (``human:<pseudonym>``, the key of the
    participants export), the role, games, and the mean of each outcome (their own self-gain as
    ``self_gain``). Empty (with these columns) when no person played."""
    columns = ["participant", "role", "games", "efficiency", "fairness", "self_gain"]
    rows = []
    for role in ("alice", "bob"):
        seat = f"participant_{role}"
        if seat not in games:
            continue
        mine = games[games[seat].notna()]
        for person, sub in mine.groupby(seat):
            row: dict[str, Any] = {"participant": person, "role": role.capitalize(), "games": len(sub)}
            for name, column in (("efficiency", "efficiency"), ("fairness", "fairness"), ("self_gain", f"self_gain_{role}")):
                row[name] = float(sub[column].mean()) if column in sub else np.nan
            rows.append(row)
    return pd.DataFrame(rows, columns=columns)


def first_offers(games: pd.DataFrame, turns: pd.DataFrame, family: str) -> pd.DataFrame:
    """Each game's first offer (Alice's, round 1) as a share of the amount at stake, beside
    Alice's final self-gain and her player type (her model; ``human`` for a person)."""
    phase, column = FIRST_OFFER[family]
    t = turns[turns["game_id"].isin(games["game_id"]) & (turns["phase"] == phase) & (turns["role"] == "alice")]
    if column not in t:
        return pd.DataFrame(columns=["game_id", "player", "first_offer", "gain"])
    first = t.sort_values(["game_id", "idx"]).drop_duplicates("game_id")[["game_id", column]]
    g = games.set_index("game_id")
    out = first.assign(first_offer=first[column].astype(float).to_numpy() / first["game_id"].map(g["money"]).astype(float).to_numpy())
    out["gain"] = out["game_id"].map(g["self_gain_alice"])
    out["player"] = out["game_id"].map(g["model_alice"]).map(lambda m: "human" if m == "human" else f"LLM ({m})")
    return out[["game_id", "player", "first_offer", "gain"]]


def anchoring_table(games: pd.DataFrame, turns: pd.DataFrame) -> pd.DataFrame:
    """Q3 anchoring per family with an opening offer (bargaining, negotiation) and Alice's player
    type: correlation of the first offer (share of M asked) with Alice's final self-gain."""
    parts = []
    for family in FIRST_OFFER:
        sub = games[games["game"] == family]
        if sub.empty:
            continue
        offers = first_offers(sub, turns, family)
        if len(offers):
            parts.append(anchoring(offers, "first_offer", "gain", "player").assign(family=family))
    if not parts:
        return pd.DataFrame()
    out = pd.concat(parts, ignore_index=True)
    return out[["family"] + [c for c in out.columns if c != "family"]]


def market_level_count(family: str) -> int:
    """How many levels the family's market factor has in the paper (8, 12, 8); Table 5 adds
    any other market a study played (:func:`market_levels`)."""
    return len(DESIGNS[family].composite_grid())


__all__ = [
    "DESIGNS", "OUTCOMES", "REFERENCE_RULE", "Reference", "reference_choice", "reference_model", "study_file", "regressions", "coefficients", "fit_summary", "market_effects", "market_levels", "model_effects",
    "adjusted_self_gain", "pair_effects", "metagame", "per_person", "first_offers", "anchoring_table", "market_level_count", "level",
]

"""``agora analyze glee``: the regression analysis of every GLEE family in a study as text
tables (and CSV files with ``--out``). People are one model, ``human``, in every table (the
games frame pools them: :func:`agorabench.analysis.frames.analysis_model`); each person keeps a
row of their own in ``<family>_people.csv`` (seat name ``human:<pseudonym>``, role, games, mean
outcomes), which joins the participants export."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ...analysis.files import write_csv
from ...analysis.frames import people_line
from ...analysis.reasoning import efforts, with_efforts
from ...analysis.regression import predictive_check
from . import analysis as ga
from .report import FAMILIES


def analyze_glee(games: pd.DataFrame, spec: dict[str, Any] | None = None, out: str | None = None, reference: str | None = None, reps: int = 200) -> str:
    """Fit summary, coefficients, Table 5, Table 6, adjusted self-gains, meta-game and the
    linear-vs-boosting check per family; returns the text and writes CSVs into ``out``. The
    reference model: ``reference`` if it played, else :data:`.analysis.REFERENCE_RULE` over
    ``spec`` (default: ``games.attrs["spec"]``; a frame without it and no ``spec`` is a
    ValueError), as the report and the Python API choose it; the text names it and why, in one
    line per family (:meth:`.analysis.Reference.line`)."""
    present = [f for f in FAMILIES if "game" in games and (games["game"] == f).any()]
    if not present:
        raise ValueError("the study has no finished GLEE games")
    folder = Path(out) if out else None
    if folder:
        folder.mkdir(parents=True, exist_ok=True)
    text: list[str] = []

    found = efforts(spec if spec is not None else games.attrs.get("spec"))

    def emit(title: str, df: pd.DataFrame, file: str) -> None:
        shown = with_efforts(df, found)  # a model seated at a reasoning effort: the effort beside its name
        text.append(f"\n== {title} ==\n" + (shown.to_string(index=False, float_format=lambda v: f"{v:.4g}") if len(shown) else "(empty)"))
        if folder:
            write_csv(df, folder / f"{file}.csv", index=False)  # a temporary file renamed into place

    for family in present:
        sub = games[games["game"] == family]
        label, key = FAMILIES[family], family.split(".")[1]
        choice = ga.reference_choice(sub, spec, override=reference)
        ref = choice.model
        fits = ga.regressions(sub, family, ref)
        seats = ga.seat_reference_note(fits, ref)  # a seat the reference never sat in has its own
        text.append(f"\n#### {label}: {len(sub)} games, {choice.line()} (rule: {ga.REFERENCE_RULE})" + (f"\n{seats}" if seats else ""))
        pooled = people_line(sub, of=f" of {label}")
        if pooled:  # one human row in the tables; a row per person in the CSV
            people = ga.per_person(sub, family)
            text.append(f"people pooled as one model ({pooled}); clustered intervals count a person's games as one cluster" + (f"; one row per person and role in {key}_people.csv" if folder else ""))
            if folder:
                write_csv(people, folder / f"{key}_people.csv", index=False)
        emit(f"{label}: fit", ga.fit_summary(fits), f"{key}_fit")
        emit(f"{label}: coefficients", ga.coefficients(fits), f"{key}_coefficients")
        emit(f"{label}: Table 5 (pp vs the default market)", ga.market_effects(fits, family), f"{key}_table5")
        vs = ref + "".join(f"; as {role} vs {m}" for role, m in ga.seat_references(fits, ref).items())
        emit(f"{label}: Table 6 (pp vs {vs})", ga.model_effects(fits), f"{key}_table6")
        emit(f"{label}: design-adjusted self-gain", ga.adjusted_self_gain(sub, family, ref), f"{key}_adjusted_self_gain")
        try:
            m = ga.metagame(sub, family, ref, reps=reps)
            emit(f"{label}: meta-game equilibria (pp)", m["equilibria"], f"{key}_metagame_equilibria")
            emit(f"{label}: meta-game bootstrap ({reps} resamples)", m["bootstrap"], f"{key}_metagame_bootstrap")
            emit(f"{label}: alpha-rank", m["alpha_rank"], f"{key}_alpha_rank")
        except ValueError as exc:
            text.append(f"\n{label}: meta-game not available: {exc}")
        rows = [predictive_check(sub, o, ga.DESIGNS[family], ref) for o in ga.OUTCOMES if o in sub and sub[o].notna().sum() >= 20]
        if rows:
            emit(f"{label}: linear vs gradient boosting, out-of-sample RMSE", pd.DataFrame(rows), f"{key}_linear_vs_boosting")
    return "\n".join(text).lstrip("\n")

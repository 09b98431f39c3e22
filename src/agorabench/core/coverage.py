"""Which stored games belong to a study file's current design.

A game id hashes the game's configuration *and* its seats' model entries, so the games of a run
with ``--model A --model B`` (or of a seating the study file no longer lists) are not among the
ids the study file expands to today. Every run therefore records its *seating* in the store
(:meth:`~agorabench.store.store.Store.record_run`): the model entries, ``matchups`` and ``seats``
it used. The design a report or export covers is then the study file's current grid (game,
grid, fixed, configs, parts, repeats, seed, sample, prompts) expanded once with the file's own
seating and once with each recorded one; the union of those ids is the design. A grid that was
edited away drops its games (its configurations are no longer expanded); a model given on the
command line, a dashboard run and a served study keep theirs.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from ..models.spec import spec_kind
from .study import ModelEntry, Study, StudyError, StudyFile, seat_entries


def run_seating(study: Study) -> dict[str, Any]:
    """What a run of ``study`` seats: its model entries (without the fields that only say how
    calls are made, which no game id depends on), ``matchups`` and ``seats``."""
    f = study.file
    return {
        "models": [m.identity() for m in f.models],
        "matchups": f.matchups,
        "seats": [dict(s) for s in f.seats],
    }


def with_seating(study: Study, seating: dict[str, Any]) -> Study | None:
    """``study`` (its current grid) with a recorded seating instead of its own; None when the
    seating no longer fits the file (e.g. a model entry field that was since removed)."""
    data = study.file.model_dump()
    data.update(models=[_as_written(m) for m in seating.get("models") or []], matchups=seating.get("matchups", data["matchups"]), seats=seating.get("seats") or [])
    try:
        file = StudyFile(**data)
    except (ValidationError, TypeError):
        return None
    try:
        entries = seat_entries(file.models)
    except ValueError:
        return None
    return Study(file, study.game_cls, study.root, entries, study.game_classes, study.seats_replaced)


def _as_written(entry: Any) -> Any:
    """A recorded model entry as a study file or ``--model`` gives it. The record holds every
    field (:meth:`~agorabench.core.study.ModelEntry.identity`), an outside agent's language-model
    settings (:attr:`~agorabench.core.study.ModelEntry.MODEL_ONLY`) too, at their defaults; an
    entry that sets one is refused, so those left at their default are dropped here. Their
    defaults are dumped again, so the entry's games keep their ids."""
    if not isinstance(entry, dict) or spec_kind(str(entry.get("spec", ""))) != "outside":
        return entry
    fields = ModelEntry.model_fields
    return {k: v for k, v in entry.items() if not (k in ModelEntry.MODEL_ONLY and k in fields and v == fields[k].get_default(call_default_factory=True))}


def design(study: Study, runs: list[dict[str, Any]], stored: set[str] | None = None) -> tuple[set[str], list[dict[str, Any]]]:
    """The game ids of the study file's current grid under its own seating and every recorded
    one, and the model entries (JSON, deduplicated by name, the file's first) of the seatings
    that seat at least one of the ``stored`` games in the design (all of them when ``stored``
    is None, or when none does). A recorded seating that cannot fill the current grid adds
    nothing."""
    ids: set[str] = set()
    models: dict[str, dict[str, Any]] = {}
    fallback: dict[str, dict[str, Any]] = {}
    own = run_seating(study)
    for seating in [own, *runs]:
        variant = study if seating is own else with_seating(study, seating)
        if variant is None:
            continue
        try:
            specs = variant.expand()
        except StudyError:
            continue
        these = {s.id for s in specs}
        ids |= these
        used = {m for s in specs if stored is None or s.id in stored for m in s.seats.values()}
        for entry in seating["models"]:
            fallback.setdefault(entry["name"], entry)
            if entry["name"] in used:
                models.setdefault(entry["name"], entry)
    return ids, list((models or fallback).values())


def one_model_for_pairs(study: Study) -> str | None:
    """The problem of a study whose models were replaced on the command line by a single model
    while its file asks for every ordered pair of *distinct* models of a game with two or more
    roles (which would silently become that model against itself); None when there is none."""
    if len(study.models) != 1 or study.file.matchups != "ordered_pairs" or study.seats_replaced:
        return None
    for part in study._parts():
        config = study.configurations(part)[0]
        if len(study.game_class(part.game).roles(config)) > 1:
            (name,) = study.models
            return (
                f"study {study.name!r} plays every ordered pair of distinct models (matchups = \"ordered_pairs\") but --model was given once ({name}); "
                "give --model two or more times, or set matchups = \"same_model\" in the study file to play the model against itself"
            )
    return None

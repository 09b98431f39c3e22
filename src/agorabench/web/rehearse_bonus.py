"""A rehearsal's bonus checker (:mod:`agorabench.web.rehearse`), and the checks ``agora serve``
makes before anyone enters: bonus rules that pay nothing to anyone (a constant of $0.00, a name
no game of the role records, a ``bonus_max`` of 0), found over the games a rehearsal stored
(:func:`check_bonus`) or over a few plays with random answers before the study is served
(:func:`bonus_problems`), and scale questions without labels at their ends
(:func:`scale_problems`).
"""

from __future__ import annotations

import ast
import asyncio
from collections import Counter, defaultdict
from typing import TYPE_CHECKING, Any

from ..core.study import Study
from ..store.store import Store
from .settings import bonus_values, evaluate_bonus, web_settings

if TYPE_CHECKING:
    from .rehearse import Rehearsal


def _names(rule: str) -> set[str]:
    return {n.id for n in ast.walk(ast.parse(rule, mode="eval")) if isinstance(n, ast.Name) and n.id not in ("min", "max", "round", "abs")}


def _values(game: dict[str, Any] | None, role: str) -> dict[str, float]:
    """The names a role's bonus rule may use in ``game``, as the web app computes them (with the
    role's own ``my_*`` values where :func:`~.settings.bonus_values` gives them)."""
    import inspect

    outcome, metrics = (game or {}).get("outcome"), (game or {}).get("metrics")
    if "role" in inspect.signature(bonus_values).parameters:
        return bonus_values(outcome, metrics, role=role)
    return bonus_values(outcome, metrics)


def check_bonus(result: Rehearsal, study: Study, store: Store, rows: list[dict[str, Any]]) -> None:
    """The bonus rules over the games the rehearsal stored. A protocol error when a rule pays
    nothing to anyone by its own making: a constant of $0.00, a name that none of its role's
    stored games records, or a ``bonus_max`` of 0. A warning when the rules paid nothing to any
    participant who finished here (random answers may earn nothing: worth a look, not proof)."""
    s = web_settings(study)
    if s.bonus_max <= 0:
        result.problem("bonus_max is 0: the bonus rule pays nothing to anyone")
    played = [r for r in rows if r["game_status"] in ("done", "abandoned")]
    per_role = isinstance(s.bonus, dict)
    for role in sorted({r["role"] for r in rows}):
        rule = s.bonus_rule(role)
        where = f"for {role}" if per_role else "(every role)"
        names = _names(rule)
        if not names:
            if evaluate_bonus(rule, {}, s.bonus_max) <= 0:
                result.problem(f"bonus rule {rule!r} {where} pays nothing to anyone (a constant of $0.00)")
            continue
        values = [_values(store.game(r["game_id"]), role) for r in played if r["role"] == role]
        if not values:
            continue
        recorded = set().union(*values)
        missing = sorted(names - recorded)
        if missing:
            shown = ", ".join(sorted(recorded)) or "nothing"
            result.problem(f"bonus rule {rule!r} {where} pays nothing to anyone: {', '.join(missing)} is recorded by none of the {len(values)} stored game(s) of {role} (recorded: {shown})")
    finished = [r for r in rows if r["stage"] == "done" and r["game_status"] == "done"]
    if finished and not any((r["bonus"] or 0) > 0 for r in finished):
        rules = sorted({s.bonus_rule(r["role"]) for r in finished})
        result.warnings.append(f"the bonus rule ({' / '.join(rules)}) paid nothing to any of the {len(finished)} participant(s) who finished this rehearsal; check that people who play well are paid")


def scale_problems(study: Study) -> list[str]:
    """Scale questions of the questionnaire that do not say what their ends mean: without
    ``scale_labels`` in the study file a participant would read "strongly disagree" / "strongly
    agree" at the ends of any question, "How sure are you?" included."""
    out = []
    for q in (study.file.web or {}).get("questionnaire") or []:
        if isinstance(q, dict) and q.get("kind") == "scale" and not q.get("scale_labels"):
            out.append(f"questionnaire item {q.get('name')!r} is a scale without scale_labels: participants would read 'strongly disagree' / 'strongly agree' at its ends whatever it asks; set scale_labels = [\"what 1 means\", \"what {q.get('scale', 7)} means\"]")
    return out


#: Games per (game, role) a served study's bonus check plays with random answers.
CHECK_PLAYS = 3


def bonus_problems(study: Study, plays: int = CHECK_PLAYS) -> list[str]:
    """Bonus rules that name a value no game of their role records, found before anyone enters:
    each game a participant is seated in is played up to ``plays`` times (its first specs) with
    random answers in every seat (nothing is called), and a rule's names are looked up among the
    values (:func:`~.settings.bonus_values`) those games record for the role."""
    from ..core.agents import RandomAnswers
    from ..core.game import Prompts
    from ..core.table import Table

    s = web_settings(study)
    recorded: dict[str, set[str]] = defaultdict(set)
    played: Counter = Counter()
    for n, spec in enumerate(study.iter_specs()):
        if n > 20_000:
            break
        people = {r for r, m in spec.seats.items() if study.models[m].is_human}
        for role in sorted(people):
            if played[(spec.game, role)] >= plays:
                continue
            played[(spec.game, role)] += 1
            cls = study.game_class(spec.game)
            config = cls.Config(**spec.config)
            game = cls(config, Prompts(cls.prompt_dir), {r: f"Player {chr(65 + i)}" for i, r in enumerate(spec.seats)}, people=people)
            table = Table({r: RandomAnswers() for r in cls.active_roles(config)}, seed=spec.seed, nature_seed=spec.nature_seed)
            outcome = asyncio.run(game.play(table))
            # a value the game leaves empty in this play (a gain without a deal) is one it records
            recorded[role] |= set(bonus_values(_filled(outcome), _filled(game.metrics(outcome)), role=role))
    out = []
    per_role = isinstance(s.bonus, dict)
    for role in sorted(recorded):
        rule = s.bonus_rule(role)
        missing = sorted(_names(rule) - recorded[role])
        if missing:
            where = f"for {role}" if per_role else "(every role)"
            known = ", ".join(sorted(recorded[role])) or "nothing"
            out.append(f"bonus rule {rule!r} {where} names {', '.join(missing)}, which no game of {role} records (it records: {known}): nobody would be paid by it")
    return out


def _filled(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` with empty numbers (None, NaN) as 0, also one level down: the names a game
    records, whatever one play of it happened to leave empty."""

    def fill(v: Any) -> Any:
        return 0.0 if v is None or (isinstance(v, float) and v != v) else v

    return {k: ({kk: fill(vv) for kk, vv in v.items()} if isinstance(v, dict) else fill(v)) for k, v in (values or {}).items()}


def start_problems(study: Study) -> list[str]:
    """What ``agora serve`` refuses to start with (:func:`scale_problems`,
    :func:`bonus_problems`): the protocol errors a rehearsal names, found without a participant."""
    return scale_problems(study) + bonus_problems(study)

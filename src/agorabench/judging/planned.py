"""``agora plan STUDY --judge MODEL --taxonomy FILE``: the judge pass over a study's messages,
priced before the run, beside the run's own cost.

The messages a pass would code after the run are those of the study's design:

- **stored**: the finished games' messages that this judge has not coded with this taxonomy and
  prompt version (as ``agora judge --dry-run`` counts them);
- **to play**: per kind of game (game, configuration, which seats are scripted by which
  strategy; at most :data:`~agorabench.core.plan.MAX_KINDS` per game and seating pattern, the
  rest at their mean) ``samples`` sample plays as ``agora plan`` plays them (stand-ins in the
  language-model seats, nothing is called), read by the game family's ``messages`` reader. A
  scripted seat's message is priced at its sample text; a language model's at its output per
  call (``--output-tokens``, else the bound) x 4 characters: its whole answer as the message.

Both are priced by one function, :func:`agorabench.judging.judge.plan`."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

from ..core.game import Prompts
from ..core.plan import MAX_KINDS, SAMPLES, Plan, _hashed_embed, _output_per_call, stand_in
from ..core.study import GameSpec, Study, StudyError
from ..core.table import Table
from ..families import UnknownGame, message_reader, strategies
from ..loop import run as run_loop
from ..store import judgements as table
from ..store.store import Store
from .judge import JudgePlan, judge_entry, plan
from .messages import collect
from .prompt import PROMPT_VERSION
from .taxonomy import load_taxonomy

#: Characters a token is taken to be (the plan's measure: characters / 4).
CHARS_PER_TOKEN = 4

Sample = dict[str, dict[str, list[float]]]  # role -> message kind -> [messages, characters of scripted text]


def _reader(game: str) -> Any:
    try:
        return message_reader(game)
    except UnknownGame:
        return None


async def _sample(study: Study, spec: GameSpec, samples: int, prompts: Prompts) -> Sample:
    """Mean messages per role and kind over ``samples`` sample plays of ``spec``'s kind, with the
    characters of the scripted seats' texts (a language model's seat counts messages only)."""
    game_cls = study.game_class(spec.game)
    config = game_cls.Config(**spec.config)
    entries = {role: study.models[m] for role, m in spec.seats.items()}
    names = {role: e.seat_label(i) for i, (role, e) in enumerate(entries.items())}
    known = strategies(spec.game)
    reader = _reader(spec.game)
    out: Sample = {}
    played = 0
    for k in range(samples):
        players = {}
        for role in game_cls.active_roles(config):
            entry = entries[role]
            if entry.is_strategy and entry.model_spec.name not in known:
                raise StudyError(f"game {spec.game!r} has no strategy {entry.model_spec.name!r}; known: {', '.join(f'strategy/{k}' for k in sorted(known))}")
            players[role] = known[entry.model_spec.name](**entry.params) if entry.is_strategy else stand_in(spec.game, role, game_cls.plan_stand_in)
        nature = None if spec.nature_seed is None else spec.nature_seed + k
        play = Table(players, seed=spec.seed + k, max_retries=study.file.max_retries, nature_seed=nature, embed=_hashed_embed, max_turns=game_cls.max_turns(config))
        try:
            await game_cls(config, prompts, names).play(play)
        except Exception:  # a sample that cannot finish: the others stand for it (as the run's plan)
            continue
        played += 1
        for turn in play.turns:
            for kind, text in reader({"phase": turn.phase, "action": turn.action}):
                held = out.setdefault(turn.role, {}).setdefault(kind, [0.0, 0.0])
                held[0] += 1
                if entries[turn.role].is_strategy:
                    held[1] += len(text)
    return {role: {kind: [v / played for v in held] for kind, held in kinds.items()} for role, kinds in out.items()} if played else {}


def _kind(study: Study, spec: GameSpec) -> tuple[str, str, tuple[tuple[str, str], ...]]:
    """As the run's plan groups games: game, configuration, which seats which strategy plays."""
    pattern = tuple((role, name if study.models[name].is_strategy else "") for role, name in spec.seats.items())
    return spec.game, json.dumps(spec.config, sort_keys=True), pattern


async def _to_play(study: Study, done: set[str], samples: int, output_tokens: float | None, kinds: set[str] | None) -> tuple[dict[str, tuple[float, float]], int]:
    """The messages of the games a run would play (design less ``done``, less games with a
    person in a seat), by message kind: (how many, characters of their texts); and how many
    games that is (games of a family without messages count none)."""
    firsts: dict[Any, GameSpec] = {}
    counts: Counter[Any] = Counter()  # (kind, seats) -> games
    for spec in study.iter_specs():
        if spec.id in done or study.has_human(spec) or _reader(spec.game) is None:
            continue
        kind = _kind(study, spec)
        firsts.setdefault(kind, spec)
        counts[kind, tuple(sorted(spec.seats.items()))] += 1
    by_pattern: dict[Any, list[Any]] = {}
    for kind in firsts:
        by_pattern.setdefault((kind[0], kind[2]), []).append(kind)
    sampled: dict[Any, Sample] = {}
    prompts: dict[str, Prompts] = {}
    for key, group in by_pattern.items():
        if len(group) > MAX_KINDS:
            group = random.Random(json.dumps([key[0], key[1], study.file.seed])).sample(group, MAX_KINDS)
        for kind in group:
            spec = firsts[kind]
            if spec.game not in prompts:
                prompts[spec.game] = Prompts(study.game_class(spec.game).prompt_dir, study.prompt_dir)
            sampled[kind] = await _sample(study, spec, samples, prompts[spec.game])
    means: dict[Any, Sample] = {}
    for key, group in by_pattern.items():
        got = [sampled[k] for k in group if k in sampled]
        mean: Sample = {}
        for s in got:
            for role, per in s.items():
                for mk, (n, chars) in per.items():
                    held = mean.setdefault(role, {}).setdefault(mk, [0.0, 0.0])
                    held[0] += n / len(got)
                    held[1] += chars / len(got)
        means[key] = mean
    out: dict[str, list[float]] = {}
    games = 0
    for (kind, seats), n in counts.items():
        games += n
        sample = sampled.get(kind, means[kind[0], kind[2]])
        for role, per in sample.items():
            entry = study.models[dict(seats)[role]]
            for mk, (count, chars) in per.items():
                if kinds is not None and mk not in kinds:
                    continue
                if not entry.is_strategy:  # a language model's message: its whole answer
                    chars = count * _output_per_call(entry, study.file.seed, output_tokens) * CHARS_PER_TOKEN
                held = out.setdefault(mk, [0.0, 0.0])
                held[0] += count * n
                held[1] += chars * n
    return {k: (v[0], v[1]) for k, v in out.items()}, games


def judge_plans(study: Study, db: str | None, judges: list[str], taxonomy_source: str, kinds: list[str] | None = None, samples: int = SAMPLES, output_tokens: float | None = None, prices: dict[str, float] | None = None) -> list[JudgePlan]:
    """Each judge's pass over the study's messages once the run is done: the stored ones it has
    not coded and those of the games still to play (see the module's docstring), at the judge's
    entry's prices or ``prices`` (``price_input``, ``price_output``). The database is only read
    (a missing file: nothing is stored yet)."""
    taxonomy = load_taxonomy(taxonomy_source)
    if len(set(judges)) != len(judges):
        raise StudyError("a --judge is given twice")
    entries = [judge_entry(j, study.models).model_copy(update=prices or {}) for j in judges]
    wanted = set(kinds) if kinds else None
    design = {spec.id for spec in study.iter_specs()}
    stored: list = []
    done: set[str] = set()
    coded: dict[str, set[str]] = {e.name: set() for e in entries}
    if db is not None and ("://" in str(db) or Path(db).exists()):
        store = Store(db, read_only=True)
        try:
            done = store.done_ids(study.name) & design
            stored = collect(store, study.name, done, wanted) if done else []
            if stored:
                coded = {e.name: table.judged_ids(store.engine, study.name, e.name, taxonomy.digest, PROMPT_VERSION) for e in entries}
        finally:
            store.dispose()
    planned, games = run_loop(_to_play(study, done, samples, output_tokens, wanted))
    out = []
    for entry in entries:
        todo = [m for m in stored if m.id not in coded[entry.name]]
        out.append(plan(entry, taxonomy, todo, len(stored) - len(todo), planned=planned, games=games))  # as `agora judge` prices it
    return out


def judge_lines(run: Plan, judged: list[JudgePlan]) -> list[str]:
    """The judge lines of ``agora plan``: one per judge, then the run and the judges together."""
    lines = [p.line() for p in judged]
    if any(p.priced for p in judged):
        total = run.cost + sum(p.dollars for p in judged)
        lines.append(f"run and judge{'s' if len(judged) > 1 else ''}: ${run.cost:,.4f} + ≤ ${sum(p.dollars for p in judged):,.4f} = ≤ ${total:,.4f}")
    return lines

"""The conformance suite: what every registered game must do, checked the same way for each
(``agora conformance [GAME ...]``; ``tests/test_conformance.py`` runs it for every game).

Each check plays the game's quick configuration (its manifest's ``examples`` entry) at a
:class:`~agorabench.core.table.Table`, the only door between rules and players:

- ``roles``: ``roles(config)`` are distinct non-empty names, passive roles among them, at least
  one role asked;
- ``strategies``: every registered strategy, seated in each role it plays (``Strategy.plays``;
  empty: any) beside the game's other strategies, finishes the game and never gives an answer
  the rules reject;
- ``instructions``: ``Game.instructions()`` tells each role the system message it starts the
  game with, without playing it;
- ``prompts``: no message of those games runs two sentences together ("to Bob.There are");
  every question marks where its answer format begins (``{{ format_begins }}`` in its
  template), which a person's page leaves out (the form replaces it); the parts of every message
  (:meth:`~agorabench.core.table.Table.parts`) join to it, and no mark reaches a player, a
  stored turn or the outcome;
- ``random``: players that answer every field with a random value of its type (as a weak model
  would) never crash the game: it ends with an outcome, and every rejected answer is a recorded
  invalid turn with the game's fallback;
- ``deterministic``: one seating and seed played twice gives identical prompts, replies, actions,
  outcome and metrics (the scripted seating and one with a random player);
- ``outcome``: the outcome is JSON data, ``metrics(outcome)`` maps names to numbers, and
  ``describe(outcome, role)`` gives each role's results page sentences;
- ``actions``: every action the strategies took, written in its own answer format, parses back
  to itself, and its answer format and grammar are described;
- ``report``: a small scripted study of the game runs into a fresh SQLite store, and its report
  and export are written with the family's sections (a section may say it could not be
  computed on so few games, never fail).

Within one :func:`run` each seating is played once (seed 1) and that game is shared by the
checks that read it (``strategies``, ``instructions``, ``prompts``, ``outcome``, ``actions``,
and ``deterministic`` as its first play), since they read it and never change it; a check
called on its own plays its own games.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from . import families
from .core.actions import Action
from .core.agents import RandomAnswers
from .core.game import Prompts
from .core.table import FORMAT, Player, Reply, Table, TurnRecord, TurnRequest

#: Seeds each randomised check plays.
SEEDS = (1, 2, 3)


class RandomPlayer(RandomAnswers):
    """Answers each field with a random value of its JSON-schema type, written in the action's
    answer format after a line of reasoning (:class:`~agorabench.core.agents.RandomAnswers`)."""

    preface = "Let me think.\n"


@dataclass
class Played:
    """One game played by :func:`play`."""

    outcome: dict[str, Any]
    metrics: dict[str, Any]
    turns: list[TurnRecord]
    asked: set[type[Action]]
    #: What the players were shown that breaks the parts rule (see ``check_prompts``).
    problems: list[str]


def config_of(game: str) -> Any:
    """The quick configuration of ``game`` (its manifest's example)."""
    return families.load_game(game).Config(**families.examples()[game])


def play(game: str, players: dict[str, Player], seed: int = 1, config: Any = None) -> Played:
    """Play one game of ``game`` with ``players`` by role (every active role), default prompts."""
    cls = families.load_game(game)
    config = config if config is not None else config_of(game)
    asked: set[type[Action]] = set()
    problems: list[str] = []
    seen = {role: _Watch(player, asked, problems) for role, player in players.items()}
    table = Table(seen, seed=seed, max_retries=1)
    instance = cls(config, Prompts(cls.prompt_dir), names={})
    outcome = asyncio.run(instance.play(table))
    return Played(outcome, instance.metrics(outcome), list(table.turns), asked, problems)


class _Watch:
    """A player that notes the action types it is asked for, and what breaks the parts rule:
    parts that do not join to their message, a mark a player sees, a first ask without an
    answer format."""

    def __init__(self, player: Player, asked: set[type[Action]], problems: list[str]) -> None:
        self.player, self.asked, self.problems = player, asked, problems

    async def act(self, request: TurnRequest) -> Reply:
        self.asked.add(request.action_type)
        joined = ["".join(p.text for p in parts) for parts in request.parts]
        if joined != [m["content"] for m in request.messages]:
            self.problems.append(f"the parts of the messages to {request.role} do not join to the messages")
        if any(_MARKED.search(m["content"]) for m in request.messages):
            self.problems.append(f"a message to {request.role} still carries a mark")
        if request.attempt == 0 and not any(p.kind == FORMAT for p in (request.parts[-1] if request.parts else ())):
            self.problems.append(f"the {request.prompt.phase or 'first'} question to {request.role} marks no answer format ({{{{ format_begins }}}})")
        return await self.player.act(request)


#: The marks of :mod:`agorabench.core.speech`, which must never leave the table.
_MARKED = re.compile("[\ue000-\ue002]")


def _plays(factory: Any, role: str) -> bool:
    roles = getattr(factory, "plays", ())
    return not roles or role in roles


def _first_for(known: dict[str, Any], role: str) -> Callable[[], Player]:
    """The first registered strategy that plays ``role`` (a random player if none does)."""
    return next((f for f in known.values() if _plays(f, role)), RandomPlayer)


def scripted_players(game: str, config: Any) -> dict[str, Player]:
    """A fresh player for every active role of ``game`` under ``config``: its first strategy
    that plays the role."""
    known = families.strategies(game)
    return {role: _first_for(known, role)() for role in families.load_game(game).active_roles(config)}


def seatings(game: str) -> list[tuple[str, str, dict[str, Callable[[], Player]]]]:
    """(strategy, role, player factories by role) for every registered strategy in every
    active role it plays; the other roles get the first strategy that plays them (a random
    player if none does). Call each factory for a fresh player."""
    cls = families.load_game(game)
    active = cls.active_roles(config_of(game))
    known = families.strategies(game)
    out = []
    for name, factory in known.items():
        for role in active:
            if not _plays(factory, role):
                continue
            factories: dict[str, Callable[[], Player]] = {}
            for other in active:
                factories[other] = factory if other == role else _first_for(known, other)
            out.append((name, role, factories))
    return out


def _seat(factories: dict[str, Callable[[], Player]]) -> dict[str, Player]:
    return {role: make() for role, make in factories.items()}


#: The games of the :func:`run` in progress, by (game, seating index): each seating played once
#: at seed 1 and read by every check of that run. None outside a run (each check plays its own).
_SHARED: dict[tuple[str, int], Played] | None = None


@contextmanager
def _sharing() -> Iterator[None]:
    """Share the seatings' games between the checks run inside (see :func:`seating_plays`)."""
    global _SHARED
    outer, _SHARED = _SHARED, ({} if _SHARED is None else _SHARED)
    try:
        yield
    finally:
        _SHARED = outer


def _seating_play(game: str, index: int, factories: dict[str, Callable[[], Player]]) -> Played:
    """Seating ``index`` of ``game`` played at seed 1 with fresh players: inside a run, once for
    all its checks (a play that raises is not kept, so each check that needs it fails)."""
    if _SHARED is None:
        return play(game, _seat(factories), seed=1)
    key = (game, index)
    if key not in _SHARED:
        _SHARED[key] = play(game, _seat(factories), seed=1)
    return _SHARED[key]


def seating_plays(game: str) -> Iterator[tuple[str, str, Played]]:
    """(strategy, role, its game at seed 1) for every seating of :func:`seatings`, played one
    after the other (inside a :func:`run`, each at most once for all its checks)."""
    for index, (name, role, factories) in enumerate(seatings(game)):
        yield name, role, _seating_play(game, index, factories)


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


def check_roles(game: str) -> None:
    cls = families.load_game(game)
    config = config_of(game)
    roles = cls.roles(config)
    _check(len(roles) > 0 and len(set(roles)) == len(roles) and all(isinstance(r, str) and r for r in roles), f"roles {roles!r} are not distinct non-empty names")
    _check(set(cls.passive_roles) <= set(roles) or not cls.passive_roles, f"passive roles {cls.passive_roles!r} are not among the roles {roles!r}")
    _check(len(cls.active_roles(config)) > 0, "no role is ever asked")
    _check(cls.name == game, f"the class says it is {cls.name!r}, the manifest registers it as {game!r}")


def check_strategies(game: str) -> None:
    plays = seatings(game)
    _check(bool(plays), "the game registers no scripted strategy (the conformance, report and theory checks need at least one)")
    for name, role, played in seating_plays(game):
        bad = [t for t in played.turns if t.role == role and not t.valid]
        _check(not bad, f"strategy/{name} as {role} gave an answer the rules reject: {bad[0].error if bad else ''}")


def check_instructions(game: str) -> None:
    cls = families.load_game(game)
    config = config_of(game)
    told = asyncio.run(cls(config, Prompts(cls.prompt_dir), names={}).instructions(seed=1))
    _check(bool(told.formats), "instructions(): no question was asked")
    played = _seating_play(game, 0, seatings(game)[0][2])
    for role in cls.active_roles(config):
        first = next((t.messages for t in played.turns if t.role == role), None)
        if first and first[0]["role"] == "system":
            _check(told.system.get(role) == first[0]["content"], f"instructions() tells {role} something else than its first system message in play")


#: Two sentences written together: an end of sentence directly followed by the next one's capital
#: (a template's whitespace control that ate a line break), e.g. "to Bob.There are".
RUN_TOGETHER = re.compile(r"[a-z0-9)\]][.!?][A-Z]")


def check_prompts(game: str) -> None:
    for _name, _role, played in seating_plays(game):
        _check(not played.problems, played.problems[0] if played.problems else "")
        stored = json.dumps([[vars(t) for t in played.turns], played.outcome], ensure_ascii=False, default=repr)
        _check(not _MARKED.search(stored), "a mark reached a stored turn or the outcome")
        for turn in played.turns:
            for message in turn.messages:
                found = RUN_TOGETHER.search(message["content"])
                _check(found is None, f"a {message['role']} message to {turn.role} runs two sentences together: {message['content'][max(0, found.start() - 30) : found.end() + 20]!r}" if found else "")


def check_random(game: str) -> None:
    active = families.load_game(game).active_roles(config_of(game))
    for seed in SEEDS:
        played = play(game, {role: RandomPlayer() for role in active}, seed=seed)
        _check(isinstance(played.outcome, dict), f"seed {seed}: the outcome is not a dict")
        for t in played.turns:
            _check(t.valid or t.error, f"seed {seed}: turn {t.index} of {t.role} is invalid without a recorded error")


def check_deterministic(game: str) -> None:
    """The first seating at seed 1 (inside a run, its game the other checks read, played earlier
    in the process) against a second play of it; then that seating with random players in the
    other roles, played twice at seed 7."""
    _name, role, factories = seatings(game)[0]
    with_random = {r: (make if r == role else RandomPlayer) for r, make in factories.items()}
    for seated, seed in ((factories, 1), (with_random, 7)):
        first = _seating_play(game, 0, factories) if seated is factories else play(game, _seat(seated), seed=seed)
        second = play(game, _seat(seated), seed=seed)
        _check(_dump(first.turns) == _dump(second.turns), "two plays of one seating and seed differ in their turns")
        _check(_json(first.outcome) == _json(second.outcome), "two plays of one seating and seed differ in their outcome")
        _check(_json(first.metrics) == _json(second.metrics), "two plays of one seating and seed differ in their metrics")


def _dump(turns: list[TurnRecord]) -> str:
    return _json([{"role": t.role, "phase": t.phase, "messages": t.messages, "raw": t.raw, "action": t.action, "valid": t.valid, "error": t.error} for t in turns])


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=repr)


def check_outcome(game: str) -> None:
    for name, role, played in seating_plays(game):
        try:
            json.dumps(played.outcome)
        except (TypeError, ValueError) as exc:
            raise AssertionError(f"strategy/{name} as {role}: the outcome is not JSON data ({exc})") from None
        _check(isinstance(played.metrics, dict), "metrics(outcome) is not a dict")
        for key, value in played.metrics.items():
            _check(isinstance(key, str) and isinstance(value, (int, float)) and not isinstance(value, bool) or value is None, f"metric {key!r} = {value!r} is not a number")
        cls = families.load_game(game)
        config = config_of(game)
        for seat in cls.active_roles(config):
            told = cls(config, Prompts(cls.prompt_dir), names={}).describe(played.outcome, seat)
            _check(isinstance(told, list) and bool(told) and all(isinstance(x, str) and x.strip() for x in told), f"describe(outcome, {seat!r}) gives no sentences for a person's results page: {told!r}")


def check_actions(game: str) -> None:
    asked: set[type[Action]] = set()
    for _name, _role, played in seating_plays(game):
        asked |= played.asked
        for t in played.turns:
            if t.action is None:
                continue
            cls = next((a for a in played.asked if set(a.model_fields) == set(t.action)), None)
            if cls is None:
                continue
            action = cls.model_validate(t.action)
            _check(cls.parse(action.render()) == action, f"{cls.__name__}: {action.render()!r} does not parse back to itself")
    _check(bool(asked), "no action was asked for")
    for cls in asked:
        _check(bool(cls.format_instructions().strip()), f"{cls.__name__} describes no answer format")
        _check(cls.grammar().startswith("root ::="), f"{cls.__name__} has no decoding grammar")


def study_text(game: str, games: int = 4) -> str:
    """A small scripted study of ``game`` (TOML): its first seating of strategies, ``games`` repeats."""
    known = families.strategies(game)
    _name, _role, factories = seatings(game)[0]
    seats = {role: next(n for n, f in known.items() if f is make) for role, make in factories.items()}
    for role in families.load_game(game).roles(config_of(game)):
        seats.setdefault(role, next(iter(seats.values())))  # a passive role names a model too
    models = "\n".join(f'[[models]]\nname = "{n}"\nspec = "strategy/{n}"\n' for n in sorted(set(seats.values())))
    seat_line = ", ".join(f'{role} = "{name}"' for role, name in seats.items())
    fixed = "\n".join(f"{k} = {json.dumps(v)}" for k, v in families.examples()[game].items())
    return f'name = "conformance_{game.replace(".", "_")}"\ngame = "{game}"\nmatchups = "seats"\nrepeats = {games}\nseats = [{{ {seat_line} }}]\n\n[fixed]\n{fixed}\n\n{models}'


def check_report(game: str) -> None:
    from .analysis.frames import export
    from .analysis.report import build_report
    from .core.runner import run_study
    from .core.study import load_study
    from .store.store import Store

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "study.toml"
        path.write_text(study_text(game), encoding="utf-8")
        study = load_study(path)
        db = Path(folder) / "c.db"
        stats, _ = run_study(study, db, progress=False)
        _check(stats.done > 0 and stats.errors == 0, f"the scripted study stored {stats.done} games and {stats.errors} errors")
        store = Store(str(db))
        try:
            page = build_report(store, study.name, Path(folder) / "report").read_text(encoding="utf-8")
            rows = export(store, study.name, "turns", "csv", str(Path(folder) / "turns.csv"))
        finally:
            store.dispose()
        _check(game in page, "the report does not name the game")
        _check(rows > 0, "the export wrote no rows")
        if families.report_sections(game) is not None:
            _check(page.count("<section>") > 2, "the report has none of the family's sections")
            _check(bool(families.definitions(game).strip()), "the family's report defines no metrics (DEFINITIONS)")


#: Every check by name, in the order they run.
CHECKS: dict[str, Callable[[str], None]] = {
    "roles": check_roles,
    "strategies": check_strategies,
    "instructions": check_instructions,
    "prompts": check_prompts,
    "random": check_random,
    "deterministic": check_deterministic,
    "outcome": check_outcome,
    "actions": check_actions,
    "report": check_report,
}


def run(games: list[str] | None = None, checks: list[str] | None = None) -> list[tuple[str, str, str]]:
    """Run ``checks`` (default all) on ``games`` (default every registered game); returns
    (game, check, problem) for every failed check (empty when all pass)."""
    failed = []
    for game in games or families.game_names():
        families.family_of(game)  # an unknown game is an error, not a pass
        with _sharing():
            for name in checks or list(CHECKS):
                try:
                    CHECKS[name](game)
                except Exception as exc:  # noqa: BLE001 - a crash is a failed check, reported with its game
                    failed.append((game, name, f"{type(exc).__name__}: {exc}".splitlines()[0][:400]))
    return failed

"""The conformance suite: what every registered game must do, checked the same way for each
(``agora conformance [GAME ...]``; ``tests/house/test_conformance.py`` runs it for every game, and
``tests/conformance/test_conformance_warnings_tier.py`` holds each to no unexplained warning).

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

The suite runs on a class: :func:`check` (``check(game_cls, config, strategies)``, as
PettingZoo's ``api_test``) needs no registry, and :func:`run` is it over registered games
(their manifests' examples and strategies; ``report`` needs the registry and is left out of
an unregistered class's checks, with a warning). Every check gets the :class:`Subject` and the
:class:`Plays` of its call: each seating is played once (seed 1) for every check that reads it
(``strategies``, ``instructions``, ``prompts``, ``outcome``, ``actions``, and ``deterministic``
as its first play); a check called with fresh plays plays its own games.

A play is bounded: by the game's ``max_turns(config)`` (the table ends it past that; an
undeclared bound is :data:`UNDECLARED_TURNS` and a warning) and by the clock
(:data:`TIME_LIMIT` seconds: ``asyncio.wait_for``, and an alarm a second later for a play that
never awaits). A game that does not end fails in one line and its other checks are not run. ``outcome`` and ``random`` check every metric against ``metric_ranges(config)``.

Warnings (printed, never failures), each under a key: a number placeholder written as a quoted
string in a JSON answer format (``bare_numbers:ACTION.FIELD``; the action's ``bare_numbers =
True`` writes it bare), a question without ``instructions=`` (``instructions:PHASE``), an
undeclared ``max_turns`` (``max_turns``) or metric range (``metric_range:METRIC``), and roles asked
one after another in one phase with the same observation (``ask_each:PHASE``), where
``table.ask_each`` fits. Asks made together are told apart from asks made one after another by
yielding to the event loop once inside each ask (a scripted player answers without awaiting).

Exemptions: a warning that cannot be fixed without changing what a model is shown or the order
of its asks (and so the games' outcomes) is declared on the game class, with its reason, in
:data:`EXEMPTIONS_ATTRIBUTE` (``conformance_exemptions = {"instructions:summary": "why"}``; a key
without ``:SUBJECT`` covers every warning of its kind). An exempted warning is listed as
exempt with that reason, not as a warning; an exemption without a reason, of an unknown kind, or
that matches no warning of a run of every check (``report`` aside) is itself a warning (a
stale exemption does not linger).
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import signal
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from . import families
from .core.actions import Action
from .core.agents import RandomAnswers
from .core.game import Game, GameConfig, Prompts
from .core.table import FORMAT, Player, Reply, Table, TurnLimit, TurnRecord, TurnRequest

#: Seeds each randomised check plays.
SEEDS = (1, 2, 3)

#: The most seconds one play may take (a game that waits for ever fails instead of hanging).
TIME_LIMIT = 120.0

#: The turn bound of a play of a game that declares no ``max_turns``.
UNDECLARED_TURNS = 10_000

#: The game class attribute that declares exempted warnings: {warning key: the reason}.
EXEMPTIONS_ATTRIBUTE = "conformance_exemptions"

#: The kinds of warning keys (see the module docstring); ``report`` is not exemptible (it says
#: which check did not run).
WARNING_KINDS = ("bare_numbers", "instructions", "max_turns", "metric_range", "ask_each")


class RandomPlayer(RandomAnswers):
    """Answers each field with a random value of its JSON-schema type, written in the action's
    answer format after a line of reasoning (:class:`~agorabench.core.agents.RandomAnswers`)."""

    preface = "Let me think.\n"


class NoEnd(AssertionError):
    """A play did not end: past its turn bound or its time limit. The game's other checks are
    not run (each would wait as long)."""


@dataclass
class Played:
    """One game played by :func:`play`."""

    outcome: dict[str, Any]
    metrics: dict[str, Any]
    turns: list[TurnRecord]
    asked: set[type[Action]]
    #: What the players were shown that breaks the parts rule (see ``check_prompts``).
    problems: list[str]
    #: What the warnings tier notes, as (key, text) (see the module docstring).
    notes: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class Subject:
    """What the checks run on: a game class, the configuration it is played with, its scripted
    strategies by name, and the warnings noted so far."""

    cls: type[Game]
    config: GameConfig
    strategies: dict[str, Callable[..., Player]]
    #: The configuration as fields (the report check's study file); default: ``config``'s.
    example: dict[str, Any] | None = None
    time_limit: float = TIME_LIMIT
    warnings: list[str] = field(default_factory=list)
    #: Warnings the class exempts, each with its declared reason.
    exempted: list[str] = field(default_factory=list)
    #: The exemption keys that matched a warning.
    used: set[str] = field(default_factory=set)

    @property
    def name(self) -> str:
        return self.cls.name or self.cls.__name__

    @property
    def exemptions(self) -> dict[str, str]:
        """The class's declared exemptions (:data:`EXEMPTIONS_ATTRIBUTE`): {key: reason}."""
        return dict(getattr(self.cls, EXEMPTIONS_ATTRIBUTE, None) or {})

    def warn(self, text: str, key: str = "") -> None:
        """Note a warning; one whose ``key`` (or its kind) the class exempts with a reason is
        listed as exempt instead."""
        declared = self.exemptions
        matched = next((k for k in (key, key.split(":", 1)[0]) if k and k in declared and str(declared[k]).strip()), None)
        if matched is not None:
            self.used.add(matched)
            line = f"{text} (exempted by the class: {declared[matched].strip()})"
            if line not in self.exempted:
                self.exempted.append(line)
        elif text not in self.warnings:
            self.warnings.append(text)

    def audit_exemptions(self, complete: bool) -> None:
        """Warn of exemptions without a reason or of an unknown kind, and, after a ``complete``
        run (every check), of those that matched no warning."""
        for key, reason in self.exemptions.items():
            if key.split(":", 1)[0] not in WARNING_KINDS:
                self.warn(f"exemption {key!r} is of no known kind ({', '.join(WARNING_KINDS)})")
            elif not str(reason or "").strip():
                self.warn(f"exemption {key!r} gives no reason")
            elif complete and key not in self.used:
                self.warn(f"exemption {key!r} matches no warning: remove it")


def config_of(game: str) -> Any:
    """The quick configuration of ``game`` (its manifest's example)."""
    return families.load_game(game).Config(**families.examples()[game])


def play(game: str | type[Game], players: dict[str, Player], seed: int = 1, config: Any = None, time_limit: float = TIME_LIMIT) -> Played:
    """Play one game of ``game`` (a registered name or a class) with ``players`` by role (every
    active role), default prompts, within its ``max_turns`` and ``time_limit`` seconds
    (:class:`NoEnd` otherwise)."""
    cls = families.load_game(game) if isinstance(game, str) else game
    config = config if config is not None else (config_of(game) if isinstance(game, str) else cls.Config())
    asked: set[type[Action]] = set()
    problems: list[str] = []
    notes: list[tuple[str, str]] = []
    flight = [0]
    log: list[tuple[str, str, bool, str]] = []
    seen = {role: _Watch(player, asked, problems, notes, flight, log) for role, player in players.items()}
    bound = cls.max_turns(config)
    table = Table(seen, seed=seed, max_retries=1, max_turns=bound if bound is not None else UNDECLARED_TURNS)
    instance = cls(config, Prompts(cls.prompt_dir), names={})
    try:
        with _alarm(time_limit + ALARM_GRACE):
            outcome = asyncio.run(asyncio.wait_for(instance.play(table), time_limit))
    except TurnLimit as exc:
        raise NoEnd(f"seed {seed}: {exc} ({len(table.turns)} turns played)") from None
    except (asyncio.TimeoutError, _Rang):
        raise NoEnd(f"seed {seed}: the play did not end within {time_limit:g} s ({len(table.turns)} turns played)") from None
    notes += _sequential(log)
    return Played(outcome, instance.metrics(outcome), list(table.turns), asked, problems, notes)


#: Seconds past a play's time limit before the alarm stops a play that never yields to the loop.
ALARM_GRACE = 1.0


class _Rang(BaseException):
    """The alarm of :func:`_alarm` (not an ``Exception``: a game's own handlers do not catch it)."""


@contextmanager
def _alarm(seconds: float) -> Iterator[None]:
    """Raise :class:`_Rang` after ``seconds``, for a play that loops without ever awaiting
    (``asyncio.wait_for`` cannot stop it). Only in the main thread of a POSIX process, and only
    when no earlier alarm (a test runner's timeout) is due first; that one is restored after."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return
    left, interval = signal.getitimer(signal.ITIMER_REAL)
    if left and left <= seconds:
        yield
        return

    def ring(signum: int, frame: Any) -> None:
        raise _Rang()

    previous = signal.signal(signal.SIGALRM, ring)
    started = time.monotonic()
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if left:
            signal.setitimer(signal.ITIMER_REAL, max(0.001, left - (time.monotonic() - started)), interval)


class _Watch:
    """A player that notes the action types it is asked for, and what breaks the parts rule:
    parts that do not join to their message, a mark a player sees, a first ask without an
    answer format; and for the warnings, a question without ``instructions`` and the order of
    the asks (whether another was in flight)."""

    def __init__(self, player: Player, asked: set[type[Action]], problems: list[str], notes: list[tuple[str, str]], flight: list[int], log: list[tuple[str, str, bool, str]]) -> None:
        self.player, self.asked, self.problems, self.notes, self.flight, self.log = player, asked, problems, notes, flight, log

    async def act(self, request: TurnRequest) -> Reply:
        self.asked.add(request.action_type)
        joined = ["".join(p.text for p in parts) for parts in request.parts]
        if joined != [m["content"] for m in request.messages]:
            self.problems.append(f"the parts of the messages to {request.role} do not join to the messages")
        if any(_MARKED.search(m["content"]) for m in request.messages):
            self.problems.append(f"a message to {request.role} still carries a mark")
        if request.attempt == 0 and not any(p.kind == FORMAT for p in (request.parts[-1] if request.parts else ())):
            self.problems.append(f"the {request.prompt.phase or 'first'} question to {request.role} marks no answer format ({{{{ format_begins }}}})")
        if request.attempt == 0:
            if not request.prompt.instructions:
                phase = request.prompt.phase or "first"
                self.notes.append((f"instructions:{phase}", f"the {phase} question passes no instructions= (a condensed transcript cannot leave out its task)"))
            seen = {k: v for k, v in request.prompt.observation.items() if k != "role"}
            self.log.append((request.role, request.prompt.phase, self.flight[0] > 0, json.dumps(seen, sort_keys=True, default=repr)))
        self.flight[0] += 1
        try:
            # one turn of the loop while in flight: an ask made together with this one (ask_each)
            # reaches its player now and sees it in flight, even when players answer at once
            await asyncio.sleep(0)
            return await self.player.act(request)
        finally:
            self.flight[0] -= 1


def _sequential(log: list[tuple[str, str, bool, str]]) -> list[tuple[str, str]]:
    """Two roles asked one after the other in one phase, neither while the other was in flight,
    with the same observation (the second has not learnt the first's answer): ``ask_each``
    fits."""
    out = []
    for (r1, ph1, c1, o1), (r2, ph2, c2, o2) in zip(log, log[1:]):
        if r1 != r2 and ph1 == ph2 and not (c1 or c2) and o1 == o2:
            out.append((f"ask_each:{ph1 or 'first'}", f"the {ph1 or 'first'} question is asked of one role after another with the same observation ({r1}, then {r2}): table.ask_each asks them at once"))
            break  # once a play
    return out


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


def _seatings(s: Subject) -> list[tuple[str, str, dict[str, Callable[[], Player]]]]:
    active = s.cls.active_roles(s.config)
    out = []
    for name, factory in s.strategies.items():
        for role in active:
            if not _plays(factory, role):
                continue
            factories: dict[str, Callable[[], Player]] = {}
            for other in active:
                factories[other] = factory if other == role else _first_for(s.strategies, other)
            out.append((name, role, factories))
    return out


def seatings(game: str) -> list[tuple[str, str, dict[str, Callable[[], Player]]]]:
    """(strategy, role, player factories by role) for every registered strategy in every
    active role it plays; the other roles get the first strategy that plays them (a random
    player if none does). Call each factory for a fresh player."""
    return _seatings(subject(game))


def _seat(factories: dict[str, Callable[[], Player]]) -> dict[str, Player]:
    return {role: make() for role, make in factories.items()}


class Plays:
    """The games of one :func:`check`, handed to every check: each seating played at seed 1 at
    most once (a play that raises is not kept, so each check that needs it fails)."""

    def __init__(self, s: Subject) -> None:
        self.subject = s
        self.seatings = _seatings(s)
        self._kept: dict[int, Played] = {}

    def play(self, players: dict[str, Player], seed: int) -> Played:
        """A fresh play of the subject (through the module's :func:`play`)."""
        s = self.subject
        return play(s.cls, players, seed=seed, config=s.config, time_limit=s.time_limit)

    def seating(self, index: int) -> Played:
        if index not in self._kept:
            played = self.play(_seat(self.seatings[index][2]), seed=1)
            self._note(played)
            self._kept[index] = played
        return self._kept[index]

    def each(self) -> Iterator[tuple[str, str, Played]]:
        """(strategy, role, its game at seed 1) for every seating, one after the other."""
        for index, (name, role, _factories) in enumerate(self.seatings):
            yield name, role, self.seating(index)

    def _note(self, played: Played) -> None:
        for key, text in played.notes:
            self.subject.warn(text, key)


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


def check_roles(s: Subject, plays: Plays) -> None:
    roles = s.cls.roles(s.config)
    _check(len(roles) > 0 and len(set(roles)) == len(roles) and all(isinstance(r, str) and r for r in roles), f"roles {roles!r} are not distinct non-empty names")
    _check(set(s.cls.passive_roles) <= set(roles) or not s.cls.passive_roles, f"passive roles {s.cls.passive_roles!r} are not among the roles {roles!r}")
    _check(len(s.cls.active_roles(s.config)) > 0, "no role is ever asked")


def _check_registered_name(game: str) -> Callable[[Subject, Plays], None]:
    def check(s: Subject, plays: Plays) -> None:
        check_roles(s, plays)
        _check(s.cls.name == game, f"the class says it is {s.cls.name!r}, the manifest registers it as {game!r}")

    return check


def check_strategies(s: Subject, plays: Plays) -> None:
    _check(bool(plays.seatings), "the game registers no scripted strategy (the conformance, report and theory checks need at least one)")
    for name, role, played in plays.each():
        bad = [t for t in played.turns if t.role == role and not t.valid]
        _check(not bad, f"strategy/{name} as {role} gave an answer the rules reject: {bad[0].error if bad else ''}")


def check_instructions(s: Subject, plays: Plays) -> None:
    told = asyncio.run(s.cls(s.config, Prompts(s.cls.prompt_dir), names={}).instructions(seed=1))
    _check(bool(told.formats), "instructions(): no question was asked")
    played = plays.seating(0)
    for role in s.cls.active_roles(s.config):
        first = next((t.messages for t in played.turns if t.role == role), None)
        if first and first[0]["role"] == "system":
            _check(told.system.get(role) == first[0]["content"], f"instructions() tells {role} something else than its first system message in play")


#: Two sentences written together: an end of sentence directly followed by the next one's capital
#: (a template's whitespace control that ate a line break), e.g. "to Bob.There are".
RUN_TOGETHER = re.compile(r"[a-z0-9)\]][.!?][A-Z]")


def check_prompts(s: Subject, plays: Plays) -> None:
    for _name, _role, played in plays.each():
        _check(not played.problems, played.problems[0] if played.problems else "")
        stored = json.dumps([[vars(t) for t in played.turns], played.outcome], ensure_ascii=False, default=repr)
        _check(not _MARKED.search(stored), "a mark reached a stored turn or the outcome")
        for turn in played.turns:
            for message in turn.messages:
                found = RUN_TOGETHER.search(message["content"])
                _check(found is None, f"a {message['role']} message to {turn.role} runs two sentences together: {message['content'][max(0, found.start() - 30) : found.end() + 20]!r}" if found else "")


def _check_ranges(s: Subject, metrics: dict[str, Any], where: str) -> None:
    """Every metric within ``metric_ranges(config)`` (NaN, undefined, passes); a metric without
    a declared range is a warning."""
    ranges = s.cls.metric_ranges(s.config)
    for key, value in metrics.items():
        if key not in ranges:
            s.warn(f"metric {key!r} has no declared range (metric_ranges)", f"metric_range:{key}")
            continue
        if not isinstance(value, (int, float)) or isinstance(value, bool) or math.isnan(value):
            continue
        lo, hi = ranges[key]
        _check((lo is None or value >= lo - 1e-9) and (hi is None or value <= hi + 1e-9), f"{where}: metric {key!r} = {value!r} is outside its declared range [{lo}, {hi}]")


def check_random(s: Subject, plays: Plays) -> None:
    active = s.cls.active_roles(s.config)
    for seed in SEEDS:
        played = plays.play({role: RandomPlayer() for role in active}, seed=seed)
        _check(isinstance(played.outcome, dict), f"seed {seed}: the outcome is not a dict")
        for t in played.turns:
            _check(t.valid or t.error, f"seed {seed}: turn {t.index} of {t.role} is invalid without a recorded error")
        if isinstance(played.metrics, dict):
            _check_ranges(s, played.metrics, f"random players, seed {seed}")


def check_deterministic(s: Subject, plays: Plays) -> None:
    """The first seating at seed 1 (the game the other checks read) against a second play of
    it; then that seating with random players in the other roles, played twice at seed 7."""
    _name, role, factories = plays.seatings[0]
    with_random = {r: (make if r == role else RandomPlayer) for r, make in factories.items()}
    for seated, seed in ((factories, 1), (with_random, 7)):
        first = plays.seating(0) if seated is factories else plays.play(_seat(seated), seed=seed)
        second = plays.play(_seat(seated), seed=seed)
        _check(_dump(first.turns) == _dump(second.turns), "two plays of one seating and seed differ in their turns")
        _check(_json(first.outcome) == _json(second.outcome), "two plays of one seating and seed differ in their outcome")
        _check(_json(first.metrics) == _json(second.metrics), "two plays of one seating and seed differ in their metrics")


def _dump(turns: list[TurnRecord]) -> str:
    return _json([{"role": t.role, "phase": t.phase, "messages": t.messages, "raw": t.raw, "action": t.action, "valid": t.valid, "error": t.error} for t in turns])


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=repr)


def check_outcome(s: Subject, plays: Plays) -> None:
    for name, role, played in plays.each():
        try:
            json.dumps(played.outcome)
        except (TypeError, ValueError) as exc:
            raise AssertionError(f"strategy/{name} as {role}: the outcome is not JSON data ({exc})") from None
        _check(isinstance(played.metrics, dict), "metrics(outcome) is not a dict")
        for key, value in played.metrics.items():
            _check(isinstance(key, str) and isinstance(value, (int, float)) and not isinstance(value, bool) or value is None, f"metric {key!r} = {value!r} is not a number")
        _check_ranges(s, played.metrics, f"strategy/{name} as {role}")
        for seat in s.cls.active_roles(s.config):
            told = s.cls(s.config, Prompts(s.cls.prompt_dir), names={}).describe(played.outcome, seat)
            _check(isinstance(told, list) and bool(told) and all(isinstance(x, str) and x.strip() for x in told), f"describe(outcome, {seat!r}) gives no sentences for a person's results page: {told!r}")


#: A JSON answer format's placeholder written as a string: ``"send": "`` (a number asked as text).
_QUOTED = '"{name}": "'


def check_actions(s: Subject, plays: Plays) -> None:
    asked: set[type[Action]] = set()
    for _name, _role, played in plays.each():
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
    for cls in sorted(asked, key=lambda c: c.__name__):
        text = cls.format_instructions()
        _check(bool(text.strip()), f"{cls.__name__} describes no answer format")
        _check(cls.grammar().startswith("root ::="), f"{cls.__name__} has no decoding grammar")
        if getattr(cls, "response_format", "") == "json":
            for name, info in cls.model_fields.items():
                if info.annotation in (int, float) and _QUOTED.format(name=name) in text:
                    s.warn(f"{cls.__name__}: the number {name!r} is written as a quoted string in its JSON answer format ({_QUOTED.format(name=name)}...): set `bare_numbers = True` on the action to write it bare (<...>)", f"bare_numbers:{cls.__name__}.{name}")


def study_text(game: str, games: int = 4, s: Subject | None = None) -> str:
    """A small scripted study of ``game`` (TOML): its first seating of strategies, ``games`` repeats."""
    s = s or subject(game)
    _name, _role, factories = _seatings(s)[0]
    seats = {role: next(n for n, f in s.strategies.items() if f is make) for role, make in factories.items()}
    for role in s.cls.roles(s.config):
        seats.setdefault(role, next(iter(seats.values())))  # a passive role names a model too
    models = "\n".join(f'[[models]]\nname = "{n}"\nspec = "strategy/{n}"\n' for n in sorted(set(seats.values())))
    seat_line = ", ".join(f'{role} = "{name}"' for role, name in seats.items())
    example = s.example if s.example is not None else s.config.model_dump(mode="json", exclude_defaults=True)
    fixed = "\n".join(f"{k} = {json.dumps(v)}" for k, v in example.items())
    return f'name = "conformance_{game.replace(".", "_")}"\ngame = "{game}"\nmatchups = "seats"\nrepeats = {games}\nseats = [{{ {seat_line} }}]\n\n[fixed]\n{fixed}\n\n{models}'


def check_report(s: Subject, plays: Plays) -> None:
    from .analysis.frames import export
    from .analysis.report import build_report
    from .core.runner import run_study
    from .core.study import load_study
    from .store.store import Store

    game = s.cls.name
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "study.toml"
        path.write_text(study_text(game, s=s), encoding="utf-8")
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
CHECKS: dict[str, Callable[[Subject, Plays], None]] = {
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


@dataclass
class Result:
    """What :func:`check` found: (check, problem) for every failed check, the warnings, and
    the warnings the class exempts (each with its reason)."""

    failed: list[tuple[str, str]]
    warnings: list[str]
    exempted: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return not self.failed


def _registered(cls: type[Game]) -> bool:
    try:
        return families.load_game(cls.name) is cls
    except Exception:  # noqa: BLE001 - not registered under its name
        return False


def check(game_cls: type[Game], config: GameConfig | dict[str, Any] | None = None, strategies: dict[str, Callable[..., Player]] | None = None, checks: list[str] | None = None, time_limit: float = TIME_LIMIT, _subject: Subject | None = None, _extra: dict[str, Callable[[Subject, Plays], None]] | None = None) -> Result:
    """Run ``checks`` (default all) on the game class ``game_cls`` played under ``config`` (a
    configuration or its fields; default the class's defaults) with ``strategies`` (name ->
    strategy class; default none: random players only, and the checks that seat strategies
    fail), no registry needed; ``report`` runs only for a class registered under its name (a
    warning otherwise). A play past its bounds fails once, in one line, and ends the checks."""
    s = _subject or _make_subject(game_cls, config, strategies, time_limit)
    plays = Plays(s)
    found = {**CHECKS, **(_extra or {})}
    failed: list[tuple[str, str]] = []
    if s.cls.max_turns(s.config) is None:
        s.warn(f"max_turns is not declared: plays are bounded at {UNDECLARED_TURNS} turns and {s.time_limit:g} s", "max_turns")
    names = checks or list(CHECKS)
    ended = True
    for name in names:
        if name == "report" and not _registered(s.cls):
            s.warn("report: not run (the class is not registered under its name; the report check plays a study through the registry)")
            continue
        try:
            found[name](s, plays)
        except NoEnd as exc:
            failed.append((name, f"the game does not end: {exc}; its other checks were not run"))
            ended = False
            break
        except Exception as exc:  # noqa: BLE001 - a crash is a failed check, reported with its game
            failed.append((name, f"{type(exc).__name__}: {exc}".splitlines()[0][:400]))
    s.audit_exemptions(complete=ended and set(CHECKS) - {"report"} <= set(names))  # report never warns of a kind
    return Result(failed, list(s.warnings), list(s.exempted))


def _make_subject(game_cls: type[Game], config: Any, strategies: Any, time_limit: float, example: dict[str, Any] | None = None) -> Subject:
    config = config if isinstance(config, GameConfig) else game_cls.Config(**(config or {}))
    return Subject(game_cls, config, dict(strategies or {}), example, time_limit)


def subject(game: str, time_limit: float = TIME_LIMIT) -> Subject:
    """The registered ``game`` as the checks' subject: its class, example and strategies."""
    example = families.examples()[game]
    return _make_subject(families.load_game(game), example, families.strategies(game), time_limit, example)


def run(games: list[str] | None = None, checks: list[str] | None = None, warnings: list[tuple[str, str]] | None = None, time_limit: float = TIME_LIMIT, exempted: list[tuple[str, str]] | None = None) -> list[tuple[str, str, str]]:
    """Run ``checks`` (default all) on ``games`` (default every registered game), each through
    :func:`check` with its manifest's example and strategies; returns (game, check, problem) for
    every failed check (empty when all pass); (game, warning) go to ``warnings`` and (game,
    exempted warning with its reason) to ``exempted`` when given."""
    failed = []
    for game in games or families.game_names():
        families.family_of(game)  # an unknown game is an error, not a pass
        try:
            s = subject(game, time_limit)
        except Exception as exc:  # noqa: BLE001 - a class or example that cannot be loaded fails its game
            failed.append((game, "roles", f"{type(exc).__name__}: {exc}".splitlines()[0][:400]))
            continue
        result = check(s.cls, checks=checks, _subject=s, _extra={"roles": _check_registered_name(game)})
        failed += [(game, name, why) for name, why in result.failed]
        if warnings is not None:
            warnings += [(game, w) for w in result.warnings]
        if exempted is not None:
            exempted += [(game, w) for w in result.exempted]
    return failed

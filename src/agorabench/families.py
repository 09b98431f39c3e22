"""The one registry of game families: what a family is called, which games it holds, and where
its strategies, report sections, profile rows, log importers, analyses and stored-data audits
live.

A family registers once, in a manifest: a module ``family.py`` in its package under
:mod:`agorabench.games` that defines ``FAMILY = Family(...)``, or, for a family shipped in
another distribution, an entry point in the group ``agorabench.families`` whose value names such
an object (``"mypkg.mygame.family:FAMILY"``). Every place in agorabench that needs something of a
game asks this module; nothing else names a game or imports one by string.

A manifest refers to code by ``"module:attribute"`` strings, so that reading the manifests (for
``agora games``, the study validator or the CLI's choices) imports no game rules, reports or
pandas. A module name starting with ``.`` is relative to the manifest's package.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib.metadata import entry_points
from typing import Any, Callable, TYPE_CHECKING

if TYPE_CHECKING:  # the registry imports no game, core or analysis module at load time
    from .core.game import Game, StrategyFactory

#: Entry-point group of families shipped outside agorabench.
ENTRY_POINTS = "agorabench.families"


class UnknownGame(ValueError):
    """A game, importer or analysis name that no registered family declares."""


@dataclass(frozen=True)
class Family:
    """One game family's manifest. Every ``str`` value is ``"module:attribute"``.

    - ``games``: game name (``family.game``, or the family name for a one-game family) -> the
      :class:`~agorabench.core.game.Game` subclass;
    - ``strategies``: game name -> a dict of strategy name -> player factory
      (``strategy/NAME`` in a study's model list);
    - ``reports``: game name -> ``sections(done_games, turns) -> list[Section]``; the module may
      define ``DEFINITIONS`` (HTML of its metric definitions) or, when it reports several games,
      ``definitions(games) -> HTML`` given those of its games a study holds (so a study carries
      only the definitions of the games it played);
    - ``profiles``: game name -> ``profile_rows(games, turns) -> DataFrame`` (``agora profile``);
    - ``importers``: log format -> ``import_logs(folder, study)`` yielding records (``agora import``);
    - ``analyses``: kind -> ``analyze(games, spec, out, reference, reps) -> str`` (``agora analyze``);
    - ``audits``: name -> ``problems(config, transcripts) -> list[str]`` over the stored
      transcripts of the game named in ``audit_game`` (``agora check``);
    - ``examples``: game name -> a small configuration (dict of parameters) that plays quickly,
      used by the conformance suite (``agora conformance``);
    - ``embeddings``: game name -> the name of its configuration's field that names an
      embeddings backend (``"minilm"``, ``PROVIDER/MODEL[@URL]``; empty: none), which the runner
      opens and hands the game's table (``Table.embed``); a game not listed uses none;
    - ``journeys``: game name -> how a person plays it in the page tests (a dict: ``role`` the
      person's seat, ``config`` the parameters, ``opponent`` the strategy in every other seat,
      ``answers`` form field -> value typed, ``turns`` the person's turns the game then takes,
      ``phases`` phase -> how many of them have it). Everything is optional: a game without one
      is played with its example configuration, its first role and first strategy, and each
      form filled with its first choice or a number within its bounds (:func:`journey`);
    - ``references``: game name -> a :class:`~agorabench.analysis.yardstick.Yardstick`: the
      human reference data of the game (distributions of people's decisions and published
      values, each with its source and licence) and the measures that compare models with them;
      reports and ``agora profile`` add the comparison for every game that has one;
    - ``messages``: game name -> ``messages(turn) -> list[(kind, text)]``: the free-text messages
      a stored turn (a dict with ``phase``, ``role`` and ``action``) holds, each with its kind
      (``chat``, ``agenda``, ...), which ``agora judge`` codes; a game not listed has none;
    - ``report_docs``: report module (as ``reports`` names it, ``".report"``) -> one line saying
      what its definitions define: its row of the Reports table of ``docs/analysis.md``
      (:func:`definitions_table` writes that table).
    """

    name: str
    description: str
    games: dict[str, str]
    strategies: dict[str, str] = field(default_factory=dict)
    reports: dict[str, str] = field(default_factory=dict)
    profiles: dict[str, str] = field(default_factory=dict)
    importers: dict[str, str] = field(default_factory=dict)
    analyses: dict[str, str] = field(default_factory=dict)
    audits: dict[str, str] = field(default_factory=dict)
    audit_game: str = ""
    examples: dict[str, dict[str, Any]] = field(default_factory=dict)
    journeys: dict[str, dict[str, Any]] = field(default_factory=dict)
    embeddings: dict[str, str] = field(default_factory=dict)
    references: dict[str, str] = field(default_factory=dict)
    messages: dict[str, str] = field(default_factory=dict)
    report_docs: dict[str, str] = field(default_factory=dict)
    #: Package the manifest lives in (set by discovery; resolves relative module names).
    package: str = ""


def _manifests() -> list[Family]:
    """Every manifest: those under ``agorabench.games`` first (in name order), then entry points."""
    from . import games

    found: list[Family] = []
    for info in sorted(pkgutil.iter_modules(games.__path__), key=lambda m: m.name):
        if not info.ispkg:
            continue
        package = f"{games.__name__}.{info.name}"
        try:
            module = importlib.import_module(f"{package}.family")
        except ModuleNotFoundError as exc:
            if exc.name == f"{package}.family":
                continue  # a package without a manifest is not a family
            raise
        found.append(_placed(getattr(module, "FAMILY"), package))
    for point in entry_points(group=ENTRY_POINTS):
        family = point.load()
        found.append(_placed(family, point.value.split(":")[0].rpartition(".")[0]))
    return found


def _placed(family: Any, package: str) -> Family:
    if not isinstance(family, Family):
        raise TypeError(f"the manifest of {package} is not an agorabench.families.Family")
    return family if family.package else replace(family, package=package)


@lru_cache(maxsize=1)
def families() -> dict[str, Family]:
    """Registered families by name; a game name declared by two families is an error."""
    out: dict[str, Family] = {}
    owner: dict[str, str] = {}
    for family in _manifests():
        if family.name in out:
            raise ValueError(f"two game families are named {family.name!r}")
        for game in family.games:
            if game in owner:
                raise ValueError(f"game {game!r} is declared by families {owner[game]!r} and {family.name!r}")
            owner[game] = family.name
        out[family.name] = family
    return out


#: Rows of the Reports table that belong to no family (the comparison with people).
_SHARED_REPORTS = (("every game with human data", "analysis/likeness.py", "the behavioural Turing score (win, tie, lose, likeness), W1, KS, published values (section \"People as the yardstick\")"),)


def definitions_table() -> str:
    """The Reports table of ``docs/analysis.md`` (Markdown), made from the manifests: one row per
    report module of each shipped family (family, module, what ``report_docs`` says it defines;
    a family's name gets the module's when it has several), then the shared rows."""
    rows = ["| family | module | defines |", "|---|---|---|"]
    for family in families().values():
        if not family.package.startswith("agorabench.games."):
            continue  # a family from another distribution documents itself
        modules = sorted({target.partition(":")[0] for target in family.reports.values()})
        for module in modules:
            label = family.name if len(modules) == 1 else f"{family.name} ({module.lstrip('.')})"
            path = (family.package.removeprefix("agorabench.") + module).replace(".", "/") + ".py"
            rows.append(f"| {label} | `{path}` | {family.report_docs.get(module, '')} |")
    rows += [f"| {a} | `{b}` | {c} |" for a, b, c in _SHARED_REPORTS]
    return "\n".join(rows) + "\n"


def game_names() -> list[str]:
    """Every registered game, sorted."""
    return sorted(g for f in families().values() for g in f.games)


def family_of(game: str) -> Family:
    """The family that declares ``game``; :class:`UnknownGame` (listing the known games) otherwise."""
    for family in families().values():
        if game in family.games:
            return family
    raise UnknownGame(f"unknown game {game!r}; known games: {', '.join(game_names())}")


def _resolve(family: Family, target: str) -> Any:
    """The object a ``"module:attribute"`` string of ``family`` names."""
    module, _, attr = target.partition(":")
    if module.startswith("."):
        module = family.package + module
    return getattr(importlib.import_module(module), attr)


def load_game(name: str) -> type[Game]:
    """The game class registered under ``name``."""
    family = family_of(name)
    try:
        return _resolve(family, family.games[name])
    except ModuleNotFoundError as exc:
        raise UnknownGame(f"game {name!r} is not available in this installation ({exc})") from None


def strategies(game: str) -> dict[str, StrategyFactory]:
    """The scripted strategies of ``game`` by name (empty when it has none)."""
    family = family_of(game)
    target = family.strategies.get(game)
    return dict(_resolve(family, target)) if target else {}


def embeddings_field(game: str) -> str | None:
    """The field of ``game``'s configuration that names its embeddings backend (the manifest's
    ``embeddings``); None for a game that uses none."""
    return family_of(game).embeddings.get(game)


def _hook(game: str, table: str) -> Callable[..., Any] | None:
    try:
        family = family_of(game)
    except UnknownGame:
        return None  # a stored game of a family this installation lacks: no family sections
    target = getattr(family, table).get(game)
    return _resolve(family, target) if target else None


def message_reader(game: str) -> Callable[..., list] | None:
    """``messages(turn) -> [(kind, text)]`` of the game's stored turns (the manifest's
    ``messages``), or None for a game whose players write no messages."""
    return _hook(game, "messages")


def report_sections(game: str) -> Callable[..., list] | None:
    """``sections(done_games, turns)`` of the game's report, or None."""
    return _hook(game, "reports")


def definitions(*games: str) -> str:
    """The metric definitions of the games' report modules, each module once in the order its
    first game comes: ``definitions(its games among games)`` where the module has that function
    (only the definitions of the games present), else its ``DEFINITIONS`` HTML; '' when none
    defines any."""
    modules: dict[str, list[str]] = {}
    for game in dict.fromkeys(games):
        sections = report_sections(game)
        if sections is not None:
            modules.setdefault(sections.__module__, []).append(game)
    parts = []
    for module, present in modules.items():
        loaded = importlib.import_module(module)
        parts.append(str(loaded.definitions(present) if callable(getattr(loaded, "definitions", None)) else getattr(loaded, "DEFINITIONS", "")))
    return "\n".join(p for p in parts if p.strip())


def profile_hook(game: str) -> Callable[..., Any] | None:
    """``profile_rows(games, turns)`` of the game's family for ``agora profile``, or None."""
    return _hook(game, "profiles")


def references(game: str) -> Any | None:
    """The game's :class:`~agorabench.analysis.yardstick.Yardstick` (human reference data and
    the measures compared with it), or None."""
    return _hook(game, "references")


def _named(table: str) -> dict[str, tuple[Family, str]]:
    return {name: (f, target) for f in families().values() for name, target in getattr(f, table).items()}


def importer_names() -> list[str]:
    """Log formats that ``agora import`` reads."""
    return sorted(_named("importers"))


def importer(fmt: str) -> Callable[..., Any]:
    """``import_logs(folder, study)`` of one log format."""
    found = _named("importers")
    if fmt not in found:
        raise UnknownGame(f"unknown import format {fmt!r}; known: {', '.join(sorted(found))}")
    return _resolve(*found[fmt])


def analyzer_names() -> list[str]:
    """Kinds of ``agora analyze``."""
    return sorted(_named("analyses"))


def analyzer(kind: str) -> Callable[..., str]:
    """The analysis function of one ``agora analyze`` kind."""
    found = _named("analyses")
    if kind not in found:
        raise UnknownGame(f"unknown analysis {kind!r}; known: {', '.join(sorted(found))}")
    return _resolve(*found[kind])


def audits() -> list[tuple[str, str, Callable[..., list[str]]]]:
    """Every stored-data audit as (name, game it reads, ``problems(config, transcripts)``)."""
    return [(name, f.audit_game, _resolve(f, target)) for f in families().values() for name, target in f.audits.items()]


def examples() -> dict[str, dict[str, Any]]:
    """A quick configuration of every game (its manifest's example, else the defaults)."""
    return {g: dict(f.examples.get(g, {})) for f in families().values() for g in f.games}


def journey(game: str) -> dict[str, Any]:
    """How a person plays ``game`` in the page tests: its manifest's ``journeys`` entry over the
    defaults (the example configuration, the game's first role, its first strategy in every
    other seat, no fixed answers, the number of turns not fixed)."""
    family = family_of(game)
    declared = dict(family.journeys.get(game, {}))
    config = declared.get("config", dict(family.examples.get(game, {})))
    if "role" not in declared:
        cls = load_game(game)
        declared["role"] = cls.roles(cls.Config(**config))[0]
    if "opponent" not in declared:
        names = sorted(strategies(game))
        if not names:
            raise UnknownGame(f"game {game!r} has no strategy to play a person's opponents; name one in its manifest's journeys")
        declared["opponent"] = names[0]
    return {"config": config, "answers": {}, "turns": None, "phases": {}, **declared}

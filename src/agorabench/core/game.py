"""Games: rules only. A game never does I/O, calls a model, reads the clock or global random
state; it talks to players through the :class:`~agorabench.core.table.Table` and draws
randomness from ``table.rng``.

A game module defines a subclass of :class:`Game` with a pydantic ``Config`` (frozen, with the
paper's defaults), ``roles(config)``, ``async play(table) -> outcome`` and a pure
``metrics(outcome) -> dict``. Its family's manifest (:mod:`agorabench.families`) registers it
and its scripted strategies.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import math
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar

import jinja2
from pydantic import BaseModel, ConfigDict

from .speech import FORMAT_MARK, quote_marked
from .table import FORMAT, Player, Reply, Table, TurnRequest, without


class GameConfig(BaseModel):
    """Base of every game's parameters: frozen and strict about unknown keys."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


StrategyFactory = Callable[..., Player]

#: A metric's range: (low, high), either end None when open.
Range = tuple[float | None, float | None]


@dataclass(frozen=True)
class PlanStandIn:
    """How the cost plan plays a language model's seat in a game whose length depends on play:
    the registered strategy ``strategy`` answers the decisions whose action is one of
    ``decides`` (its subclasses too), a random stand-in every other; ``why`` says, for the
    plan's basis, why that play lasts the whole game."""

    strategy: str
    decides: tuple[type, ...]
    why: str


class Game:
    """Base class of the rules of one game."""

    #: Registry key, e.g. ``envy.points``.
    name: ClassVar[str] = ""
    Config: ClassVar[type[GameConfig]] = GameConfig
    #: Folder with this game's default prompt templates.
    prompt_dir: ClassVar[Path | None] = None
    #: Roles that are named in prompts but never asked (e.g. an assumed peer).
    passive_roles: ClassVar[tuple[str, ...]] = ()
    #: What a person's turn that runs out of time becomes (their instructions page says so):
    #: ``"default"``, the game's default answer is played for them; ``"unanswered"``, the
    #: question counts as not answered (a game that asks with no fallback).
    on_timeout: ClassVar[str] = "default"
    #: For a game whose length depends on play (a commons ends when the resource collapses):
    #: the cost plan's stand-in in a language-model seat lets a registered strategy that plays the
    #: game to its full length take the decisions that decide the length (random play ends such
    #: a game at once; a model that keeps the resource plays every month). None: random play.
    plan_stand_in: ClassVar["PlanStandIn | None"] = None

    def __init__(self, config: GameConfig, prompts: "Prompts", names: dict[str, str] | None = None, people: frozenset[str] | set[str] = frozenset()) -> None:
        self.config = config
        self.prompts = prompts
        #: Display name of the model or person in each role, for prompts that name the peer.
        self.names = names or {}
        #: The roles a person plays (the runner and the web app say which): their texts come
        #: from the game's wording for people (:meth:`text`).
        self.people = frozenset(people)

    def text(self, role: str) -> "Prompts":
        """The templates that write what ``role`` reads: the wording for people
        (:meth:`Prompts.for_people`) when a person plays it, the game's own otherwise. Models
        always get the game's own templates, byte for byte."""
        return self.prompts.for_people() if role in self.people else self.prompts

    @classmethod
    def roles(cls, config: GameConfig) -> tuple[str, ...]:
        raise NotImplementedError

    @classmethod
    def active_roles(cls, config: GameConfig) -> tuple[str, ...]:
        return tuple(r for r in cls.roles(config) if r not in cls.passive_roles)

    async def play(self, table: Table) -> dict[str, Any]:
        raise NotImplementedError

    def metrics(self, outcome: dict[str, Any]) -> dict[str, float]:
        return {}

    @classmethod
    def max_turns(cls, config: GameConfig) -> int | None:
        """A bound on the decisions (turns, re-asks not counted) one play can take under
        ``config``, whatever the players answer: the table ends a play that asks for more
        (stored with status ``failed`` and the reason). None: not declared, no bound (the
        conformance suite warns, and plays it under its own bound and clock)."""
        return None

    @classmethod
    def metric_ranges(cls, config: GameConfig) -> dict[str, Range]:
        """Each metric's range under ``config``: name -> (low, high), an end None when open.
        The conformance suite checks every played metric against it, and the reports take
        their intervals' bounds from it (:meth:`ranges_over`). Default: none declared."""
        return {}

    @classmethod
    def ranges_over(cls, configs: Any) -> dict[str, Range]:
        """:meth:`metric_ranges` over several configurations (each a config or a dict of its
        fields; none: the default configuration) joined: the lowest low and the highest high of each metric (an open end
        anywhere stays open)."""
        out: dict[str, Range] = {}
        seen: set[str] = set()
        for config in list(configs) or [cls.Config()]:
            config = config if isinstance(config, GameConfig) else cls.Config(**config)
            key = config.model_dump_json()
            if key in seen:
                continue
            seen.add(key)
            for name, (lo, hi) in cls.metric_ranges(config).items():
                if name not in out:
                    out[name] = (lo, hi)
                else:
                    a, b = out[name]
                    out[name] = (None if a is None or lo is None else min(a, lo), None if b is None or hi is None else max(b, hi))
        return out

    def describe(self, outcome: dict[str, Any], role: str) -> list[str]:
        """What a person who played ``role`` is told when the game is over (the web app's results
        page): what happened and what it meant for them, in plain sentences. The default names
        the game's metrics; a game says more in its own words."""
        shown = [f"{k.replace('_', ' ')}: {v:.4g}" for k, v in self.metrics(outcome).items() if isinstance(v, (int, float)) and v == v]
        return ["The game is over."] + (["Its results: " + "; ".join(shown) + "."] if shown else [])

    async def instructions(self, seed: int = 0, nature_seed: int | None = None) -> Instructions:
        """What each active role is told before its first decision (its system message), and the
        answer-format instructions of the first question asked, without playing the game to the
        end and without calling any player. The default runs :meth:`play` with players that hold
        the game at its first question (every game sets its system messages before asking); a
        game whose instructions need no play may override it."""
        asked = asyncio.Event()
        formats: set[str] = set()

        class Hold:
            async def act(self, request: TurnRequest) -> Reply:
                formats.add(request.action_type.format_instructions())
                asked.set()
                await asyncio.Event().wait()  # until cancelled
                raise AssertionError("unreachable")

        table = Table({r: Hold() for r in self.active_roles(self.config)}, seed=seed, nature_seed=nature_seed)
        task = asyncio.create_task(self.play(table))
        waiter = asyncio.create_task(asked.wait())
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        for t in (task, waiter):
            t.cancel()
        await asyncio.gather(task, waiter, return_exceptions=True)
        system = {r: t[0]["content"] for r, t in table.transcripts.items() if t and t[0]["role"] == "system"}
        rules = {r: without(table.parts(r)[0], FORMAT).strip() for r in system}
        return Instructions(system, frozenset(formats), rules)


@dataclass(frozen=True)
class Instructions:
    """What :meth:`Game.instructions` returns: each role's system message, the answer-format
    instructions of the first question (which a person's form replaces), and the system messages
    without their answer-format part."""

    system: dict[str, str]
    formats: frozenset[str]
    #: Each role's system message without its answer-format part (what a person reads).
    rules: dict[str, str] = field(default_factory=dict)


#: How many rendered prompts each :class:`Prompts` keeps for reuse.
RENDER_MEMO = 4096


#: The subfolder of a prompt folder that holds its wording for people (:meth:`Prompts.for_people`).
PEOPLE_DIR = "people"


class _CompiledTemplates(jinja2.BytecodeCache):
    """Compiled template code shared by the :class:`Prompts` of one process (each runner, plan,
    conformance check and importer makes its own): a template is compiled once per file, then
    its code is reused while everything that decides the compiled code is what it was compiled
    with: the file's name, its source text (Jinja2's checksum of it), the environment's syntax
    settings, and the filters, tests and finalizer it knows (Jinja2 builds how each is called
    into the code, and folds constants through them), held as the objects themselves. At most
    ``limit`` templates are kept, the oldest dropped first."""

    def __init__(self, limit: int = 4096) -> None:
        self.limit = limit
        self._code: dict[tuple[Any, ...], tuple[str, Any]] = {}
        self._lock = threading.Lock()  # runners in several threads (the web app) compile at once

    @staticmethod
    def _key(bucket: Any) -> tuple[Any, ...]:
        """The bucket's key (the template's name and file) with all that shapes its code. The
        filters, tests, finalizer and code generator enter as objects, which the key holds (so
        no other object can take their place while it is kept), never by an address."""
        env = bucket.environment
        return (bucket.key, env.block_start_string, env.block_end_string, env.variable_start_string, env.variable_end_string,
                env.comment_start_string, env.comment_end_string, env.line_statement_prefix, env.line_comment_prefix,
                env.trim_blocks, env.lstrip_blocks, env.newline_sequence, env.keep_trailing_newline, env.optimized,
                env.autoescape, env.finalize, env.is_async, env.code_generator_class, env.policies.get("compiler.ascii_str"),
                tuple(sorted(env.extensions)), tuple(sorted(env.filters.items(), key=_first)), tuple(sorted(env.tests.items(), key=_first)))

    def load_bytecode(self, bucket: Any) -> None:
        got = self._code.get(self._key(bucket))
        if got is not None and got[0] == bucket.checksum:
            bucket.code = got[1]

    def dump_bytecode(self, bucket: Any) -> None:
        key = self._key(bucket)
        with self._lock:
            if key not in self._code and len(self._code) >= self.limit:
                self._code.pop(next(iter(self._code)))
            self._code[key] = (bucket.checksum, bucket.code)


def _first(pair: tuple[str, Any]) -> str:
    return pair[0]


_COMPILED = _CompiledTemplates()


class Prompts:
    """Prompt templates of one game: one Jinja2 file per prompt, looked up first in a user's
    variant folder (if any), then in the game's own folder.

    A folder's ``people/`` subfolder holds the wording for a person in a seat (a person is not
    told they are a language model, and reads what each choice means where a model reads an
    answer format): :meth:`for_people` looks there first and falls back to the same templates
    models get, so a game offers it one template at a time."""

    def __init__(self, default_dir: Path | None, variant_dir: Path | None = None, people: bool = False) -> None:
        folders = [str(p) for p in (variant_dir, default_dir) if p is not None]
        self.default_dir, self.variant_dir = default_dir, variant_dir
        self._people: Prompts | None = self if people else None
        self._digest: str | None = None
        self.version = self._version(folders)  # the people subfolders have no VERSION of their own
        if variant_dir is not None and not (Path(variant_dir) / "VERSION").exists():
            # a folder of one's own without a VERSION is not the game's templates: never stored
            # under the built-in version's name, but under a name its texts decide
            self.version = f"custom-{self.digest[:12]}"
        if people:
            folders = [str(Path(f) / PEOPLE_DIR) for f in folders] + folders
        self.env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(folders),
            undefined=jinja2.StrictUndefined,
            keep_trailing_newline=False,
            trim_blocks=True,
            lstrip_blocks=True,
            auto_reload=False,  # a study's templates do not change while it runs; no stat() per render
            bytecode_cache=_COMPILED,
        )
        self.env.filters["quote"] = quote_marked  # other players' words: cleaned, quoted, marked (core.speech)
        self.env.globals["format_begins"] = FORMAT_MARK  # where the answer-format part begins (core.speech)
        self._templates: dict[str, jinja2.Template] = {}
        self._rendered: dict[tuple[str, str], str] = {}

    def for_people(self) -> "Prompts":
        """These templates as a person reads them: each looked up first in the ``people/``
        subfolder of the variant folder, then of the game's folder, then as models get it.
        Made once and kept."""
        if self._people is None:
            self._people = Prompts(self.default_dir, self.variant_dir, people=True)
        return self._people

    @property
    def digest(self) -> str:
        """A SHA-256 (hex) of every template these prompts can render, for models and for
        people: each ``.j2`` file's path under its folder and text, the variant folder's file
        where both folders have one. Stored with each game, so that a template edited without
        a new ``VERSION`` is noticed (:meth:`agorabench.core.runner.Runner.prompt_changes`)."""
        if self._digest is None:
            found: dict[str, Path] = {}
            for folder in (self.variant_dir, self.default_dir):
                if folder is not None and Path(folder).is_dir():
                    for path in sorted(Path(folder).rglob("*.j2")):
                        found.setdefault(path.relative_to(folder).as_posix(), path)
            h = hashlib.sha256()
            for name in sorted(found):
                h.update(name.encode() + b"\x00" + found[name].read_bytes() + b"\x00")
            self._digest = h.hexdigest()
        return self._digest

    @staticmethod
    def _version(folders: list[str]) -> str:
        for folder in folders:
            path = Path(folder) / "VERSION"
            if path.exists():
                return path.read_text().strip()
        return "0"

    def render(self, name: str, /, **values: Any) -> str:
        """The template ``name`` filled with ``values``. Rendering is a pure function of the
        values, so recent results are reused when every value is plain data (text, numbers,
        booleans, None, and lists, tuples and dicts of them), keyed by the values themselves
        with their types (``1``, ``1.0``, ``True`` and ``"1"`` are four keys). A value of any other
        kind (a function, an object) is rendered every time: its repr says nothing of what it
        renders to, and a memory address that Python reuses once led to prompts meant for
        another agent, language or scenario."""
        key = _memo_key(name, values)
        text = self._rendered.get(key) if key is not None else None
        if text is None:
            template = self._templates.get(name)
            if template is None:
                template = self._templates[name] = self.env.get_template(f"{name}.j2")
            text = template.render(**values).strip()
            if key is not None:
                if len(self._rendered) >= RENDER_MEMO:
                    with contextlib.suppress(StopIteration, KeyError, RuntimeError):  # another thread's render evicting at once
                        self._rendered.pop(next(iter(self._rendered)))  # the oldest entry
                self._rendered[key] = text
        return text


class _Unmemoisable(Exception):
    """A render value that is not plain data."""


def _plain(value: Any) -> Any:
    """A hashable, type-tagged form of plain data; raises :class:`_Unmemoisable` otherwise.
    A scalar is ``(type name, value)``, a list or tuple ``(type name, items)``, a dict
    ``("dict", ((key, value), ...))`` in its order; subclasses of these types (a Markup string)
    are not plain. Texts inside a collection are tagged in place (the common leaf, no call)."""
    kind = type(value)
    if kind is float and not value:  # 0.0 and -0.0 are equal keys but render apart
        return ("float", value, math.copysign(1.0, value))
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return (kind.__name__, value)
    if kind is dict:
        return ("dict", tuple([(("str", k) if type(k) is str else _plain(k), ("str", v) if type(v) is str else _plain(v)) for k, v in value.items()]))
    if kind is list or kind is tuple:
        return (kind.__name__, tuple([("str", v) if type(v) is str else _plain(v) for v in value]))
    raise _Unmemoisable(kind.__name__)


def _memo_key(name: str, values: dict[str, Any]) -> tuple[Any, ...] | None:
    """The memo key of one render: the template name and every value in canonical form, or None
    when some value is not plain data (then the render is not memoised)."""
    try:
        return (name, tuple([(k, _plain(v)) for k, v in sorted(values.items())]))
    except _Unmemoisable:
        return None

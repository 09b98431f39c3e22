"""What a study will cost, before it is played (``agora plan``, ``agora run --dry-run``), and the
per-game estimate behind ``agora run --budget`` / ``--budget-tokens``.

The basis of the estimate:

- **The games**: those the run would play — the study's games (``--model`` applied) less those
  already done in the database, less games with a person in a seat (``agora serve`` plays them).
  Done games are skipped by the run, so their answers are never bought again; the response
  cache of another database (``--cache``) is not consulted.
- **Sample plays**: the games are grouped by *kind* — game, configuration, and which seats are
  scripted by which strategy (every language-model seat is one kind of seat). Each kind is played
  ``samples`` times (different seeds) with the study's own prompts, its scripted players in their
  seats and a stand-in in every language-model seat: for a game whose length depends on play
  (:attr:`~agorabench.core.game.Game.plan_stand_in`: a commons ends when its resource collapses,
  which random play does in the first month) a strategy that plays it to its full length takes
  the decisions that decide the length; else (and for every other decision) the game's
  registered ``random`` strategy where it has one for that role, else a player answering each
  field with a random value of its type. The basis says which. Nothing is called. Each turn of a
  language-model seat is one call (re-asks at an assumed rate of 0) whose input is every message
  it is shown, except a prompt that a model answering at temperature 0 was already asked in the
  same game: the response cache answers it. A kind with more configurations than
  :data:`MAX_KINDS` per game and seating pattern is sampled: :data:`MAX_KINDS` configurations
  drawn with a fixed seed, the others estimated by their mean.
- **Tokens**: characters / 4 of each message's text by default (no per-message overhead; a
  model's real tokenizer differs, English prose is about 4 characters a token);
  :func:`build_plan` takes any ``count_tokens`` (e.g. the whitespace words a test server
  reports). The stand-ins' answers are short, so later prompts of a model that writes long answers
  are longer than estimated.
- **Output**: the bound a call may use — ``max_tokens``, plus the reasoning budget for a reasoning
  model (:func:`agorabench.models.reasoning.output_limit` of what the run sends) — unless an
  assumed number of output tokens per call is given.
- **Money**: per model, input at ``price_input`` (no prompt-cache discount) and output at
  ``price_output`` (dollars per million tokens). A model of a provider's own API (no
  ``base_url``) without prices is warned about: its cost is shown as $0.
- **During a run** (the budget): once games of a kind (same game, configuration and seats) have
  finished, each next game of that kind is estimated at what they actually spent on average
  (:meth:`Plan.observe`); before that, of the same game and seating pattern; before that, the
  sample plays'.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

import sqlalchemy as sa

from ..families import strategies
from ..models.pricing import STANDARD, Pricing
from ..models.openai_compat import is_openai_api
from ..models.prompt_cache import CacheShare, anthropic_min_tokens, anthropic_share, openai_share
from ..models.reasoning import output_limit
from ..store.schema import games as games_table, turns as turns_table
from .game import PlanStandIn, Prompts
from .study import GameSpec, ModelEntry, Study, StudyError
from .agents import RandomAnswers
from .decoding import sent_settings
from .table import Player, Table, TurnRequest

#: Configurations sampled per game and seating pattern; beyond it the rest take their mean.
MAX_KINDS = 64
#: Sample plays per kind of game.
SAMPLES = 2

TokenCounter = Callable[[str], float]


def chars_over_4(text: str) -> float:
    """The default token measure: characters / 4."""
    return len(text) / 4


@dataclass
class Use:
    """Mean calls and input tokens of one role in one kind of game; of the input, the tokens a
    provider's prompt cache would serve (``cached``) and those written to it (``written``)."""

    calls: float = 0.0
    input: float = 0.0
    cached: float = 0.0
    written: float = 0.0
    #: The simulation behind ``cached`` and ``written`` (its limits are said in the basis).
    share: CacheShare | None = field(default=None, repr=False)


@dataclass
class ModelPlan:
    """One model's share of a plan."""

    name: str
    #: Output tokens counted per call (the bound, or the assumed figure).
    output_per_call: float
    price_input: float = 0.0
    price_output: float = 0.0
    games: int = 0
    calls: float = 0.0
    input_tokens: float = 0.0
    #: The tier its calls are billed at (``standard``, ``batch``, ``flex``, ...) and that tier's
    #: price of a prompt token read from the provider's cache (None: ``price_input``).
    tier: str = "standard"
    price_cached_input: float | None = None
    #: A prompt token written to the provider's cache costs this many times ``price_input``.
    write_multiplier: float = 1.0
    #: Of ``input_tokens``, those the provider's prompt cache would serve and those written to it.
    cached_input_tokens: float = 0.0
    cache_write_tokens: float = 0.0
    #: How the cached input was estimated (the provider's rules), or why it was not.
    cache_basis: str = ""
    #: The sample plays' prompt-cache simulation, all kinds together (for what limits it).
    cache_share: CacheShare | None = field(default=None, repr=False)
    #: Output tokens a call may use at most (``max_tokens`` plus any reasoning budget).
    output_bound: float = 0.0

    @property
    def worst_cost(self) -> float:
        """The cost with every call at its output bound."""
        return self.price(self.input_tokens, self.cached_input_tokens, self.cache_write_tokens, self.calls * self.output_bound)

    @property
    def output_tokens(self) -> float:
        return self.calls * self.output_per_call

    @property
    def tokens(self) -> float:
        return self.input_tokens + self.output_tokens

    def price(self, input_tokens: float, cached: float, written: float, output_tokens: float) -> float:
        """Dollars of that use at this model's tier: plain input, cache reads, cache writes
        (``write_multiplier`` x input) and output."""
        read = self.price_input if self.price_cached_input is None else self.price_cached_input
        plain = max(input_tokens - cached - written, 0.0)
        return (plain * self.price_input + cached * read + written * self.price_input * self.write_multiplier + output_tokens * self.price_output) / 1e6

    @property
    def cost(self) -> float:
        return self.price(self.input_tokens, self.cached_input_tokens, self.cache_write_tokens, self.output_tokens)


Kind = tuple[str, str, tuple[tuple[str, str], ...]]


@dataclass
class Plan:
    """What the run would play and what it would use, per model (see the module's docstring)."""

    study: str
    #: Games of the design (of this run's selection), already done, to play.
    total: int
    done: int
    todo: int
    models: dict[str, ModelPlan]
    #: The basis of the estimate, in a few sentences.
    basis: str
    #: Games with a person in a seat (played through ``agora serve``, not by the run).
    people: int = 0
    #: Lines a researcher should read (models without prices, sample plays that failed).
    warnings: list[str] = field(default_factory=list)
    #: Whether output tokens are the bound (False: an assumed figure per call).
    output_bound: bool = True
    #: Batch rounds the run needs (the longest chain of calls in a sample play of any game with
    #: a model in batch mode); 0 when no model is batched.
    rounds: int = 0
    _uses: dict[Kind, dict[str, Use]] = field(default_factory=dict, repr=False)
    _pattern_means: dict[tuple[str, tuple[tuple[str, str], ...]], dict[str, Use]] = field(default_factory=dict, repr=False)
    _kind_of: Callable[[GameSpec], Kind] | None = field(default=None, repr=False)
    _todo: Callable[[], Iterator[GameSpec]] | None = field(default=None, repr=False)
    #: What finished games spent, (games, dollars, tokens), by (kind, seats) and by (game, seating
    #: pattern, seats): see :meth:`observe`.
    _seen: dict[tuple[Any, ...], list[float]] = field(default_factory=dict, repr=False)

    @property
    def calls(self) -> float:
        return sum(m.calls for m in self.models.values())

    @property
    def input_tokens(self) -> float:
        return sum(m.input_tokens for m in self.models.values())

    @property
    def output_tokens(self) -> float:
        return sum(m.output_tokens for m in self.models.values())

    @property
    def tokens(self) -> float:
        return self.input_tokens + self.output_tokens

    @property
    def cost(self) -> float:
        return sum(m.cost for m in self.models.values())

    def _seen_keys(self, spec: GameSpec, kind: Kind) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        seats = tuple(sorted(spec.seats.items()))
        return (kind, seats), (kind[0], kind[2], seats)

    def observe(self, spec: GameSpec, cost: float, tokens: float) -> None:
        """Count what a finished game actually spent (dollars; prompt and completion tokens not
        answered from the response cache): each next game of its kind and seats is estimated
        at the mean of those (:meth:`game_estimate`)."""
        if self._kind_of is None:
            return
        for key in self._seen_keys(spec, self._kind_of(spec)):
            held = self._seen.setdefault(key, [0.0, 0.0, 0.0])
            held[0] += 1
            held[1] += cost
            held[2] += tokens

    def game_estimate(self, spec: GameSpec) -> tuple[float, float]:
        """(dollars, tokens) one game is expected to use: the mean of what finished games of its
        kind and seats spent (:meth:`observe`), else of its game and seating pattern with the same
        seats, else the calls and input of each language-model seat in the sample plays of its
        kind, with its model's output per call and prices."""
        if self._kind_of is None:
            return 0.0, 0.0
        kind = self._kind_of(spec)
        for key in self._seen_keys(spec, kind):
            seen = self._seen.get(key)
            if seen is not None:
                return seen[1] / seen[0], seen[2] / seen[0]
        uses = self._uses.get(kind) or self._pattern_means.get((kind[0], kind[2])) or {}
        cost = tokens = 0.0
        for role, name in spec.seats.items():
            use, model = uses.get(role), self.models.get(name)
            if use is None or model is None:
                continue
            out = use.calls * model.output_per_call
            tokens += use.input + out
            cost += model.price(use.input, use.cached, use.written, out)
        return cost, tokens

    def games_within(self, money: float | None = None, tokens: float | None = None, spent: tuple[float, float] = (0.0, 0.0)) -> int:
        """How many of the games to play, in the run's order, fit the budget after ``spent``
        (dollars, tokens), each counted at its estimate (a run with one game in flight at a
        time would start as many)."""
        if self._todo is None:
            return 0
        cost, used, n = spent[0], spent[1], 0
        for spec in self._todo():
            c, t = self.game_estimate(spec)
            if (money is not None and cost + c > money) or (tokens is not None and used + t > tokens):
                break
            cost, used, n = cost + c, used + t, n + 1
        return n

    @property
    def cached_input_tokens(self) -> float:
        return sum(m.cached_input_tokens for m in self.models.values())

    def lines(self) -> list[str]:
        """The plan as text: a head line, one row per model (with its tier and the input a
        prompt cache would serve, where any model has them), the total, the rounds of a batched
        study, the basis."""
        head = f"plan for study {self.study}: {self.todo:,} game(s) to play" + (f" ({self.done:,} of {self.total:,} already done)" if self.done else "")
        if self.people:
            head += f"; {self.people:,} game(s) with a person in a seat are left to `agora serve`"
        out_head = "output tokens (at most)" if self.output_bound else "output tokens (assumed)"
        tiers = any(m.tier != "standard" for m in self.models.values())
        cached = any(m.cached_input_tokens for m in self.models.values())
        rows = [("model", *(["tier"] if tiers else []), "games", "calls", "input tokens", *(["of them cached"] if cached else []), out_head, "cost")]
        for m in self.models.values():
            rows.append((m.name, *([m.tier] if tiers else []), f"{m.games:,}", f"{round(m.calls):,}", f"{round(m.input_tokens):,}", *([f"{round(m.cached_input_tokens):,}"] if cached else []), f"{round(m.output_tokens):,}", f"${m.cost:,.4f}"))
        rows.append(("total", *([""] if tiers else []), f"{self.todo:,}", f"{round(self.calls):,}", f"{round(self.input_tokens):,}", *([f"{round(self.cached_input_tokens):,}"] if cached else []), f"{round(self.output_tokens):,}", f"${self.cost:,.4f}"))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        table = ["  " + "  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(r, widths))) for r in rows]
        if not self.models:
            table = ["  no language model plays in these games: nothing to pay for"]
        batch = []
        if self.rounds:
            batch = [
                f"batch: {self.rounds:,} round(s), the longest chain of calls in a game (each round waits for its batch: most batches end within an hour, "
                f"a provider may take up to its 24-hour window: from some minutes a round to {self.rounds * 24:,} hours in all; re-asks add rounds)"
            ]
        worst = []
        if not self.output_bound and self.models:
            top = sum(m.worst_cost for m in self.models.values())
            worst = [f"worst case: ${top:,.4f} with every call at its output bound (max_tokens plus any reasoning budget)"]
        return [head, *table, *batch, *worst, f"basis: {self.basis}"]


# stand-ins -----------------------------------------------------------------------------------

def stand_in(game: str, role: str, full_length: PlanStandIn | None = None) -> Player:
    """The player that takes a language model's seat in a sample play: the game's ``random``
    strategy where it plays ``role``, else :class:`RandomAnswers`; for a game whose length
    depends on play (``full_length``, its :attr:`~agorabench.core.game.Game.plan_stand_in`),
    that game's strategy takes the decisions that decide the length (where it plays ``role``)."""
    known = strategies(game)
    factory = known.get("random")
    random_player: Player = factory() if factory is not None and role in (getattr(factory, "plays", ()) or (role,)) else RandomAnswers()
    if full_length is None:
        return random_player
    chosen = known.get(full_length.strategy)
    if chosen is None or role not in (getattr(chosen, "plays", ()) or (role,)):
        return random_player
    return _Lasting(chosen(), random_player, full_length.decides)


class _Lasting:
    """A stand-in that lets ``lasting`` answer the decisions of the action types ``decides`` and
    ``other`` every other decision."""

    def __init__(self, lasting: Player, other: Player, decides: tuple[type, ...]) -> None:
        self.lasting, self.other, self.decides = lasting, other, decides

    async def act(self, request: TurnRequest) -> Any:
        player = self.lasting if issubclass(request.action_type, self.decides) else self.other
        return await player.act(request)


def stand_in_basis(study: Study, games: set[str]) -> str:
    """What sits in the language-model seats of the sample plays of ``games``, in words."""
    full = {name: study.game_class(name).plan_stand_in for name in sorted(games)}
    full = {name: chosen for name, chosen in full.items() if chosen is not None}
    if not full:
        return "every language-model seat played by a random stand-in"
    shown = "; ".join(f"in {name}: {chosen.why}" for name, chosen in full.items())
    rest = sorted(games - set(full))
    return f"language-model seats played by a stand-in ({shown})" + (f"; in {', '.join(rest)} by a random stand-in" if rest else "")


async def _hashed_embed(texts: list[str]) -> list[list[float]]:
    """Vectors from a hash of each text: a sample play ranks memories without loading a model."""
    out = []
    for text in texts:
        digest = hashlib.sha256(text.encode()).digest()
        out.append([b / 255 - 0.5 for b in digest[:16]])
    return out


# the plan ------------------------------------------------------------------------------------


def unpriced(study: Study, names: set[str] | None = None) -> list[str]:
    """One line per model of a provider's own API (a hosted spec without ``base_url``) seated in
    the games (``names``; None: every model) whose entry sets no price: its cost shows as $0.
    Models at a ``base_url`` (a server of one's own) and the embedded model are taken as free."""
    out = []
    for name, entry in study.models.items():
        if names is not None and name not in names:
            continue
        if entry.is_strategy or entry.is_human or entry.price_input or entry.price_output:
            continue
        spec = entry.model_spec
        if spec.hosted and spec.base_url is None:
            out.append(f"model {name!r} has no prices: cost shown as $0 (set price_input and price_output, dollars per million tokens, in the study file)")
    return out


def stored_spend(store: Any, study: str) -> tuple[float, int]:
    """(dollars, tokens) the study's stored games used: their turns' recorded cost, and the
    prompt and completion tokens of turns not answered from the response cache."""
    q = (
        sa.select(
            sa.func.coalesce(sa.func.sum(turns_table.c.cost), 0.0),
            sa.func.coalesce(sa.func.sum(sa.case((turns_table.c.cached, 0), else_=sa.func.coalesce(turns_table.c.prompt_tokens, 0) + sa.func.coalesce(turns_table.c.completion_tokens, 0))), 0),
        )
        .select_from(turns_table.join(games_table, games_table.c.id == turns_table.c.game_id))
        .where(games_table.c.study == study)
    )
    with store.engine.connect() as conn:
        cost, tokens = conn.execute(q).one()
    return float(cost or 0.0), int(tokens or 0)


def _pattern(study: Study, seats: dict[str, str]) -> tuple[tuple[str, str], ...]:
    """Which seats a strategy (by its model's name) plays; every language-model seat is ``""``."""
    return tuple((role, name if study.models[name].is_strategy else "") for role, name in seats.items())


class _KindOf:
    """A game's kind (game, configuration as JSON, seating pattern), each configuration dumped once."""

    def __init__(self, study: Study) -> None:
        self.study = study
        self._configs: dict[int, tuple[dict[str, Any], str]] = {}

    def __call__(self, spec: GameSpec) -> Kind:
        held = self._configs.get(id(spec.config))
        if held is None or held[0] is not spec.config:
            held = self._configs[id(spec.config)] = (spec.config, json.dumps(spec.config, sort_keys=True))
        return spec.game, held[1], _pattern(self.study, spec.seats)


class _WaveTable(Table):
    """A table that numbers its asks: every turn of one ``ask`` or of one ``ask_each`` (roles
    asked at once) shares a wave, so a game's chain of calls in batch rounds can be counted."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.wave = 0
        self.waves: list[int] = []  # the wave of each turn, in the order of ``turns``
        self._together = False

    def _mark(self) -> None:
        self.waves += [self.wave] * (len(self.turns) - len(self.waves))

    async def ask(self, role: str, *args: Any, **kwargs: Any) -> Any:
        if self._together:
            return await super().ask(role, *args, **kwargs)
        self.wave += 1
        try:
            return await super().ask(role, *args, **kwargs)
        finally:
            self._mark()

    async def ask_each(self, requests: Any) -> Any:
        self.wave += 1
        self._together = True
        try:
            return await super().ask_each(requests)
        finally:
            self._together = False
            self._mark()


def _cache_rules(entry: ModelEntry) -> str | None:
    """Whose prompt-cache rules apply to ``entry``'s calls: ``openai`` (OpenAI's own API: automatic
    caching), ``anthropic`` (with ``prompt_caching``: the backend's breakpoints), else None."""
    spec = entry.model_spec
    if not spec.hosted:
        return None
    if spec.provider == "anthropic" and entry.prompt_caching:
        return "anthropic"
    if spec.provider == "openai" and is_openai_api(spec.base_url):
        return "openai"
    return None


def _cache_use(entry: ModelEntry, seats: list[list[list[dict[str, str]]]], count_tokens: TokenCounter) -> CacheShare | None:
    """What the prompt cache of ``entry``'s provider would serve of ``seats`` (each one seat's
    calls in order; :mod:`agorabench.models.prompt_cache`); None where no rules are known."""
    rules = _cache_rules(entry)
    if rules == "openai":
        return openai_share(seats, 1.0, 1.0, count_tokens=count_tokens)
    if rules == "anthropic":
        return anthropic_share(seats, 1.0, ttl=entry.cache_ttl, min_tokens=anthropic_min_tokens(entry.model_spec.name), count_tokens=count_tokens)
    return None


async def _sample(study: Study, spec: GameSpec, samples: int, count_tokens: TokenCounter, prompts: Prompts, max_retries: int) -> tuple[dict[str, Use], int, int]:
    """Mean calls and input tokens (of them cached and written by the provider's prompt cache)
    of each language-model role over ``samples`` plays of the kind of ``spec``; how many plays
    failed; and the longest chain of calls in a play (batch rounds)."""
    game_cls = study.game_class(spec.game)
    config = game_cls.Config(**spec.config)
    entries = {role: study.models[m] for role, m in spec.seats.items()}
    names = {role: e.seat_label(i) for i, (role, e) in enumerate(entries.items())}
    active = game_cls.active_roles(config)
    llm = [r for r in active if not entries[r].is_strategy]
    totals = {r: Use() for r in llm}
    seats: dict[str, list[list[list[dict[str, str]]]]] = {r: [] for r in llm}  # each play's calls of the role
    known = strategies(spec.game)
    played = failed = rounds = 0
    full_length = game_cls.plan_stand_in
    # a model that answers at temperature 0 is asked a prompt once per game (the response cache
    # answers it again); one that samples draws each decision
    sampled = {m for m in spec.seats.values() if not study.models[m].is_strategy and sent_settings(study.models[m], study.file.seed).sampled}
    for k in range(samples):
        players: dict[str, Player] = {}
        for role in active:
            entry = entries[role]
            if entry.is_strategy and entry.model_spec.name not in known:  # as a run says it, before any game
                raise StudyError(f"game {spec.game!r} has no strategy {entry.model_spec.name!r}; known: {', '.join(f'strategy/{k}' for k in sorted(known))}")
            players[role] = known[entry.model_spec.name](**entry.params) if entry.is_strategy else stand_in(spec.game, role, full_length)
        nature = None if spec.nature_seed is None else spec.nature_seed + k
        table = _WaveTable(players, seed=spec.seed + k, max_retries=max_retries, nature_seed=nature, embed=_hashed_embed, max_turns=game_cls.max_turns(config))
        try:
            await game_cls(config, prompts, names).play(table)
        except Exception:  # a sample that cannot finish (a strategy's bug): the others stand for it
            failed += 1
            continue
        played += 1
        asked: set[tuple[str, str]] = set()  # (model, prompt) of this play's calls so far
        calls: dict[str, list[list[dict[str, str]]]] = {r: [] for r in llm}
        waves: set[int] = set()
        for turn, wave in zip(table.turns, table.waves):
            if turn.role in totals:
                name = spec.seats[turn.role]
                if name not in sampled:
                    prompt = (name, json.dumps(turn.messages, sort_keys=True))
                    if prompt in asked:  # the same prompt again in this game: answered from the response cache
                        continue
                    asked.add(prompt)
                totals[turn.role].calls += 1
                totals[turn.role].input += sum(count_tokens(m.get("content") or "") for m in turn.messages)
                calls[turn.role].append(turn.messages)
                waves.add(wave)
        rounds = max(rounds, len(waves))
        for role, made in calls.items():
            seats[role].append(made)
    if not played:
        return {}, failed, rounds
    out = {}
    for r, u in totals.items():
        share = _cache_use(entries[r], seats[r], count_tokens)
        read, written = (share.read_tokens, share.write_tokens) if share is not None else (0.0, 0.0)
        out[r] = Use(u.calls / played, u.input / played, read / played, written / played, share)
    return out, failed, rounds


def batched(entry: ModelEntry, batch: bool) -> bool:
    """Whether a run plays ``entry`` in batch mode: its ``batch = true``, or ``--batch`` for a
    hosted model of a provider with a batch API (OpenAI, Anthropic, Gemini on their own APIs)."""
    if entry.is_strategy or entry.is_human or entry.is_outside:
        return False
    if entry.batch:
        return True
    spec = entry.model_spec
    return batch and spec.hosted and spec.provider in BATCH_PROVIDERS and spec.base_url is None


#: Providers whose own APIs take batches (``agora run --batch`` batches their models).
BATCH_PROVIDERS = frozenset({"openai", "anthropic", "gemini"})


def tier_of(entry: ModelEntry, batch: bool) -> str:
    """The tier ``entry``'s calls are billed at in a run: ``batch`` in batch mode, else its
    ``service_tier`` where that is a priced tier (``flex``, ``priority``), else ``standard``."""
    if batched(entry, batch):
        return "batch"
    tier = (entry.service_tier or "").lower()
    return tier if tier in ("flex", "priority") else STANDARD


def _model_plan(entry: ModelEntry, output_per_call: float, batch: bool, games: int) -> ModelPlan:
    """A model's row of the plan at the prices of the tier its calls are billed at."""
    tier = tier_of(entry, batch)
    pricing = Pricing.for_entry(entry)
    rates = pricing.rates(tier)
    rules = _cache_rules(entry)
    read = rates.cached_input if rules is not None else None
    plan = ModelPlan(entry.name, output_per_call, rates.input, rates.output, games=games, tier=tier, price_cached_input=read, write_multiplier=pricing.write_multiplier if rules else 1.0)
    plan.cache_basis = {"openai": "OpenAI's automatic prompt cache", "anthropic": f"Anthropic's prompt cache ({entry.cache_ttl} TTL)"}.get(rules or "", "")
    return plan


def _price_basis(models: Iterable[ModelPlan], study: Study) -> str:
    """How the plan priced its models: tiers, prompt caches (whose rules), what it left out."""
    models = list(models)
    parts = []
    tiers = sorted({m.tier for m in models if m.tier != STANDARD})
    parts.append("input at price_input" + (f", {' and '.join(tiers)} seats at their tier's prices (tier_prices, else the provider's documented discount)" if tiers else ""))
    cached = sorted({m.cache_basis for m in models if m.cache_basis})
    if cached:
        parts.append(
            "cached input estimated by replaying the sample plays' prompts, seat by seat, through "
            + " and ".join(cached)
            + " (its minimum cacheable length and breakpoint rules; reads at price_cached_input or the provider's rate, writes at the cache-write multiplier)"
        )
    for m in models:
        share = m.cache_share
        if share is not None and share.input_tokens:
            limits = share.limits()
            parts.append(f"{m.name}: {share.share:.0%} of its sampled input from the cache" + (f" (limited by: {limits[0]})" if limits and share.share < 1 else ""))
    others = [m.name for m in models if not m.cache_basis and (m.price_input or m.price_output)]
    if others:
        parts.append(f"no prompt-cache discount for {', '.join(others)} (no cache rules known for its server)")
    if any("off_peak" in (study.models[m.name].tier_prices or {}) for m in models):
        parts.append("off-peak prices depend on when each call is made: priced here at the standard tier")
    return "; ".join(parts)


def _output_per_call(entry: ModelEntry, seed: int, assumed: float | None) -> float:
    if assumed is not None:
        return float(assumed)
    return float(output_limit(sent_settings(entry, seed)))


async def build_plan(
    study: Study,
    done: set[str] | None = None,
    games: Callable[[], Iterator[GameSpec]] | None = None,
    samples: int = SAMPLES,
    count_tokens: TokenCounter = chars_over_4,
    output_tokens: float | None = None,
    batch: bool = False,
) -> Plan:
    """The plan of the games ``games()`` yields (default: the study's) less ``done``, less games
    with a person in a seat; ``output_tokens``: output tokens assumed per call instead of the
    bound; ``batch``: the run plays every model with a batch API in batch mode (``agora run
    --batch``). Plays ``samples`` sample games per kind (see the module's docstring); nothing is
    called and nothing stored."""
    done = done or set()
    source = games or study.iter_specs
    has_people = any(e.is_human for e in study.models.values())

    def todo() -> Iterator[GameSpec]:
        for spec in source():
            if spec.id in done or (has_people and study.has_human(spec)):
                continue
            yield spec

    kind_of = _KindOf(study)
    seated: Counter[tuple[Kind, str, str]] = Counter()  # (kind, role, model) -> games
    firsts: dict[Kind, GameSpec] = {}
    per_model: Counter[str] = Counter()
    total = skipped = n = people = 0
    for spec in source():
        total += 1
        if spec.id in done:
            skipped += 1
            continue
        if has_people and study.has_human(spec):
            people += 1
            continue
        n += 1
        kind = kind_of(spec)
        firsts.setdefault(kind, spec)
        llm = {m for m in spec.seats.values() if not study.models[m].is_strategy}
        for m in llm:
            per_model[m] += 1
        for role, m in spec.seats.items():
            if m in llm:
                seated[kind, role, m] += 1
    # which kinds are played: every kind, or MAX_KINDS per (game, pattern) drawn with a fixed seed
    by_pattern: dict[tuple[str, tuple[tuple[str, str], ...]], list[Kind]] = {}
    for kind in firsts:
        by_pattern.setdefault((kind[0], kind[2]), []).append(kind)
    chosen: list[Kind] = []
    thinned = 0
    for key, kinds in by_pattern.items():
        if len(kinds) > MAX_KINDS:
            thinned += len(kinds) - MAX_KINDS
            kinds = random.Random(json.dumps([key[0], key[1], study.file.seed])).sample(kinds, MAX_KINDS)
        chosen += kinds
    prompts: dict[str, Prompts] = {}
    uses: dict[Kind, dict[str, Use]] = {}
    failed = rounds = 0
    for kind in chosen:
        spec = firsts[kind]
        if spec.game not in prompts:
            game_cls = study.game_class(spec.game)
            prompts[spec.game] = Prompts(game_cls.prompt_dir, study.prompt_dir)
        found, bad, chain = await _sample(study, spec, samples, count_tokens, prompts[spec.game], study.file.max_retries)
        failed += bad
        if any(batched(study.models[m], batch) for m in spec.seats.values()):
            rounds = max(rounds, chain)
        if found or not bad:
            uses[kind] = found
    means: dict[tuple[str, tuple[tuple[str, str], ...]], dict[str, Use]] = {}
    for key, kinds in by_pattern.items():
        got = [uses[k] for k in kinds if k in uses]
        roles = {r for u in got for r in u}
        means[key] = {r: Use(*(sum(getattr(u[r], f) for u in got if r in u) / len(got) for f in ("calls", "input", "cached", "written"))) for r in roles} if got else {}
    models: dict[str, ModelPlan] = {}
    for name in study.models:
        if name in per_model:
            models[name] = _model_plan(study.models[name], _output_per_call(study.models[name], study.file.seed, output_tokens), batch, per_model[name])
            models[name].output_bound = _output_per_call(study.models[name], study.file.seed, None)
    for (kind, role, name), count in seated.items():
        use = (uses.get(kind) or means.get((kind[0], kind[2])) or {}).get(role)
        if use is not None:
            models[name].calls += use.calls * count
            models[name].input_tokens += use.input * count
            models[name].cached_input_tokens += use.cached * count
            models[name].cache_write_tokens += use.written * count
            if use.share is not None:
                held = models[name].cache_share
                models[name].cache_share = use.share if held is None else held + use.share
    kinds_played = len(chosen)
    basis = (
        f"{samples} sample play(s) of each of {kinds_played} kind(s) of game (game, configuration, scripted seats)"
        + (f", {thinned} more kind(s) taken at the mean of their game's sampled ones" if thinned else "")
        + f"; {stand_in_basis(study, {k[0] for k in chosen})}, scripted seats by their strategies; "
        + "one call per decision (re-asks assumed at a rate of 0; a prompt asked again in a game at temperature 0 is answered by the response cache); input = "
        + ("characters / 4 of every message sent" if count_tokens is chars_over_4 else "the given token measure of every message sent")
        + "; output = "
        + ("max_tokens per call (+ the reasoning budget for a reasoning model), a bound" if output_tokens is None else f"{output_tokens:g} tokens per call (assumed)")
        + f"; {_price_basis(models.values(), study)}; games already done are skipped (their answers are not bought again)"
    )
    warnings = unpriced(study, set(models))
    if failed:
        warnings.append(f"{failed} sample play(s) failed and were left out of the estimate")
    return Plan(
        study=study.name,
        total=total,
        done=skipped,
        todo=n,
        models=models,
        people=people,
        basis=basis,
        warnings=warnings,
        output_bound=output_tokens is None,
        rounds=rounds,
        _uses=uses,
        _pattern_means=means,
        _kind_of=kind_of,
        _todo=todo,
    )


def plan_study(study: Study, db: str | None = None, samples: int = SAMPLES, count_tokens: TokenCounter = chars_over_4, output_tokens: float | None = None, batch: bool = False) -> tuple[Plan, tuple[float, int]]:
    """The plan of what ``agora run`` would play on ``db`` (read only, never created: a missing
    file means nothing is done yet), and what the study's stored games used (dollars, tokens)."""
    from pathlib import Path

    from ..loop import run as run_loop
    from ..store.store import Store

    done: set[str] = set()
    spent: tuple[float, int] = (0.0, 0)
    if db is not None and ("://" in str(db) or Path(db).exists()):
        store = Store(db, read_only=True)
        try:
            done = store.done_ids(study.name)
            done -= replayed(study, store, done)
            spent = stored_spend(store, study.name)
        finally:
            store.dispose()
    return run_loop(build_plan(study, done, samples=samples, count_tokens=count_tokens, output_tokens=output_tokens, batch=batch)), spent


def replayed(study: Study, store: Any, done: set[str]) -> set[str]:
    """Of the done games, those a run plays again (``replay_on_prompt_change`` and templates of
    another version), as :meth:`agorabench.core.runner.Runner.prompt_changes` decides, quietly."""
    if not done or not study.file.replay_on_prompt_change:
        return set()
    current, hashes = {}, {}
    for name in study.file.games:
        game_cls = study.game_class(name)
        prompts = Prompts(game_cls.prompt_dir, study.prompt_dir)
        current[name], hashes[name] = prompts.version, prompts.digest
    ids: set[str] = set()
    for found in store.other_prompt_versions(study.name, current, hashes).values():
        ids |= found & done
    return ids

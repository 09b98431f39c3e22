"""The runner: plays a study's missing games concurrently on one event loop and stores each.

- Games already ``done`` in the store are skipped, so a stopped study resumes where it was.
- Up to ``concurrency`` games are in flight; each model bounds its own concurrent calls, and a
  serialized backend (the embedded model) always has the next request queued.
- A backend that fails for good aborts only its game (stored with status ``error`` and the
  message); the study goes on, and the next run plays that game again.
- A failure of the store itself (disk full, ...) stops the run cleanly: no new game starts,
  finished games stay stored, and :class:`StoreError` reaches the command line as one line.
- Each game is claimed in the store before it is played (``claims`` table, kept alive by a
  heartbeat), so several processes running one study share its games instead of each playing
  all of them; the claims of a crashed process expire after ``CLAIM_TTL`` seconds.
- A budget (:class:`Budget`: dollars and/or tokens for the study in this database) is checked
  before each game starts: when what the study has spent (its stored games and this run's calls),
  what the games in flight may still spend and the next game's estimate
  (:mod:`agorabench.core.plan`; once games of its kind have finished, what they spent) would
  exceed it, no new game starts. It is checked again before every model call not answered from
  the response cache: a call whose worst case (its input at characters / 4 and its whole output
  bound) could take the study past the budget, with the calls in flight, is not made; its game
  stops as an error (its answers so far stay in the response cache, so a later run replays them
  without paying again). What the run spends past the budget is bounded by the calls in flight.
- A language model whose turns are invalid ``stop_after_invalid`` times in a row stops: its
  remaining calls fail at once, so its games end as errors (played again by the next run).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import gc
import itertools
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from ..families import embeddings_field, strategies
from ..loop import run as run_loop
from ..models.base import Backend, BackendError, BufferedCache, Completion, ResponseCache, dialect_of, probe_target_of
from ..models.errors import SpecError
from ..models.limits import RateLimiter
from ..models.model import Model, Pricing, RetryPolicy
from ..models.pricing import STANDARD as STANDARD_TIER
from ..models.outside import OutsideClient
from ..models.providers import FLEX_TIMEOUT, BackendOptions, open_backend
from ..models.reasoning import output_limit, sampling_notes, setting_problems
from ..records import TurnRecord
from ..redact import redact
from ..store.cache import SQLCache
from ..store.claims import CLAIM_TTL, claim_owner
from ..store.errors import StoreError
from ..store.store import Store
from ..store.writer import GameWriter
from .agents import LLMAgent, OutsideAgent
from .coverage import run_seating
from .decoding import generation_settings, sent_settings
from .game import GameConfig, Prompts
from .lockstep import Lockstep
from .plan import Plan, batched, build_plan, stored_spend, tier_of, unpriced
from .progress import ProgressView, Snapshot
from .study import GameSpec, ModelEntry, Study, StudyError
from .table import BackendFailure, Player, Table, TurnLimit, shared_embedder

#: How the message of a call the budget refused begins (its game's error).
BUDGET_MARK = "budget reached: "

#: Games claimed per store transaction (a run claims ahead in batches; claims last until it ends).
CLAIM_BATCH = 64


#: Container objects allocated (less those freed) before a young garbage collection, while games
#: are played (Python's default: 700).
PLAY_GC_THRESHOLD = 10_000


@contextlib.contextmanager
def rarer_collections() -> Iterator[None]:
    """While a study's games are played: what the process held before (modules, the study, the
    models) is left out of the garbage collector's passes (``gc.freeze``), and a young
    collection waits for :data:`PLAY_GC_THRESHOLD` new objects; both are put back afterwards.
    A game's objects are short-lived, and no result depends on when the collector runs; the
    collector took about 15 % of the loop's CPU per model call at 256 games in flight."""
    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    gc.freeze()
    gc.set_threshold(max(PLAY_GC_THRESHOLD, before[0]), *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
        if not frozen:  # a freeze the process made itself is left to it
            gc.unfreeze()


def build_backend(entry: ModelEntry) -> Backend:
    """The backend of an LLM model entry (:func:`agorabench.models.providers.open_backend`);
    StudyError for a spec that names no backend, BackendError for one that cannot be made."""
    try:
        return open_backend(entry.model_spec, backend_options(entry))
    except SpecError as exc:
        raise StudyError(str(exc)) from None


def spend_by_tier(models: Iterable[Model]) -> dict[str, float]:
    """Dollars the models' calls were billed, per billed tier (their pricing's books)."""
    out: dict[str, float] = {}
    for m in models:
        for tier, dollars in getattr(m.pricing, "by_tier", {}).items():
            out[tier] = out.get(tier, 0.0) + dollars
    return out


#: A reasoning model whose entry sets no ``timeout`` waits the default plus one second per this
#: many output tokens it may use (16,256 tokens: 120 + 325 = 445 s): a long chain of thought
#: at a provider's few dozen tokens a second takes minutes.
REASONING_TOKENS_PER_SECOND = 50


def call_estimate(model: Model, entry: ModelEntry, messages: list[dict[str, str]], settings: Any, output_tokens: float | None = None) -> tuple[float, float]:
    """(dollars, tokens) a call of ``model`` is held at against the budget while in flight:
    input at characters / 4, output at the mean of the model's replies so far (reasoning
    included; before any reply ``output_tokens`` if given, else the whole output bound), priced
    at the dearest rates the call may be billed at: its tier's or, with ``service_tier_fallback``,
    the standard tier's where dearer (a flex call made again at standard), and every input token
    at the price of a prompt-cache write where that is dearer (Anthropic's 1.25 or 2 × input)."""
    inp = sum(len(m.get("content") or "") for m in messages) / 4
    bound = float(output_limit(settings))
    if model.replies:
        out = min(bound, model.completion_tokens / model.replies)
    else:
        out = bound if output_tokens is None else min(bound, float(output_tokens))
    pricing = model.pricing
    if model.batcher is not None:
        rates = [pricing.rates("batch")]
    else:
        rates = [pricing.rates(tier_of(entry, False))]
        if getattr(entry, "service_tier_fallback", False):
            rates.append(pricing.rates(STANDARD_TIER))
    per_input = max(r.input for r in rates) * max(1.0, pricing.write_multiplier)
    per_output = max(r.output for r in rates)
    return (inp * per_input + out * per_output) / 1e6, inp + out


def default_timeout(entry: ModelEntry) -> float:
    """Seconds a call of ``entry`` may take: its ``timeout`` when set; else a ``flex`` tier's
    :data:`~agorabench.models.providers.FLEX_TIMEOUT`; else, for a reasoning model, the default
    lengthened by its output limit (:data:`REASONING_TOKENS_PER_SECOND`); else the default."""
    if "timeout" in entry.model_fields_set:
        return entry.timeout
    if entry.service_tier == "flex":
        return FLEX_TIMEOUT
    if entry.model_spec.hosted:
        settings = sent_settings(entry, 0)
        if settings.reasoning:
            return entry.timeout + output_limit(settings) / REASONING_TOKENS_PER_SECOND
    return entry.timeout


def backend_options(entry: ModelEntry) -> BackendOptions:
    """The entry's settings that say how its backend makes calls (the timeout: :func:`default_timeout`)."""
    timeout = default_timeout(entry)
    return BackendOptions(
        api_key_env=entry.api_key_env, timeout=timeout, transport=entry.transport, prompt_caching=entry.prompt_caching, params=entry.params, state_cache_mb=entry.state_cache_mb,
        service_tier=entry.service_tier, service_tier_fallback=entry.service_tier_fallback,
        prompt_cache_key=entry.prompt_cache_key, cache_ttl=entry.cache_ttl, reasoning_summary=entry.reasoning_summary,
    )


@dataclass(frozen=True)
class Budget:
    """What a study may spend in one database: dollars (``money``) and/or tokens (prompt and
    completion, reasoning included: they are billed as output); None: no limit of that kind.
    ``output_tokens``: output tokens per call assumed by the per-game estimate (None: the bound,
    ``max_tokens`` plus any reasoning budget); ``samples``: sample plays per kind of game."""

    money: float | None = None
    tokens: int | None = None
    output_tokens: float | None = None
    samples: int = 2


@dataclass
class RunStats:
    total: int = 0
    skipped: int = 0
    done: int = 0
    errors: int = 0
    #: Games left to another process that holds their claim.
    claimed_elsewhere: int = 0
    turns: int = 0
    invalid: int = 0
    #: Games played in this run whose transaction never committed (a database failure).
    not_stored: int = 0
    #: Of the errors, games the budget stopped (a call it refused): not failures of the study.
    budget_stopped: int = 0
    started: float = field(default_factory=time.perf_counter)
    error_messages: list[str] = field(default_factory=list)

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.started


class Runner:
    def __init__(
        self,
        study: Study,
        store: Store,
        concurrency: int = 8,
        cache: ResponseCache | None = None,
        progress: bool | ProgressView = True,
        probe: bool = True,
        select: Callable[[Study], Iterator[GameSpec]] | None = None,
        budget: Budget | None = None,
        batch: bool = False,
    ) -> None:
        self.study = study
        #: ``agora run --batch``: every language model whose provider has a batch API plays in
        #: provider batches (:mod:`agorabench.core.lockstep`), as an entry's ``batch = true`` asks.
        self.batch = batch
        #: The coordinator of the batch models' rounds (made when the first one is built).
        self.lockstep: Lockstep | None = None
        #: Makes a batch model's client (None: :func:`agorabench.models.batch.open_batch_client`).
        self.open_batch_client: Callable[[ModelEntry], Any] | None = None
        #: A model that would play in batches, were there a response cache (the run refuses it).
        self.uncached_batch: str | None = None
        #: The study's spending limit in this database (None: none); see :class:`Budget`.
        self.budget = budget
        #: The estimate behind the budget (built when the run starts).
        self.plan: Plan | None = None
        #: What the study's stored games had used when the run started (dollars, tokens).
        self.spent_before: tuple[float, int] = (0.0, 0)
        #: Set when the budget kept a game from starting: no new game starts after it.
        self.budget_reached = False
        self._reserved: dict[str, tuple[float, float]] = {}  # estimates of the games in flight
        self._flight = [0.0, 0.0]  # worst case (dollars, tokens) of the model calls in flight
        #: Model calls the budget refused (their games stopped as errors).
        self.budget_refused = 0
        #: Invalid turns in a row per language model (``stop_after_invalid``).
        self._invalid_in_a_row: dict[str, int] = {}
        #: The response-cache keys of those turns' calls, forgotten when the model stops.
        self._invalid_keys: dict[str, list[str]] = {}
        self.probe = probe
        #: The games this runner may play, generated in study order (an executor's share,
        #: :class:`~agorabench.core.executors.Share`); None: every game of the study.
        self.select = select
        self.store = store
        self.concurrency = max(1, concurrency)
        self.cache = cache if cache is not None else SQLCache(store)
        self.progress = progress
        self.models: dict[str, Model] = {}
        #: Clients of the outside agents seated (``http/URL``), by model name.
        self.outside: dict[str, OutsideClient] = {}
        #: Lines a researcher should read before the run (settings a model will not get, ...).
        self.notes: list[str] = []
        self._breakers: dict = {}  # stall detection per server, shared by its models (models.model.Breaker)
        #: Whether a long outage of a server ends its calls for good (a run: the next run plays
        #: the games again); ``agora serve`` sets False: the calls wait and a test call goes
        #: through now and then until the server answers (:class:`~agorabench.models.model.Breaker`).
        self.outage_final = True
        self.prompts = Prompts(study.game_cls.prompt_dir, study.prompt_dir)
        self._prompts: dict[str, Prompts] = {study.game_cls.name: self.prompts}
        #: Stored games this run plays again: played with other templates than those in force
        #: (the study file's ``replay_on_prompt_change``; see :meth:`prompt_changes`).
        self.replay: set[str] = set()
        self.stats = RunStats()
        #: This process's name on its claims.
        self.owner = claim_owner()
        self.claim_ttl = CLAIM_TTL
        self.failure: StoreError | None = None
        self.writer = GameWriter(store, before_commit=self.cache.flush if isinstance(self.cache, BufferedCache) else None)  # group commit of finished games
        self._live: dict[str, Table] = {}  # tables of the games in flight (their turns count as progress)

    # players ---------------------------------------------------------------
    def _model(self, entry: ModelEntry) -> Model:
        if entry.name not in self.models:
            try:
                backend = build_backend(entry)
            except BackendError as exc:  # e.g. a missing API key: a setup problem, not a game's
                raise StudyError(f"model {entry.name!r}: {exc}") from None
            dialect = dialect_of(backend)
            settings = generation_settings(entry, self.study.file.seed, dialect)
            problems = setting_problems(dialect, settings, entry.model_spec.name)
            if problems:
                raise StudyError(f"model {entry.name!r}: " + "; ".join(problems))
            for note in sampling_notes(dialect, entry.name, settings, entry.temperature):
                if note not in self.notes:
                    self.notes.append(note)
            self.models[entry.name] = Model(
                backend,
                settings,
                cache=self.cache,
                max_concurrency=entry.max_concurrency,
                pricing=Pricing.for_entry(entry),  # by tier, time of day and prompt cache (models/pricing.py)
                retry=RetryPolicy(max_attempts=entry.max_attempts),
                rate=RateLimiter(entry.requests_per_minute, entry.tokens_per_minute) if entry.requests_per_minute or entry.tokens_per_minute else None,
                adaptive=entry.adaptive_concurrency,
                breakers=self._breakers,
                outage_final=self.outage_final,
            )
            if self.budget is not None:
                self.models[entry.name].gate = self._budget_gate(self.models[entry.name], entry)
            self._batch_mode(entry, self.models[entry.name])
        return self.models[entry.name]

    def outages(self, names: Iterable[str] | None = None) -> dict[str, str]:
        """The servers of the models built so far (of ``names`` only, if given) that do not answer
        now: server -> one line (:meth:`~agorabench.models.model.Breaker.outage`)."""
        out: dict[str, str] = {}
        for name, model in self.models.items():
            line = model.breaker.outage() if names is None or name in names else None
            if line:
                out[model.endpoint] = line
        return out

    def _batch_mode(self, entry: ModelEntry, model: Model) -> None:
        """Play ``model``'s calls in provider batches when its entry (``batch = true``) or the run
        (``--batch``) asks for it. A provider without a batch API, or one that refuses the
        entry's settings in a batch, is a StudyError for the entry's setting and a note (the
        model plays live) for the run's flag; batches need the response cache."""
        if not (entry.batch or self.batch):
            return
        if not batched(entry, self.batch):  # --batch: the providers' own batch APIs only
            spec = entry.model_spec
            where = f"the server at {spec.base_url} may have no batch API (batch = true on its entry sends its batches there)" if spec.hosted and spec.base_url else "only OpenAI's, Anthropic's and Gemini's own APIs take batches"
            note = f"model {entry.name!r} plays live (--batch): {where}"
            if note not in self.notes:
                self.notes.append(note)
            return
        client, problem = None, None
        try:
            if self.open_batch_client is not None:
                client = self.open_batch_client(entry)
            else:
                from ..models.batch import open_batch_client

                client = open_batch_client(entry.model_spec, backend_options(entry))
            problem = client.check(model.settings)
        except (BackendError, SpecError) as exc:
            problem = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if problem is not None:
            if client is not None:
                with contextlib.suppress(RuntimeError):
                    asyncio.get_running_loop().create_task(client.aclose())
            if entry.batch:
                raise StudyError(f"model {entry.name!r} (batch = true): {problem}")
            note = f"model {entry.name!r} plays live (--batch): {problem}"
            if note not in self.notes:
                self.notes.append(note)
            return
        if isinstance(self.cache, NoCache):  # refused when the run starts (a check of the models alone passes)
            self.uncached_batch = self.uncached_batch or entry.name
            return
        if self.lockstep is None:
            self.lockstep = Lockstep(self.store, self.cache, self.study.name, owner=self.owner)
        self.lockstep.attach(model, client, entry.name, entry.batch_poll, entry.batch_poll_max)

    def _budget_gate(self, model: Model, entry: ModelEntry) -> Callable[[list[dict[str, str]], Any], Callable[[], None]]:
        """The budget's check before each call of ``model`` not answered from the response cache
        (in batch mode: before the call joins a round's batch): the call's estimate
        (:func:`call_estimate`: no prompt-cache discount, the dearest rates it may be billed at)
        is held while it is in flight; a call
        that could take the study past the budget, with what is spent and what is in flight, is
        refused (BackendError, one line). What the run spends past the budget is thus at most what
        the calls in flight at that moment use beyond their estimates (at worst, their bound)."""

        def gate(messages: list[dict[str, str]], settings: Any) -> Callable[[], None]:
            budget = self.budget
            assert budget is not None
            cost, tokens = call_estimate(model, entry, messages, settings, budget.output_tokens)
            spent_cost, spent_tokens = self.spent()
            over = []
            if budget.money is not None and spent_cost + self._flight[0] + cost > budget.money:
                over.append(f"${spent_cost:,.4f} spent, ${self._flight[0]:,.4f} in flight and up to ${cost:,.4f} for this call would pass the budget of ${budget.money:,.2f}")
            if budget.tokens is not None and spent_tokens + self._flight[1] + tokens > budget.tokens:
                over.append(f"{spent_tokens:,} tokens spent, {self._flight[1]:,.0f} in flight and up to {tokens:,.0f} for this call would pass the budget of {budget.tokens:,} tokens")
            if over:
                self.budget_reached = True
                self.budget_refused += 1
                raise BackendError(
                    BUDGET_MARK + "; ".join(over) + (
                        "; the call was not made and its game stopped (a run with a higher budget plays it again)" if isinstance(self.cache, NoCache) else
                        "; the call was not made and its game stopped (its answers so far stay in the response cache: a run with a higher budget replays them without paying again)"
                    ),
                    retryable=False,
                )
            self._flight[0] += cost
            self._flight[1] += tokens

            def release() -> None:
                self._flight[0] -= cost
                self._flight[1] -= tokens

            return release

        return gate

    def prompts_for(self, game_cls) -> Prompts:
        """The prompts of one of the study's games (several with ``parts``)."""
        if game_cls.name not in self._prompts:
            self._prompts[game_cls.name] = Prompts(game_cls.prompt_dir, self.study.prompt_dir)
        return self._prompts[game_cls.name]

    def prompt_changes(self, done: set[str]) -> set[str]:
        """Of the study's games stored as done (``done``), those played with templates of another
        version than the ones now in force (the ``VERSION`` of the study's prompt folder or of
        the game's own), or of the same version but other texts (the digest stored with each
        game), are named in one line on stderr; returns their ids when the study file
        says to play them again (``replay_on_prompt_change``), else none: they are kept and
        count as done (a game's id covers the name of the prompt folder, not its templates)."""
        if not done:
            return set()
        prompts = {name: self.prompts_for(self.study.game_class(name)) for name in self.study.file.games}
        current = {name: p.version for name, p in prompts.items()}
        hashes = {name: p.digest for name, p in prompts.items()}
        other = {key: ids & done for key, ids in self.store.other_prompt_versions(self.study.name, current, hashes).items()}
        other = {key: ids for key, ids in other.items() if ids}
        if not other:
            return set()
        ids = set().union(*other.values())
        games = sorted({game for game, _ in other})

        def stored(game: str, version: str) -> str:  # the same VERSION: the template texts were edited
            said = f"{len(other[game, version])} with version {version!r}"
            return said + " but other template texts (edited without a new VERSION)" if version == current[game] else said

        was = "; ".join(f"{game}: " + ", ".join(stored(g, v) for g, v in sorted(other) if g == game) + f", now {current[game]!r}" for game in games)
        what = f"{len(ids)} stored game(s) of study {self.study.name!r} were played with other prompt templates than those now in force ({was})"
        if self.study.file.replay_on_prompt_change:
            print(f"agora: note: {what}: they are played again (replay_on_prompt_change = true)", file=sys.stderr, flush=True)
            return ids
        print(
            f"agora: warning: {what}: they are kept and count as done; to play them again set `replay_on_prompt_change = true` in the study file (or give the study a new name)",
            file=sys.stderr,
            flush=True,
        )
        return set()

    def _player(self, entry: ModelEntry, spec: GameSpec) -> Player:
        if entry.is_human:
            raise StudyError(f"model {entry.name!r} is a human seat: its games are played by participants through `agora serve`")
        if entry.is_strategy:
            key = entry.model_spec.name
            known_strategies = strategies(spec.game)
            factory = known_strategies.get(key)
            if factory is None:
                known = ", ".join(f"strategy/{k}" for k in sorted(known_strategies))
                raise StudyError(f"game {spec.game!r} has no strategy {key!r}; known: {known}")
            try:
                return factory(**entry.params)
            except (TypeError, ValueError) as exc:
                raise StudyError(f"strategy/{key}: bad parameters {entry.params}: {str(exc).splitlines()[0]}") from None
        if entry.is_outside:
            return OutsideAgent(self._outside_client(entry), game=spec.game, game_id=spec.id, params=entry.params)
        return LLMAgent(self._model(entry), sample=spec.id, constrained=entry.constrained)

    def _outside_client(self, entry: ModelEntry) -> OutsideClient:
        """The one client of an outside agent's entry (its time limit, attempts, concurrency and
        key); StudyError when its key's variable is named but unset."""
        if entry.name not in self.outside:
            try:
                key_env = entry.api_key_env if "api_key_env" in entry.model_fields_set else None  # never another service's key
                self.outside[entry.name] = OutsideClient(entry.model_spec.name, timeout=entry.timeout, api_key_env=key_env, max_attempts=entry.max_attempts, max_concurrency=entry.max_concurrency)
            except BackendError as exc:
                raise StudyError(f"model {entry.name!r}: {exc}") from None
        return self.outside[entry.name]

    def check_models(self) -> None:
        """Fail fast, before any game, on an unknown model or strategy (one-line errors): each
        model seated in a game of the study is built once for that game."""
        for spec, used in self.study.first_games().values():
            for role_model in used:
                if not self.study.models[role_model].is_human:
                    self._player(self.study.models[role_model], spec)

    async def probe_models(self, specs: list[GameSpec] | None = None, names: set[str] | None = None) -> None:
        """One cheap request per hosted model the games need (those seated in ``specs``, or
        ``names``); StudyError naming every dead backend (unreachable, unauthorised, wrong model
        name) before any game starts."""
        names = sorted(names if names is not None else {m for s in specs or [] for m in s.seats.values()})
        if all(self.study.models[name].is_strategy or self.study.models[name].is_outside for name in names):
            return  # nothing to probe (and no HTTP client to import: a second before the first game)
        from ..models.probe import probe_many

        targets = {}
        for name in names:
            entry = self.study.models[name]
            if entry.is_strategy or entry.is_outside:  # an outside agent has no probe to answer
                continue
            # each backend says what its server is asked (None: nothing to probe, e.g. in-process)
            target = probe_target_of(self._model(entry).backend)
            if target is not None:
                targets[name] = target
        problems = await probe_many(targets)  # one listing per distinct server and key
        bad = [f"model {name!r}: {problem}" for name, problem in problems.items() if problem]
        if bad:
            raise StudyError("; ".join(bad) + " (no game was started; --no-probe skips this check)")

    # games -----------------------------------------------------------------
    @staticmethod
    def _embeddings_spec(game: str, config: GameConfig) -> str | None:
        """The embeddings backend ``config`` names in the field ``game``'s manifest declares
        (:func:`agorabench.families.embeddings_field`); None for a game that declares none.
        StudyError for a manifest naming a field the configuration lacks."""
        name = embeddings_field(game)
        if name is None:
            return None
        if name not in type(config).model_fields:
            raise StudyError(f"{game}: its manifest declares the embeddings field {name!r}, which its configuration does not have")
        value = getattr(config, name)
        return value if isinstance(value, str) else None

    async def play_one(self, spec: GameSpec, seated: dict[str, Player] | None = None, entries: dict[str, ModelEntry] | None = None) -> str:
        """Play and store one game; returns its status. ``seated`` gives players for some roles
        (a person through the web app) and ``entries`` the model entries by role when
        ``spec.seats`` names something other than the study's models (``human:<hash>``)."""
        game_cls = self.study.game_class(spec.game)
        prompts = self.prompts_for(game_cls)
        config = game_cls.Config(**spec.config)
        entries = entries or {role: self.study.models[m] for role, m in spec.seats.items()}
        names = {role: e.seat_label(i) for i, (role, e) in enumerate(entries.items())}
        active = game_cls.active_roles(config)
        seated = seated or {}
        players = {role: seated[role] if role in seated else self._player(entries[role], spec) for role in active}
        # a game whose manifest declares a configuration field naming an embeddings backend gets it
        embeddings = self._embeddings_spec(spec.game, config)
        try:
            embed = shared_embedder(embeddings) if isinstance(embeddings, str) and embeddings else None
        except ValueError as exc:  # an unreadable spec (SpecError): before any turn, one line
            raise StudyError(f"{spec.game}: embeddings {embeddings!r}: {str(exc).splitlines()[0]}") from None
        table = Table(players, seed=spec.seed, max_retries=self.study.file.max_retries, nature_seed=spec.nature_seed, embed=embed, max_turns=game_cls.max_turns(config))
        if self.study.file.stop_after_invalid:
            for player in players.values():
                if isinstance(player, LLMAgent):
                    player.keys = []  # the calls of each turn, for _count_invalid
            table.on_turn = lambda turn: self._count_invalid(entries.get(turn.role), turn, players.get(turn.role))
        game = game_cls(config, prompts, names, people={role for role, e in entries.items() if e.is_human or role in seated})
        started = time.time()
        status, outcome, metrics, error = "done", None, None, None
        self._live[spec.id] = table
        if self.lockstep is not None:  # batch rounds wait for this game's calls (a person's game calls live)
            self.lockstep.started(spec.id, batched=not seated)
        try:
            outcome = await game.play(table)
            metrics = game.metrics(outcome)
        except StoreError:
            raise
        except (BackendFailure, BackendError) as exc:
            status, error = "error", redact(str(exc))
        except TurnLimit as exc:  # the game broke its own declared bound: failed, its turns kept
            status, error = "failed", str(exc)
        except Exception as exc:  # a bug in a game or strategy must not end the study
            status, error = "error", redact(f"{type(exc).__name__}: {exc}")
        finally:
            if self.lockstep is not None:
                self.lockstep.ended(spec.id)
        self.writer.save_game(
            id=spec.id,
            study=self.study.name,
            game=spec.game,
            config=spec.config,
            seats=spec.seats,
            repeat=spec.repeat,
            seed=spec.seed,
            prompt_version=prompts.version,
            prompt_hash=prompts.digest,
            status=status,
            outcome=outcome,
            metrics=metrics,
            error=error,
            turn_records=table.turns,
            started=started,
        )
        self.stats.turns += len(table.turns)
        self._live.pop(spec.id, None)
        if self.plan is not None and status == "done":  # the next games of its kind are estimated at what it spent
            self.plan.observe(spec, sum(t.cost for t in table.turns), sum((t.prompt_tokens or 0) + (t.completion_tokens or 0) for t in table.turns if not t.cached))
        self.stats.invalid += table.invalid_turns
        if status == "done":
            self.stats.done += 1
        else:
            self.stats.errors += 1
            if self.budget_refused and BUDGET_MARK in (error or ""):
                self.stats.budget_stopped += 1
                return status
            if len(self.stats.error_messages) < 20:
                self.stats.error_messages.append(error or "")
        return status

    def _count_invalid(self, entry: ModelEntry | None, turn: TurnRecord, player: Any = None) -> None:
        """Count a language model's invalid turns in a row; at ``stop_after_invalid`` the model
        stops as a refused key stops it (:attr:`Model.dead`): its later calls fail at once, its
        games end as errors, and the run's closing lines name it once. The answers of the turns
        that stopped it leave the response cache (:meth:`Model.forget`), so the next run asks
        the model again (a fixed server, prompt or setting) instead of replaying them."""
        if entry is None or entry.is_strategy or entry.is_human:
            return
        keys = getattr(player, "keys", None)
        taken = list(keys or ())
        if keys:
            keys.clear()
        n = 0 if turn.valid else self._invalid_in_a_row.get(entry.name, 0) + 1
        self._invalid_in_a_row[entry.name] = n
        streak = self._invalid_keys.setdefault(entry.name, [])
        if turn.valid:
            streak.clear()
        else:
            streak.extend(taken)
        limit = self.study.file.stop_after_invalid
        model = self.models.get(entry.name) or self.outside.get(entry.name)  # an outside agent stops alike
        if not (limit and n >= limit and model is not None):
            return
        if model.dead is None:
            last = " ".join((turn.error or "").split())
            last = last if len(last) <= 120 else last[:117] + "..."
            model.dead = (
                f"{n} turns in a row were invalid (the last: {last}); its remaining games of this run stop and are played again by the next run, "
                f"which asks the model again (these invalid answers are not kept in the response cache; see them with `agora show STUDY --first-invalid`; "
                f"stop_after_invalid = 0 in the study file never stops a model)"
            )
        if isinstance(model, Model):  # the streak's answers, and those of turns ending after the stop
            model.forget(streak)
        streak.clear()

    def spent(self) -> tuple[float, int]:
        """(dollars, tokens) the study has spent in this database: its stored games when the
        run started and this run's calls (tokens: prompt and completion, reasoning included)."""
        ms = self.models.values()
        return self.spent_before[0] + sum(m.cost for m in ms), self.spent_before[1] + sum(m.prompt_tokens + m.completion_tokens for m in ms)

    def _admit(self, spec: GameSpec) -> bool:
        """Whether ``spec`` may start within the budget: the spend so far, plus what each game
        in flight may still spend (its estimate less its recorded turns' use), plus the game's own
        estimate, within every limit. Admitted games are held against the budget until they end."""
        budget = self.budget
        if budget is None or self.plan is None:
            return True
        cost, tokens = self.plan.game_estimate(spec)
        spent_cost, spent_tokens = self.spent()
        pending_cost = pending_tokens = 0.0
        for gid, (c, t) in self._reserved.items():
            table = self._live.get(gid)
            turns = table.turns if table is not None else []
            used_cost = sum(x.cost for x in turns)
            used_tokens = sum((x.prompt_tokens or 0) + (x.completion_tokens or 0) for x in turns if not x.cached)
            pending_cost += max(0.0, c - used_cost)
            pending_tokens += max(0.0, t - used_tokens)
        if budget.money is not None and spent_cost + pending_cost + cost > budget.money:
            return False
        if budget.tokens is not None and spent_tokens + pending_tokens + tokens > budget.tokens:
            return False
        self._reserved[spec.id] = (cost, tokens)
        return True

    def games(self) -> Iterator[GameSpec]:
        """The games this run may play, one at a time in study order: ``select``'s (or every
        game of the study), less those with a person in a seat (they play through `agora serve`)."""
        games = self.select(self.study) if self.select is not None else self.study.iter_specs()
        if any(entry.is_human for entry in self.study.models.values()):
            return (s for s in games if not self.study.has_human(s))
        return games

    async def run(self) -> RunStats:
        # the games are counted, not listed, and generated as the workers claim them: a design of
        # 10^7 games starts at once and holds only the ids already done
        total = self.study.check_size()
        self.store.verify()  # a damaged index passes the quick check at opening; nothing is written to such a file
        self.store.save_study(self.study.name, "+".join(self.study.file.games), self.study.file.model_dump(mode="json"))
        self.store.record_run(self.study.name, run_seating(self.study))  # reports count its games as the study's
        done = self.store.done_ids(self.study.name)
        self.replay = self.prompt_changes(done)
        done -= self.replay
        if self.select is None and not any(entry.is_human for entry in self.study.models.values()):
            # the design's games already done: one pass over the ids (none for a fresh study)
            skipped = sum(1 for s in self.study.iter_specs() if s.id in done) if done else 0
            names = {m for _, used in self.study.first_games().values() for m in used}
        else:  # an executor's share, or people in some seats: one pass counts the games this run may play
            total = skipped = 0
            names = set()
            for s in self.games():
                total += 1
                if s.id in done:
                    skipped += 1
                else:
                    names.update(s.seats.values())
        source: Iterator[GameSpec] = (s for s in self.games() if s.id not in done)
        n_todo = total - skipped
        self.stats = RunStats(total=total, skipped=skipped)
        try:
            self.check_models()
            if self.uncached_batch is not None:
                raise StudyError(f"model {self.uncached_batch!r}: batch mode keeps each batch's answers in the response cache; leave out --no-cache")
            for note in self.notes if n_todo else []:
                print(f"agora: note: {note}", file=sys.stderr, flush=True)
            for line in unpriced(self.study, names) if n_todo else []:
                print(f"agora: warning: {line}", file=sys.stderr, flush=True)
            if n_todo and self.budget is not None and self.budget.money is not None:
                free = [n for n in sorted(names) if not self.study.models[n].is_strategy and not (self.study.models[n].price_input or self.study.models[n].price_output)]
                if free:
                    print(f"agora: note: the money budget counts nothing for {', '.join(repr(n) for n in free)} (no prices); a token budget caps every model", file=sys.stderr, flush=True)
            if self.probe and n_todo:
                await self.probe_models(names=names)
            if self.budget is not None:
                self.spent_before = stored_spend(self.store, self.study.name)
                if n_todo:
                    self.plan = await build_plan(self.study, done, games=self.games, samples=self.budget.samples, output_tokens=self.budget.output_tokens, batch=self.batch)
        except BaseException:
            if self.lockstep is not None:
                await self.lockstep.aclose()
            for model in self.models.values():
                await model.aclose()
            for client in self.outside.values():
                await client.aclose()
            raise

        claimed: collections.deque[GameSpec] = collections.deque()
        width = min(self.concurrency, max(1, n_todo))
        if self.lockstep is not None:  # batch mode: every claimed game in flight, up to a batch's size
            self.lockstep.resume()  # the batches an earlier run left open are followed first
            width = self.concurrency = max(self.concurrency, min(max(1, n_todo), self.lockstep.max_requests or 1))
        self._game_ended = asyncio.Event()  # set (and replaced) each time a game of this run ends

        async def worker() -> None:
            while self.failure is None and not self.budget_reached:
                try:
                    if not claimed:
                        self._claim_batch(source, claimed)
                    if not claimed:
                        return
                    spec = claimed.popleft()
                    while not self._admit(spec):  # the budget: no new game (its claim is released at the end) ...
                        if not self._reserved or self.budget_reached:
                            self.budget_reached = True
                            return
                        # ... unless a game in flight ends and what it spent (the estimate of the next of its kind) lets it start
                        await self._game_ended.wait()
                    try:
                        await self.play_one(spec)
                    finally:
                        self._reserved.pop(spec.id, None)
                        self._game_ended.set()
                        self._game_ended = asyncio.Event()
                    # a game of scripted players never waits: yield, so Ctrl-C (a cancellation) lands
                    await asyncio.sleep(0)
                except StoreError as exc:
                    self.failure = self.failure or exc

        view = None
        if self.progress:
            view = self.progress if isinstance(self.progress, ProgressView) else ProgressView()
            view.start(self.study.name)
        reporter = asyncio.create_task(self._report_progress(view, n_todo)) if view else None
        # finished games and new answers are written on a worker thread while the loop goes on;
        # a cache of another kind that needs flushing keeps every write on the loop's thread
        if isinstance(self.cache, SQLCache) or not isinstance(self.cache, BufferedCache):
            self.writer.write_in_background(self.cache if isinstance(self.cache, SQLCache) else None)
        beat = asyncio.create_task(self._heartbeat())
        committer = asyncio.create_task(self._commit_periodically())
        try:
            try:
                with self.writer.grouped(), rarer_collections():  # group commit while the study runs; the rest on leaving
                    await asyncio.gather(*(worker() for _ in range(width)))
            except StoreError as exc:
                self.failure = self.failure or exc
        finally:
            try:  # also when stopped (Ctrl-C, SIGTERM): the games not played are free at once
                self.store.release_all(self.owner)
            except Exception:  # the claims expire by themselves
                pass
            beat.cancel()
            committer.cancel()
            if reporter:
                reporter.cancel()
            if self.lockstep is not None:  # open batches stay recorded: the next run follows them
                await self.lockstep.aclose()
            for model in self.models.values():
                await model.aclose()
            for client in self.outside.values():
                await client.aclose()
            if isinstance(self.cache, BufferedCache):
                try:
                    self.cache.flush()
                except StoreError as exc:
                    self.failure = self.failure or exc
            if view:
                view.show(self.snapshot(n_todo), final=True)
                view.stop()
        # the closing counts are what committed, not what was played: after a database failure
        # the games still waiting for their group's transaction are not in the store
        played = self.stats.done + self.stats.errors
        self.stats.done, self.stats.errors = self.writer.committed["done"], self.writer.committed["error"] + self.writer.committed["failed"]
        self.stats.not_stored = played - self.stats.done - self.stats.errors
        if self.failure is not None:
            lost = f" ({self.stats.not_stored} finished game(s) were not stored and will be played again)" if self.stats.not_stored else ""
            raise StoreError(
                f"{self.failure}; the run stopped, {self.stats.done} game(s) finished in it are stored{lost}; "
                f"{fix_hint(str(self.failure))} and run the study again to resume"
            )
        return self.stats

    def _claim_batch(self, source: Iterator[GameSpec], claimed: collections.deque[GameSpec]) -> None:
        """Take the next games from ``source`` and claim them in one transaction (at most
        ``CLAIM_BATCH`` and the run's concurrency), until one is ours to play or ``source`` is exhausted. Games another live
        process holds are left to it; games finished meanwhile (by another process) are skipped.
        A claim is kept until the run ends: with group commit a played game may still wait to be
        written, and a released claim would let another process play it again."""
        while not claimed:
            # no more ahead than the games in flight: other processes sharing the study get their part
            batch = list(itertools.islice(source, min(CLAIM_BATCH, max(1, self.concurrency))))
            if not batch:
                return
            ids = [s.id for s in batch]
            try:
                mine = self.store.claim_many(ids, self.study.name, self.owner, self.claim_ttl)
                done = self.store.done_among([i for i in ids if i in mine]) - self.replay
                self.store.release_many(sorted(done), self.owner)
            except StoreError:
                raise
            except Exception as exc:
                raise StoreError(f"could not claim games ({ids[0]}, ...): {type(exc).__name__}: {redact(str(exc)).splitlines()[0]}") from None
            self.stats.skipped += len(done)
            self.stats.claimed_elsewhere += len(ids) - len(mine)
            claimed.extend(s for s in batch if s.id in mine and s.id not in done)

    async def _heartbeat(self) -> None:
        """Keep this process's claims alive while it runs."""
        while True:
            await asyncio.sleep(self.claim_ttl / 4)
            try:
                self.store.heartbeat(self.owner)
            except Exception:  # a busy or full database: the next beat tries again
                pass

    async def _commit_periodically(self) -> None:
        """Commit finished games that wait while the games still playing are slow."""
        while True:
            await asyncio.sleep(self.writer.interval / 2)
            if self.writer.due():
                try:
                    self.writer.commit()
                except StoreError as exc:
                    self.failure = self.failure or exc
                    return

    # progress --------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        ms = self.models.values()
        return {
            "calls": sum(m.calls for m in ms),
            "agent_calls": sum(c.calls for c in self.outside.values()),  # requests to outside agents (http/URL)
            "cache_hits": sum(m.cache_hits for m in ms),
            "tokens": sum(m.prompt_tokens + m.completion_tokens for m in ms),
            "cached_tokens": sum(m.cached_tokens for m in ms),
            "prompt_tokens": sum(m.prompt_tokens for m in ms),
            "by_tier": spend_by_tier(ms),
            "cost": sum(m.cost for m in ms),
            "rate_limited": sum(m.rate_limited for m in ms),
            "backoffs": sum(m.limit.backoffs for m in ms),
            "reasoning_tokens": sum(m.reasoning_tokens for m in ms),
            "cut_off": sum(m.cut_off for m in ms),
            "reasoning": self.reasoning_line(),
            "notes": list(self.notes),
            "warnings": [w for m in ms for w in m.warnings],
            "stopped": {name: m.dead for name, m in self.models.items() if m.dead},
            "budget": self.budget_summary(),
            "batch": self.lockstep.summary() if self.lockstep is not None else None,
        }

    def budget_summary(self) -> dict[str, Any] | None:
        """The budget's limits, what the study has spent (before this run and in all), and
        whether it kept a game from starting; None without a budget."""
        if self.budget is None:
            return None
        cost, tokens = self.spent()
        return {
            "money": self.budget.money,
            "tokens": self.budget.tokens,
            "spent_cost": cost,
            "spent_tokens": tokens,
            "before_cost": self.spent_before[0],
            "before_tokens": self.spent_before[1],
            "reached": self.budget_reached,
            "refused": self.budget_refused,
        }

    def snapshot(self, todo: int) -> Snapshot:
        """The progress so far (see :mod:`agorabench.core.progress`)."""
        s, info = self.stats, self.summary()
        adaptive = [m.limit for m in self.models.values() if m.limit.adaptive]
        return Snapshot(
            study=self.study.name,
            todo=todo,
            finished=s.done + s.errors,
            skipped=s.skipped,
            errors=s.errors,
            turns_done=s.turns + sum(len(t.turns) for t in self._live.values()),
            turns_finished_games=s.turns,
            invalid=s.invalid,
            elapsed=s.elapsed,
            calls=info["calls"] + info["agent_calls"],  # outside agents' requests are calls too
            cache_hits=info["cache_hits"],
            tokens=info["tokens"],
            cached_tokens=info["cached_tokens"],
            prompt_tokens=info["prompt_tokens"],
            by_tier=info["by_tier"],
            cost=info["cost"],
            backoffs=info["backoffs"],
            rate_limited=info["rate_limited"],
            in_flight_limit=" ".join(f"{lim.current}/{lim.maximum}" for lim in adaptive),
            reasoning=self.reasoning_line(),
            batches=self.lockstep.progress() if self.lockstep is not None else "",
        )

    def reasoning_line(self) -> str:
        """Reasoning tokens and cut-off replies of each model that reasons (or was cut off)."""
        pieces = []
        for name, m in self.models.items():
            if m.settings.reasoning or m.reasoning_tokens:  # models that reason (a plain model's cut replies are judged as given)
                used = f"{m.reasoning_tokens} tok" if m.reasoning_reported else "n/a tok (not reported)"
                pieces.append(f"{name} {used}, {m.cut_off} cut off")
        return "; ".join(pieces)

    async def _report_progress(self, view: ProgressView, todo: int) -> None:
        while True:
            await asyncio.sleep(view.interval)
            view.show(self.snapshot(todo))


def fix_hint(problem: str) -> str:
    """What to do about a store failure, by its cause: free space for a full disk, a restore for
    damage, the database itself (reachable? writable?) otherwise."""
    text = problem.lower()
    if "disk is full" in text or "no space" in text or "disk full" in text:
        return "free disk space"
    if "damaged" in text:
        return "restore or rebuild the database as said"
    if "locked" in text or "busy" in text:
        return "wait for the process holding the database, or give this run another --db"
    return "fix the cause named above"


class NoCache:
    """A response cache that keeps nothing (``agora run --no-cache``): every decision is a call."""

    def get(self, key: str) -> None:
        return None

    def put(self, key: str, identity: str, completion: Completion) -> None:
        return None


def run_study(study: Study, db: str | Path, concurrency: int = 8, cache_db: str | Path | None = None, progress: bool = True, probe: bool = True, use_cache: bool = True, budget: Budget | None = None, batch: bool = False) -> tuple[RunStats, dict[str, Any]]:
    """Synchronous entry point used by the CLI and tests (``use_cache=False``: no response
    cache is read or written; ``budget``: see :class:`Budget`)."""
    # the full integrity check before anything is written (see Store.verify)
    store = Store(db, check_integrity="full")
    cache_store = Store(cache_db, check_integrity="full") if cache_db and use_cache else store
    runner = Runner(study, store, concurrency=concurrency, cache=SQLCache(cache_store) if use_cache else NoCache(), progress=progress, probe=probe, budget=budget, batch=batch)
    try:
        stats = run_loop(runner.run())
    finally:
        store.dispose()
        if cache_store is not store:
            cache_store.dispose()
    return stats, runner.summary()

"""Who plays a study's seats: the backends of its language models, the clients of its outside
agents and its scripted strategies, built once per entry, and the probe of every hosted model
before the first game.

- A model entry gets one :class:`~agorabench.models.model.Model` for the run (its backend, its
  decoding settings, its pricing, retries, rate limits and the breaker shared by its server's
  models); a setting its dialect cannot carry, or a backend that cannot be made, is a
  StudyError naming the entry before any game.
- A model plays in provider batches when its entry (``batch = true``) or the run (``--batch``)
  asks for it (:class:`~agorabench.core.lockstep.Lockstep`, made with the first such model).
- A call's waiting time (:func:`default_timeout`): the entry's ``timeout``, a flex tier's
  longer one, or the default lengthened by a reasoning model's output limit.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, Callable, Iterable

from ..families import strategies
from ..models.base import Backend, BackendError, NoCache, ResponseCache, dialect_of, probe_target_of
from ..models.errors import SpecError
from ..models.limits import RateLimiter
from ..models.model import Model, Pricing, RetryPolicy
from ..models.outside import OutsideClient
from ..models.providers import FLEX_TIMEOUT, BackendOptions, open_backend
from ..models.reasoning import output_limit, sampling_notes, setting_problems
from ..store.store import Store
from .agents import LLMAgent, OutsideAgent
from .decoding import generation_settings, sent_settings
from .lockstep import Lockstep
from .plan import batched
from .study import GameSpec, ModelEntry, Study, StudyError
from .table import Player

#: A reasoning model whose entry sets no ``timeout`` waits the default plus one second per this
#: many output tokens it may use (16,256 tokens: 120 + 325 = 445 s): a long chain of thought
#: at a provider's few dozen tokens a second takes minutes.
REASONING_TOKENS_PER_SECOND = 50

#: What a run hangs on each model it builds before any call (the budget's gate), or None.
GateFor = Callable[[Model, ModelEntry], Callable[[list[dict[str, str]], Any], Callable[[], None]]]


def build_backend(entry: ModelEntry) -> Backend:
    """The backend of an LLM model entry (:func:`agorabench.models.providers.open_backend`);
    StudyError for a spec that names no backend, BackendError for one that cannot be made."""
    try:
        return open_backend(entry.model_spec, backend_options(entry))
    except SpecError as exc:
        raise StudyError(str(exc)) from None


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


class Seating:
    """The players of one run, each entry's built once: :meth:`player` seats an entry in a game,
    :meth:`check` builds every seated entry before the first game, :meth:`probe` asks each
    hosted model's server once, :meth:`aclose` closes what was opened."""

    def __init__(self, study: Study, store: Store, cache: ResponseCache, owner: str, batch: bool = False) -> None:
        self.study = study
        self.store = store
        self.cache = cache
        #: The run's name on its claims (the lockstep's batches carry it).
        self.owner = owner
        #: ``agora run --batch``: every language model whose provider has a batch API plays in
        #: provider batches (:mod:`agorabench.core.lockstep`), as an entry's ``batch = true`` asks.
        self.batch = batch
        #: The coordinator of the batch models' rounds (made when the first one is built).
        self.lockstep: Lockstep | None = None
        #: Makes a batch model's client (None: :func:`agorabench.models.batch.open_batch_client`).
        self.open_batch_client: Callable[[ModelEntry], Any] | None = None
        #: A model that would play in batches, were there a response cache (the run refuses it).
        self.uncached_batch: str | None = None
        #: The run's check before each call of a model (the budget), hung on each model built.
        self.gate_for: GateFor | None = None
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

    def _note(self, note: str) -> None:
        if note not in self.notes:
            self.notes.append(note)

    def model(self, entry: ModelEntry) -> Model:
        """The run's one model of a language-model entry, built on first use."""
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
                self._note(note)
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
            if self.gate_for is not None:
                self.models[entry.name].gate = self.gate_for(self.models[entry.name], entry)
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
            self._note(f"model {entry.name!r} plays live (--batch): {where}")
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
            self._note(f"model {entry.name!r} plays live (--batch): {problem}")
            return
        if isinstance(self.cache, NoCache):  # refused when the run starts (a check of the models alone passes)
            self.uncached_batch = self.uncached_batch or entry.name
            return
        if self.lockstep is None:
            self.lockstep = Lockstep(self.store, self.cache, self.study.name, owner=self.owner)
        self.lockstep.attach(model, client, entry.name, entry.batch_poll, entry.batch_poll_max)

    def player(self, entry: ModelEntry, spec: GameSpec) -> Player:
        """The player of ``entry`` in the game ``spec``: a strategy made with the entry's
        parameters, an outside agent, or a language model; StudyError for a human seat (played
        through `agora serve`) or a strategy the game does not have."""
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
        return LLMAgent(self.model(entry), sample=spec.id, constrained=entry.constrained)

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

    def check(self) -> None:
        """Fail fast, before any game, on an unknown model or strategy (one-line errors): each
        model seated in a game of the study is built once for that game."""
        for spec, used in self.study.first_games().values():
            for role_model in used:
                if not self.study.models[role_model].is_human:
                    self.player(self.study.models[role_model], spec)

    async def probe(self, specs: list[GameSpec] | None = None, names: set[str] | None = None) -> None:
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
            target = probe_target_of(self.model(entry).backend)
            if target is not None:
                targets[name] = target
        problems = await probe_many(targets)  # one listing per distinct server and key
        bad = [f"model {name!r}: {problem}" for name, problem in problems.items() if problem]
        if bad:
            raise StudyError("; ".join(bad) + " (no game was started; --no-probe skips this check)")

    async def aclose(self) -> None:
        """Close the lockstep (open batches stay recorded: the next run follows them), every
        model and every outside agent's client."""
        if self.lockstep is not None:
            await self.lockstep.aclose()
        for model in self.models.values():
            await model.aclose()
        for client in self.outside.values():
            await client.aclose()

"""Provider batches in lockstep: a study's games played round by round, each round's model calls
sent as one provider batch per model (OpenAI Batch, Anthropic Message Batches, Gemini batch mode).

How a run in batch mode goes (``batch = true`` on a model entry, or ``agora run --batch``):

- Every claimed game is in flight at once. A call of a batch model that the response cache
  cannot answer waits (:meth:`Lockstep.call`, :attr:`agorabench.models.model.Model.batcher`) as
  a :class:`~agorabench.models.batch.BatchItem` whose ``custom_id`` is the call's response-cache
  key; waiting calls with the same key share one item.
- A round is submitted when every live game waits on a model call and no new call has come for
  a few turns of the event loop (:data:`SETTLE`), or, when some game waits on other work (an
  embedding on a worker thread, a live model), once no call has come for :data:`QUIET` seconds.
  Each model's waiting items go out as one batch, split only at the provider's limits
  (:func:`~agorabench.models.batch.split_items`).
- Each batch is recorded in the store (table ``batches``) as soon as the provider names it,
  before the run waits on it; it is polled after ``batch_poll`` seconds, then 1.5 times longer
  each time, at most ``batch_poll_max``. When it ends, its answers are written into the
  response cache (the row is marked done only after that), handed to the waiting calls, and the
  games play on to their next calls: the next round.
- An item that expired, was canceled, is missing or met a transient error is asked again in the
  next round (at most the model's ``max_attempts`` times); an item whose error will not change
  fails its call with the provider's message (its game ends as an error and is played again by
  the next run); a batch that fails whole fails its calls with one line in the provider's words.
- A run that starts again (after Ctrl-C, a kill, or on another machine sharing the database)
  first follows the open batches of its study and model: their answers reach the response cache,
  a call whose key is in one waits for it, and nothing is submitted (paid for) twice.

A study played live and in batch mode stores the same games at temperature 0: the calls, their
keys and their answers are the same; only when they are made differs. The number of rounds is
the longest chain of calls in any game (:class:`CallWaves` counts it for one played game).
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from ..models.base import CALL_CONTEXT, BackendError, Completion, GenerationSettings, ResponseCache, sanitize_text
from ..models.model import Model, clean_usage, keep_apart, replayable
from ..models.reasoning import output_limit
from ..redact import redact
from ..store.batches import open_batches, record_batch, update_batch
from ..store.errors import StoreError

if TYPE_CHECKING:
    from ..models.batch import BatchClient, BatchItem, BatchState, ItemFailure
    from ..store.store import Store
    from .table import Player, Reply, TurnRequest

#: Turns of the event loop with no new call before a round whose games all wait is submitted
#: (the calls a game makes together, e.g. every seat of a simultaneous move, arrive within a few).
SETTLE = 8
#: Seconds with no new call after which the waiting calls are submitted even though some game
#: does not wait on a model call (it waits on other work).
QUIET = 0.2
#: Each poll of a batch that has not ended waits this much longer than the one before.
POLL_GROWTH = 1.5
#: Open batches shown by name in the progress line.
SHOWN_BATCHES = 3


def _batch_api() -> Any:
    """The provider batch clients' module (imported when a batch model is first used)."""
    from ..models import batch

    return batch


def worst_case(model: Model, items: list[BatchItem]) -> tuple[float, float]:
    """(dollars, tokens) ``items`` may cost at most: each item's input at characters / 4 and its
    whole output bound (``max_tokens`` plus any reasoning budget), at the model's batch prices."""
    rates = model.pricing.rates("batch") if hasattr(model.pricing, "rates") else None
    price_in = rates.input if rates is not None else model.pricing.input / 2
    price_out = rates.output if rates is not None else model.pricing.output / 2
    tokens_in = sum(math.ceil(sum(len(m.get("content") or "") for m in item.messages) / 4) for item in items)
    tokens_out = sum(output_limit(item.settings) for item in items)
    return (tokens_in * price_in + tokens_out * price_out) / 1e6, float(tokens_in + tokens_out)


@dataclass
class _Waiter:
    future: asyncio.Future
    game: str | None
    resolved: bool = False


@dataclass(eq=False)
class _Call:
    """One item: the waiting calls that share its key, and where it stands."""

    item: BatchItem
    waiters: list[_Waiter] = field(default_factory=list)
    #: Times it was submitted.
    attempts: int = 0
    #: The batch it is in (None: waiting for the next round).
    batch: str | None = None


@dataclass
class BatchView:
    """What the progress line shows of one batch."""

    model: str
    batch_id: str
    round: int
    items: int
    status: str = "submitted"
    counts: dict[str, int] = field(default_factory=dict)
    ended: bool = False
    #: Submitted by an earlier run (followed, not submitted, by this one).
    adopted: bool = False

    def line(self) -> str:
        c = self.counts
        ok, err, exp = c.get("succeeded", 0), c.get("errored", 0), c.get("expired", 0)
        return f"{self.model} {self.batch_id} {self.status} {ok + err + exp}/{self.items} (ok {ok}, errored {err}, expired {exp})"


class _Lane:
    """One batch model: its client, its settings of polling and its items."""

    def __init__(self, model: Model, client: BatchClient, name: str, poll: float, poll_max: float) -> None:
        self.model = model
        self.client = client
        self.name = name
        self.poll = poll
        self.poll_max = max(poll, poll_max)
        self.identity = model.backend.identity
        #: Items waiting for the next round, by key.
        self.queue: dict[str, _Call] = {}
        #: Items in a submitted batch (this run's or an earlier one's), by key.
        self.inflight: dict[str, _Call] = {}
        #: Keys of the open batches an earlier run submitted, with the batch's id.
        self.adopted: dict[str, str] = {}
        self.started = False


class Lockstep:
    """The coordinator of a run's batch models (see the module's docstring).

    The runner attaches each batch model (:meth:`attach`), says which games are live
    (:meth:`started`, :meth:`ended`) and closes it at the end (:meth:`aclose`). ``may_submit``
    (the runner may set it) is asked before a round's batch of a model is submitted, with the
    model and its items; it returns those that may go (:func:`worst_case` prices them); the calls
    of the others fail (their games end as errors). By default every item goes."""

    def __init__(self, store: Store, cache: ResponseCache, study: str, *, quiet: float = QUIET, settle: int = SETTLE, owner: str | None = None) -> None:
        self.store = store
        self.cache = cache
        self.study = study
        self.quiet = quiet
        self.settle = max(1, settle)
        self.owner = owner
        self.may_submit: Callable[[Model, list[BatchItem]], list[BatchItem]] | None = None
        #: Rounds submitted so far.
        self.round = 0
        #: Every batch this run submitted or followed, by id.
        self.batches: dict[str, BatchView] = {}
        #: Items submitted, and of those asked again (expired, canceled, missing, transient).
        self.items_submitted = 0
        self.items_retried = 0
        #: Items whose calls failed (an item error, a batch that failed whole).
        self.items_failed = 0
        self._lanes: dict[int, _Lane] = {}
        self._live: set[str] = set()
        self._unbatched: set[str] = set()
        self._waiting: dict[str | None, int] = {}
        self._live_waiting = 0
        self._arrivals = 0
        self._last_arrival = 0.0
        self._changed: asyncio.Event | None = None
        self._pump: asyncio.Task | None = None
        self._tasks: set[asyncio.Task] = set()
        self._closed = False
        #: How the wait between polls is slept (a test may record it).
        self.sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep

    # the runner's side --------------------------------------------------------------
    def attach(self, model: Model, client: BatchClient, name: str, poll: float = 1.0, poll_max: float = 300.0) -> None:
        """Play ``model``'s calls in batches through ``client`` (named ``name`` in lines shown).
        The open batches an earlier run of the study submitted for it are read now."""
        lane = _Lane(model, client, name, poll, poll_max)
        for row in open_batches(self.store, self.study, lane.identity):
            for key in row.items:
                lane.adopted[key] = row.batch_id
            self.batches[row.batch_id] = BatchView(name, row.batch_id, row.round, len(row.items), row.status, dict(row.counts), adopted=True)
        self._lanes[id(model)] = lane
        model.batcher = self.call

    @property
    def max_requests(self) -> int | None:
        """The fewest requests one batch of an attached model may hold (None: none attached)."""
        limits = [lane.client.max_requests for lane in self._lanes.values()]
        return min(limits) if limits else None

    def resume(self) -> None:
        """Follow the open batches earlier runs submitted for every attached model (their
        answers reach the response cache whether or not a game of this run asks them)."""
        for lane in self._lanes.values():
            self._start(lane)

    def started(self, game: str, batched: bool = True) -> None:
        """A game of the run began: rounds wait for its calls. A game not ``batched`` (one a
        person plays, who should not wait for a batch) makes its calls live."""
        if not batched:
            self._unbatched.add(game)
            return
        if game in self._live:
            return
        self._live.add(game)
        if self._waiting.get(game):
            self._live_waiting += 1
        self._poke()

    def ended(self, game: str) -> None:
        """A game of the run ended: rounds no longer wait for it."""
        self._unbatched.discard(game)
        if game not in self._live:
            return
        self._live.discard(game)
        if self._waiting.get(game):
            self._live_waiting -= 1
        self._poke()

    async def aclose(self) -> None:
        """Stop polling and close the clients. Batches still open stay recorded: the next run
        follows them."""
        self._closed = True
        tasks = [t for t in (self._pump, *self._tasks) if t is not None]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        for lane in self._lanes.values():
            try:
                await lane.client.aclose()
            except Exception:  # a client that cannot close cleanly changes no result
                pass

    # the model's side ----------------------------------------------------------------
    async def call(self, model: Model, key: str, messages: list[dict[str, str]], settings: GenerationSettings) -> Completion:
        """A batch model's call the response cache could not answer: its completion once the
        batch holding it has ended (:data:`agorabench.models.model.Batcher`)."""
        lane = self._lanes.get(id(model))
        if lane is None:
            raise BackendError(f"{model.backend.identity}: not attached to batch mode", retryable=False)
        context = CALL_CONTEXT.get()
        if context is not None and context.game in self._unbatched:  # a person's game: no waiting for a batch
            return await model._attempts(messages, settings)
        if model.dead is not None:
            raise BackendError(f"{lane.identity}: {model.dead}", retryable=False, fatal=True)
        self._start(lane)
        call = lane.queue.get(key) or lane.inflight.get(key)
        if call is None:
            item = _batch_api().BatchItem(custom_id=key, messages=messages, settings=settings)
            if key in lane.adopted:  # in a batch an earlier run submitted: wait for it
                call = lane.inflight[key] = _Call(item, batch=lane.adopted[key])
            else:
                hit = self.cache.get(key)  # an earlier run's batch answered it meanwhile
                if hit is not None and replayable(hit):
                    hit.cached = True
                    return hit
                call = lane.queue[key] = _Call(item)
                self._arrived()
        waiter = _Waiter(asyncio.get_running_loop().create_future(), context.game if context is not None else None)
        call.waiters.append(waiter)
        self._wait(waiter.game, +1)
        self._poke()
        try:
            return await waiter.future
        except asyncio.CancelledError:
            if not waiter.resolved:
                waiter.resolved = True
                self._wait(waiter.game, -1)
                if waiter in call.waiters:
                    call.waiters.remove(waiter)
                if not call.waiters and lane.queue.get(key) is call:
                    del lane.queue[key]
            raise

    # progress ------------------------------------------------------------------------
    def progress(self) -> str:
        """The round and each open batch's state and counts, e.g. ``round 2; gpt batch_1
        in_progress 40/100 (ok 38, errored 1, expired 1)``; "" before the first batch."""
        if not self.round and not self.batches:
            return ""
        open_ = [v for v in self.batches.values() if not v.ended]
        shown = [v.line() for v in open_[:SHOWN_BATCHES]]
        if len(open_) > SHOWN_BATCHES:
            shown.append(f"{len(open_) - SHOWN_BATCHES} more open")
        head = f"round {self.round}, {len(self.batches)} batch(es)" + (f", {len(open_)} open" if open_ else "")
        return "; ".join([head, *shown])

    def summary(self) -> dict[str, Any]:
        """Rounds, batches and items of the run (for its closing line)."""
        return {
            "rounds": self.round,
            "batches": sum(1 for v in self.batches.values() if not v.adopted),
            "followed": sum(1 for v in self.batches.values() if v.adopted),
            "items": self.items_submitted,
            "retried": self.items_retried,
            "failed": self.items_failed,
        }

    # rounds --------------------------------------------------------------------------
    def _start(self, lane: _Lane) -> None:
        """Start the round keeper and follow ``lane``'s adopted batches (once)."""
        if self._closed:
            return
        if self._pump is None:
            self._pump = asyncio.get_running_loop().create_task(self._keep_rounds())
        if not lane.started:
            lane.started = True
            for batch_id in sorted(set(lane.adopted.values())):
                self._spawn(self._follow(lane, batch_id, first_delay=0.0))

    def _spawn(self, coro: Awaitable[None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)  # type: ignore[arg-type]
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _poke(self) -> None:
        if self._changed is not None:
            self._changed.set()

    def _arrived(self) -> None:
        self._arrivals += 1
        self._last_arrival = time.monotonic()

    def _wait(self, game: str | None, step: int) -> None:
        """Count a call of ``game`` that starts (+1) or stops (-1) waiting."""
        before = self._waiting.get(game, 0)
        after = before + step
        if after:
            self._waiting[game] = after
        else:
            self._waiting.pop(game, None)
        if game in self._live and (before == 0) != (after == 0):
            self._live_waiting += 1 if after else -1

    def _queued(self) -> bool:
        return any(lane.queue for lane in self._lanes.values())

    async def _keep_rounds(self) -> None:
        """Submit a round whenever its time has come (see the module's docstring)."""
        while True:
            if not self._queued():
                await self._until_change(None)
                continue
            stamp = self._arrivals
            for _ in range(self.settle):
                await asyncio.sleep(0)
            if stamp != self._arrivals:
                continue
            quiet_for = time.monotonic() - self._last_arrival
            if self._live_waiting >= len(self._live) or quiet_for >= self.quiet:
                try:
                    self._submit_round()
                except Exception as exc:  # a bug must not leave calls waiting for ever
                    for lane in self._lanes.values():
                        calls, lane.queue = list(lane.queue.values()), {}
                        self._fail(lane, calls, BackendError(f"{lane.identity}: batch mode failed: {type(exc).__name__}: {redact(str(exc))}", retryable=False))
            else:
                await self._until_change(self.quiet - quiet_for)

    async def _until_change(self, timeout: float | None) -> None:
        """Wait until a call arrives, a game begins or ends, or ``timeout`` seconds pass."""
        self._changed = asyncio.Event()
        try:
            await asyncio.wait_for(self._changed.wait(), timeout)
        except asyncio.TimeoutError:
            pass

    def _submit_round(self) -> None:
        """Send each model's waiting items as one batch (split at the provider's limits)."""
        self.round += 1
        for lane in self._lanes.values():
            if not lane.queue:
                continue
            calls, lane.queue = dict(lane.queue), {}
            if lane.model.dead is not None:
                self._fail(lane, list(calls.values()), BackendError(f"{lane.identity}: {lane.model.dead}", retryable=False, fatal=True))
                continue
            items = [c.item for c in calls.values()]
            if self.may_submit is not None:
                allowed = {item.custom_id for item in self.may_submit(lane.model, items)}
                refused = [c for k, c in calls.items() if k not in allowed]
                if refused:
                    self._fail(lane, refused, BackendError(f"{lane.identity}: the budget leaves no room for this call in a batch", retryable=False))
                items = [item for item in items if item.custom_id in allowed]
            for chunk in _batch_api().split_items(items, lane.client) if items else []:
                part = {item.custom_id: calls[item.custom_id] for item in chunk}
                for key, c in part.items():
                    c.attempts += 1
                    c.batch = ""  # being submitted
                    lane.inflight[key] = c
                self._spawn(self._submit(lane, part, self.round))

    async def _submit(self, lane: _Lane, calls: dict[str, _Call], round_: int) -> None:
        """Submit one batch, record it, and follow it to its end."""
        items = [c.item for c in calls.values()]
        try:
            batch_id = await self._retrying(lane, lambda: lane.client.submit(items))
        except BackendError as exc:
            self._fail(lane, list(calls.values()), BackendError(f"{lane.identity}: a batch of {len(items)} call(s) could not be submitted: {exc}", retryable=False, fatal=exc.fatal))
            return
        except Exception as exc:
            self._fail(lane, list(calls.values()), BackendError(f"{lane.identity}: a batch of {len(items)} call(s) could not be submitted: {type(exc).__name__}: {redact(str(exc))}", retryable=False))
            return
        for c in calls.values():
            c.batch = batch_id
        lane.model.calls += len(items)
        self.items_submitted += len(items)
        self.batches[batch_id] = BatchView(lane.name, batch_id, round_, len(items))
        try:  # before waiting on it: a run stopped from now on follows it instead of paying again
            record_batch(self.store, provider=lane.client.provider, batch_id=batch_id, study=self.study, identity=lane.identity, items=list(calls), round=round_, owner=self.owner)
        except StoreError as exc:
            self._fail(lane, list(calls.values()), exc)
            return
        await self._follow(lane, batch_id, first_delay=lane.poll)

    async def _follow(self, lane: _Lane, batch_id: str, first_delay: float) -> None:
        """Poll a batch until it ends (backing off), then collect it."""
        try:
            # polls after first_delay, then after poll, poll x 1.5, ... (at most poll_max) from the last
            delay = first_delay
            wait = lane.poll if first_delay <= 0 else min(lane.poll * POLL_GROWTH, lane.poll_max)
            while True:
                if delay > 0:
                    await self.sleep(delay)
                try:
                    state = await lane.client.poll(batch_id)
                except BackendError as exc:
                    if exc.fatal or not exc.retryable:
                        self._fail(lane, self._of_batch(lane, batch_id), BackendError(f"{lane.identity}: batch {batch_id} could not be polled: {exc}", retryable=False, fatal=exc.fatal))
                        return  # its row stays open: a later run polls it again
                    delay, wait = wait, min(wait * POLL_GROWTH, lane.poll_max)
                    continue
                self._note(lane, batch_id, state)
                if state.ended:
                    break
                delay, wait = wait, min(wait * POLL_GROWTH, lane.poll_max)
            await self._collect(lane, batch_id, state)
        except asyncio.CancelledError:
            raise
        except StoreError as exc:
            self._fail(lane, self._of_batch(lane, batch_id), exc)
        except Exception as exc:  # a bug must not leave calls waiting for ever
            self._fail(lane, self._of_batch(lane, batch_id), BackendError(f"{lane.identity}: batch {batch_id}: {type(exc).__name__}: {redact(str(exc))}", retryable=False))

    def _note(self, lane: _Lane, batch_id: str, state: BatchState) -> None:
        view = self.batches.get(batch_id)
        if view is not None:
            view.status, view.counts = state.status, dict(state.counts or {})
        if not state.ended:
            update_batch(self.store, lane.client.provider, batch_id, status=state.status, counts=state.counts)

    async def _collect(self, lane: _Lane, batch_id: str, state: BatchState) -> None:
        """A batch has ended: its answers into the response cache, then to the waiting calls;
        items to ask again into the next round; failures to their calls."""
        view = self.batches.get(batch_id)
        if state.failed:
            words = " ".join(str(state.failed).split())
            update_batch(self.store, lane.client.provider, batch_id, status=state.status, counts=state.counts, done=True, error=words)
            if view is not None:
                view.ended = True
            self._forget(lane, batch_id)
            calls = self._of_batch(lane, batch_id)
            self.items_failed += len(calls)
            self._fail(lane, calls, BackendError(f"{lane.identity}: batch {batch_id} failed: {words}", retryable=False))
            return
        try:
            results = await self._retrying(lane, lambda: lane.client.results(batch_id))
        except BackendError as exc:
            self._fail(lane, self._of_batch(lane, batch_id), BackendError(f"{lane.identity}: the results of batch {batch_id} could not be read: {exc}", retryable=False, fatal=exc.fatal))
            return  # its row stays open: a later run reads them again
        answers: dict[str, Completion] = {}
        failures: dict[str, ItemFailure] = {}
        for key, result in results.items():
            if isinstance(result, Completion):
                as_live_answer(result)
                if replayable(result):
                    self.cache.put(key, lane.identity, result)
                answers[key] = result
            else:
                failures[key] = result
        flush = getattr(self.cache, "flush", None)
        if answers and callable(flush):
            flush()  # the answers are stored before the batch counts as collected
        update_batch(self.store, lane.client.provider, batch_id, status=state.status, counts=state.counts, done=True)
        if view is not None:
            view.ended = True
        self._forget(lane, batch_id)
        api = _batch_api()
        for call in self._of_batch(lane, batch_id):
            key = call.item.custom_id
            lane.inflight.pop(key, None)
            answer = answers.get(key)
            if answer is not None:
                self._resolve(call, answer)
                continue
            failure = failures.get(key) or api.ItemFailure("missing", "the batch's results hold no answer for it", retry=True)
            if failure.retry and call.attempts < lane.model.retry.max_attempts:
                call.batch = None
                self.items_retried += 1
                lane.queue[key] = call  # into the next round
                self._arrived()
                self._poke()
                continue
            self.items_failed += 1
            asked = f" (asked {call.attempts} time(s))" if failure.retry else ""
            self._fail(lane, [call], BackendError(f"{lane.identity}: batch {batch_id}: {failure.kind}: {' '.join(str(failure.message).split())}{asked}", retryable=False))

    def _forget(self, lane: _Lane, batch_id: str) -> None:
        """An earlier run's batch has been collected: its keys are the cache's now."""
        for key in [k for k, b in lane.adopted.items() if b == batch_id]:
            del lane.adopted[key]

    def _of_batch(self, lane: _Lane, batch_id: str) -> list[_Call]:
        """The waiting calls in batch ``batch_id``."""
        return [c for c in lane.inflight.values() if c.batch == batch_id]

    def _resolve(self, call: _Call, completion: Completion) -> None:
        for i, waiter in enumerate(call.waiters):
            if not waiter.resolved:
                waiter.resolved = True
                self._wait(waiter.game, -1)
                if not waiter.future.done():  # each waiter its own copy (a model books what it is given)
                    waiter.future.set_result(completion if i == 0 else dataclasses.replace(completion, extra=dict(completion.extra)))
        call.waiters.clear()

    def _fail(self, lane: _Lane, calls: list[_Call], exc: BaseException) -> None:
        if isinstance(exc, BackendError) and exc.fatal and lane.model.dead is None:
            lane.model.dead = str(exc)
        for call in calls:
            key = call.item.custom_id
            if lane.inflight.get(key) is call:
                del lane.inflight[key]
            if lane.queue.get(key) is call:
                del lane.queue[key]
            for waiter in call.waiters:
                if not waiter.resolved:
                    waiter.resolved = True
                    self._wait(waiter.game, -1)
                    if not waiter.future.done():
                        waiter.future.set_exception(exc)
            call.waiters.clear()

    async def _retrying(self, lane: _Lane, request: Callable[[], Awaitable[Any]]) -> Any:
        """A request of the batch API, tried again on transient faults (the model's retry policy)."""
        attempt = 0
        while True:
            attempt += 1
            try:
                return await request()
            except BackendError as exc:
                if exc.fatal or not exc.retryable or attempt >= lane.model.retry.max_attempts:
                    raise
                await asyncio.sleep(lane.model.retry.delay(attempt, exc))


def as_live_answer(completion: Completion) -> Completion:
    """A batch's answer made what a live call's answer is made before it is cached (token
    counts checked, thoughts apart from the text, the text sanitised)."""
    clean_usage(completion)
    keep_apart(completion)
    completion.text, cut = sanitize_text(completion.text)
    if cut:
        completion.finish_reason = "cut"
    return completion


class CallWaves:
    """The waves of one game's model calls: the rounds the game takes in batch mode (the longest
    chain of calls, each waiting for the one before; the calls a game makes together, e.g. every
    seat of a simultaneous move, are one wave). Wrap the players of the language-model seats
    (:meth:`wrap`), play the game, read :attr:`waves`. Each wave's calls are held until none has
    come for a few turns of the event loop, then made together, as a batch round would be."""

    def __init__(self, settle: int = SETTLE) -> None:
        self.settle = max(1, settle)
        #: Waves so far.
        self.waves = 0
        self._pending: list[tuple[Player, TurnRequest, asyncio.Future]] = []
        self._closer: asyncio.Task | None = None

    def wrap(self, player: Player) -> Player:
        """``player`` with its calls counted in waves."""
        return _Waved(player, self)

    async def _act(self, player: Player, request: TurnRequest) -> Reply:
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        self._pending.append((player, request, future))
        if self._closer is None or self._closer.done():
            self._closer = asyncio.get_running_loop().create_task(self._close_wave())
        return await future

    async def _close_wave(self) -> None:
        while True:
            seen = len(self._pending)
            for _ in range(self.settle):
                await asyncio.sleep(0)
            if len(self._pending) == seen:
                break
        wave, self._pending = self._pending, []
        self.waves += 1
        replies = await asyncio.gather(*(player.act(request) for player, request, _ in wave), return_exceptions=True)
        for (_, _, future), reply in zip(wave, replies):
            if future.done():
                continue
            if isinstance(reply, BaseException):
                future.set_exception(reply)
            else:
                future.set_result(reply)


class _Waved:
    """A player whose calls :class:`CallWaves` counts."""

    def __init__(self, player: Player, waves: CallWaves) -> None:
        self.player = player
        self.waves = waves

    async def act(self, request: TurnRequest) -> Reply:
        return await self.waves._act(self.player, request)

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
- A budget (:class:`~agorabench.core.spending.Budget`) is checked before each game starts and
  before every model call not answered from the response cache; a language model whose turns
  are invalid ``stop_after_invalid`` times in a row stops (:mod:`agorabench.core.spending`).
- Who sits in the seats (models, outside agents, strategies) and the probe of every hosted
  model before the first game: :mod:`agorabench.core.seating`.
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

from ..families import embeddings_field
from ..loop import run as run_loop
from ..models.base import BackendError, BufferedCache, NoCache, ResponseCache, WriterCache
from ..models.model import Model
from ..models.outside import OutsideClient
from ..redact import redact
from ..store.cache import SQLCache
from ..store.claims import CLAIM_TTL, claim_owner
from ..store.errors import StoreError
from ..store.store import Store
from ..store.writer import GameWriter
from .agents import LLMAgent
from .coverage import run_seating
from .game import GameConfig, Prompts
from .plan import build_plan, stored_spend, unpriced
from .progress import ProgressView, Snapshot
from .seating import Seating
from .spending import BUDGET_MARK, Budget, Spending, reasoning_line
from .study import GameSpec, ModelEntry, Study, StudyError
from .table import BackendFailure, Player, Table, TurnLimit

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
        self.probe = probe
        #: The games this runner may play, generated in study order (an executor's share,
        #: :class:`~agorabench.core.executors.Share`); None: every game of the study.
        self.select = select
        self.store = store
        self.concurrency = max(1, concurrency)
        self.cache = cache if cache is not None else SQLCache(store)
        self.progress = progress
        #: The run's players: models, outside agents' clients, strategies (:mod:`.seating`).
        self.seating = Seating(study, store, self.cache, claim_owner(), batch=batch)
        #: The run's spending: budget, invalid streaks, summary (:mod:`.spending`).
        self.spending = Spending(budget, self.seating.models, self.seating.outside, self.cache)
        if budget is not None:
            self.seating.gate_for = self.spending.gate
        #: The seated models and outside agents' clients by name, and the notes for the researcher.
        self.models: dict[str, Model] = self.seating.models
        self.outside: dict[str, OutsideClient] = self.seating.outside
        self.notes: list[str] = self.seating.notes
        self.prompts = Prompts(study.game_cls.prompt_dir, study.prompt_dir)
        self._prompts: dict[str, Prompts] = {study.game_cls.name: self.prompts}
        #: Stored games this run plays again: played with other templates than those in force
        #: (the study file's ``replay_on_prompt_change``; see :meth:`prompt_changes`).
        self.replay: set[str] = set()
        self.stats = RunStats()
        self.claim_ttl = CLAIM_TTL
        self.failure: StoreError | None = None
        self.writer = GameWriter(store, before_commit=self.cache.flush if isinstance(self.cache, BufferedCache) else None)  # group commit of finished games
        self._live: dict[str, Table] = {}  # tables of the games in flight (their turns count as progress)

    @property
    def budget(self) -> Budget | None:
        """The study's spending limit in this database (None: none)."""
        return self.spending.budget

    def _player(self, entry: ModelEntry, spec: GameSpec) -> Player:
        """The player of ``entry`` in the game ``spec`` (:meth:`.Seating.player`)."""
        return self.seating.player(entry, spec)

    def outages(self, names: Iterable[str] | None = None) -> dict[str, str]:
        """The servers of the models built so far that do not answer now (:meth:`.Seating.outages`)."""
        return self.seating.outages(names)

    def check_models(self) -> None:
        """Build every seated entry once before any game (:meth:`.Seating.check`)."""
        self.seating.check()

    async def probe_models(self, specs: list[GameSpec] | None = None, names: set[str] | None = None) -> None:
        """One cheap request per hosted model before any game (:meth:`.Seating.probe`)."""
        await self.seating.probe(specs, names)

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

    async def play_one(self, spec: GameSpec, seated: dict[str, Player] | None = None, entries: dict[str, ModelEntry] | None = None, stored_as: Callable[[str], str] | None = None) -> str:
        """Play and store one game; returns its status. ``seated`` gives players for some roles
        (a person through the web app) and ``entries`` the model entries by role when
        ``spec.seats`` names something other than the study's models (``human:<hash>``).
        ``stored_as``: the status stored for the one played, in the game's one write (the web
        app stores a finished game whose person left as ``abandoned``); the run counts, and
        this returns, the played status."""
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
            if isinstance(embeddings, str) and embeddings:
                from ..models.embeddings import shared_embedder  # the embeddings layer only for a game that names one

                embed = shared_embedder(embeddings)
            else:
                embed = None
        except ValueError as exc:  # an unreadable spec (SpecError): before any turn, one line
            raise StudyError(f"{spec.game}: embeddings {embeddings!r}: {str(exc).splitlines()[0]}") from None
        table = Table(players, seed=spec.seed, max_retries=self.study.file.max_retries, nature_seed=spec.nature_seed, embed=embed, max_turns=game_cls.max_turns(config))
        if self.study.file.stop_after_invalid:
            for player in players.values():
                if isinstance(player, LLMAgent):
                    player.keys = []  # the calls of each turn, for Spending.count_invalid
            limit = self.study.file.stop_after_invalid
            table.on_turn = lambda turn: self.spending.count_invalid(limit, entries.get(turn.role), turn, players.get(turn.role))
        game = game_cls(config, prompts, names, people={role for role, e in entries.items() if e.is_human or role in seated})
        started = time.time()
        status, outcome, metrics, error = "done", None, None, None
        self._live[spec.id] = table
        if self.seating.lockstep is not None:  # batch rounds wait for this game's calls (a person's game calls live)
            self.seating.lockstep.started(spec.id, batched=not seated)
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
            if self.seating.lockstep is not None:
                self.seating.lockstep.ended(spec.id)
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
            status=stored_as(status) if stored_as is not None else status,
            outcome=outcome,
            metrics=metrics,
            error=error,
            turn_records=table.turns,
            started=started,
        )
        self.stats.turns += len(table.turns)
        self._live.pop(spec.id, None)
        plan = self.spending.plan
        if plan is not None and status == "done":  # the next games of its kind are estimated at what it spent
            plan.observe(spec, sum(t.cost for t in table.turns), sum((t.prompt_tokens or 0) + (t.completion_tokens or 0) for t in table.turns if not t.cached))
        self.stats.invalid += table.invalid_turns
        if status == "done":
            self.stats.done += 1
        else:
            self.stats.errors += 1
            if self.spending.refused and BUDGET_MARK in (error or ""):
                self.stats.budget_stopped += 1
                return status
            if len(self.stats.error_messages) < 20:
                self.stats.error_messages.append(error or "")
        return status

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
            if self.seating.uncached_batch is not None:
                raise StudyError(f"model {self.seating.uncached_batch!r}: batch mode keeps each batch's answers in the response cache; leave out --no-cache")
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
                self.spending.spent_before = stored_spend(self.store, self.study.name)
                if n_todo:
                    self.spending.plan = await build_plan(self.study, done, games=self.games, samples=self.budget.samples, output_tokens=self.budget.output_tokens, batch=self.seating.batch)
        except BaseException:
            await self.seating.aclose()
            raise

        claimed: collections.deque[GameSpec] = collections.deque()
        width = min(self.concurrency, max(1, n_todo))
        if self.seating.lockstep is not None:  # batch mode: every claimed game in flight, up to a batch's size
            self.seating.lockstep.resume()  # the batches an earlier run left open are followed first
            width = self.concurrency = max(self.concurrency, min(max(1, n_todo), self.seating.lockstep.max_requests or 1))
        self._game_ended = asyncio.Event()  # set (and replaced) each time a game of this run ends

        spending = self.spending

        async def worker() -> None:
            while self.failure is None and not spending.reached:
                try:
                    if not claimed:
                        self._claim_batch(source, claimed)
                    if not claimed:
                        return
                    spec = claimed.popleft()
                    while not spending.admit(spec, self._live):  # the budget: no new game (its claim is released at the end) ...
                        if not spending.reserved or spending.reached:
                            spending.reached = True
                            return
                        # ... unless a game in flight ends and what it spent (the estimate of the next of its kind) lets it start
                        await self._game_ended.wait()
                    try:
                        await self.play_one(spec)
                    finally:
                        spending.reserved.pop(spec.id, None)
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
        takes_over = isinstance(self.cache, WriterCache)  # the cache says whether the writer may write for it
        if takes_over or not isinstance(self.cache, BufferedCache):
            self.writer.write_in_background(self.cache if takes_over else None)
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
                self.store.release_all(self.seating.owner)
            except Exception:  # the claims expire by themselves
                pass
            beat.cancel()
            committer.cancel()
            if reporter:
                reporter.cancel()
            await self.seating.aclose()  # open batches stay recorded: the next run follows them
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
                mine = self.store.claim_many(ids, self.study.name, self.seating.owner, self.claim_ttl)
                done = self.store.done_among([i for i in ids if i in mine]) - self.replay
                self.store.release_many(sorted(done), self.seating.owner)
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
                self.store.heartbeat(self.seating.owner)
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
        """What the run used, its notes, warnings, budget and batches (:meth:`.Spending.summary`)."""
        return self.spending.summary(self.notes, self.seating.lockstep)

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
            reasoning=reasoning_line(self.models),
            batches=self.seating.lockstep.progress() if self.seating.lockstep is not None else "",
        )

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

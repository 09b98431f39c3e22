"""Executors: where a study's games are played.

- ``async`` (the default): one process, one event loop (:func:`agorabench.core.runner.run_study`).
- ``ray``: the study's games are dealt into ``workers`` shares (:func:`dealt`), and each share is
  played by a Ray task running the async runner on it, all writing one store and one response
  cache (a database URL, or an SQLite file when the cluster is this machine). Nobody lists the
  design: the driver counts the games and adds up the results, and each task generates the
  study's games one at a time and plays those of its share that are not stored yet.
- ``processes``: the same shares, each played by a local process (multiprocessing, "spawn")
  running the same :func:`play_share` (:func:`run_processes`): Ray's fan-out for one machine
  without Ray, using its cores (one event loop per process). A process that dies is not started
  again: its share is reported as failed, and a resume plays its games.

Nothing is lost to a kill: every task commits its finished games as the one-process runner does.
A task whose worker dies is started again by Ray (``retries`` times); the new attempt takes over
the claims of the dead one (each share names its claims with a tag of its own, see
:meth:`~agorabench.store.store.Store.release_tag`) and skips the games already stored. When the
retries are spent the driver still waits for the other shares, releases the dead share's claims
and reports how many games were not played, so that the next run (a resume) plays them at once.
A run started again after the driver was killed plays only the games still missing. The games
and their seeds do not depend on the executor, so the dataset is that of a one-process run.

The deal depends on the design and the number of shares only, never on what is stored: a resume
with the same ``workers`` deals every game to the share it had, and its missing games are where
they were (after a share failed for good, all of that share's games wait for one worker).
"""

from __future__ import annotations

import collections
import hashlib
import json
import math
import os
import shutil
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from ..loop import run as run_loop
from .study import GameSpec, Study, StudyError, load_study


#: 64-bit arithmetic for :func:`_mix`.
_MASK = (1 << 64) - 1


def _mix(x: int) -> int:
    """SplitMix64's finaliser: a well-spread 64-bit number from any integer (the same in every
    process, unlike ``hash``)."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


def _seating_key(seats: dict[str, str]) -> str:
    """A seating (which model sits in which role) as text, whatever the roles' order."""
    return json.dumps(sorted(seats.items()))


def _seating_hash(key: str) -> int:
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big")


def seating_positions(study: Study, counted: bool = False) -> Iterator[tuple[GameSpec, str, int]]:
    """Every game of the study in study order (:meth:`~agorabench.core.study.Study.iter_specs`),
    with its seating's key and its position k: how many games of the same seating come before it.

    In a design that plays every configuration with every seating (no ``sample``, no listed
    ``seats``) a seating meets each configuration with its roles once, so k is computed, not
    counted: (the configuration's rank among those with the same roles, over all parts) ×
    repeats + repeat, and memory does not grow with the number of seatings (10^7 pairs of one
    game each). Otherwise (or with ``counted``) k is counted per seating; there the seatings are
    the study file's list, or the study holds every sampled cell anyway."""
    parts = study._parts()
    if counted or study.file.matchups == "seats" or any(study._sample(p) for p in parts):
        seen: dict[str, int] = {}
        seats, key = None, ""
        for spec in study.iter_specs():
            if spec.seats is not seats:  # one dict per (configuration, seating) cell
                seats, key = spec.seats, _seating_key(spec.seats)
            k = seen.get(key, 0)
            seen[key] = k + 1
            yield spec, key, k
        return
    # the configurations of every part in order: (game, configuration as JSON, rank among those with its roles)
    table: list[tuple[str, str, int]] = []
    ranks: collections.Counter[tuple[str, ...]] = collections.Counter()
    for part in parts:
        game_cls = study.game_class(part.game)
        for config in study.configurations(part):
            roles = tuple(sorted(game_cls.roles(config)))
            table.append((part.game, json.dumps(config.model_dump(mode="json"), sort_keys=True), ranks[roles]))
            ranks[roles] += 1
    repeats, i, config, seats, key, rank = study.file.repeats, -1, None, None, "", 0
    for spec in study.iter_specs():
        if spec.config is not config:  # the games of one configuration share its dict, in order
            config, text = spec.config, json.dumps(spec.config, sort_keys=True)
            i += 1
            while i < len(table) and table[i][:2] != (spec.game, text):
                i += 1  # a configuration that no seating fills has no game
            if i == len(table):
                raise RuntimeError(f"game {spec.id}: configuration not in the study's order")
            rank = table[i][2]
        if spec.seats is not seats:
            seats, key = spec.seats, _seating_key(spec.seats)
        yield spec, key, rank * repeats + spec.repeat


def dealt(study: Study, shares: int, counted: bool = False) -> Iterator[tuple[int, GameSpec]]:
    """Every game of the study in study order, with the share (0 to ``shares`` - 1) that plays it.

    The k-th game of a seating (:func:`seating_positions`) is in that seating's block k // shares,
    and each block of ``shares`` games goes to every share once, in an order drawn from the
    seating and the block (an affine permutation of the shares from a hash). So every share gets
    an equal part (±1) of every seating, and the configurations of a seating are spread at random
    (a plain stride would hand one share every value of a grid key with ``shares`` values).

    A seating decides a game's cost (a model in the deciding seat makes calls, a strategy none):
    dealing in study order would hand every other game to the same workers, and dealing at random
    leaves one share with more slow games by chance; the slowest share sets the wall time. The deal
    depends on the design and ``shares`` only, never on the games already stored."""
    n = max(1, shares)
    units = [a for a in range(1, n + 1) if math.gcd(a, n) == 1]  # the steps that visit every share
    key, base = None, 0
    for spec, seating, k in seating_positions(study, counted):
        if seating is not key:
            key, base = seating, _seating_hash(seating)
        block, x = divmod(k, n)
        h = _mix(base ^ _mix(block))
        yield (h % n + units[(h >> 32) % len(units)] * x) % n, spec


@dataclass(frozen=True)
class Share:
    """Share ``index`` of ``count`` (:func:`dealt`); called with a study, its games in study order
    (what a :class:`~agorabench.core.runner.Runner` with ``select`` plays)."""

    index: int
    count: int

    def __call__(self, study: Study) -> Iterator[GameSpec]:
        return (spec for share, spec in dealt(study, self.count) if share == self.index)


def play_share(study_path: str, models: list[str] | None, db: str, share: int, shares: int, concurrency: int, cache_db: str | None, tag: str | None = None, use_cache: bool = True, probe: bool = True) -> dict[str, Any]:
    """Play the games :func:`dealt` gives share ``share`` of ``shares`` that are not stored yet,
    with the async runner (the body of one Ray task); the study is generated here, game by game.
    ``use_cache`` False: no response cache (``--no-cache``); ``probe`` False: the models are not
    probed before the first game (``--no-probe``).

    ``tag`` names this share's claims; an attempt releases the claims an earlier attempt of
    the same share left (Ray starts a task again only once its worker is dead)."""
    from ..store.cache import SQLCache
    from ..store.claims import claim_owner
    from ..store.store import Store
    from ..models.base import NoCache
    from .runner import Runner

    started = time.time()
    study = load_study(study_path, models=models)
    store = Store(db)
    cache_store = Store(cache_db) if cache_db and use_cache else store
    cache = SQLCache(cache_store) if use_cache else NoCache()
    runner = Runner(study, store, concurrency=concurrency, cache=cache, progress=False, probe=probe, select=Share(share, shares))
    try:
        if tag:
            runner.seating.owner = claim_owner(tag)
            store.release_tag(tag)
        stats = run_loop(runner.run())
    finally:
        store.dispose()
        if cache_store is not store:
            cache_store.dispose()
    s = stats
    return {"played": s.done, "errors": s.errors, "skipped": s.skipped, "elsewhere": s.claimed_elsewhere, "turns": s.turns, "error_messages": s.error_messages, "pid": os.getpid(), "started": started, "seconds": time.time() - started, **runner.summary()}


def _failure(exc: BaseException) -> str:
    """One line for a share that Ray gave up on: the task's own exception (a ``StoreError``,
    ...), or the first sentence of Ray's (whose advice to read its logs would name a temp
    folder removed by then)."""
    cause = getattr(exc, "cause", None)
    own = isinstance(cause, BaseException)
    return _one_line(cause if own else exc, first_sentence=not own)


def _one_line(exc: BaseException, first_sentence: bool = False) -> str:
    """``Type: first line of the message`` (its first sentence only if asked; a traceback's
    lines skipped), at most 300 characters; the type alone for an empty message."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip() and not line.startswith(("Traceback", "  "))]
    detail = lines[0] if lines else ""
    if first_sentence:
        detail = detail.split(". ")[0].rstrip(".")
    return f"{type(exc).__name__}: {detail}"[:300] if detail else type(exc).__name__


def _begin(study_path: str, db: str, models: list[str] | None, cache_db: str | None = None, probe: bool = True) -> tuple[Study, dict[str, Any], dict[str, Any]]:
    """Load the study, check the response cache ``cache_db`` (as ``agora run`` does: a file that
    is no database, or a damaged one, is refused here), save the study's row in the store, count
    the games stored as done before the run and, as one process does before its first game,
    check the models the missing games seat and probe the hosted ones (``probe``): a mistake in
    any of these stops the run here, in one line, before a worker starts. Returns (study,
    counts, summary) with the run's counters at zero. The design is counted, never listed (no
    list as long as the design, here or in a share)."""
    from ..store.store import Store

    study = load_study(study_path, models=models)
    total = study.check_size()
    if cache_db:
        Store(cache_db, check_integrity="full").dispose()
    store = Store(db)
    try:
        store.save_study(study.name, "+".join(study.file.games), study.file.model_dump(mode="json"))
        done = store.done_ids(study.name)
        skipped, seated = 0, set()
        for s in study.iter_specs():
            if s.id in done:
                skipped += 1
            else:
                seated.update(s.seats.values())
        del done
        if skipped < total:
            run_loop(_check_models(study, store, seated, probe))
    finally:
        store.dispose()
    counts: dict[str, Any] = {"total": total, "skipped": skipped, "played": 0, "errors": 0, "elsewhere": 0, "not_played": 0, "failed": []}
    summary: dict[str, Any] = {"calls": 0, "agent_calls": 0, "cache_hits": 0, "tokens": 0, "cost": 0.0, "error_messages": [], "workers": 0}
    return study, counts, summary


async def _check_models(study: Study, store: Any, names: set[str], probe: bool) -> None:
    """The one-process run's checks before its first game (:meth:`Runner.check_models`, and
    :meth:`Runner.probe_models` for ``names`` when ``probe``), made once by the driver."""
    from ..models.base import NoCache
    from .runner import Runner

    runner = Runner(study, store, cache=NoCache(), progress=False)
    try:
        runner.check_models()
        if probe:
            await runner.probe_models(names=names)
    finally:
        for model in runner.models.values():
            await model.aclose()


def _release(db: str, tags: list[str]) -> None:
    """Release the claims held under ``tags`` (shares whose processes were ended)."""
    from ..store.store import Store

    store = Store(db)
    try:
        for tag in tags:
            store.release_tag(tag)
    finally:
        store.dispose()


def _absolute(db: str | None) -> str | None:
    """A database as every worker must name it: a URL as given, an SQLite path made absolute."""
    return db if db is None or "://" in db else str(Path(db).resolve())


def _finish(study: Study, db: str, shares: int, results: list[dict[str, Any]], failed: list[tuple[int, str, str]], counts: dict[str, Any], summary: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """After every share ended: release the claims of the ``failed`` shares ((share, tag, why)),
    count in the store what the run played and what the failed shares left, and add up the
    ``results`` of the shares that finished (:func:`play_share`) into ``counts`` and ``summary``."""
    from ..store.store import Store

    store = Store(db)
    try:
        for _, tag, _ in failed:
            store.release_tag(tag)
        done_now = store.done_ids(study.name)
    finally:
        store.dispose()
    # played = the games of the design now stored as done less those done before, counted in the
    # store: a share started again skips what its killed attempt stored, and those games count
    # here too; a failed share's games not stored are not played (one pass, dealt again)
    lost = {i for i, _, _ in failed}
    stored = 0
    for share, spec in dealt(study, shares) if lost else ((0, s) for s in study.iter_specs()):
        if spec.id in done_now:
            stored += 1
        elif share in lost and not study.has_human(spec):
            counts["not_played"] += 1
    counts["played"] = stored - counts["skipped"]
    counts["failed"] = [why for _, _, why in failed]
    for r in results:
        counts["errors"] += r["errors"]
        counts["elsewhere"] += r["elsewhere"]
        for key in ("calls", "agent_calls", "cache_hits", "tokens", "cost"):
            summary[key] += r.get(key, 0)
        summary["error_messages"] += r["error_messages"]
    summary["workers"] = len({r["pid"] for r in results})
    summary["shares"] = [{k: r[k] for k in ("played", "started", "seconds")} for r in results]
    return counts, summary


def run_ray(
    study_path: str,
    db: str,
    *,
    models: list[str] | None = None,
    workers: int = 4,
    address: str | None = None,
    concurrency: int = 8,
    cache_db: str | None = None,
    retries: int = 3,
    use_cache: bool = True,
    probe: bool = True,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Play a study's missing games over Ray; returns (counts, model summary) like the CLI prints.

    ``address`` names an existing cluster (``ray://host:10001`` or ``auto``); without it a local
    cluster of ``workers`` CPUs is started for the run and stopped after it. The store must then
    be reachable from every worker: a database URL, or an SQLite path on a shared disk.
    ``retries``: how often Ray starts a share again whose worker died. Shares that still fail
    are listed in ``counts["failed"]`` (one line each) and their games not stored as done are
    counted in ``counts["not_played"]``; their claims are released so a resume plays them.
    ``use_cache`` as for :func:`play_share`; ``probe``: the hosted models are probed once, here,
    before any share starts (:func:`_begin`), and the shares do not probe again; on a cluster
    named by ``address`` each share probes instead (its machines may reach other servers).
    """
    try:
        import ray
    except ModuleNotFoundError:
        raise StudyError("--executor ray needs Ray: pip install 'agorabench[ray]'") from None

    # a cluster named by ``address`` may reach servers this machine cannot: its workers probe
    study, counts, summary = _begin(study_path, db, models, cache_db if use_cache else None, probe and not address)
    total = counts["total"]
    if counts["skipped"] == total:
        return counts, summary
    db, cache_db = _absolute(db), _absolute(cache_db)
    env = {"env_vars": {"PYTHONPATH": os.pathsep.join(p for p in (str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH", "")) if p)}}
    started_here, temp = not ray.is_initialized(), None
    if started_here:
        if address:
            ray.init(address=address, runtime_env=env, log_to_driver=False)
        else:
            temp = tempfile.mkdtemp(prefix="agora-ray-")
            ray.init(num_cpus=workers, include_dashboard=False, _temp_dir=temp, runtime_env=env, log_to_driver=False)
    # as many shares as workers (no more than games), whatever is stored: a resume deals the same way
    shares = min(max(1, workers), total)
    run_id = uuid.uuid4().hex[:8]
    tags = [f"ray{run_id}s{i}" for i in range(shares)]
    results: list[dict[str, Any]] = []
    failed: list[tuple[int, str, str]] = []  # (share, tag, why) of shares Ray gave up on
    try:
        task = ray.remote(max_retries=max(0, retries), num_cpus=1)(play_share)
        refs = [task.remote(str(Path(study_path).resolve()), models, db, i, shares, concurrency, cache_db, tag, use_cache, probe and bool(address)) for i, tag in enumerate(tags)]
        for i, (ref, tag) in enumerate(zip(refs, tags)):
            try:
                results.append(ray.get(ref))
            except ray.exceptions.RayError as exc:  # the worker died for good, or the task raised
                failed.append((i, tag, _failure(exc)))
    finally:
        if started_here:
            ray.shutdown()
        if temp:
            shutil.rmtree(temp, ignore_errors=True)
    return _finish(study, db, shares, results, failed, counts, summary)


def _share_process(conn: Any, args: tuple[Any, ...]) -> None:
    """The body of one local worker process: :func:`play_share` with ``args``, its result (or the
    one line of what it raised) sent back on ``conn``."""
    try:
        result: tuple[str, Any] = ("ok", play_share(*args))
    except BaseException as exc:  # noqa: BLE001 (the driver reports it; the process ends anyway)
        result = ("error", _one_line(exc))
    try:
        conn.send(result)
    finally:
        conn.close()


def _death(exitcode: int | None) -> str:
    """One line for a worker process that ended without a result."""
    import signal

    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"the worker process was killed ({name})"
    return f"the worker process exited with status {exitcode} without a result"


def run_processes(
    study_path: str,
    db: str,
    *,
    models: list[str] | None = None,
    workers: int = 2,
    concurrency: int = 8,
    cache_db: str | None = None,
    use_cache: bool = True,
    probe: bool = True,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Play a study's missing games in ``workers`` local processes; returns (counts, summary)
    as :func:`run_ray` does.

    The games are dealt as for Ray (:func:`dealt`, one :class:`Share` per process), and each
    process ("spawn": a fresh interpreter) plays its share with :func:`play_share`,
    ``concurrency`` games in flight each, all writing one store and one response cache (an
    SQLite file or a database URL). A process that dies or whose share raised is not started
    again: its share is listed in ``counts["failed"]`` (one line), its claims are released, its
    games not stored are counted in ``counts["not_played"]``, and the other processes finish.
    A driver interrupted (Ctrl-C) ends the processes still running and releases their claims,
    so the next run plays their games at once. ``use_cache`` and ``probe`` as for :func:`run_ray`.
    """
    import multiprocessing
    from multiprocessing.connection import wait

    if workers < 1:
        raise StudyError("--workers must be at least 1")
    study, counts, summary = _begin(study_path, db, models, cache_db if use_cache else None, probe)
    total = counts["total"]
    if counts["skipped"] == total:
        return counts, summary
    db, cache_db = _absolute(db), _absolute(cache_db)
    shares = min(workers, total)  # as with Ray: the deal depends on the design and workers only
    run_id = uuid.uuid4().hex[:8]
    tags = [f"proc{run_id}s{i}" for i in range(shares)]
    ctx = multiprocessing.get_context("spawn")
    path = str(Path(study_path).resolve())
    running: dict[int, tuple[Any, Any]] = {}
    results: list[dict[str, Any]] = []
    failed: list[tuple[int, str, str]] = []
    try:
        for i, tag in enumerate(tags):
            here, there = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_share_process, args=(there, (path, models, db, i, shares, concurrency, cache_db, tag, use_cache, False)), name=f"agora-share-{i}", daemon=True)
            proc.start()
            there.close()  # the child holds its end: a dead child reads as end of file here
            running[i] = (proc, here)
        while running:
            ready = set(wait([c for _, c in running.values()] + [p.sentinel for p, _ in running.values()]))
            for i, (proc, conn) in list(running.items()):
                if conn not in ready and proc.sentinel not in ready:
                    continue
                try:
                    kind, value = conn.recv()
                except (EOFError, OSError):  # ended without a word: killed or crashed
                    proc.join()
                    kind, value = "error", _death(proc.exitcode)
                proc.join()
                conn.close()
                del running[i]
                if kind == "ok":
                    results.append(value)
                else:
                    failed.append((i, tags[i], f"share {i + 1} of {shares}: {value}"))
    finally:
        if running:  # the driver was interrupted: end the rest, and free the games they held
            for proc, conn in running.values():
                proc.terminate()
            for proc, conn in running.values():
                proc.join()
                conn.close()
            from ..store.errors import StoreError

            try:
                _release(db, [tags[i] for i in running])
            except StoreError:  # the store out of reach: the claims expire with their owners, and the interrupt is what the user hears
                pass
    failed.sort()
    return _finish(study, db, shares, results, failed, counts, summary)

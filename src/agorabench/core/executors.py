"""Executors: where a study's games are played.

- ``async`` (the default): one process, one event loop (:func:`agorabench.core.runner.run_study`).
- ``ray``: the missing games are dealt into ``workers`` shares (:func:`deal`), and each share is
  played by a Ray task running the async runner on it, all writing one store and one response
  cache (a database URL, or an SQLite file when the cluster is this machine). The driver only
  expands the study and adds up the results.

Nothing is lost to a kill: every task commits its finished games as the one-process runner does.
A task whose worker dies is started again by Ray (``retries`` times); the new attempt takes over
the claims of the dead one (each share names its claims with a tag of its own, see
:meth:`~agorabench.store.store.Store.release_tag`) and skips the games already stored. When the
retries are spent the driver still waits for the other shares, releases the dead share's claims
and reports how many games were not played, so that the next run (a resume) plays them at once.
A run started again after the driver was killed plays only the games still missing. The games
and their seeds do not depend on the executor, so the dataset is that of a one-process run.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from ..loop import run as run_loop
from .study import GameSpec, StudyError, load_study


def deal(specs: list[GameSpec], workers: int) -> list[list[str]]:
    """Game ids dealt round-robin into at most ``workers`` non-empty shares, seating by seating:
    games are ordered by their seats (which model sits where), then by id, and dealt with one
    running counter, so every share gets an equal part (±1) of each seating.

    A seating decides a game's cost (a model in the deciding seat makes calls, a strategy none):
    dealing in study order would hand every other game to the same workers, and even dealing in
    id order leaves one share with more slow games by chance; the slowest share sets the wall time."""
    shares: list[list[str]] = [[] for _ in range(max(1, workers))]
    ordered = sorted(specs, key=lambda spec: (sorted(spec.seats.items()), spec.id))
    for i, spec in enumerate(ordered):
        shares[i % len(shares)].append(spec.id)
    return [s for s in shares if s]


def play_share(study_path: str, models: list[str] | None, db: str, ids: list[str], concurrency: int, cache_db: str | None, tag: str | None = None) -> dict[str, Any]:
    """Play the games ``ids`` of a study with the async runner (the body of one Ray task).

    ``tag`` names this share's claims; an attempt releases the claims an earlier attempt of
    the same share left (Ray starts a task again only once its worker is dead)."""
    from ..store.store import SQLCache, Store, claim_owner
    from .runner import Runner

    started = time.time()
    study = load_study(study_path, models=models)
    store = Store(db)
    cache_store = Store(cache_db) if cache_db else store
    runner = Runner(study, store, concurrency=concurrency, cache=SQLCache(cache_store), progress=False, only=set(ids))
    try:
        if tag:
            runner.owner = claim_owner(tag)
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
    exc = cause if own else exc
    lines = [line.strip() for line in str(exc).splitlines() if line.strip() and not line.startswith(("Traceback", "  "))]
    detail = lines[0] if lines else ""
    if not own:
        detail = detail.split(". ")[0].rstrip(".")
    return f"{type(exc).__name__}: {detail}"[:300] if detail else type(exc).__name__


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
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Play a study's missing games over Ray; returns (counts, model summary) like the CLI prints.

    ``address`` names an existing cluster (``ray://host:10001`` or ``auto``); without it a local
    cluster of ``workers`` CPUs is started for the run and stopped after it. The store must then
    be reachable from every worker: a database URL, or an SQLite path on a shared disk.
    ``retries``: how often Ray starts a share again whose worker died. Shares that still fail
    are listed in ``counts["failed"]`` (one line each) and their games not stored as done are
    counted in ``counts["not_played"]``; their claims are released so a resume plays them.
    """
    try:
        import ray
    except ModuleNotFoundError:
        raise StudyError("--executor ray needs Ray: pip install 'agorabench[ray]'") from None
    from ..store.store import Store

    study = load_study(study_path, models=models)
    specs = study.expand()
    store = Store(db)
    try:
        store.save_study(study.name, "+".join(study.file.games), study.file.model_dump(mode="json"))
        done = store.done_ids(study.name)
    finally:
        store.dispose()
    todo = [s for s in specs if s.id not in done]
    counts: dict[str, Any] = {"total": len(specs), "skipped": len(specs) - len(todo), "played": 0, "errors": 0, "elsewhere": 0, "not_played": 0, "failed": []}
    summary: dict[str, Any] = {"calls": 0, "cache_hits": 0, "tokens": 0, "cost": 0.0, "error_messages": [], "workers": 0}
    if not todo:
        return counts, summary
    db = db if "://" in db else str(Path(db).resolve())
    cache_db = cache_db if cache_db is None or "://" in cache_db else str(Path(cache_db).resolve())
    env = {"env_vars": {"PYTHONPATH": os.pathsep.join(p for p in (str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH", "")) if p)}}
    started_here, temp = not ray.is_initialized(), None
    if started_here:
        if address:
            ray.init(address=address, runtime_env=env, log_to_driver=False)
        else:
            temp = tempfile.mkdtemp(prefix="agora-ray-")
            ray.init(num_cpus=workers, include_dashboard=False, _temp_dir=temp, runtime_env=env, log_to_driver=False)
    shares = deal(todo, workers)
    run_id = uuid.uuid4().hex[:8]
    tags = [f"ray{run_id}s{i}" for i in range(len(shares))]
    results: list[dict[str, Any]] = []
    failed: list[tuple[list[str], str, str]] = []  # (ids, tag, why) of shares Ray gave up on
    try:
        task = ray.remote(max_retries=max(0, retries), num_cpus=1)(play_share)
        refs = [task.remote(str(Path(study_path).resolve()), models, db, ids, concurrency, cache_db, tag) for ids, tag in zip(shares, tags)]
        for ref, ids, tag in zip(refs, shares, tags):
            try:
                results.append(ray.get(ref))
            except ray.exceptions.RayError as exc:  # the worker died for good, or the task raised
                failed.append((ids, tag, _failure(exc)))
    finally:
        if started_here:
            ray.shutdown()
        if temp:
            shutil.rmtree(temp, ignore_errors=True)
    if failed:
        store = Store(db)
        try:
            for _, tag, _ in failed:
                store.release_tag(tag)
            done = store.done_ids(study.name)
        finally:
            store.dispose()
        for ids, _, why in failed:
            counts["not_played"] += sum(1 for g in ids if g not in done)
            counts["failed"].append(why)
    for r in results:
        counts["errors"] += r["errors"]
        counts["elsewhere"] += r["elsewhere"]
        for key in ("calls", "cache_hits", "tokens", "cost"):
            summary[key] += r[key]
        summary["error_messages"] += r["error_messages"]
    # played = the games of this run now stored as done, counted in the store: a share that Ray
    # started again skips what its killed attempt stored, and those games count here too
    store = Store(db)
    try:
        done_now = store.done_ids(study.name)
    finally:
        store.dispose()
    counts["played"] = sum(1 for s in todo if s.id in done_now)
    summary["workers"] = len({r["pid"] for r in results})
    summary["shares"] = [{k: r[k] for k in ("played", "started", "seconds")} for r in results]
    return counts, summary

"""Group commit: :class:`GameWriter` gathers the games that finish close together and writes
them to the store in one transaction, on the caller's thread or on a worker thread of its own,
with the response cache's waiting answers written first."""

from __future__ import annotations

import collections
import contextlib
import time
from typing import TYPE_CHECKING, Any, Callable, Iterator

import sqlalchemy as sa

from .errors import StoreError
from .layout import game_rows

if TYPE_CHECKING:
    from .cache import SQLCache
    from .store import Store


class GameWriter:
    """Group commit for finished games, with the same ``save_game`` call as :class:`Store`.

    Outside :meth:`grouped` every game is written at once (a game played on its own, e.g. by the
    web app, is in the store when ``save_game`` returns). Inside it, games are written together
    when ``batch`` of them wait or the oldest has waited ``interval`` seconds, by :meth:`flush`
    (which the runner also calls periodically, through :meth:`commit`), and when the block ends. A
    game is in flight until its group is committed: a kill loses at most the games being played
    and those finished within the last ``interval``, and a resume plays exactly those again.
    ``before_commit`` runs first (the runner flushes the response cache there, so every stored
    game's answers are in the cache).

    With :meth:`write_in_background` (the runner's choice for file and server databases), a
    group inside :meth:`grouped` is written on a worker thread: the games and the cache's
    buffered answers are taken on the caller's thread, then written there, answers first, while
    the event loop goes on reading responses. The rows of a game saved then are made there too
    (:func:`~.layout.game_rows`: its transcripts sanitised and packed, work that otherwise runs on
    the loop between the game's last answer and the next game's first request); its finishing
    time is taken at ``save_game``. One group is written at a time (a group that is
    due while the previous one is still being written waits for it, so groups are the same as
    without the thread); a failed write raises its ``StoreError`` at the next ``save_game``,
    :meth:`commit` or :meth:`flush`.
    """

    def __init__(self, store: Store, batch: int = 256, interval: float = 0.5, before_commit: Callable[[], None] | None = None) -> None:
        self.store = store
        self.batch = batch
        self.interval = interval
        self.before_commit = before_commit
        self._pending: list[dict[str, Any]] = []
        self._oldest = 0.0
        self._grouping = 0
        self._cache: SQLCache | None = None
        self._background = False
        self._executor: Any = None
        self._future: Any = None
        #: Games whose transaction committed, by status: what a run's closing line counts.
        self.committed: collections.Counter[str] = collections.Counter()

    def write_in_background(self, cache: SQLCache | None) -> bool:
        """Write groups on a worker thread from now on, ``cache``'s buffered answers first (the
        cache then leaves its writing to this writer). False, and nothing changes, where a
        second thread would not see the same database (SQLite in memory)."""
        stores = [self.store] + ([cache.store] if cache is not None else [])
        if any(isinstance(st.engine.pool, sa.pool.SingletonThreadPool) for st in stores):
            return False
        self._background, self._cache = True, cache
        if cache is not None:
            cache.auto_flush = False
        return True

    @contextlib.contextmanager
    def grouped(self) -> Iterator[GameWriter]:
        """Group the games saved inside the block; whatever waits is written when it ends."""
        self._grouping += 1
        try:
            yield self
        finally:
            self._grouping -= 1
            try:
                self.flush()
            finally:
                if not self._grouping:
                    if self._executor is not None:
                        self._executor.shutdown(wait=True)
                        self._executor = None
                    # background writing lasts one block: the cache flushes by itself again
                    if self._cache is not None:
                        self._cache.auto_flush = True
                    self._background, self._cache = False, None

    def save_game(self, **fields: Any) -> None:
        if not self._pending:
            self._oldest = time.monotonic()
        if self._threaded():  # its rows are made on the worker thread (_rows)
            fields.setdefault("finished", time.time())
            self._pending.append(_Unmade(fields))
        else:
            self._pending.append(game_rows(**fields))
        if not self._grouping or len(self._pending) >= self.batch or time.monotonic() - self._oldest >= self.interval:
            if self._threaded():
                self._wait()
                self._submit()
            else:
                self.flush()

    def due(self) -> bool:
        """Whether the oldest waiting game has waited ``interval`` seconds (or, writing in the
        background, ``batch`` answers wait in the cache)."""
        if self._pending and time.monotonic() - self._oldest >= self.interval:
            return True
        return self._threaded() and self._cache is not None and self._cache.waiting() >= self.batch

    def commit(self) -> None:
        """Write what waits: on the worker thread when writing in the background (if a write is
        still running, a later call takes the rest), else at once."""
        if not self._threaded():
            self.flush()
            return
        if self._future is not None and not self._future.done():
            return
        self._wait()
        self._submit()

    def flush(self) -> None:
        """Write everything that waits, here and now (after the background write, if any)."""
        self._wait()
        if self.before_commit is not None:
            self.before_commit()
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        self._save(pending)

    def _count(self, batch: list[dict[str, Any]]) -> None:
        """Count a batch whose transaction committed (``Counter`` updates are atomic enough for
        the one writer thread and the loop's reads of a total)."""
        self.committed.update(row["game"]["status"] for row in batch)

    def _threaded(self) -> bool:
        return self._background and self._grouping > 0

    def _submit(self) -> None:
        answers = self._cache.take() if self._cache is not None else []
        games, self._pending = self._pending, []
        if not games and not answers:
            return
        if self._executor is None:
            from concurrent.futures import ThreadPoolExecutor

            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agorabench-writer")
        self._future = self._executor.submit(self._write, answers, games)

    def _write(self, answers: list[dict[str, Any]], games: list[dict[str, Any]]) -> None:
        if answers:
            self._cache.write(answers)  # type: ignore[union-attr]
        if games:
            self._save(games)

    def _save(self, games: list[dict[str, Any]]) -> None:
        """Write a group of games in one transaction; when the database refuses the group, write
        them one by one, so that a game whose rows it refuses (a value it cannot hold) is stored
        as failed with the cause, without its turns, and never stops the run. A failure no single
        game gets past (a full disk, a lost server) is raised as it is; every game stored before
        it is counted."""
        games = _rows(games)
        try:
            self.store.save_games(games)
        except StoreError:
            if len(games) == 1 and games[0]["game"]["status"] == "error" and not games[0]["turns"]:
                raise
            refused: list[tuple[dict[str, Any], StoreError]] = []
            for game in games:
                try:
                    self.store.save_games([game])
                except StoreError as exc:
                    refused.append((game, exc))
                    continue
                self._count([game])
            if len(refused) == len(games) and len(games) > 1:
                raise refused[0][1] from None
            for game, exc in refused:  # the game, without what the database refused
                failed = {**game, "game": {**game["game"], "status": "error", "error": f"could not be stored: {exc}"}, "turns": [], "transcripts": [], "reasoning": []}
                self.store.save_games([failed])
                self._count([failed])
            return
        self._count(games)

    def _wait(self) -> None:
        """Wait for the background write; raise its error."""
        future, self._future = self._future, None
        if future is not None:
            future.result()

    def __len__(self) -> int:
        return len(self._pending)


class _Unmade(dict):
    """A game saved while writing in the background: the ``save_game`` fields, whose rows
    :func:`_rows` makes on the thread that writes them."""


def _rows(games: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of each game (:func:`~.layout.game_rows` of those saved as fields)."""
    return [game_rows(**g) if type(g) is _Unmade else g for g in games]

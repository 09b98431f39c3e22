"""The response cache: :class:`SQLCache` keeps model answers in the store's ``cache`` table
(it implements ``ResponseCache``), looks keys up against an in-memory index of the keys already
stored, and buffers new answers until they are written in one transaction."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from ..models.base import Completion
from ..redact import redact
from .codec import _safe, unpack_text
from .engine import delete_in, insert_rows
from .thoughts import REF, is_ref, read, resolve, save as save_thoughts, stored_thought
from .errors import DB_ERRORS, StoreError, _problem
from .schema import cache

if TYPE_CHECKING:
    from .store import Store


class SQLCache:
    """Response cache in a store's ``cache`` table (implements ``ResponseCache``).

    - Lookups: the keys already in the table are read once (as 64-bit prefixes, up to
      ``index_limit`` of them), so a key that is not there costs no query. Answers written later
      by another process are not seen; that costs at most a repeated call, never a wrong answer.
    - An answer's long thoughts are stored once per database, by hash (:mod:`~.thoughts`): the
      answer holds ``sha256:<hex>``, the game's ``reasoning`` row names the same row.
    - Writes are buffered and written in one transaction by :meth:`flush`, which the runner
      calls before it stores a finished game (and which runs by itself every ``batch`` answers):
      every stored game's answers are in the cache, and a kill loses only answers of games still
      in flight, which a resume asks again.
    """

    def __init__(self, store: Store, batch: int = 256, index_limit: int = 2_000_000) -> None:
        self.store = store
        self.batch = batch
        self.index_limit = index_limit
        #: Whether :meth:`put` flushes by itself every ``batch`` answers (off when a
        #: :class:`GameWriter` writes them in the background).
        self.auto_flush = True
        self._pending: dict[str, dict[str, Any]] = {}
        self._writing: dict[str, dict[str, Any]] = {}  # taken for a background write, not yet written
        self._known: set[int] | None = None
        self._indexed = False
        self._select = sa.select(cache.c.response).where(cache.c.key == sa.bindparam("k"))

    def _index(self) -> None:
        self._indexed = True
        known: set[int] = set()
        with self.store.engine.connect() as conn:
            for (key,) in conn.execute(sa.select(cache.c.key).execution_options(yield_per=50_000)):
                known.add(_prefix(key))
                if len(known) > self.index_limit:
                    return  # too many to hold: look every key up
        self._known = known

    def get(self, key: str) -> Completion | None:
        pending = self._pending.get(key) or self._writing.get(key)
        if pending is not None and pending.get("forget"):
            return None
        found: dict[str, str] = {}
        if pending is not None:
            r = pending["response"]
            thought = pending.get("thought")
            if thought is not None:  # long thoughts buffered with the answer naming them
                found = {REF + thought["hash"]: unpack_text(thought["text"])}
        else:
            try:
                if not self._indexed:
                    self._index()
                if self._known is not None and _prefix(key) not in self._known:
                    return None
                with self.store.engine.connect() as conn:
                    row = conn.execute(self._select, {"k": key}).first()
                    if row is not None and is_ref(row[0].get("reasoning")):  # long thoughts, stored once by hash
                        found = resolve(conn, [row[0]["reasoning"]])
            except DB_ERRORS as exc:
                raise StoreError(f"could not read the response cache: {_problem(exc)}") from None
            if row is None:
                return None
            r = row[0]
        return Completion(
            text=r["text"],
            prompt_tokens=r["prompt_tokens"],
            completion_tokens=r["completion_tokens"],
            latency=r["latency"],
            finish_reason=r["finish_reason"],
            reasoning=read(r.get("reasoning"), found),
            reasoning_tokens=r.get("reasoning_tokens"),
        )

    def put(self, key: str, identity: str, c: Completion) -> None:
        response = {"text": c.text, "prompt_tokens": c.prompt_tokens, "completion_tokens": c.completion_tokens, "latency": c.latency, "finish_reason": c.finish_reason}
        if c.reasoning is not None or c.reasoning_tokens is not None:  # a replay reproduces the stored turn
            response.update(reasoning=c.reasoning, reasoning_tokens=c.reasoning_tokens)
        response = _safe(response)
        thought = None
        if response.get("reasoning") is not None:  # long thoughts: once per database, packed, named by hash (thoughts.py)
            response["reasoning"], thought = stored_thought(response["reasoning"])
        self._pending[key] = {"key": key, "identity": redact(identity), "response": response, "created": time.time(), "thought": thought}
        if self.auto_flush and len(self._pending) >= self.batch:
            self.flush()

    def forget(self, keys: list[str]) -> None:
        """Drop the answers of ``keys``: buffered ones at once, stored ones at the next write
        (a marker row, written in order after any group already taken, deletes them); a lookup
        finds none of them from now on. The runner forgets the invalid answers that stopped a
        model, so that the next run asks the model again instead of replaying them."""
        for key in keys:
            self._pending[key] = {"key": key, "forget": True}
            self._writing.pop(key, None)
        if self.auto_flush and len(self._pending) >= self.batch:
            self.flush()

    def waiting(self) -> int:
        """Answers buffered and not yet taken for writing."""
        return len(self._pending)

    def take(self) -> list[dict[str, Any]]:
        """The buffered answers, for :meth:`write` (on another thread); lookups still find them."""
        taken, self._pending = self._pending, {}
        self._writing.update(taken)
        return list(taken.values())

    def write(self, rows: list[dict[str, Any]]) -> None:
        """Write answers from :meth:`take` (replacing entries with the same key) in one
        transaction."""
        try:
            with self.store.engine.begin() as conn:
                delete_in(conn, cache, cache.c.key, [r["key"] for r in rows])
                kept = [r for r in rows if not r.get("forget")]  # a forgotten key: deleted only
                save_thoughts(conn, (r.get("thought") for r in kept))  # before the answers naming them
                if kept:
                    insert_rows(conn, cache, [{c: r[c] for c in ("key", "identity", "response", "created")} for r in kept])
        except DB_ERRORS as exc:
            raise StoreError(f"could not write the response cache: {_problem(exc)}") from None
        if self._known is not None:
            self._known.update(_prefix(r["key"]) for r in rows if not r.get("forget"))
        for r in rows:
            if self._writing.get(r["key"]) is r:
                self._writing.pop(r["key"], None)

    def flush(self) -> None:
        """Write the buffered answers (replacing entries with the same key) in one transaction;
        if that fails they stay buffered."""
        rows = self.take()
        if not rows:
            return
        try:
            self.write(rows)
        except StoreError:
            for r in rows:
                self._pending.setdefault(r["key"], r)
                self._writing.pop(r["key"], None)
            raise


def _prefix(key: str) -> int:
    """A key's hash: 64 bits held per known key instead of the whole string."""
    return hash(key)

"""The provider batches of batch-mode runs (table ``batches``): what was submitted, for which
study and model, and whether its answers have reached the response cache.

A row is written as soon as the provider names a new batch, before the run waits on it; it
stays open (``done`` false) until every answer of the batch is in the response cache or the
batch failed. A run that starts again polls the open rows of its study and model first
(:mod:`agorabench.core.lockstep`), so a stop (Ctrl-C, a kill, another machine taking over the
database) never pays for a batch twice.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from .codec import _safe
from .errors import DB_ERRORS, StoreError, _problem
from .schema import batches

if TYPE_CHECKING:
    from .store import Store


@dataclass
class BatchRow:
    """One stored batch."""

    provider: str
    batch_id: str
    study: str
    identity: str
    round: int
    status: str
    done: bool
    items: list[str]
    submitted: float
    counts: dict[str, int] = field(default_factory=dict)
    error: str | None = None


def _has_table(store: Store) -> bool:
    """Whether the database has the table (a read-only store of an older database has not)."""
    return sa.inspect(store.engine).has_table("batches")


def record_batch(store: Store, *, provider: str, batch_id: str, study: str, identity: str, items: list[str], round: int, status: str = "submitted", owner: str | None = None) -> None:
    """Store a batch just submitted (open: its answers are still to be collected)."""
    now = time.time()
    row = {
        "provider": provider,
        "batch_id": batch_id,
        "study": study,
        "identity": identity,
        "round": round,
        "status": status,
        "done": False,
        "items": list(items),
        "n_items": len(items),
        "counts": None,
        "error": None,
        "owner": owner,
        "submitted": now,
        "updated": now,
    }
    try:
        with store.engine.begin() as conn:
            conn.execute(sa.delete(batches).where(batches.c.provider == provider, batches.c.batch_id == batch_id))
            conn.execute(sa.insert(batches).values(**_safe(row)))
    except DB_ERRORS as exc:
        raise StoreError(f"could not record batch {batch_id}: {_problem(exc)}") from None


def update_batch(store: Store, provider: str, batch_id: str, *, status: str, counts: dict[str, int] | None = None, done: bool = False, error: str | None = None) -> None:
    """Note what the provider last said of a batch; ``done``: nothing more will come of it."""
    values: dict[str, Any] = {"status": status, "updated": time.time()}
    if counts is not None:
        values["counts"] = _safe(dict(counts))
    if done:
        values["done"] = True
    if error is not None:
        values["error"] = _safe(error)
    try:
        with store.engine.begin() as conn:
            conn.execute(sa.update(batches).where(batches.c.provider == provider, batches.c.batch_id == batch_id).values(**values))
    except DB_ERRORS as exc:
        raise StoreError(f"could not update batch {batch_id}: {_problem(exc)}") from None


def open_batches(store: Store, study: str, identity: str) -> list[BatchRow]:
    """The batches of ``study`` and the model ``identity`` whose answers are still to be
    collected, oldest first."""
    return _rows(store, sa.and_(batches.c.study == study, batches.c.identity == identity, batches.c.done == sa.false()))


def study_batches(store: Store, study: str) -> list[BatchRow]:
    """Every batch of ``study``, oldest first."""
    return _rows(store, batches.c.study == study)


def _rows(store: Store, where: Any) -> list[BatchRow]:
    try:
        if not _has_table(store):
            return []
        with store.engine.connect() as conn:
            rows = conn.execute(sa.select(batches).where(where).order_by(batches.c.submitted, batches.c.batch_id)).mappings().all()
    except DB_ERRORS as exc:
        raise StoreError(f"could not read the batches: {_problem(exc)}") from None
    return [
        BatchRow(
            provider=r["provider"],
            batch_id=r["batch_id"],
            study=r["study"],
            identity=r["identity"],
            round=r["round"],
            status=r["status"],
            done=bool(r["done"]),
            items=list(r["items"] or []),
            submitted=r["submitted"],
            counts=dict(r["counts"] or {}),
            error=r["error"],
        )
        for r in rows
    ]

"""The ``judgements`` table: what an LLM judge said of each stored message (``agora judge``).

One row per message, judge model, taxonomy and judge prompt: the judge's model name and
backend identity, the prompt version (a SHA-256 of the judge's prompt template), the taxonomy's
name and hash, the raw reply (its thoughts apart), the parsed labels (a JSON list) or
``valid = False`` with the reason, and what the call used. The table has its own metadata (it
shares store/schema.py's column helpers, not its metadata) and is created by the first judge
pass (:func:`create`), so that a study never judged, and every read-only report of it, finds
nothing to read and nothing changed. A rerun codes only the messages without a row
(:func:`judged_ids`).
"""

from __future__ import annotations

import time
from typing import Any, Iterable

import sqlalchemy as sa

from .schema import call_use_columns, study_column

judge_metadata = sa.MetaData()

judgements = sa.Table(
    "judgements",
    judge_metadata,
    study_column(),
    sa.Column("message_id", sa.String(120), primary_key=True),  # GAME_ID:TURN:KIND
    sa.Column("judge", sa.String(200), primary_key=True),  # the judge model's name
    sa.Column("taxonomy_hash", sa.String(64), primary_key=True),
    sa.Column("prompt_version", sa.String(64), primary_key=True),
    sa.Column("taxonomy", sa.String(200), nullable=False),
    sa.Column("identity", sa.String(300), nullable=False, default=""),  # the judge's backend identity
    sa.Column("game_id", sa.String(64), nullable=False),
    sa.Column("idx", sa.Integer, nullable=False),
    sa.Column("kind", sa.String(50), nullable=False),
    sa.Column("role", sa.String(50), nullable=False, default=""),  # the speaker's seat
    sa.Column("speaker", sa.String(200), nullable=False, default=""),  # the seat's stored model name
    sa.Column("raw", sa.Text),  # the final reply's answer text
    sa.Column("reasoning", sa.Text),  # its thoughts, kept apart from the answer (None: none given)
    sa.Column("labels", sa.JSON(none_as_null=True)),  # list of category names; None when invalid
    sa.Column("valid", sa.Boolean, nullable=False),
    sa.Column("error", sa.Text),
    sa.Column("retries", sa.Integer, default=0),
    *call_use_columns(),
    sa.Column("created", sa.Float, nullable=False),
)

COLUMNS = [c.name for c in judgements.columns]


def create(engine: sa.Engine) -> None:
    """Create the table where it is missing (a judge pass does, never a report)."""
    judge_metadata.create_all(engine)


def has_table(engine: sa.Engine) -> bool:
    """Whether the database holds judgements at all."""
    return sa.inspect(engine).has_table("judgements")


def judged_ids(engine: sa.Engine, study: str, judge: str, taxonomy_hash: str, prompt_version: str) -> set[str]:
    """Message ids this judge has coded with this taxonomy and prompt (valid or not)."""
    if not has_table(engine):
        return set()
    t = judgements.c
    q = sa.select(t.message_id).where(t.study == study, t.judge == judge, t.taxonomy_hash == taxonomy_hash, t.prompt_version == prompt_version)
    with engine.connect() as conn:
        return set(conn.execute(q).scalars())


def save(engine: sa.Engine, rows: Iterable[dict[str, Any]]) -> int:
    """Insert judgement rows (one transaction); a row already stored is replaced."""
    rows = [{**r, "created": r.get("created") or time.time()} for r in rows]
    if not rows:
        return 0
    t = judgements.c
    with engine.begin() as conn:
        for r in rows:
            conn.execute(sa.delete(judgements).where(t.message_id == r["message_id"], t.judge == r["judge"], t.taxonomy_hash == r["taxonomy_hash"], t.prompt_version == r["prompt_version"]))
        conn.execute(sa.insert(judgements), rows)
    return len(rows)


def read(engine: sa.Engine, study: str, judge: str | None = None, taxonomy: str | None = None) -> list[dict[str, Any]]:
    """The study's judgements (of one judge / taxonomy name if given), in message order; empty
    where nothing was judged."""
    if not has_table(engine):
        return []
    t = judgements.c
    q = sa.select(judgements).where(t.study == study)
    if judge is not None:
        q = q.where(t.judge == judge)
    if taxonomy is not None:
        q = q.where(t.taxonomy == taxonomy)
    with engine.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(q.order_by(t.game_id, t.idx, t.kind, t.judge))]

"""Upgrading a database of the older layout, where each turn held its whole prompt in
``turns.messages``, to per-role transcripts plus spans (:func:`migrate`, ``agora migrate DB``),
and adding the columns later versions gave the web app's tables (:func:`add_web_columns`, done
by the web app itself when it opens a database)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

from .engine import legacy_layout, open_engine
from .layout import layout
from .schema import metadata, transcripts, turns, web_metadata


def migrate(db: str | Path) -> int:
    """Rewrite a database of the old layout (each turn holding its whole prompt in
    ``turns.messages``) into per-role transcripts plus spans, in place and in one transaction;
    SQLite files are vacuumed afterwards to return the space. Returns the number of games
    rewritten (0 when the database already has the current layout)."""
    engine = open_engine(db, check_format=False)
    try:
        add_web_columns(engine)
        if not legacy_layout(engine):
            metadata.create_all(engine)
            return 0
        metadata.create_all(engine)  # adds the transcripts table
        old = sa.table("turns", sa.column("game_id"), sa.column("idx"), sa.column("role"), sa.column("messages", sa.JSON))
        n = 0
        with engine.begin() as conn:
            conn.execute(sa.text("ALTER TABLE turns ADD COLUMN msg_start INTEGER"))
            conn.execute(sa.text("ALTER TABLE turns ADD COLUMN msg_count INTEGER"))
            ids = conn.execute(sa.select(old.c.game_id).distinct()).scalars().all()
            select = sa.select(old.c.idx, old.c.role, old.c.messages).where(old.c.game_id == sa.bindparam("g")).order_by(old.c.idx)
            update = sa.update(turns).where(turns.c.game_id == sa.bindparam("g"), turns.c.idx == sa.bindparam("i")).values(msg_start=sa.bindparam("s"), msg_count=sa.bindparam("c"))
            for game_id in ids:  # game by game, so that a big database never sits in memory whole
                group = conn.execute(select, {"g": game_id}).all()
                stored, spans = layout([_Prompt(role, msgs or []) for _, role, msgs in group])
                if any(stored.values()):
                    conn.execute(sa.insert(transcripts), [{"game_id": game_id, "role": role, "messages": msgs} for role, msgs in stored.items() if msgs])
                conn.execute(update, [{"g": game_id, "i": idx, "s": s, "c": c} for (idx, _, _), (s, c) in zip(group, spans)])
                n += 1
            conn.execute(sa.text("ALTER TABLE turns DROP COLUMN messages"))
        if engine.dialect.name == "sqlite":
            with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.execute(sa.text("VACUUM"))
        return n
    finally:
        engine.dispose()


def add_web_columns(engine: sa.Engine) -> list[str]:
    """Add to the web app's existing tables the columns of :data:`~agorabench.store.schema.web_metadata`
    they lack (nullable columns added by a later version, e.g. ``web_turns.opened_at``), in place;
    returns them as ``table.column``. Another process adding the same column at the same moment
    is no error."""
    inspector = sa.inspect(engine)
    added = []
    for table in web_metadata.sorted_tables:
        if not inspector.has_table(table.name):
            continue
        have = {c["name"] for c in inspector.get_columns(table.name)}
        for column in table.columns:
            if column.name in have:
                continue
            kind = column.type.compile(dialect=engine.dialect)
            try:
                with engine.begin() as conn:
                    conn.execute(sa.text(f"ALTER TABLE {table.name} ADD COLUMN {column.name} {kind}"))
            except (sa.exc.OperationalError, sa.exc.ProgrammingError) as exc:
                if "duplicate" not in str(exc).lower() and "already exists" not in str(exc):
                    raise
            added.append(f"{table.name}.{column.name}")
    return added


@dataclass
class _Prompt:
    """A turn of the old layout as :func:`layout` reads it: its role and its whole prompt."""

    role: str
    messages: list[dict[str, str]]

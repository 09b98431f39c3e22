"""Every table in the database, as SQLAlchemy Core definitions.

``metadata`` holds the store's own tables, which every writable :class:`~agorabench.store.store.Store`
creates: studies, games, turns, per-role transcripts, the response cache, claims, the
recorded seatings of each study and the provider batches of batch-mode runs. ``web_metadata`` holds the tables of the web app (participants
and the turns they answered); they live in the same database but are created only where a study
is served (:meth:`~agorabench.store.participants.Participants.create_tables`).
"""

from __future__ import annotations

import sqlalchemy as sa

# ------------------------------------------------------------------------------------------
# Columns several tables hold (here and in tables kept apart: store/judgements.py); each call
# makes new columns, since a column belongs to one table.


def study_column() -> sa.Column:
    """The study a row belongs to (indexed: rows are read by study)."""
    return sa.Column("study", sa.String(200), index=True, nullable=False)


def call_use_columns(latency: bool = False) -> list[sa.Column]:
    """What a row's model calls used: prompt and completion tokens, dollars, (``latency``: the
    seconds they took,) and whether the response cache answered them."""
    timed = [sa.Column("latency", sa.Float, default=0.0)] if latency else []
    return [
        sa.Column("prompt_tokens", sa.Integer, default=0),
        sa.Column("completion_tokens", sa.Integer, default=0),
        sa.Column("cost", sa.Float, default=0.0),
        *timed,
        sa.Column("cached", sa.Boolean, default=False),
    ]


# ------------------------------------------------------------------------------------------
# The store's tables

metadata = sa.MetaData()

studies = sa.Table(
    "studies",
    metadata,
    sa.Column("name", sa.String(200), primary_key=True),
    sa.Column("game", sa.String(100), nullable=False),
    sa.Column("spec", sa.JSON, nullable=False),
    sa.Column("created", sa.Float, nullable=False),
)

games = sa.Table(
    "games",
    metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    study_column(),
    sa.Column("game", sa.String(100), nullable=False),
    sa.Column("config", sa.JSON, nullable=False),
    sa.Column("seats", sa.JSON, nullable=False),  # role -> model name
    sa.Column("repeat", sa.Integer, nullable=False, default=0),
    sa.Column("seed", sa.BigInteger, nullable=False),
    sa.Column("prompt_version", sa.String(100), nullable=False, default=""),
    sa.Column("status", sa.String(20), nullable=False),  # done | error (| abandoned, set by the web app)
    sa.Column("outcome", sa.JSON(none_as_null=True)),
    sa.Column("metrics", sa.JSON(none_as_null=True)),
    sa.Column("error", sa.Text),
    sa.Column("n_turns", sa.Integer, default=0),
    sa.Column("n_invalid", sa.Integer, default=0),
    sa.Column("source", sa.String(50), default="run"),  # run | import:<format>
    sa.Column("started", sa.Float),
    sa.Column("finished", sa.Float),
)

turns = sa.Table(
    "turns",
    metadata,
    sa.Column("game_id", sa.String(64), sa.ForeignKey("games.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("idx", sa.Integer, primary_key=True),
    sa.Column("role", sa.String(50), nullable=False),
    sa.Column("phase", sa.String(100)),
    # the turn's prompt: transcripts[game_id, role][msg_start : msg_start + msg_count]
    sa.Column("msg_start", sa.Integer),
    sa.Column("msg_count", sa.Integer),
    sa.Column("raw", sa.Text),
    sa.Column("action", sa.JSON(none_as_null=True)),
    sa.Column("valid", sa.Boolean, nullable=False),
    sa.Column("retries", sa.Integer, default=0),
    sa.Column("error", sa.Text),
    *call_use_columns(latency=True),
    sa.Column("metrics", sa.JSON(none_as_null=True)),
    # SQLite keeps the rows in key order, without a separate key index (about a fifth less space)
    sqlite_with_rowid=False,
)

#: A model's thoughts and how its reply ended, per turn, apart from its answer (``turns.raw``):
#: a row only for turns with thoughts, reasoning tokens or an ending other than a plain stop.
reasoning = sa.Table(
    "reasoning",
    metadata,
    sa.Column("game_id", sa.String(64), sa.ForeignKey("games.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("idx", sa.Integer, primary_key=True),
    sa.Column("text", sa.Text),
    sa.Column("tokens", sa.BigInteger),
    sa.Column("finish_reason", sa.String(40)),
)

#: A model's long thoughts, each stored once per database, packed (:func:`~.codec.pack_text`)
#: and keyed by the SHA-256 of their text: the ``reasoning`` table and the response cache hold
#: ``sha256:<hex>`` in their place (:mod:`~.thoughts`). Thoughts shorter than
#: :data:`~.codec.PACK_TEXT_FROM` characters, and every thought of a database written before the
#: table, stay in the row that names them.
thoughts = sa.Table(
    "thoughts",
    metadata,
    sa.Column("hash", sa.String(64), primary_key=True),
    sa.Column("text", sa.Text, nullable=False),
)

#: What a turn's calls read from and wrote to the provider's prompt cache, the tier they were
#: billed at and their fallbacks to the standard tier: a row only for turns with something to
#: say (cached or written tokens, a tier other than the standard one, a fallback); a turn
#: without one, and every turn of a database written before the table, reads as zeros and the
#: standard tier (None for a turn no call was billed for).
usage = sa.Table(
    "usage",
    metadata,
    sa.Column("game_id", sa.String(64), sa.ForeignKey("games.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("idx", sa.Integer, primary_key=True),
    sa.Column("cached_tokens", sa.BigInteger, default=0),
    sa.Column("cache_write_tokens", sa.BigInteger, default=0),
    sa.Column("tier", sa.String(20)),
    sa.Column("fallbacks", sa.Integer, default=0),
)

#: A hash of the prompt templates a game was played with (every template text its prompt
#: folders offer, :attr:`agorabench.core.game.Prompts.digest`): beside ``games.prompt_version``
#: it tells templates edited without a new ``VERSION``. A game stored before the table, or
#: imported, has no row (nothing to compare).
prompt_hashes = sa.Table(
    "prompt_hashes",
    metadata,
    sa.Column("game_id", sa.String(64), sa.ForeignKey("games.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("hash", sa.String(64), nullable=False),
)

transcripts = sa.Table(
    "transcripts",
    metadata,
    sa.Column("game_id", sa.String(64), sa.ForeignKey("games.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("role", sa.String(50), primary_key=True),
    sa.Column("messages", sa.JSON, nullable=False),  # each message the role's turns saw, stored once
)

cache = sa.Table(
    "cache",
    metadata,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("identity", sa.String(300), nullable=False),
    sa.Column("response", sa.JSON, nullable=False),
    sa.Column("created", sa.Float, nullable=False),
)

claims = sa.Table(
    "claims",
    metadata,
    sa.Column("game_id", sa.String(64), primary_key=True),
    sa.Column("study", sa.String(200), nullable=False),
    sa.Column("owner", sa.String(64), nullable=False),
    sa.Column("heartbeat", sa.Float, nullable=False),
)

#: The seatings a study was run with (its models, matchups and seats as one JSON value), one row
#: per distinct value. Reports and exports expand the study file's current grid with each one, so
#: games played with ``--model`` or from the dashboard belong to the study's design.
study_runs = sa.Table(
    "study_runs",
    metadata,
    sa.Column("study", sa.String(200), primary_key=True),
    sa.Column("key", sa.String(64), primary_key=True),  # SHA-256 of the seating as sorted-key JSON
    sa.Column("seating", sa.JSON, nullable=False),
    sa.Column("first", sa.Float, nullable=False),
    sa.Column("last", sa.Float, nullable=False),
)

#: Provider batches a run submitted (batch mode, :mod:`agorabench.core.lockstep`), one row per
#: batch, written as soon as the provider names it and before the run waits on it: a run
#: stopped and started again polls the batches still open, writes their answers into the
#: response cache and never submits (pays for) them twice. ``items`` are the requests' custom
#: ids, i.e. their response-cache keys. Created with the store's other tables, so an older
#: database gains it when a run opens it.
batches = sa.Table(
    "batches",
    metadata,
    sa.Column("provider", sa.String(40), primary_key=True),
    sa.Column("batch_id", sa.String(200), primary_key=True),
    study_column(),
    sa.Column("identity", sa.String(300), nullable=False),  # the model's backend identity
    sa.Column("round", sa.Integer, nullable=False, default=0),
    sa.Column("status", sa.String(40), nullable=False),  # the provider's word, last seen
    #: True once nothing more will come of it: its answers are in the response cache, or it failed.
    sa.Column("done", sa.Boolean, nullable=False, default=False),
    sa.Column("items", sa.JSON, nullable=False),  # custom ids (response-cache keys)
    sa.Column("n_items", sa.Integer, nullable=False),
    sa.Column("counts", sa.JSON(none_as_null=True)),  # the provider's counts, last seen
    sa.Column("error", sa.Text),  # a batch that failed whole: the provider's words
    sa.Column("owner", sa.String(64)),  # the process that submitted it
    sa.Column("submitted", sa.Float, nullable=False),
    sa.Column("updated", sa.Float, nullable=False),
)

# ------------------------------------------------------------------------------------------
# The web app's tables (same database; created by the web app, never by the store itself)

web_metadata = sa.MetaData()

participants = sa.Table(
    "web_participants",
    web_metadata,
    sa.Column("token", sa.String(64), primary_key=True),
    study_column(),
    sa.Column("participant", sa.String(200), nullable=False),
    sa.Column("pid_hash", sa.String(32), nullable=False),
    sa.Column("source", sa.String(20), nullable=False),  # prolific | mturk | link
    sa.Column("params", sa.JSON, nullable=False),
    sa.Column("csrf", sa.String(64), nullable=False),
    sa.Column("stage", sa.String(20), nullable=False),
    sa.Column("base_spec", sa.String(64), nullable=False),
    sa.Column("game_id", sa.String(64), nullable=False),
    sa.Column("role", sa.String(50), nullable=False),
    sa.Column("quiz_attempts", sa.Integer, default=0),
    sa.Column("attention", sa.JSON),
    sa.Column("answers", sa.JSON),
    sa.Column("game_status", sa.String(20)),
    sa.Column("code", sa.String(64)),
    sa.Column("bonus", sa.Float),
    sa.Column("created", sa.Float, nullable=False),
    sa.Column("updated", sa.Float, nullable=False),
    #: A resume link the dashboard issued: SHA-256 of its code (used once) and when it expires.
    sa.Column("resume_hash", sa.String(64)),
    sa.Column("resume_expires", sa.Float),
    #: Group games (several people in one game; added later, see
    #: :func:`~agorabench.store.migrate.add_web_columns`): when the participant reached the
    #: waiting room, the group their game was formed with (members by role, seats filled by the
    #: fallback, seconds waited, a note), and when their seat was handed to the fallback after
    #: they passed the idle deadline (a dropout; the game went on for the others).
    sa.Column("waiting_since", sa.Float),
    sa.Column("group_info", sa.JSON),
    sa.Column("dropped_out", sa.Float),
    #: When the participant consented, and when they submitted the questionnaire (their end);
    #: also added later (null in rows written before).
    sa.Column("consented_at", sa.Float),
    sa.Column("finished_at", sa.Float),
    sa.UniqueConstraint("study", "pid_hash", name="uq_web_participant"),
)

web_turns = sa.Table(
    "web_turns",
    web_metadata,
    sa.Column("token", sa.String(64), primary_key=True),
    sa.Column("seq", sa.Integer, primary_key=True),
    sa.Column("shown_at", sa.Float),
    #: When the game first opened the turn: its idle deadline counts from here, across restarts
    #: (added later: older databases get it from :func:`~agorabench.store.migrate.add_web_columns`).
    sa.Column("opened_at", sa.Float),
    sa.Column("answered_at", sa.Float),
    sa.Column("action", sa.JSON(none_as_null=True)),
    sa.Column("response_time", sa.Float),
    sa.Column("errors", sa.JSON),
    sa.Column("timed_out", sa.Boolean, default=False),
    #: The turn as the person saw it, for the researcher's desk: ``{"read": [the new messages in
    #: the person's words], "fields": {name: [label, kind]}}`` (the form's labels), and on the first
    #: turn ``"instructions"``; written when the turn opens (added later: older rows have none).
    sa.Column("as_seen", sa.JSON(none_as_null=True)),
)

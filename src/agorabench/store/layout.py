"""How a game's turns lie in the database: each role's messages stored once per game (table
``transcripts``), and every turn's prompt as a span of that list (``msg_start``, ``msg_count``),
so storage grows linearly with a game's length. :func:`layout` computes the lists and spans,
:func:`game_rows` turns a finished game into the rows written, :func:`_span` reads a prompt back.
"""

from __future__ import annotations

import math
import time
from typing import Any, Iterable

from ..records import TurnRecord
from .codec import _safe, pack_messages, unpack_messages
from .thoughts import stored_thought


def layout(records: Iterable[TurnRecord]) -> tuple[dict[str, list[dict[str, str]]], list[tuple[int, int]]]:
    """Each role's messages stored once, and every turn's prompt as ``(start, count)`` in them.

    A role's turns usually see one growing transcript, so turn k's prompt is a prefix of turn
    k+1's and the role's list is simply the longest prompt. A prompt that neither extends nor
    repeats the current run of messages (a game that reset a role's transcript) starts a new run
    at the end of the list, so any sequence of prompts is stored exactly, at worst in full.
    """
    stored: dict[str, list[dict[str, str]]] = {}
    runs: dict[str, tuple[int, list[dict[str, str]]]] = {}  # role -> (start, current run)
    spans: list[tuple[int, int]] = []
    for t in records:
        msgs = list(t.messages or [])
        role_list = stored.setdefault(t.role, [])
        start, run = runs.get(t.role, (0, []))
        n, m = len(run), len(msgs)
        if m >= n and msgs[:n] == run:  # extends (or equals) the current run
            role_list.extend(msgs[n:])
            runs[t.role] = (start, msgs)
        elif m < n and run[:m] == msgs:  # repeats a prefix of it
            pass
        else:  # a new run
            start = len(role_list)
            role_list.extend(msgs)
            runs[t.role] = (start, msgs)
        spans.append((start, m))
    return stored, spans


def game_rows(
    *,
    id: str,
    study: str,
    game: str,
    config: dict[str, Any],
    seats: dict[str, str],
    repeat: int,
    seed: int,
    prompt_version: str,
    status: str,
    outcome: dict[str, Any] | None,
    metrics: dict[str, float] | None,
    error: str | None,
    turn_records: Iterable[TurnRecord],
    started: float | None = None,
    source: str = "run",
    finished: float | None = None,
    prompt_hash: str | None = None,
) -> dict[str, Any]:
    """A finished game as the rows :meth:`Store.save_games` writes (game, transcripts, turns;
    ``prompt_hash``: the digest of its prompt templates, a row of its own; long thoughts as
    ``thoughts`` rows their ``reasoning`` rows name by hash, :mod:`~.thoughts`)."""
    records = list(turn_records)
    stored, spans = layout(records)
    # long thoughts once per database (table ``thoughts``), the reasoning row naming them by hash
    said = {t.index: stored_thought(_safe(t.reasoning)) for t in records if t.reasoning is not None}
    return {
        "game": {
            "id": id,
            "study": study,
            "game": game,
            "config": config,
            "seats": seats,
            "repeat": repeat,
            "seed": seed,
            "prompt_version": prompt_version,
            "status": status,
            "outcome": _safe(outcome),
            "metrics": metrics,
            "error": _safe(error),
            "n_turns": len(records),
            "n_invalid": sum(1 for t in records if not t.valid),
            "source": source,
            "started": started,
            "finished": finished if finished is not None else time.time(),
        },
        "transcripts": [{"game_id": id, "role": role, "messages": pack_messages(_safe(msgs))} for role, msgs in stored.items() if msgs],
        "prompt_hashes": [{"game_id": id, "hash": str(prompt_hash)[:64]}] if prompt_hash else [],
        "turns": [
            {
                "game_id": id,
                "idx": t.index,
                "role": t.role,
                "phase": t.phase,
                "msg_start": start,
                "msg_count": count,
                "raw": _safe(t.raw),
                "action": _safe(t.action),
                "valid": t.valid,
                "retries": t.retries,
                "error": _safe(t.error),
                "prompt_tokens": _column_int(t.prompt_tokens, INT32_MAX),
                "completion_tokens": _column_int(t.completion_tokens, INT32_MAX),
                "cost": _column_float(t.cost),
                "latency": t.latency,
                "cached": t.cached,
                "metrics": t.metrics,
            }
            for t, (start, count) in zip(records, spans)
        ],
        "reasoning": [
            {"game_id": id, "idx": t.index, "text": said.get(t.index, (None, None))[0], "tokens": _column_int(t.reasoning_tokens, INT64_MAX), "finish_reason": t.finish_reason}
            for t in records
            if t.reasoning is not None or t.reasoning_tokens is not None or t.finish_reason not in PLAIN_ENDINGS
        ],
        "thoughts": [row for _, row in said.values() if row is not None],
        "usage": [
            {
                "game_id": id,
                "idx": t.index,
                "cached_tokens": _column_int(t.cached_tokens, INT64_MAX) or 0,
                "cache_write_tokens": _column_int(t.cache_write_tokens, INT64_MAX) or 0,
                "tier": _tier(t.tier),
                "fallbacks": _column_int(t.fallbacks, INT32_MAX) or 0,
            }
            for t in records
            if t.cached_tokens or t.cache_write_tokens or t.fallbacks or t.tier not in PLAIN_TIERS
        ],
    }


#: The tiers of a turn that need no ``usage`` row: none billed, or the standard one.
PLAIN_TIERS = (None, "standard")


def _tier(value: Any) -> str | None:
    """A turn's billed tier as its column holds it: None for the standard tier (as a turn
    without a row reads), else text of at most 20 characters."""
    return None if value in PLAIN_TIERS else str(value)[:20]


#: The largest values of the integer columns (``Integer`` is 32 bits in PostgreSQL, ``BigInteger`` 64).
INT32_MAX, INT64_MAX = 2**31 - 1, 2**63 - 1


def _column_int(value: Any, largest: int) -> int | None:
    """A turn's count as its column holds it: None (unknown) for anything but an integer from 0
    to ``largest``. The models' boundary already drops absurd token counts; this is the last
    defence, so that one value no database takes (2^63) never stops a run's group commit."""
    if value is None or isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= largest:
        return None
    return value


def _column_float(value: Any) -> float | None:
    """A turn's amount (its cost) as its column holds it: None for anything but a finite number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


#: How a reply ends when nothing about it needs telling: no ``reasoning`` row is written for it.
PLAIN_ENDINGS = (None, "stop", "end_turn")


def _span(stored: list[dict[str, str]] | str | None, start: int | None, count: int | None) -> list[dict[str, str]]:
    """The prompt a turn was shown: ``count`` messages of its role's list (stored packed or
    plain: :func:`~.codec.unpack_messages`) from ``start``."""
    stored = unpack_messages(stored)
    if not stored or not count:
        return []
    return stored[start or 0 : (start or 0) + count]

"""The people of a served study as one table (``agora export --table participants``, the Python
API :func:`participants_df`): one row per participant, read from the web app's
``web_participants`` table.

A row joins the games and turns exports on ``pseudonym``: the seat name the person's game is
stored under (``human:<pseudonym hash>``, the value of the games export's ``model_<role>`` and of
the turns export's ``model`` for that seat), with ``game_id`` and ``role`` beside it. Columns, in
order (:data:`LEAD`, then one per attention check, one per questionnaire answer, then the rest):

- ``pseudonym``, ``game_id``, ``role``, ``base_game`` (the id of the study game whose seat the
  person filled);
- ``participant_id`` (the recruitment platform's id as the person gave it, NFKC-normalised),
  ``id_source`` (``prolific``, ``mturk`` or ``link``), ``entry_params`` (the other entry-link
  parameters, as JSON);
- ``stage`` (where the person is: consent, instructions, quiz, play, results, questionnaire,
  done), ``status`` (``finished``: reached the end; ``declined``: did not consent; ``dropped
  out``: stopped answering during the game, past its idle deadline, and never reached the end;
  ``in progress`` otherwise), ``game_status`` (the game's: done, abandoned, error; empty before
  it ended);
- ``created`` (entry), ``consented`` and ``finished`` as ISO 8601 UTC times, and
  ``total_seconds`` (entry to finish): ``consented_at`` and ``finished_at`` as the web app
  recorded them (consent given; questionnaire submitted); in rows written before those columns
  existed, ``finished`` is the row's last change once its stage is ``done`` and ``consented``
  is empty;
- ``consent`` (yes / no; empty while the person has not answered), ``quiz_tries``;
- ``attention_after_<n>``: ``passed`` or ``failed`` for each attention check of the study file
  (shown after the n-th answered turn), ``passed after play`` / ``failed after play`` where the
  game ended before that turn (the check is then shown before the results page), ``not reached``
  where the person has not met it (yet); and for any other check a row recorded;
- ``q_<name>``: every questionnaire answer, one column per question of the study file (and any
  other name a row holds), empty where the person gave none;
- ``bonus``;
- any other column a newer web app added to the table, by its own name (values that are not
  text or numbers as JSON; the times ``dropped_out``, when a group member's seat went to the
  fallback, and ``waiting_since``, when they reached the waiting room, as ISO 8601 UTC); session
  secrets (tokens, CSRF values, resume codes, hashes) never.

The table is read by reflection, not through a fixed schema, so columns added later come along.
"""

from __future__ import annotations

import json
import math
from datetime import datetime, timezone
from typing import Any

import pandas as pd

from ..core.seats import person_seat  # a person's seat name: human:<pid_hash>
from ..store.store import Store

#: The first columns, always present in this order.
LEAD = (
    "pseudonym", "game_id", "role", "base_game", "participant_id", "id_source", "entry_params",
    "stage", "status", "game_status", "created", "consented", "finished", "total_seconds", "consent", "quiz_tries",
)

#: Stored columns these read (and the ones never exported).
_READ = {"study", "pid_hash", "game_id", "role", "base_spec", "participant", "source", "params", "stage", "game_status", "created", "updated", "quiz_attempts", "attention", "answers", "bonus"}
_SECRET_NAMES = ("token", "csrf", "resume", "hash", "secret", "code", "cookie", "password")
_CONSENTED = ("consented_at",)
_FINISHED = ("finished_at",)
#: Other stored columns that hold a time (seconds since the epoch): exported as ISO 8601 UTC.
_TIMES = ("dropped_out", "waiting_since")


def _attention(taken: dict[str, Any] | None) -> str:
    """One attention check's result as exported (see the module docstring)."""
    if taken is None:
        return "not reached"
    result = "passed" if taken.get("passed") else "failed"
    return result if taken.get("in_play", True) else f"{result} after play"


def _web_table(store: Store):
    """The ``web_participants`` table as the database has it (reflected), or None."""
    import sqlalchemy as sa

    from ..store.schema import participants

    if not sa.inspect(store.engine).has_table(participants.name):
        return None
    return sa.Table(participants.name, sa.MetaData(), autoload_with=store.engine)


def participant_rows(store: Store, study: str) -> list[dict[str, Any]]:
    """Every stored row of ``study``'s participants, all columns, in the order they entered;
    [] for a database that was never served."""
    import sqlalchemy as sa

    table = _web_table(store)
    if table is None:
        return []
    query = sa.select(table).where(table.c.study == study)
    if "created" in table.c:
        query = query.order_by(table.c.created)
    with store.engine.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(query)]


def _json(value: Any) -> Any:
    """A JSON column's value as Python (a driver may hand it over as text)."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _time(value: Any) -> str | None:
    """A stored time (seconds since the epoch) as ISO 8601 UTC; None when missing."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, datetime):
        return value.astimezone(timezone.utc).isoformat(timespec="seconds")
    try:
        return datetime.fromtimestamp(float(value), tz=timezone.utc).isoformat(timespec="seconds")
    except (TypeError, ValueError, OverflowError, OSError):
        return str(value)


def _seconds(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, datetime):
        return value.timestamp()
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _first(row: dict[str, Any], names: tuple[str, ...]) -> Any:
    for name in names:
        if row.get(name) is not None:
            return row[name]
    return None


def _status(row: dict[str, Any]) -> str:
    """Where the person stands (the module docstring): a person whose seat went to the fallback
    (``dropped_out``) or whose game was abandoned for their silence, and who did not reach the
    end, dropped out."""
    if row.get("game_status") == "declined":
        return "declined"
    if row.get("stage") == "done":
        return "finished"
    if row.get("dropped_out") is not None or row.get("game_status") == "abandoned":
        return "dropped out"
    return "in progress"


def _consent(row: dict[str, Any]) -> str | None:
    if row.get("game_status") == "declined":
        return "no"
    return None if row.get("stage") in (None, "consent") else "yes"


def _checks(spec: dict[str, Any] | None) -> list[int]:
    """The ``after`` of each attention check of the study file, in its order."""
    web = (spec or {}).get("web") or {}
    out = []
    for check in web.get("attention_checks") or []:
        if isinstance(check, dict) and isinstance(check.get("after"), int):
            out.append(check["after"])
    return list(dict.fromkeys(out))


def _questions(spec: dict[str, Any] | None) -> list[str]:
    web = (spec or {}).get("web") or {}
    return [str(q["name"]) for q in web.get("questionnaire") or [] if isinstance(q, dict) and q.get("name")]


def _secret(name: str) -> bool:
    return any(word in name.lower() for word in _SECRET_NAMES)


def _cell(value: Any) -> Any:
    """A value for a table cell: text, numbers and booleans as they are (an answer "42" stays
    the text it was), anything else (lists, tables) as JSON."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def participants_df(store: Store, study: str, spec: dict[str, Any] | None = None, ids: set[str] | None = None) -> pd.DataFrame:
    """One row per participant of ``study`` (columns: the module docstring); ``spec``: the study
    file as a dict (default: the stored one), whose ``[web]`` attention checks and questionnaire
    give their columns even where nobody reached them; ``ids``: only participants whose game id
    is one of these (the study file's current design). An empty frame (with the lead columns)
    for a study nobody took part in."""
    if spec is None:
        spec = store.study_spec(study)
    rows = [r for r in participant_rows(store, study) if ids is None or r.get("game_id") in ids]
    checks = _checks(spec)
    questions = _questions(spec)
    for row in rows:  # checks and questions a row has that the study file (now) lacks
        for a in _json(row.get("attention")) or []:
            if isinstance(a, dict) and isinstance(a.get("after"), int) and a["after"] not in checks:
                checks.append(a["after"])
        answers = _json(row.get("answers"))
        for name in answers or {} if isinstance(answers, dict) else {}:
            if str(name) not in questions:
                questions.append(str(name))
    extra = list(dict.fromkeys(k for r in rows for k in r if k not in _READ and k not in _CONSENTED + _FINISHED and not _secret(k)))
    columns = [*LEAD, *(f"attention_after_{n}" for n in checks), *(f"q_{q}" for q in questions), "bonus", *extra]
    out = []
    for row in rows:
        created = _seconds(row.get("created"))
        consented = _first(row, _CONSENTED)
        finished = _first(row, _FINISHED)
        if finished is None and row.get("stage") == "done" and row.get("game_status") != "declined":
            finished = row.get("updated")
        finished_s = _seconds(finished)
        record: dict[str, Any] = {
            "pseudonym": person_seat(row["pid_hash"]) if row.get("pid_hash") else None,
            "game_id": row.get("game_id"),
            "role": row.get("role"),
            "base_game": row.get("base_spec"),
            "participant_id": row.get("participant"),
            "id_source": row.get("source"),
            "entry_params": json.dumps(_json(row.get("params")) or {}, ensure_ascii=False, sort_keys=True),
            "stage": row.get("stage"),
            "status": _status(row),
            "game_status": row.get("game_status"),
            "created": _time(created),
            "consented": _time(_seconds(consented)) if consented is not None else None,
            "finished": _time(finished_s),
            "total_seconds": round(finished_s - created, 3) if finished_s is not None and created is not None else None,
            "consent": _consent(row),
            "quiz_tries": row.get("quiz_attempts"),
            "bonus": row.get("bonus"),
        }
        taken = {a["after"]: a for a in _json(row.get("attention")) or [] if isinstance(a, dict) and "after" in a}
        for n in checks:
            a = taken.get(n)
            record[f"attention_after_{n}"] = _attention(a)
        answers = _json(row.get("answers"))
        answers = answers if isinstance(answers, dict) else {}
        for q in questions:
            record[f"q_{q}"] = _cell(answers.get(q))
        for k in extra:
            record[k] = _time(_seconds(row.get(k))) if k in _TIMES else _cell(row.get(k))
        out.append(record)
    df = pd.DataFrame(out, columns=columns)
    for c in columns:  # answers as given (a scale's 3 stays 3 beside an empty answer, not 3.0)
        if c.startswith("q_") or c in extra:
            df[c] = pd.Series([r.get(c) for r in out], index=df.index, dtype=object)
    return df

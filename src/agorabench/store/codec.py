"""What goes into and comes out of the database's JSON and text columns, defined once for
every table: :func:`_safe` makes a value storable (secrets redacted, characters that UTF-8 or
PostgreSQL text cannot hold replaced), :func:`_dumps` and :func:`_loads` are the engine's JSON
encoder and decoder."""

from __future__ import annotations

import base64
import json
import math
import zlib
from json.encoder import c_make_encoder, encode_basestring
from typing import Any, Callable

import orjson

from .. import redact as _secrets
from ..redact import redact
from ..text import storable

#: Characters no stored text may hold: lone surrogates (not UTF-8) and NUL (not PostgreSQL text).

#: Types of values inside a dict or list that :func:`_safe` passes on as they are.
_SCALARS = frozenset({int, float, bool, type(None)})


def _safe(value: Any) -> Any:
    """What may be written: secrets redacted, and lone surrogates and NUL (which neither UTF-8
    nor PostgreSQL text can hold) replaced by U+FFFD, in every string of a JSON-like value.
    Strings and plain scalars inside dicts and lists are handled in place, without a call per
    value (a finished game holds hundreds of them)."""
    kind = type(value)
    if kind is str:
        return _safe_text(value)
    if _memo_generation != _secrets.generation:
        _renew_memo()
    memo = _MEMO  # a string seen recently is looked up here, without a call (an empty result is made again)
    if kind is dict or isinstance(value, dict):
        return {((memo.get(k) or _safe_text(k)) if type(k) is str else _safe(k)): ((memo.get(v) or _safe_text(v)) if type(v) is str else v if type(v) in _SCALARS else _safe(v)) for k, v in value.items()}
    if kind is list or isinstance(value, (list, tuple)):
        return [(memo.get(v) or _safe_text(v)) if type(v) is str else v if type(v) in _SCALARS else _safe(v) for v in value]
    if isinstance(value, str):
        return _safe_text(value)
    return value


#: Strings recently made storable -> what :func:`_safe_text` made of them (a finished game's
#: transcripts repeat the same system prompts, instructions and replies game after game). The
#: result depends only on the text and the registered secrets: the memo is emptied whenever a
#: secret is registered (:data:`agorabench.redact.generation`), and when it holds
#: :data:`_MEMO_ENTRIES` strings; strings over :data:`_MEMO_CHARS` characters are not kept.
_MEMO: dict[str, str] = {}
_MEMO_ENTRIES = 4096
_MEMO_CHARS = 4096
_memo_generation = -1


def _renew_memo() -> None:
    """Empty the memo: the registered secrets changed."""
    global _memo_generation
    _MEMO.clear()
    _memo_generation = _secrets.generation


def _safe_text(text: str) -> str:
    """One string made storable (see :func:`_safe`): its secrets redacted, then lone
    surrogates and NUL replaced."""
    if _memo_generation != _secrets.generation:
        _renew_memo()
    done = _MEMO.get(text)
    if done is not None:
        return done
    done = storable(redact(text))
    if len(text) <= _MEMO_CHARS:
        if len(_MEMO) >= _MEMO_ENTRIES:
            _MEMO.clear()
        _MEMO[text] = done
    return done


def _loads(text: str) -> Any:
    """A stored JSON value: orjson (several times faster over 10^5 games), and the standard
    parser for what orjson refuses (NaN written by older versions, integers beyond 64 bits,
    lone surrogates)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


#: ``json.dumps(value, ensure_ascii=False, allow_nan=False)``, its encoder made once (``dumps``
#: builds a new one on every call with options; the text is the same).
_ENCODE = json.JSONEncoder(ensure_ascii=False, allow_nan=False).encode


def _c_encoder() -> Callable[[Any, int], list[str]] | None:
    """The C encoder that :data:`_ENCODE` makes on every call, made once: the same options and
    the same text (a JSON column's value is encoded with each row written, 8,000 values for 768
    envy games; ``encode`` spends more on making it than on most values). Without the circular
    check (``markers``: a dict of the objects being encoded, which one encoder shared by threads
    cannot hold, and which a failed encoding leaves dirty): a value that holds itself ends in
    RecursionError, and :func:`_dumps` then encodes it as before. None where the interpreter has
    no C encoder."""
    if c_make_encoder is None:  # pragma: no cover - CPython has it
        return None
    options = json.JSONEncoder(ensure_ascii=False, allow_nan=False)
    return c_make_encoder(None, options.default, encode_basestring, None, options.key_separator, options.item_separator, options.sort_keys, options.skipkeys, options.allow_nan)


_C_ENCODE = _c_encoder()


def _dumps(value: Any) -> str:
    """JSON with non-ASCII text kept as is (a third of the size of escaped Japanese). NaN and
    infinities become null, numpy scalars numbers (:func:`_jsonable`, only when needed: the
    common case is one call of the C encoder)."""
    try:
        if _C_ENCODE is None:  # pragma: no cover - CPython has the C encoder
            return _ENCODE(value)
        try:
            return "".join(_C_ENCODE(value, 0))
        except RecursionError:  # a value that holds itself (or too deep): as the encoder with its check does
            return _ENCODE(value)
    except (TypeError, ValueError):
        return json.dumps(_jsonable(value), ensure_ascii=False)


def _jsonable(value: Any) -> Any:
    """Plain JSON values: NaN/inf become null, tuples lists, numpy scalars Python numbers."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (str, int, bool)):
        return value
    if hasattr(value, "item"):  # numpy scalars
        return _jsonable(value.item())
    return str(value)


# ------------------------------------------------------------------------------------------
# Packed transcripts

#: Start of a transcript stored packed: its JSON, zlib-compressed, in base64, held in the column
#: as a JSON string (a list there is a transcript stored before packing; both are read).
PACKED = "zlib64:"


def pack_messages(messages: list[dict[str, str]]) -> str:
    """A role's transcript as stored: ``PACKED`` + base64(zlib(JSON)). Chat text repeats itself
    (the same rules, the same answer format in every request), so this is about a seventh of
    the plain JSON; every message is still there, exactly (:func:`unpack_messages`)."""
    return PACKED + base64.b64encode(zlib.compress(_dumps(messages).encode("utf-8"), 6)).decode("ascii")


#: Thoughts shorter than this (characters) are stored as they are: readable in SQL, and packing
#: would save little.
PACK_TEXT_FROM = 1024


def pack_text(text: str | None) -> str | None:
    """A model's thoughts as stored (the ``reasoning`` table, the response cache): from
    :data:`PACK_TEXT_FROM` characters on, ``PACKED`` + base64(zlib(UTF-8)), as transcripts are
    (thoughts at the length cap were stored whole twice: 0.8 MB per reply); shorter as they are."""
    if text is None or len(text) < PACK_TEXT_FROM:
        return text
    return PACKED + base64.b64encode(zlib.compress(text.encode("utf-8"), 6)).decode("ascii")


def unpack_text(value: Any) -> Any:
    """Stored thoughts read back: packed ones unpacked; plain text (short, or stored before
    packing) as it is."""
    if isinstance(value, str) and value.startswith(PACKED):
        try:
            return zlib.decompress(base64.b64decode(value[len(PACKED):], validate=True)).decode("utf-8")
        except (ValueError, zlib.error):  # plain text that happens to start so
            return value
    return value


def unpack_messages(value: Any) -> Any:
    """A stored transcript read back: a packed one unpacked, a plain JSON list as it is."""
    if isinstance(value, str) and value.startswith(PACKED):
        return _loads(zlib.decompress(base64.b64decode(value[len(PACKED):])))
    return value

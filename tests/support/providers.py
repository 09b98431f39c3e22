"""Loopback servers on 127.0.0.1 that behave like the APIs of reasoning-model providers: their
request rules, their status codes and JSON error bodies, where each puts a reply's reasoning,
how each counts reasoning tokens and what each returns when reasoning eats the output budget.

Run as ``python tests/support/providers.py PORT --provider NAME [options]`` or, in a test,
``with provider_server("openai") as base_url: ...`` (``base_url`` ends in ``/v1``). Providers:

- ``openai``: ``/v1/chat/completions`` and ``/v1/responses``; models named o1/o3/o4/gpt-5*
  reason: ``max_tokens`` and a temperature other than 1 are refused, ``reasoning_effort`` is
  checked, ``max_completion_tokens`` (``max_output_tokens``) bounds reasoning and answer
  together, reasoning text never comes back on chat completions (a summary may, on responses),
  ``*-pro`` models exist only on ``/v1/responses``, and a ``prompt_cache_key`` must be a
  string of at most 64 characters;
- ``anthropic``: ``/v1/messages`` (at most 4 ``cache_control`` breakpoints, each ephemeral with
  a TTL of 5m or 1h) with thinking blocks (``thinking`` enabled with
  ``budget_tokens`` / adaptive / disabled, ``output_config.effort``); ``claude-opus-5*`` thinks
  by default and refuses any temperature;
- ``deepseek``: ``deepseek-reasoner`` always thinks, ``deepseek-chat`` with
  ``thinking: {"type": "enabled"}``; reasoning in ``message.reasoning_content``; sending it
  back is refused;
- ``vllm``: vLLM with a reasoning parser (``message.reasoning_content``, or ``reasoning`` with
  ``--field reasoning``), ``chat_template_kwargs.enable_thinking``; ``--raw-think`` puts the
  thoughts in the content between ``<think>`` tags (``--no-opener``: no opening tag);
- ``ollama``: Ollama's OpenAI-compatible endpoint, ``message.reasoning``,
  ``reasoning_effort`` high/medium/low/none;
- ``gemini``: Gemini's OpenAI-compatible endpoint (also under ``/v1beta/openai``): reasoning not
  returned, ``usage.completion_tokens`` leaves the thinking tokens out while ``total_tokens``
  counts them; errors as a list ``[{"error": {...}}]``; Gemini 3 Pro refuses thinking level
  MEDIUM (``reasoning_effort`` or ``extra_body.google.thinking_config.thinking_level``), an
  unknown level is an enum error naming the field.

Refusals on request: ``--unverified`` (openai) refuses any reasoning summary on ``/v1/responses``
as OpenAI refuses an organisation not verified for them (400, ``unsupported_value``,
``reasoning.summary``); ``--context N`` (openai chat, gemini) refuses a prompt over N tokens with
the provider's context-length 400.

Service tiers (openai, gemini; live calls only, not batch items): ``service_tier`` is checked
(OpenAI's auto / default / flex / scale / priority, Gemini's standard / flex / priority) and the
tier that served the call is said: in the answer's ``service_tier`` (OpenAI; ``default`` when
none was asked) or the ``x-gemini-service-tier`` header (Gemini). ``--flex-delay S`` makes flex
answers wait S seconds; ``--unavailable N`` refuses the first N flex calls with a 429 (OpenAI's
``Resource Unavailable``, code ``resource_unavailable``; Gemini's ``RESOURCE_EXHAUSTED``);
``--downgrade`` serves Gemini's priority calls at standard. ``/stats`` counts calls per tier.

Prompt caches (``--prompt-cache``; off by default, and then every answer is as before): the
servers keep a prompt cache as the provider documents it and report it in the usage
(:class:`PromptCaches`): OpenAI's ``prompt_tokens_details.cached_tokens`` (chat completions;
``input_tokens_details`` on responses): the longest prefix shared with an earlier prompt of the
same ``prompt_cache_key`` (with none: any earlier prompt), from 1,024 tokens in steps of 128;
Anthropic's ``cache_read_input_tokens``, ``cache_creation_input_tokens`` (and ``cache_creation``
by TTL) and ``input_tokens`` for the rest, from the request's ``cache_control`` breakpoints and
the model's minimum. Batch items answered by :func:`make_app`'s ``respond`` are cached alike.

The answer is a pure function of the conversation (:func:`final_answer`): a valid answer in
the format the prompt asks for (a JSON object, a ``<response>`` XML block or an ``Answer: N``
line). The reasoning holds a draft in the same format with other values
(:func:`draft_answer`), then rejects it, padded with filler words to the effort's length
(:data:`EFFORT_TOKENS`; ``--reasoning-tokens N`` fixes it). Tokens are whitespace-separated
words. ``GET /stats`` counts requests and refusals; ``/stats?bodies=1`` adds the last request
bodies, so a test can check exactly what a client sent.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import re
import urllib.request
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from aiohttp import web

try:
    from .helpers import serving
except ImportError:  # run as a script: tests/support is the first entry of sys.path
    from helpers import serving  # type: ignore[no-redef]

PROVIDERS = ("openai", "anthropic", "deepseek", "vllm", "ollama", "gemini")

#: Reasoning tokens by effort (``max``: Anthropic's top effort, as long as ``xhigh``).
EFFORT_TOKENS = {"none": 0, "minimal": 50, "low": 200, "medium": 600, "high": 1500, "xhigh": 3000, "max": 3000}
#: The effort of a request that names none.
DEFAULT_EFFORT = "medium"

#: Models ``/v1/models`` lists unless ``--models`` says otherwise.
DEFAULT_MODELS = {
    "openai": ["gpt-5", "gpt-5-mini", "gpt-5-pro", "o3", "o3-pro", "o4-mini", "gpt-4o-mini"],
    "anthropic": ["claude-opus-5", "claude-sonnet-4-5"],
    "deepseek": ["deepseek-chat", "deepseek-reasoner"],
    "vllm": ["Qwen/Qwen3-8B"],
    "ollama": ["qwen3:8b", "gpt-oss:20b", "deepseek-r1:8b"],
    "gemini": ["gemini-2.5-flash", "gemini-2.5-pro"],
}

#: The sentence that follows the draft in every reasoning text.
REJECTION = "On reflection that draft is wrong."

# --------------------------------------------------------------------------------------------
# The conversation as plain text


def _text_of(content: Any) -> str:
    """The text of a message's content: a string, or the text parts of a list of parts/blocks
    (thinking, redacted thinking and reasoning parts left out)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    out = []
    for part in content:
        if isinstance(part, str):
            out.append(part)
        elif isinstance(part, dict) and part.get("type", "text") in ("text", "input_text", "output_text") and isinstance(part.get("text"), str):
            out.append(part["text"])
    return "\n\n".join(out)


def plain_messages(messages: list[dict[str, Any]]) -> list[dict[str, str]]:
    """``messages`` as ``{"role", "content"}`` with text content: ``developer`` counts as
    ``system``, non-text parts are dropped, consecutive messages of one role are joined (as a
    client does for the Messages API), so every provider's form of one conversation gives the
    same list."""
    out: list[dict[str, str]] = []
    for m in messages:
        if not isinstance(m, dict) or m.get("type") not in (None, "message"):
            continue
        role = m.get("role", "user")
        role = "system" if role == "developer" else role
        if role not in ("system", "user", "assistant"):
            continue
        text = _text_of(m.get("content"))
        if out and out[-1]["role"] == role:
            out[-1]["content"] += "\n\n" + text
        else:
            out.append({"role": role, "content": text})
    return out


def _digest(messages: list[dict[str, Any]]) -> bytes:
    """A hash of the conversation that ignores whitespace and how it was split into messages."""
    key = [[m["role"], " ".join(m["content"].split())] for m in plain_messages(messages)]
    return hashlib.sha256(json.dumps(key, ensure_ascii=False).encode()).digest()


# --------------------------------------------------------------------------------------------
# What the prompt asks for


@dataclass
class _Field:
    """One field of the asked-for answer: ``kind`` is number, choice, bool, text or empty."""

    name: str
    kind: str
    options: list[Any] = field(default_factory=list)
    lo: float | None = None
    hi: float | None = None
    whole: bool = False
    hint: str = ""


@dataclass
class _Ask:
    """The answer format a prompt asks for (``json``, ``xml`` or ``answer``) and its fields."""

    fmt: str
    fields: list[_Field]
    total: float | None = None  # two amounts that must add up to this
    money: float | None = None  # the largest sum of money the prompt names
    words: str = ""  # the prompt text the fields' ranges are read from


_TRIGGERS = {
    "xml": re.compile(r"<response>|(?<![A-Za-z])XML(?![A-Za-z])"),
    "answer": re.compile(r"['\"「“]\s*Answer\s*:"),
    "json": re.compile(r"(?<![A-Za-z])JSON(?![A-Za-z])|Answer with \{"),
}
_RANGE = re.compile(r"(?:from|between)\s+(-?\d[\d,]*(?:\.\d+)?)\s+(?:to|and)\s+(-?\d[\d,]*(?:\.\d+)?)|(-?\d[\d,]*)\s*から\s*(-?\d[\d,]*)", re.I)
_DASH_RANGE = re.compile(r"^\s*<?\s*(-?\d+)\s*[-–]\s*(-?\d+)\s*>?\s*$")
_MONEY = re.compile(r"\$\s?(\d[\d,]*(?:\.\d+)?)")
_ADD_UP = re.compile(r"add up to\s+\$?\s?(\d[\d,]*(?:\.\d+)?)", re.I)
_OR_CHOICE = re.compile(r"^\s*<?\s*([\w-]+)((?:\s*,\s*[\w-]+)*)\s*,?\s+or\s+([\w-]+)\s*>?\s*$")


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def _last_trigger(text: str) -> tuple[int, str] | None:
    """(position, format) of the format named last in ``text``, or None."""
    best = None
    for fmt, pattern in _TRIGGERS.items():
        for m in pattern.finditer(text):
            if best is None or m.start() >= best[0]:
                best = (m.start(), fmt)
    return best


def _objects(text: str) -> list[str]:
    """The insides of the top-level ``{...}`` groups of ``text`` (quotes respected)."""
    out, depth, start, in_str, esc = [], 0, 0, False, False
    for i, ch in enumerate(text):
        if in_str:
            esc = (not esc) and ch == "\\"
            if ch == '"' and not esc:
                in_str = False
            continue
        if ch == '"' and depth:
            in_str = True
        elif ch == "{":
            if depth == 0:
                start = i + 1
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                out.append(text[start:i])
    return out


def _pairs(inside: str) -> list[tuple[str, str]]:
    """``"key": value`` pairs of an example object whose values may be prose (``<hint>``,
    ``true if ..., else false``)."""
    keys = list(re.finditer(r'"([^"]+)"\s*:\s*', inside))
    out = []
    for k, nxt in zip(keys, keys[1:] + [None]):
        raw = inside[k.end() : nxt.start() if nxt else len(inside)].strip().rstrip(",").strip()
        out.append((k.group(1), raw))
    return out


def _unquote(raw: str) -> tuple[str, bool]:
    """(text, was quoted) of an example value, ``<...>`` taken off."""
    quoted = len(raw) >= 2 and raw[0] == '"' and raw[-1] == '"'
    text = raw[1:-1] if quoted else raw
    text = text.strip()
    if text.startswith("<") and text.endswith(">"):
        text = text[1:-1].strip()
    return text, quoted


def _range_in(text: str) -> tuple[float, float] | None:
    m = _DASH_RANGE.match(text)
    if m:
        return float(m.group(1)), float(m.group(2))
    found = list(_RANGE.finditer(text))
    if found:
        a, b = (_number(x) for x in found[-1].groups() if x is not None)
        return min(a, b), max(a, b)
    return None


def _number_field(name: str, hint: str, context: str) -> _Field:
    f = _Field(name, "number", hint=hint)
    span = _range_in(hint) or _range_in(context)
    if span:
        f.lo, f.hi = span
    f.whole = bool(re.search(r"whole|integer|points|\d+\s*[-–]\s*\d+", hint + " " + context, re.I)) or (span is not None and span[1] - span[0] <= 20)
    return f


def _json_fields(template: str, context: str) -> list[_Field]:
    groups = [_pairs(g) for g in _objects(template)]
    groups = [g for g in groups if g]
    if not groups:
        return []
    if len(groups) > 1 and all(len(g) == 1 for g in groups) and len({g[0][0] for g in groups}) == 1:
        options = []
        for g in groups:
            raw = g[0][1]
            try:
                options.append(json.loads(raw))
            except ValueError:
                options.append(_unquote(raw)[0])
        return [_Field(groups[0][0][0], "choice", options=options)]
    fields = []
    for name, raw in groups[0]:
        text, quoted = _unquote(raw)
        choice = _OR_CHOICE.match(text)
        if quoted and choice and len(text.split()) <= 6:
            opts = [choice.group(1), *[o.strip() for o in choice.group(2).split(",") if o.strip()], choice.group(3)]
            fields.append(_Field(name, "choice", options=opts, hint=text))
        elif quoted and _DASH_RANGE.match(text):
            fields.append(_number_field(name, text, context))
        elif quoted:
            fields.append(_Field(name, "empty" if re.search(r"\bor empty\b|なければ空", text) else "text", hint=text))
        elif re.match(r"^(true|false)\b", text, re.I) or ("true" in text and "false" in text):
            fields.append(_Field(name, "bool", hint=text))
        else:
            try:
                value = json.loads(raw)
            except ValueError:
                value = None
            if isinstance(value, str):
                fields.append(_Field(name, "text", hint=value))
            else:
                fields.append(_number_field(name, text, context))
    return fields


def _options_in(text: str) -> list[str]:
    """The option labels a prompt lists (``A) ...`` lines, or ``(A, B, C or D)``)."""
    lines = re.findall(r"^\s*\(?([A-Z]|\d{1,2})[).:]\s+\S", text, re.M)
    if len(lines) >= 2:
        return list(dict.fromkeys(lines))
    m = re.search(r"\b([A-Z](?:\s*,\s*[A-Z])*)\s*,?\s+or\s+([A-Z])\b", text)
    if m:
        return [*(x.strip() for x in m.group(1).split(",")), m.group(2)]
    return []


def _xml_fields(template: str, last: str, messages: list[dict[str, str]]) -> list[_Field]:
    block = re.search(r"<response>(.*?)</response>", template, re.S)
    if not block:
        return []
    fields = []
    for name, placeholder in re.findall(r"<(\w+)>(.*?)</\1>", block.group(1), re.S):
        placeholder = placeholder.strip()
        if _DASH_RANGE.match(placeholder):
            fields.append(_number_field(name, placeholder, last))
        elif name.lower() in ("choice", "option", "decision", "answer") or placeholder.upper() in ("CHOICE", "OPTION", "DECISION"):
            options = _options_in(last)
            if not options:
                for m in reversed(messages):
                    options = _options_in(m["content"])
                    if options:
                        break
            fields.append(_Field(name, "choice", options=options or ["A", "B", "C", "D"]))
        else:
            fields.append(_Field(name, "text", hint=placeholder))
    return fields


def _ask(messages: list[dict[str, Any]]) -> _Ask:
    """The answer format the conversation's last user message asks for, read from its own
    instructions (or, when it points to a format described earlier, from earlier messages)."""
    plain = plain_messages(messages)
    users = [m for m in plain if m["role"] == "user"]
    last = users[-1]["content"] if users else (plain[-1]["content"] if plain else "")
    everything = "\n".join(m["content"] for m in plain)
    money = [_number(x) for x in _MONEY.findall(everything)]
    total = _ADD_UP.findall(last)
    ask = _Ask("answer", [], total=_number(total[-1]) if total else None, money=max(money) if money else None, words=last)
    found = _last_trigger(last)
    # where a format may be described: the last user message, then earlier system and user
    # messages (never an earlier answer, which is written in the format but holds no template)
    sources = [last] + [m["content"] for m in reversed(plain) if m["role"] != "assistant" and m["content"] is not last]
    if found is None:
        for text in sources[1:]:
            found = _last_trigger(text)
            if found:
                break
    fmt = found[1] if found else "answer"
    ask.fmt = fmt
    if fmt == "json":
        for text in sources:
            hit = _last_trigger(text)
            start = hit[0] if hit and hit[1] == "json" else 0
            fields = _json_fields(text[start:], last)
            if not fields:
                continue
            if not ask.fields:
                ask.fields = fields
            if not all(f.kind == "text" and f.hint == f.name.upper() for f in fields):
                if [f.name for f in fields] == [f.name for f in ask.fields]:
                    ask.fields = fields  # a re-ask's bare placeholders: the fuller template asked earlier
                break
        if not ask.fields:
            ask.fmt = "answer"
    elif fmt == "xml":
        for text in sources:
            if "<response>" in text:
                ask.fields = _xml_fields(text[text.rfind("<response>") :], last, plain)
                if ask.fields:
                    break
        if not ask.fields:
            ask.fmt = "answer"
    if ask.fmt == "answer":
        name = re.search(r"Answer\s*:\s*<(\w+)>", last)
        tail = last[found[0] :] if found and found[1] == "answer" else last
        f = _number_field(name.group(1) if name else "answer", tail, last)
        f.whole = True
        ask.fields = [f]
    return ask


# --------------------------------------------------------------------------------------------
# The final answer and the draft

_FINAL_TEXTS = (
    "I think this is a fair way forward for both of us.",
    "This is my considered choice after weighing the options.",
    "I am settling on this after thinking it through.",
    "Let us keep things steady and fair for everyone.",
)
_DRAFT_TEXTS = (
    "A quick first guess that I have not checked yet.",
    "My first impulse, written down before any checking.",
    "An early idea that still needs a second look.",
)


#: ``--cautious``: a number asked in a wide range is drawn from its lowest twentieth instead of
#: its lowest quarter (a cautious player: a commons of five such players lasts every month).
CAUTIOUS = False


def _pick_number(f: _Field, ask: _Ask, h: int) -> float:
    if f.lo is not None and f.hi is not None:
        lo, hi = f.lo, f.hi
        span = hi - lo
        if span > 20:  # a plausible, modest amount rather than anything in a wide range
            hi = lo + max(1, span // (20 if CAUTIOUS else 4))
        value = lo + (h % 10_000) / 10_000 * (hi - lo)
    elif ask.money:
        value = ask.money * (0.45 + (h % 1000) / 1000 * 0.5)
        value = round(value / 50) * 50 if ask.money >= 1000 else value
    else:
        value = 1 + h % 20
    if f.whole or f.lo is not None:
        value = round(value)
    value = round(value, 2)
    return int(value) if float(value).is_integer() else value


def _values(ask: _Ask, h: bytes, draft: bool) -> dict[str, Any]:
    """Field values of the answer (``draft``: the draft's), each a pure function of ``h``."""
    seed = h[16:] if draft else h[:16]
    final = None if not draft else _values(ask, h, draft=False)
    numbers = [f for f in ask.fields if f.kind == "number"]
    out: dict[str, Any] = {}
    for i, f in enumerate(ask.fields):
        k = int.from_bytes(hashlib.sha256(seed + bytes([i])).digest()[:8], "big")
        if f.kind == "choice" and f.options:
            j = k % len(f.options)
            if final is not None and len(f.options) > 1 and f.options[j] == final[f.name]:
                j = (j + 1 + k % (len(f.options) - 1)) % len(f.options)
            out[f.name] = f.options[j]
        elif f.kind == "bool":
            out[f.name] = (k % 2 == 0) if final is None else not final[f.name]
        elif f.kind == "empty":
            out[f.name] = ""
        elif f.kind == "text":
            texts = _DRAFT_TEXTS if draft else _FINAL_TEXTS
            out[f.name] = texts[k % len(texts)]
        elif f.kind == "number":
            if ask.total is not None and len(numbers) == 2 and f is numbers[1]:
                first = out[numbers[0].name]
                out[f.name] = round(ask.total - first, 2) if not float(ask.total - first).is_integer() else int(ask.total - first)
                continue
            if ask.total is not None and len(numbers) == 2:
                share = 0.3 + (k % 1000) / 1000 * 0.4
                value = ask.total * share
                value = round(value) if ask.total >= 20 and float(ask.total).is_integer() else round(value, 2)
                if final is not None and value == final[f.name]:
                    value = value + 1 if value + 1 <= ask.total else value - 1
                out[f.name] = int(value) if float(value).is_integer() else value
                continue
            value = _pick_number(f, ask, k)
            if final is not None and value == final[f.name]:
                step = 1 if f.whole or isinstance(value, int) else 0.5
                up = value + step
                value = up if f.hi is None or up <= f.hi else value - step
                value = int(value) if float(value).is_integer() else value
            out[f.name] = value
    return out


def _render(ask: _Ask, values: dict[str, Any], draft: bool) -> str:
    if ask.fmt == "json":
        return json.dumps(values, ensure_ascii=False)
    if ask.fmt == "xml":
        inner = "\n".join(f"  <{k}>{v}</{k}>" for k, v in values.items())
        return f"<response>\n{inner}\n</response>"
    (value,) = values.values()
    lead = "A first guess." if draft else "I have weighed it and this is my decision."
    return f"{lead}\nAnswer: {value}"


def final_answer(messages: list[dict[str, Any]]) -> str:
    """The answer the servers give to ``messages`` (any provider's message form): valid in
    the format the last user message asks for, its values chosen by a hash of the
    conversation."""
    ask = _ask(messages)
    return _render(ask, _values(ask, _digest(messages), draft=False), draft=False)


def draft_answer(messages: list[dict[str, Any]]) -> str:
    """The draft the servers' reasoning holds for ``messages``: the same format as
    :func:`final_answer`, with a different value in every field that can differ."""
    ask = _ask(messages)
    return _render(ask, _values(ask, _digest(messages), draft=True), draft=True)


_FILLER = "weighing the options once more before settling on an answer".split()


def reasoning_text(messages: list[dict[str, Any]], tokens: int) -> str:
    """The reasoning of a reply: the draft, the sentence rejecting it, then filler words, in
    exactly ``tokens`` words (cut when ``tokens`` is smaller than the draft and its rejection)."""
    if tokens <= 0:
        return ""
    core = f"Let me think about the request. Draft:\n{draft_answer(messages)}\n{REJECTION} I will answer otherwise."
    words = core.split()
    if len(words) >= tokens:
        return " ".join(words[:tokens])
    pad = [_FILLER[i % len(_FILLER)] for i in range(tokens - len(words))]
    return core + "\n" + " ".join(pad)


def summary_text(messages: list[dict[str, Any]]) -> str:
    """A reasoning summary (Responses API): the draft and its rejection, no filler."""
    return f"Drafted an answer:\n{draft_answer(messages)}\n{REJECTION} Chose another value."


def words(text: str) -> int:
    """Tokens, as these servers count them: whitespace-separated words."""
    return len(text.split())


def _cut(text: str, n: int) -> str:
    return " ".join(text.split()[: max(n, 0)])


# --------------------------------------------------------------------------------------------
# The servers


@dataclass
class Options:
    """Server options (the CLI's, see :func:`main`)."""

    models: list[str] = field(default_factory=list)
    reasoning_tokens: int | None = None
    display: str = "summarized"  # anthropic: summarized | omitted
    redacted: bool = False  # anthropic: redacted_thinking blocks
    field: str = "reasoning_content"  # vllm: reasoning_content | reasoning
    raw_think: bool = False  # vllm without a reasoning parser
    no_opener: bool = False  # vllm --raw-think without the opening <think>
    keep_bodies: int = 200
    flex_delay: float = 0.0  # openai, gemini: seconds a flex call waits before its answer
    unavailable: int = 0  # openai, gemini: the first N flex calls find the tier without capacity
    downgrade: bool = False  # gemini: priority calls served at the standard tier (and said so)
    prompt_cache: bool = False  # openai, anthropic: report prompt-cache reads (and writes) as the API does
    unverified: bool = False  # openai responses: an organisation not verified for reasoning summaries (400 on any summary)
    context: int = 0  # openai chat, gemini: a prompt over this many tokens is refused with the context-length 400 (0: no limit)


#: OpenAI's service tiers (``service_tier``) and Gemini's.
OPENAI_TIERS = ("auto", "default", "flex", "scale", "priority")
GEMINI_TIERS = ("standard", "flex", "priority")
#: The response header in which Gemini names the tier that served a call.
GEMINI_TIER_HEADER = "x-gemini-service-tier"


class _Refused(Exception):
    """A request the provider refuses: HTTP ``status`` with the provider's JSON ``body``."""

    def __init__(self, status: int, body: Any) -> None:
        super().__init__(status)
        self.status, self.body = status, body


def _openai_error(status: int, message: str, param: str | None = None, code: str | None = None, kind: str = "invalid_request_error") -> _Refused:
    return _Refused(status, {"error": {"message": message, "type": kind, "param": param, "code": code}})


def _anthropic_error(status: int, message: str, kind: str = "invalid_request_error") -> _Refused:
    return _Refused(status, {"type": "error", "error": {"type": kind, "message": message}})


_GOOGLE_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND"}


#: Claude models that refuse ``thinking.type: enabled`` (Opus 4.7 and later take adaptive thinking).
_ANTHROPIC_ADAPTIVE_ONLY = re.compile(r"claude-opus-(?:4-(?:[7-9]|\d\d)|[5-9]|\d\d)(?!\d)")
#: Top-level fields Gemini's OpenAI-compatible chat endpoint takes (``extra_body`` carries
#: Google's own settings); any other is refused with 400.
_GEMINI_FIELDS = frozenset({"model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "n", "stream", "stream_options", "stop", "seed", "presence_penalty", "frequency_penalty", "reasoning_effort", "response_format", "tools", "tool_choice", "extra_body", "service_tier", "logprobs", "top_logprobs", "user"})


def _gemini_error(status: int, message: str, field: str | None = None) -> _Refused:
    """Google's error as its OpenAI-compatible endpoint sends it: a list of one error, with the
    violated field in ``details`` (``google.rpc.BadRequest``) when one is named."""
    error: dict[str, Any] = {"code": status, "message": message, "status": _GOOGLE_STATUS.get(status, "INVALID_ARGUMENT")}
    if field is not None:
        error["details"] = [{"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": [{"field": field, "description": message}]}]
    return _Refused(status, [{"error": error}])


#: Gemini 3 Pro (not 3.1): thinking levels low and high only; MEDIUM is refused.
_GEMINI_3_PRO = re.compile(r"^(?:models/)?gemini-3-pro")
#: Gemini's thinking levels (``thinking_config.thinking_level``).
_GEMINI_LEVELS = ("minimal", "low", "medium", "high")


def _prompt_tokens(messages: list[dict[str, Any]]) -> int:
    return sum(words(m["content"]) for m in plain_messages(messages))


def _is_openai_reasoner(model: str) -> bool:
    return bool(re.match(r"^(?:openai/)?(?:o1|o3|o4|gpt-5)", model))


def _float_text(value: Any) -> str:
    try:
        return repr(float(value))
    except (TypeError, ValueError):
        return str(value)


_OPENAI_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")
#: OpenAI: the longest ``prompt_cache_key`` accepted.
PROMPT_CACHE_KEY_MAX = 64
#: Anthropic: most ``cache_control`` blocks in one request, and the TTLs a breakpoint may name.
CACHE_CONTROL_MAX = 4
CACHE_TTLS = ("5m", "1h")


def _check_prompt_cache_key(body: dict) -> None:
    """OpenAI's checks of ``prompt_cache_key`` (optional): a string of at most 64 characters."""
    if "prompt_cache_key" not in body or body["prompt_cache_key"] is None:
        return
    key = body["prompt_cache_key"]
    if not isinstance(key, str):
        raise _openai_error(400, f"Invalid type for 'prompt_cache_key': expected a string, but got {type(key).__name__} instead.", "prompt_cache_key", "invalid_type")
    if len(key) > PROMPT_CACHE_KEY_MAX:
        raise _openai_error(400, f"Invalid 'prompt_cache_key': string too long. Expected a string with maximum length {PROMPT_CACHE_KEY_MAX}, but got a string with length {len(key)} instead.", "prompt_cache_key", "string_above_max_length")


def _check_cache_control(body: dict) -> None:
    """Anthropic's checks of ``cache_control`` breakpoints: ``{"type": "ephemeral"}`` with an
    optional ``ttl`` of 5m or 1h, on at most 4 blocks (system, messages)."""
    system = body.get("system")
    blocks = list(system) if isinstance(system, list) else []
    for m in body.get("messages") or []:
        if isinstance(m, dict) and isinstance(m.get("content"), list):
            blocks += m["content"]
    marked = [b["cache_control"] for b in blocks if isinstance(b, dict) and b.get("cache_control") is not None]
    for c in marked:
        if not isinstance(c, dict) or c.get("type") != "ephemeral":
            raise _anthropic_error(400, "cache_control.type: Input should be 'ephemeral'")
        if "ttl" in c and c["ttl"] not in CACHE_TTLS:
            raise _anthropic_error(400, "cache_control.ephemeral.ttl: Input should be '5m' or '1h'")
    if len(marked) > CACHE_CONTROL_MAX:
        raise _anthropic_error(400, f"A maximum of {CACHE_CONTROL_MAX} blocks with cache_control may be provided. Found {len(marked)}.")


@dataclass
class _Turn:
    """One generated reply before a provider shapes it: reasoning and answer, cut to a budget."""

    reasoning: str
    answer: str
    reasoning_tokens: int
    answer_tokens: int
    cut: bool

    @property
    def output_tokens(self) -> int:
        return self.reasoning_tokens + self.answer_tokens


def _generate(messages: list[dict[str, Any]], think_tokens: int, limit: int | None, partial: bool = True) -> _Turn:
    """Reasoning of ``think_tokens`` words, then the final answer, within ``limit`` output
    tokens: past it, the reasoning is cut (no answer) or the answer is cut (``partial``) or
    dropped (not ``partial``)."""
    reasoning = reasoning_text(messages, think_tokens)
    answer = final_answer(messages)
    r, a = words(reasoning), words(answer)
    if limit is None or r + a <= limit:
        return _Turn(reasoning, answer, r, a, False)
    if r >= limit:
        return _Turn(_cut(reasoning, limit), "", limit, 0, True)
    if partial:
        return _Turn(reasoning, _cut(answer, limit - r), r, limit - r, True)
    return _Turn(reasoning, "", r, limit - r, True)


# --------------------------------------------------------------------------------------------
# Prompt caches (``--prompt-cache``): what each provider's usage says was read from its cache.
# Written from the providers' own documentation (OpenAI's prompt-caching guide, Anthropic's
# prompt-caching page), apart from the project's simulator (agorabench.models.prompt_cache), so
# that comparing the two is not the simulator checked against itself.

#: OpenAI: prompts shorter than this are never cached; hits come in steps of this many tokens.
OPENAI_CACHE_MIN = 1024
OPENAI_CACHE_STEP = 128
#: Anthropic: the shortest prefix a breakpoint caches, by model (its prompt-caching page), first
#: match wins; any other model: :data:`ANTHROPIC_CACHE_MIN_DEFAULT`.
ANTHROPIC_CACHE_MIN = ((r"opus-4-5|haiku-4-5", 4096), (r"haiku-3", 2048), (r"3-5-haiku|3-haiku", 2048))
ANTHROPIC_CACHE_MIN_DEFAULT = 1024
#: Anthropic: block boundaries before a breakpoint at which an earlier entry is looked for.
ANTHROPIC_CACHE_LOOKBACK = 20
#: Anthropic: a cache entry's life without use, by ``cache_control.ttl``.
ANTHROPIC_CACHE_LIFE = {"5m": 300.0, "1h": 3600.0}


def anthropic_cache_min(model: str) -> int:
    """The shortest prefix (tokens) an Anthropic model caches."""
    name = model.lower().replace(".", "-")
    for pattern, tokens in ANTHROPIC_CACHE_MIN:
        if re.search(pattern, name):
            return tokens
    return ANTHROPIC_CACHE_MIN_DEFAULT


class PromptCaches:
    """The prompt caches of one server (its organisation's), by model.

    OpenAI (chat completions, responses): a prompt of at least 1,024 tokens reads the longest
    prefix it shares with an earlier cached prompt of the same model and ``prompt_cache_key``
    (without a key: with any earlier cached prompt of the model), in whole steps of 128 tokens,
    nothing below 1,024; every such prompt is then cached. The prompt is the messages' words in
    order, each tagged with its message's place and role (a prompt split into messages otherwise
    shares nothing past the split).

    Anthropic (messages): each ``cache_control`` block ends a prefix (system blocks, then the
    messages' blocks). A request reads the longest prefix an earlier request wrote exactly,
    looked for at each breakpoint and the 20 block boundaries before it; it writes the prefixes of
    its breakpoints that have at least the model's minimum of tokens, and what lies between the
    read prefix and its last such breakpoint is reported as written. Entries live 5 minutes (1
    hour with ``ttl: 1h``) from their last use."""

    def __init__(self, clock: Any = None) -> None:
        import time

        self.clock = clock or time.monotonic
        self.openai_keyed: dict[tuple[str, str | None], set[bytes]] = {}
        self.openai_any: dict[str, set[bytes]] = {}
        self.anthropic: dict[bytes, tuple[float, float]] = {}  # prefix -> (when it expires, its life)

    def openai(self, model: str, messages: list[dict[str, Any]], key: str | None) -> int:
        """Cached tokens of an accepted OpenAI request (``usage...cached_tokens``)."""
        plain = plain_messages(messages)
        h = hashlib.blake2b(model.encode(), digest_size=16)
        marks: list[bytes] = []  # the prefix of every whole step
        n = 0
        for i, m in enumerate(plain):
            for word in m["content"].split():
                h.update(f"{i}\x1f{m['role']}\x1f{word}\x1e".encode("utf-8", "surrogatepass"))
                n += 1
                if n % OPENAI_CACHE_STEP == 0:
                    marks.append(h.copy().digest())
        if n < OPENAI_CACHE_MIN:
            return 0
        pool = self.openai_keyed.get((model, key), set()) if key is not None else self.openai_any.get(model, set())
        hit = 0
        for k, mark in enumerate(marks, start=1):
            if mark in pool:
                hit = k * OPENAI_CACHE_STEP
        self.openai_keyed.setdefault((model, key), set()).update(marks)
        self.openai_any.setdefault(model, set()).update(marks)
        return hit if hit >= OPENAI_CACHE_MIN else 0

    def anthropic_usage(self, body: dict) -> tuple[int, int, dict[str, int]]:
        """(read, written, written by TTL) of an accepted Messages request."""
        model = str(body.get("model", ""))
        system = body.get("system")
        blocks: list[tuple[str, dict]] = []
        if isinstance(system, str) and system:
            blocks.append(("system", {"type": "text", "text": system}))
        elif isinstance(system, list):
            blocks += [("system", b) for b in system if isinstance(b, dict)]
        for m in body.get("messages") or []:
            content = m.get("content")
            if isinstance(content, str):
                content = [{"type": "text", "text": content}]
            blocks += [(str(m.get("role")), b) for b in content or [] if isinstance(b, dict)]
        h = hashlib.blake2b(model.encode(), digest_size=16)
        keys, tokens = [h.digest()], [0]
        for role, b in blocks:
            h.update(json.dumps([role, b.get("type"), b.get("text", "")], ensure_ascii=False).encode("utf-8", "surrogatepass"))
            keys.append(h.copy().digest())
            tokens.append(tokens[-1] + (words(b["text"]) if b.get("type", "text") == "text" and isinstance(b.get("text"), str) else 0))
        now = self.clock()
        for k in [k for k, (until, _) in self.anthropic.items() if until <= now]:
            del self.anthropic[k]
        breaks = [(j, (b.get("cache_control") or {}).get("ttl", "5m")) for j, (_, b) in enumerate(blocks, start=1) if b.get("cache_control")]
        read_at = 0
        for j, _ in breaks:
            for k in range(j, max(0, j - ANTHROPIC_CACHE_LOOKBACK) - 1, -1):
                if k and keys[k] in self.anthropic and tokens[k] > tokens[read_at]:
                    read_at = k
        least = anthropic_cache_min(model)
        kept = [(j, ttl) for j, ttl in breaks if tokens[j] >= least]
        by_ttl = {"5m": 0, "1h": 0}
        written = 0
        if kept and tokens[kept[-1][0]] > tokens[read_at]:
            written = tokens[kept[-1][0]] - tokens[read_at]
            # each span between breakpoints is written at its breakpoint's TTL
            start = tokens[read_at]
            for j, ttl in kept:
                if tokens[j] > start:
                    by_ttl[ttl if ttl in by_ttl else "5m"] += tokens[j] - start
                    start = tokens[j]
        if read_at:  # a read refreshes its entry
            life = self.anthropic[keys[read_at]][1]
            self.anthropic[keys[read_at]] = (now + life, life)
        for j, ttl in kept:
            life = max(ANTHROPIC_CACHE_LIFE.get(ttl, 300.0), self.anthropic.get(keys[j], (0.0, 0.0))[1])
            self.anthropic[keys[j]] = (now + life, life)
        return tokens[read_at], written, {"ephemeral_5m_input_tokens": by_ttl["5m"], "ephemeral_1h_input_tokens": by_ttl["1h"]}


#: Where :func:`make_app` leaves its ``respond(kind, body, n)``: one request body answered as the
#: live route answers it, nothing counted (the batch servers answer their items with it).
RESPOND = web.AppKey("respond", object)


def make_app(provider: str, **opts: Any) -> web.Application:
    """The aiohttp application of one provider; ``opts`` are :class:`Options` fields
    (``models`` may be a comma-separated string)."""
    if provider not in PROVIDERS:
        raise ValueError(f"unknown provider {provider!r}; expected one of {', '.join(PROVIDERS)}")
    models = opts.pop("models", None)
    if isinstance(models, str):
        models = [m for m in models.split(",") if m]
    o = Options(models=list(models or DEFAULT_MODELS[provider]), **opts)
    caches = PromptCaches() if o.prompt_cache else None
    state: dict[str, Any] = {"requests": 0, "refused": 0, "listings": 0, "statuses": {}, "tiers": {}, "unavailable_left": o.unavailable, "bodies": deque(maxlen=o.keep_bodies), "log": deque(maxlen=o.keep_bodies)}

    def think_tokens(effort: str | None) -> int:
        if o.reasoning_tokens is not None:
            return o.reasoning_tokens
        return EFFORT_TOKENS[effort or DEFAULT_EFFORT]

    # ---- shared pieces of the OpenAI-style chat answers

    def chat_reply(body: dict, message: dict, finish: str, usage: dict, n: int) -> dict:
        return {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", ""),
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
            "usage": usage,
        }

    def messages_of(body: dict, refuse) -> list[dict[str, Any]]:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise refuse(400, "'messages' must be a non-empty array of messages.", "messages")
        return messages

    def limit_of(body: dict, *names: str) -> int | None:
        for name in names:
            if body.get(name) is not None:
                return int(body[name])
        return None

    # ---- openai

    async def openai_chat(body: dict, n: int) -> dict:
        model = str(body.get("model", ""))
        messages = messages_of(body, lambda s, m, p: _openai_error(s, m, p))
        _check_prompt_cache_key(body)
        if o.context and _prompt_tokens(messages) > o.context:
            raise _openai_error(
                400, f"This model's maximum context length is {o.context} tokens. However, your messages resulted in {_prompt_tokens(messages)} tokens. Please reduce the length of the messages.",
                "messages", "context_length_exceeded",
            )
        if not _is_openai_reasoner(model):
            if "reasoning_effort" in body:
                raise _openai_error(400, "Unsupported parameter: 'reasoning_effort' is not supported with this model.", "reasoning_effort", "unsupported_parameter")
            limit = limit_of(body, "max_completion_tokens", "max_tokens")
            turn = _generate(messages, 0, limit)
            usage = {"prompt_tokens": _prompt_tokens(messages), "completion_tokens": turn.output_tokens, "total_tokens": _prompt_tokens(messages) + turn.output_tokens,
                     "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0}, "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}}
            if caches is not None:
                usage["prompt_tokens_details"]["cached_tokens"] = caches.openai(model, messages, body.get("prompt_cache_key"))
            message = {"role": "assistant", "content": turn.answer, "refusal": None, "annotations": []}
            return chat_reply(body, message, "length" if turn.cut else "stop", usage, n)
        if model.endswith("-pro") or "-pro-" in model:
            raise _openai_error(404, "This model is only supported in v1/responses and not in v1/chat/completions.", "model", None)
        if "max_tokens" in body:
            raise _openai_error(400, "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.", "max_tokens", "unsupported_parameter")
        check_openai_sampling(body)
        effort = body.get("reasoning_effort")
        check_openai_effort(effort, "reasoning_effort")
        limit = limit_of(body, "max_completion_tokens")
        turn = _generate(messages, think_tokens(effort), limit, partial=False)
        prompt = _prompt_tokens(messages)
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": turn.output_tokens,
            "total_tokens": prompt + turn.output_tokens,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": turn.reasoning_tokens, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
        }
        if caches is not None:
            usage["prompt_tokens_details"]["cached_tokens"] = caches.openai(model, messages, body.get("prompt_cache_key"))
        message = {"role": "assistant", "content": turn.answer, "refusal": None, "annotations": []}
        return chat_reply(body, message, "length" if turn.cut else "stop", usage, n)

    def check_openai_sampling(body: dict) -> None:
        if "temperature" in body and body["temperature"] is not None and float(body["temperature"]) != 1.0:
            raise _openai_error(400, f"Unsupported value: 'temperature' does not support {_float_text(body['temperature'])} with this model. Only the default (1) value is supported.", "temperature", "unsupported_value")
        if "top_p" in body and body["top_p"] is not None and float(body["top_p"]) != 1.0:
            raise _openai_error(400, f"Unsupported value: 'top_p' does not support {_float_text(body['top_p'])} with this model. Only the default (1) value is supported.", "top_p", "unsupported_value")

    def check_openai_effort(effort: Any, param: str) -> None:
        if effort is not None and effort not in _OPENAI_EFFORTS:
            allowed = ", ".join(f"'{e}'" for e in _OPENAI_EFFORTS[:-1]) + f", and '{_OPENAI_EFFORTS[-1]}'"
            raise _openai_error(400, f"Unsupported value: '{param}' does not support '{effort}' with this model. Supported values are: {allowed}.", param, "unsupported_value")

    async def openai_responses(body: dict, n: int) -> dict:
        model = str(body.get("model", ""))
        _check_prompt_cache_key(body)
        raw = body.get("input")
        if isinstance(raw, str):
            items: list[dict[str, Any]] = [{"role": "user", "content": raw}]
        elif isinstance(raw, list) and raw:
            items = [i for i in raw if isinstance(i, dict)]
        else:
            raise _openai_error(400, "Missing required parameter: 'input'.", "input", "missing_required_parameter")
        instructions = body.get("instructions")
        messages = ([{"role": "system", "content": instructions}] if instructions else []) + items
        reasoning = body.get("reasoning") or {}
        if "reasoning_effort" in body:
            raise _openai_error(400, "Unsupported parameter: 'reasoning_effort'. In the Responses API, this parameter has moved to 'reasoning.effort'. Try again with the new parameter.", "reasoning_effort", "unsupported_parameter")
        thinks = _is_openai_reasoner(model)
        if thinks:
            if "max_tokens" in body:
                raise _openai_error(400, "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_output_tokens' instead.", "max_tokens", "unsupported_parameter")
            check_openai_sampling(body)
            check_openai_effort(reasoning.get("effort"), "reasoning.effort")
            summary = reasoning.get("summary")
            if summary is not None and summary not in ("auto", "concise", "detailed"):
                raise _openai_error(400, f"Unsupported value: 'reasoning.summary' does not support '{summary}' with this model. Supported values are: 'auto', 'concise', and 'detailed'.", "reasoning.summary", "unsupported_value")
            if summary is not None and o.unverified:
                raise _openai_error(
                    400, "Your organization must be verified to generate reasoning summaries. Please go to: https://platform.openai.com/settings/organization/general and click on Verify Organization. "
                    "If you just verified, it can take up to 15 minutes for access to propagate.", "reasoning.summary", "unsupported_value",
                )
        elif reasoning:
            raise _openai_error(400, "Unsupported parameter: 'reasoning.effort' is not supported with this model.", "reasoning.effort", "unsupported_parameter")
        limit = limit_of(body, "max_output_tokens")
        turn = _generate(messages, think_tokens(reasoning.get("effort")) if thinks else 0, limit, partial=False)
        output: list[dict[str, Any]] = []
        if thinks and turn.reasoning_tokens:
            summary_parts = [{"type": "summary_text", "text": summary_text(messages)}] if reasoning.get("summary") else []
            output.append({"id": f"rs_{n:08x}", "type": "reasoning", "summary": summary_parts})
        if not turn.cut:
            output.append({"id": f"msg_{n:08x}", "type": "message", "status": "completed", "role": "assistant",
                           "content": [{"type": "output_text", "text": turn.answer, "annotations": []}]})
        prompt = _prompt_tokens(messages)
        cached = caches.openai(model, messages, body.get("prompt_cache_key")) if caches is not None else 0
        return {
            "id": f"resp_{n:08x}",
            "object": "response",
            "created_at": 0,
            "status": "incomplete" if turn.cut else "completed",
            "error": None,
            "incomplete_details": {"reason": "max_output_tokens"} if turn.cut else None,
            "instructions": instructions,
            "max_output_tokens": limit,
            "model": model,
            "output": output,
            "reasoning": {"effort": reasoning.get("effort", DEFAULT_EFFORT) if thinks else None, "summary": reasoning.get("summary")},
            "usage": {
                "input_tokens": prompt,
                "input_tokens_details": {"cached_tokens": cached},
                "output_tokens": turn.output_tokens,
                "output_tokens_details": {"reasoning_tokens": turn.reasoning_tokens},
                "total_tokens": prompt + turn.output_tokens,
            },
        }

    # ---- anthropic

    async def anthropic_messages(body: dict, n: int, headers: Any) -> dict:
        model = str(body.get("model", ""))
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise _anthropic_error(400, "messages: Field required")
        if not isinstance(body.get("max_tokens"), int):
            raise _anthropic_error(400, "max_tokens: Field required")
        system = body.get("system")
        blocks_to_check = [("system", system)] + [(f"messages.{i}", m.get("content")) for i, m in enumerate(messages)]
        for where, content in blocks_to_check:
            if isinstance(content, list):
                for b in content:
                    if isinstance(b, dict) and b.get("type") == "text" and not b.get("text"):
                        raise _anthropic_error(400, f"{where.split('.')[0]}: text content blocks must be non-empty")
        _check_cache_control(body)
        for i, m in enumerate(messages):
            content = m.get("content")
            if (content == "" or content == []) and not (i == len(messages) - 1 and m.get("role") == "assistant"):
                raise _anthropic_error(400, f"messages.{i}: all messages must have non-empty content except for the optional final assistant message")
        thinking = body.get("thinking")
        opus5 = model.startswith("claude-opus-5")
        kind = (thinking or {}).get("type") if isinstance(thinking, dict) else None
        if thinking is not None and kind not in ("enabled", "adaptive", "disabled"):
            raise _anthropic_error(400, f"thinking.type: Input tag '{kind}' found using 'type' does not match any of the expected tags: 'adaptive', 'disabled', 'enabled'")
        budget = None
        if kind == "enabled" and _ANTHROPIC_ADAPTIVE_ONLY.search(model):
            raise _anthropic_error(400, f"thinking.type.enabled is not supported for model {model}. Use thinking.type.adaptive and output_config.effort to control thinking behavior.")
        if kind == "enabled":
            budget = thinking.get("budget_tokens")
            if not isinstance(budget, int):
                raise _anthropic_error(400, "thinking.enabled.budget_tokens: Field required")
            if budget < 1024:
                raise _anthropic_error(400, "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
            if body["max_tokens"] <= budget:
                raise _anthropic_error(400, "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size")
        effort = (body.get("output_config") or {}).get("effort")
        if effort is not None and effort not in ("low", "medium", "high", "max"):
            raise _anthropic_error(400, "output_config.effort: Input should be 'low', 'medium', 'high' or 'max'")
        thinks = kind in ("enabled", "adaptive") or (opus5 and kind is None)
        if opus5 and "temperature" in body:
            raise _anthropic_error(400, "`temperature` is deprecated for this model.")
        if thinks and body.get("temperature") is not None and float(body["temperature"]) != 1.0:
            raise _anthropic_error(400, "`temperature` may only be set to 1 when thinking is enabled. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#important-considerations-when-using-extended-thinking")
        if thinks and body.get("top_k") is not None:
            raise _anthropic_error(400, "`top_k` must be unset when thinking is enabled. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#important-considerations-when-using-extended-thinking")
        chat = ([{"role": "system", "content": system}] if system else []) + messages
        length = 0
        if thinks:
            length = think_tokens(effort)
            if budget is not None and o.reasoning_tokens is None:
                length = min(length, budget)
        turn = _generate(chat, length, body["max_tokens"], partial=not thinks)  # cut in the thinking: no text block
        content: list[dict[str, Any]] = []
        if thinks and turn.reasoning_tokens:
            sig = hashlib.sha256(turn.reasoning.encode()).hexdigest()
            display = (thinking or {}).get("display") or o.display
            if o.redacted:
                content.append({"type": "redacted_thinking", "data": "opaque" + hashlib.sha256(sig.encode()).hexdigest() * 4})
            else:
                content.append({"type": "thinking", "thinking": "" if display == "omitted" else turn.reasoning, "signature": "sig" + sig})
        if turn.answer:
            content.append({"type": "text", "text": turn.answer})
        output = body["max_tokens"] if turn.cut else turn.output_tokens
        usage: dict[str, Any] = {"input_tokens": _prompt_tokens(chat), "output_tokens": output, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        if caches is not None:  # the prompt split as the Messages API reports it, with the tier that served it
            read, written, by_ttl = caches.anthropic_usage(body)
            usage.update(input_tokens=usage["input_tokens"] - read - written, cache_creation_input_tokens=written, cache_read_input_tokens=read, cache_creation=by_ttl, service_tier="standard")
        return {
            "id": f"msg_{n:08x}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": "max_tokens" if turn.cut else "end_turn",
            "stop_sequence": None,
            "usage": usage,
        }

    # ---- deepseek, vllm, ollama, gemini (chat completions with reasoning fields)

    async def deepseek_chat(body: dict, n: int) -> dict:
        messages = messages_of(body, lambda s, m, p: _openai_error(s, m, p, "invalid_request_error"))
        for m in messages:
            if isinstance(m, dict) and m.get("role") == "assistant" and "reasoning_content" in m:
                raise _openai_error(400, "The reasoning_content is an intermediate result for display purposes only and will not be included in the context for inference. Please remove the reasoning_content from your API request.", None, "invalid_request_error")
        model = str(body.get("model", ""))
        switch = (body.get("thinking") or {}).get("type") if isinstance(body.get("thinking"), dict) else None
        thinks = model == "deepseek-reasoner" or switch == "enabled"
        if model != "deepseek-reasoner" and switch == "disabled":
            thinks = False
        turn = _generate(messages, think_tokens(None) if thinks else 0, limit_of(body, "max_tokens"))
        message: dict[str, Any] = {"role": "assistant", "content": turn.answer}
        if thinks:
            message["reasoning_content"] = turn.reasoning
        prompt = _prompt_tokens(messages)
        usage = {"prompt_tokens": prompt, "completion_tokens": turn.output_tokens, "total_tokens": prompt + turn.output_tokens,
                 "prompt_tokens_details": {"cached_tokens": 0}, "prompt_cache_hit_tokens": 0, "prompt_cache_miss_tokens": prompt}
        if thinks:
            usage["completion_tokens_details"] = {"reasoning_tokens": turn.reasoning_tokens}
        return chat_reply(body, message, "length" if turn.cut else "stop", usage, n)

    async def vllm_chat(body: dict, n: int) -> dict:
        messages = messages_of(body, lambda s, m, p: _Refused(s, {"object": "error", "message": m, "type": "BadRequestError", "param": p, "code": s}))
        kwargs = body.get("chat_template_kwargs") or {}
        thinks = kwargs.get("enable_thinking", True) is not False and kwargs.get("thinking", True) is not False
        effort = body.get("reasoning_effort") if body.get("reasoning_effort") in EFFORT_TOKENS else None
        turn = _generate(messages, think_tokens(effort) if thinks else 0, limit_of(body, "max_tokens", "max_completion_tokens"))
        message: dict[str, Any] = {"role": "assistant", "content": turn.answer, "tool_calls": []}
        if o.raw_think:
            if thinks:
                opener = "" if o.no_opener else "<think>\n"
                if turn.answer_tokens == 0 and turn.cut:
                    message["content"] = opener + turn.reasoning
                else:
                    message["content"] = f"{opener}{turn.reasoning}\n</think>\n\n{turn.answer}"
        else:
            message[o.field] = turn.reasoning if thinks else None
        prompt = _prompt_tokens(messages)
        usage = {"prompt_tokens": prompt, "completion_tokens": turn.output_tokens, "total_tokens": prompt + turn.output_tokens, "prompt_tokens_details": None}
        return chat_reply(body, message, "length" if turn.cut else "stop", usage, n)

    async def ollama_chat(body: dict, n: int) -> dict:
        messages = messages_of(body, lambda s, m, p: _openai_error(s, m, p))
        effort = body.get("reasoning_effort")
        if effort is None and isinstance(body.get("reasoning"), dict):
            effort = body["reasoning"].get("effort")
        if effort is not None and effort not in ("high", "medium", "low", "none"):
            raise _openai_error(400, f"invalid reasoning value: '{effort}' (must be \"high\", \"medium\", \"low\", or \"none\")", None, None)
        thinks = effort != "none"
        turn = _generate(messages, think_tokens(effort) if thinks else 0, limit_of(body, "max_tokens", "max_completion_tokens"))
        message: dict[str, Any] = {"role": "assistant", "content": turn.answer}
        if thinks:
            message["reasoning"] = turn.reasoning
        prompt = _prompt_tokens(messages)
        usage = {"prompt_tokens": prompt, "completion_tokens": turn.output_tokens, "total_tokens": prompt + turn.output_tokens}
        reply = chat_reply(body, message, "length" if turn.cut else "stop", usage, n)
        reply["system_fingerprint"] = "fp_ollama"
        return reply

    async def gemini_chat(body: dict, n: int) -> dict:
        messages = messages_of(body, lambda s, m, p: _gemini_error(s, m))
        effort = body.get("reasoning_effort")
        allowed = ("high", "low", "medium", "minimal", "none")
        if effort is not None and effort not in allowed:
            raise _gemini_error(400, f"Invalid reasoning_effort: {effort}. Valid values are: {', '.join(allowed)}")
        unknown = sorted(k for k in body if k not in _GEMINI_FIELDS)
        if unknown:  # Google answers a field it does not know with 400, not by ignoring it
            raise _gemini_error(400, f'Invalid JSON payload received. Unknown name "{unknown[0]}": Cannot find field.')
        google = (body.get("extra_body") or {}).get("google") or {}
        config = google.get("thinking_config") or {}
        level = config.get("thinking_level")
        if level is not None and str(level).lower() not in _GEMINI_LEVELS:  # an enum value Google does not know
            where = "generation_config.thinking_config.thinking_level"
            raise _gemini_error(400, f'Invalid value at \'{where}\' (type.googleapis.com/google.ai.generativelanguage.v1beta.ThinkingConfig.ThinkingLevel), "{level}"', where)
        asked = str(level).lower() if level is not None else effort
        if _GEMINI_3_PRO.match(str(body.get("model", ""))) and asked == "medium":
            raise _gemini_error(400, "Thinking level MEDIUM is not supported for this model.")
        if o.context and _prompt_tokens(messages) > o.context:
            raise _gemini_error(400, f"The input token count ({_prompt_tokens(messages)}) exceeds the maximum number of tokens allowed ({o.context}).")
        budget = config.get("thinking_budget")
        if budget is not None and effort is not None:
            raise _gemini_error(400, "reasoning_effort and thinking_budget cannot both be set; use one of them.")
        if budget is not None and budget >= 0:
            length = budget if o.reasoning_tokens is None else o.reasoning_tokens
        else:
            length = think_tokens(effort)
        if effort == "none":
            length = 0
        turn = _generate(messages, length, limit_of(body, "max_tokens", "max_completion_tokens"))
        content = turn.answer
        if config.get("include_thoughts") and turn.reasoning_tokens:
            content = f"<thought>{turn.reasoning}</thought>{turn.answer}"
        prompt = _prompt_tokens(messages)
        usage = {"prompt_tokens": prompt, "completion_tokens": turn.answer_tokens, "total_tokens": prompt + turn.answer_tokens + turn.reasoning_tokens}
        return chat_reply(body, {"role": "assistant", "content": content}, "length" if turn.cut else "stop", usage, n)

    chat_handlers = {"openai": openai_chat, "deepseek": deepseek_chat, "vllm": vllm_chat, "ollama": ollama_chat, "gemini": gemini_chat}

    def bad_json() -> _Refused:
        if provider == "anthropic":
            return _anthropic_error(400, "There was an error parsing the body of your request as JSON.")
        if provider == "gemini":
            return _gemini_error(400, "Invalid JSON payload received.")
        return _openai_error(400, "We could not parse the JSON body of your request. Expected a JSON object.", None, None)

    async def respond(kind: str, body: Any, n: int = 0) -> tuple[int, Any]:
        """(status, JSON answer) of one request body as the ``kind`` route (chat, responses,
        messages) answers it, headers aside and nothing counted: the batch servers of
        ``batch_servers.py`` answer their items with it, so a batch answer is the live one."""
        try:
            if not isinstance(body, dict):
                raise bad_json()
            if kind == "messages":
                return 200, await anthropic_messages(body, n, {})
            if kind == "responses":
                return 200, await openai_responses(body, n)
            return 200, await chat_handlers[provider](body, n)
        except _Refused as refused:
            return refused.status, refused.body
        except (TypeError, ValueError, AttributeError) as exc:  # a malformed field
            out = bad_json().body
            if isinstance(out, dict) and "error" in out:
                out["error"]["message"] = f"Invalid request: {exc}"
            return 400, out

    async def service_tier(body: Any) -> str | None:
        """The tier a live call is served at (OpenAI, Gemini; None elsewhere): the one asked for
        (checked; ``auto`` and none are OpenAI's ``default``, Gemini's ``standard``), a flex call
        waits ``flex_delay`` seconds first and the first ``unavailable`` flex calls are refused
        with a 429 (OpenAI: ``Resource Unavailable``, code ``resource_unavailable``; Gemini:
        ``RESOURCE_EXHAUSTED``); with ``downgrade`` a Gemini priority call is served at standard."""
        if provider not in ("openai", "gemini") or not isinstance(body, dict):
            return None
        tier = body.get("service_tier")
        allowed = OPENAI_TIERS if provider == "openai" else GEMINI_TIERS
        if tier is not None and tier not in allowed:
            if provider == "openai":
                listed = ", ".join(f"'{t}'" for t in allowed[:-1]) + f", and '{allowed[-1]}'"
                raise _openai_error(400, f"Invalid value: '{tier}'. Supported values are: {listed}.", "service_tier", "invalid_value")
            raise _gemini_error(400, f"Invalid value at 'service_tier' ({tier}): must be one of {', '.join(allowed)}.")
        if tier == "flex":
            if state["unavailable_left"] > 0:
                state["unavailable_left"] -= 1
                if provider == "openai":
                    raise _openai_error(429, "Resource Unavailable: flex processing has no capacity for this request right now. Try again later, or at the default tier.", None, "resource_unavailable", "service_unavailable_error")
                raise _Refused(429, [{"error": {"code": 429, "message": "Resource exhausted. Please try again later.", "status": "RESOURCE_EXHAUSTED"}}])
            if o.flex_delay > 0:
                await asyncio.sleep(o.flex_delay)
            return "flex"
        if tier == "priority" and not (provider == "gemini" and o.downgrade):
            return "priority"
        return "default" if provider == "openai" else "standard"

    async def answer(request: web.Request, kind: str) -> web.Response:
        state["requests"] += 1
        n = state["requests"]
        raw = await request.read()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        status, out = 0, None
        headers: dict[str, str] = {}
        tier: str | None = None
        if kind in ("chat", "responses"):
            try:
                tier = await service_tier(body)
            except _Refused as refused:
                status, out = refused.status, refused.body
            else:
                if tier is not None:  # served at it: said in the answer (OpenAI) or a header (Gemini)
                    headers = {GEMINI_TIER_HEADER: tier} if provider == "gemini" else {}
                    state["tiers"][tier] = state["tiers"].get(tier, 0) + 1
        if isinstance(body, dict) and kind == "messages":
            if not (request.headers.get("x-api-key") or request.headers.get("authorization", "").startswith("Bearer ")):
                status, out = 401, _anthropic_error(401, "x-api-key header is required", "authentication_error").body
            elif not request.headers.get("anthropic-version"):
                status, out = 400, _anthropic_error(400, "anthropic-version: header is required").body
        if not status:
            status, out = await respond(kind, body, n)
            if status == 200 and tier is not None and provider == "openai" and isinstance(out, dict):
                out["service_tier"] = tier
        state["statuses"][str(status)] = state["statuses"].get(str(status), 0) + 1
        if 400 <= status < 500:
            state["refused"] += 1
        state["bodies"].append(body if body is not None else raw.decode("utf-8", "replace"))
        state["log"].append({"path": request.path, "status": status})
        return web.json_response(out, status=status, headers=headers if status == 200 else None)

    async def chat(request: web.Request) -> web.Response:
        return await answer(request, "chat")

    async def responses(request: web.Request) -> web.Response:
        return await answer(request, "responses")

    async def messages_api(request: web.Request) -> web.Response:
        return await answer(request, "messages")

    async def list_models(request: web.Request) -> web.Response:
        state["listings"] += 1
        if provider == "anthropic":
            data = [{"type": "model", "id": m, "display_name": m, "created_at": "2025-01-01T00:00:00Z"} for m in o.models]
            return web.json_response({"data": data, "has_more": False, "first_id": o.models[0] if o.models else None, "last_id": o.models[-1] if o.models else None})
        owner = {"openai": "openai", "deepseek": "deepseek", "vllm": "vllm", "ollama": "library", "gemini": "google"}[provider]
        ids = [f"models/{m}" if provider == "gemini" and not m.startswith("models/") else m for m in o.models]
        return web.json_response({"object": "list", "data": [{"id": m, "object": "model", "created": 0, "owned_by": owner} for m in ids]})

    async def stats(request: web.Request) -> web.Response:
        out = {"provider": provider, "requests": state["requests"], "refused": state["refused"], "listings": state["listings"], "statuses": state["statuses"], "tiers": state["tiers"]}
        if request.query.get("bodies"):
            out["bodies"] = list(state["bodies"])
            out["log"] = list(state["log"])
        return web.json_response(out)

    app = web.Application(client_max_size=64 * 2**20)
    app[RESPOND] = respond  # for the batch servers (batch_servers.py)
    app.router.add_get("/v1/models", list_models)
    app.router.add_get("/stats", stats)
    if provider == "anthropic":
        app.router.add_post("/v1/messages", messages_api)
    else:
        app.router.add_post("/v1/chat/completions", chat)
    if provider == "openai":
        app.router.add_post("/v1/responses", responses)
    if provider == "gemini":
        app.router.add_post("/v1beta/openai/chat/completions", chat)
        app.router.add_get("/v1beta/openai/models", list_models)
    return app


# --------------------------------------------------------------------------------------------
# Running one


def _cli_args(opts: dict[str, Any]) -> list[str]:
    out = []
    for key, value in opts.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            out.append(flag)
        elif value is False or value is None:
            continue
        elif isinstance(value, (list, tuple)):
            out += [flag, ",".join(map(str, value))]
        else:
            out += [flag, str(value)]
    return out


@contextlib.contextmanager
def provider_server(provider: str, **opts: Any) -> Iterator[str]:
    """Start this file as a server of ``provider`` on a free loopback port (``opts``: the CLI's
    options by their Python names, e.g. ``reasoning_tokens=5, raw_think=True``); yields its
    base URL ``http://127.0.0.1:PORT/v1`` and stops it on exit. ``stats_url(base_url)`` names
    its statistics."""
    with serving(Path(__file__), "--provider", provider, *_cli_args(opts)) as url:
        yield url


def stats_url(base_url: str, bodies: bool = False) -> str:
    """The ``/stats`` address of the server at ``base_url`` (``bodies``: with request bodies)."""
    root = base_url.rstrip("/").removesuffix("/v1")
    return root + "/stats" + ("?bodies=1" if bodies else "")


def server_stats(base_url: str, bodies: bool = False) -> dict[str, Any]:
    """The server's statistics: ``requests``, ``refused`` (4xx), ``listings``, ``statuses``;
    with ``bodies`` also the last request bodies (``bodies``) and their paths and statuses
    (``log``)."""
    with urllib.request.urlopen(stats_url(base_url, bodies), timeout=5) as resp:
        return json.loads(resp.read())


def main(argv: list[str] | None = None) -> None:
    """``python tests/support/providers.py PORT --provider NAME [options]``."""
    p = argparse.ArgumentParser(description="A loopback server that behaves like a reasoning-model provider's API.")
    p.add_argument("port", type=int)
    p.add_argument("--provider", required=True, choices=PROVIDERS)
    p.add_argument("--models", default="", help="comma-separated names /v1/models lists (default: a list per provider)")
    p.add_argument("--reasoning-tokens", type=int, default=None, help="reasoning length in tokens, whatever the effort (default: by effort)")
    p.add_argument("--display", choices=["summarized", "omitted"], default="summarized", help="anthropic: thinking text shown, or empty with its signature")
    p.add_argument("--redacted", action="store_true", help="anthropic: redacted_thinking blocks instead of thinking blocks")
    p.add_argument("--field", choices=["reasoning_content", "reasoning"], default="reasoning_content", help="vllm: the message field of the reasoning")
    p.add_argument("--raw-think", action="store_true", help="vllm: no reasoning parser; thoughts inside the content between <think> tags")
    p.add_argument("--no-opener", action="store_true", help="vllm --raw-think: without the opening <think> tag")
    p.add_argument("--keep-bodies", type=int, default=200, help="how many request bodies /stats?bodies=1 keeps")
    p.add_argument("--flex-delay", type=float, default=0.0, help="openai, gemini: seconds a flex call waits before its answer")
    p.add_argument("--unavailable", type=int, default=0, help="openai, gemini: the first N flex calls are refused with a 429 (the tier has no capacity)")
    p.add_argument("--downgrade", action="store_true", help="gemini: priority calls served at the standard tier (the x-gemini-service-tier header says so)")
    p.add_argument("--prompt-cache", action="store_true", help="openai, anthropic: a prompt cache per server, its reads (and Anthropic's writes) in each answer's usage as the API reports them")
    p.add_argument("--unverified", action="store_true", help="openai: an organisation not verified for reasoning summaries (a responses request asking for one gets 400)")
    p.add_argument("--context", type=int, default=0, help="openai chat, gemini: refuse a prompt over this many tokens with the context-length 400")
    p.add_argument("--cautious", action="store_true", help="numbers asked in a wide range drawn from its lowest twentieth (a commons lasts)")
    a = p.parse_args(argv)
    global CAUTIOUS
    CAUTIOUS = a.cautious
    app = make_app(a.provider, models=a.models or None, reasoning_tokens=a.reasoning_tokens, display=a.display, redacted=a.redacted, field=a.field, raw_think=a.raw_think, no_opener=a.no_opener, keep_bodies=a.keep_bodies, flex_delay=a.flex_delay, unavailable=a.unavailable, downgrade=a.downgrade, prompt_cache=a.prompt_cache, unverified=a.unverified, context=a.context)
    web.run_app(app, host="127.0.0.1", port=a.port, print=None, access_log=None, shutdown_timeout=1.0)


if __name__ == "__main__":
    main()

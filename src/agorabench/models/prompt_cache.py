"""What a provider's prompt cache would serve of a study's calls, by the rules the provider
documents: a simulation over each seat's calls in order. Pure functions, no I/O.

The input is the shape of the cost plan's sample plays (:mod:`agorabench.core.plan`): a list of
seats (one seat: one role in one game), each the list of its calls in order, each call the
messages sent (``{"role", "content"}`` dicts, or bare texts: see :func:`as_messages`), and a
token measure (characters / 4 by default). The answer (:class:`CacheShare`) is the share of
input tokens the cache would serve, the input cost with and without caching at the given prices,
and what limits the share (:meth:`CacheShare.limits`).

OpenAI (:func:`openai_share`; automatic caching, as its prompt-caching guide says):

- a prompt of fewer than ``min_tokens`` (1,024) tokens is never cached, and reads nothing;
- a prompt is served from the cache up to its longest common prefix with an earlier prompt, in
  steps of ``increment`` (128) tokens, once that prefix reaches ``min_tokens``;
- which earlier prompts count: with ``prompt_cache_key`` (one key per game and seat, as the
  backend sends it) those of the same seat (``shared=False``, the default); ``shared=True``
  lets every earlier prompt of the study count, as if requests were always routed to the machine
  holding the longest match (an upper bound);
- a cache read is billed at ``cached_price``; writing costs nothing extra
  (``write_multiplier=1``: the tokens a call adds to the cache are billed as plain input; newer
  models that bill writes pass their multiplier).

Anthropic (:func:`anthropic_share`; explicit ``cache_control`` breakpoints):

- the breakpoints are those the backend sets (:func:`~agorabench.models.anthropic.to_messages_api`:
  the system block and the last two user turns; at most 4 by the API's rule);
- a breakpoint whose prefix has at least ``min_tokens`` tokens (by model:
  :func:`anthropic_min_tokens`) writes that prefix; a shorter one writes nothing;
- a call reads the longest prefix an earlier call wrote, looked up at each breakpoint and at the
  block boundaries up to ``lookback`` (20) blocks before it, as the API checks them; only a prefix
  an earlier call wrote exactly is read (the TTL is not modelled: no entry expires);
- the cache is the organisation's: every earlier call of the study counts (``shared=True``);
- a read is billed at ``cached_price`` (0.1 x input), what a call writes beyond what it read at
  ``write_multiplier`` x input (1.25 for the 5-minute TTL, 2 for one hour).

Calls of different seats are taken seat after seat (a seat's calls in their order); when seats
run at the same time a provider may see them interleaved, which changes only cross-seat reads.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Union

from .anthropic import to_messages_api

#: One message of a call: a ``{"role", "content"}`` dict, or a bare text (roles inferred).
Message = Union[str, Mapping[str, str]]
#: One call: the messages it sends, in order.
Call = Sequence[Message]
#: A token measure of a text.
TokenCounter = Callable[[str], float]

#: OpenAI: no prompt shorter than this is cached; reads come in steps of :data:`OPENAI_INCREMENT`.
OPENAI_MIN_TOKENS = 1024
OPENAI_INCREMENT = 128
#: Anthropic: at most this many ``cache_control`` breakpoints per request.
ANTHROPIC_MAX_BREAKPOINTS = 4
#: Anthropic: block boundaries checked for a hit before each breakpoint.
ANTHROPIC_LOOKBACK = 20
#: Anthropic: a read costs this many times the input price; a write by TTL.
from .pricing import ANTHROPIC_READ  # noqa: E402  (a read: a tenth of the input price)
ANTHROPIC_WRITE = {"5m": 1.25, "1h": 2.0}
#: Anthropic's minimum cacheable prompt length by model (its prompt-caching guide); a model not
#: listed: :data:`ANTHROPIC_DEFAULT_MIN`. Names are matched after ``.`` -> ``-``, lower case.
ANTHROPIC_MIN_TOKENS: tuple[tuple[str, int], ...] = (
    ("opus-4-6", 4096),
    ("opus-4-5", 4096),
    ("haiku-4-5", 4096),
    ("haiku-3-5", 2048),
    ("3-5-haiku", 2048),
    ("haiku-3", 2048),
    ("3-haiku", 2048),
)
ANTHROPIC_DEFAULT_MIN = 1024


def chars_over_4(text: str) -> float:
    """The default token measure: characters / 4 (the cost plan's)."""
    return len(text) / 4


def anthropic_min_tokens(model: str) -> int:
    """The minimum cacheable prompt length of an Anthropic model (:data:`ANTHROPIC_MIN_TOKENS`;
    1,024 for Sonnet and Opus 4 / 4.1 and any model not listed)."""
    name = model.lower().replace(".", "-")
    for part, tokens in ANTHROPIC_MIN_TOKENS:
        if part in name:
            return tokens
    return ANTHROPIC_DEFAULT_MIN


def as_messages(call: Call) -> list[dict[str, str]]:
    """A call's messages as ``{"role", "content"}`` dicts. Bare texts take the roles of a
    table's transcript: user and assistant turns alternating and ending on a user turn, after a
    system message when the count is even (system, user, assistant, ..., user)."""
    out: list[dict[str, str]] = []
    texts = [m for m in call if isinstance(m, str)]
    if texts and len(texts) != len(call):
        raise ValueError("a call's messages are either all texts or all {role, content} mappings")
    if texts:
        system = len(texts) % 2 == 0
        for i, text in enumerate(texts):
            k = i - 1 if system else i
            role = "system" if system and i == 0 else ("user" if k % 2 == 0 else "assistant")
            out.append({"role": role, "content": text})
        return out
    for m in call:
        out.append({"role": str(m.get("role") or "user"), "content": str(m.get("content") or "")})
    return out


@dataclass(frozen=True)
class CacheShare:
    """What a provider's cache would serve of some calls, and why not more.

    Token fields count input tokens by the given measure. ``read_tokens`` were served from the
    cache; ``write_tokens`` were written to it (billed at the write price). The input not read
    is split by why: ``below_min_tokens`` (calls shorter than the provider's minimum),
    ``cold_tokens`` (calls long enough that found nothing cached to read: a seat's first call, or
    a prompt that changed near its start), ``new_tokens`` (the part past the cached prefix of
    calls that did read: what was added since, and for OpenAI ``rounding_tokens`` of common
    prefix lost to the 128-token steps)."""

    provider: str
    min_tokens: int
    #: Counts are floats: a kind of game's sample plays may stand for a fraction of games.
    calls: float = 0
    input_tokens: float = 0.0
    read_tokens: float = 0.0
    write_tokens: float = 0.0
    cost_without: float = 0.0
    cost_with: float = 0.0
    calls_below_min: float = 0
    below_min_tokens: float = 0.0
    cold_calls: float = 0
    cold_tokens: float = 0.0
    new_tokens: float = 0.0
    rounding_tokens: float = 0.0
    #: The price of a write as a multiple of the input price (for the limits' wording).
    write_multiplier: float = 1.0

    @property
    def share(self) -> float:
        """The share of input tokens served from the cache (0 without input)."""
        return self.read_tokens / self.input_tokens if self.input_tokens else 0.0

    @property
    def saving(self) -> float:
        """The share of the input cost caching saves (negative when writes cost more)."""
        return 1 - self.cost_with / self.cost_without if self.cost_without else 0.0

    def __add__(self, other: "CacheShare") -> "CacheShare":
        """Two simulations' figures together (same provider and minimum)."""
        if (self.provider, self.min_tokens) != (other.provider, other.min_tokens):
            raise ValueError("only shares of one provider and minimum add up")
        summed = {f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self) if f.name not in ("provider", "min_tokens", "write_multiplier")}
        return replace(self, **summed)

    def scaled(self, factor: float) -> "CacheShare":
        """Every count and cost times ``factor`` (a kind of game's sample plays standing for its
        games)."""
        return replace(self, **{f.name: getattr(self, f.name) * factor for f in fields(self) if f.name not in ("provider", "min_tokens", "write_multiplier")})

    def limits(self) -> list[str]:
        """What keeps the share below 100 %, largest first, one line each."""
        if not self.input_tokens:
            return ["no input"]
        of = self.input_tokens
        found: list[tuple[float, str]] = []
        if self.calls_below_min:
            found.append((self.below_min_tokens, f"{self.calls_below_min / self.calls:.0%} of calls are below the {self.min_tokens:,}-token minimum ({self.below_min_tokens / of:.0%} of input)"))
        if self.cold_calls:
            found.append((self.cold_tokens, f"{self.cold_calls / self.calls:.0%} of calls find nothing cached to read (a seat's first call, or a prompt changed near its start: {self.cold_tokens / of:.0%} of input)"))
        if self.new_tokens:
            rounding = f"; {self.rounding_tokens / of:.0%} lost to the {OPENAI_INCREMENT}-token steps" if self.rounding_tokens else ""
            found.append((self.new_tokens, f"{self.new_tokens / of:.0%} of input is new past the cached prefix (turns added since the last call{rounding})"))
        found.sort(key=lambda x: -x[0])
        lines = [text for _, text in found]
        if self.write_tokens and self.write_multiplier > 1:
            lines.append(f"writes cost {self.write_multiplier:g} x input on {self.write_tokens / of:.0%} of input")
        return lines

    def summary(self) -> str:
        """One line: the share, the input cost with and without caching, and the main limit."""
        limits = self.limits()
        head = f"{self.provider}: {self.share:.0%} of {self.input_tokens:,.0f} input tokens from the cache; input ${self.cost_with:,.4f} with caching, ${self.cost_without:,.4f} without ({self.saving:+.0%} saved)"
        return head + (f"; limited by: {limits[0]}" if limits and self.share < 1 else "")


def _chain(prefix: bytes, role: str, text: str) -> bytes:
    """The key of a prefix one message (or block) longer."""
    h = hashlib.blake2b(prefix, digest_size=16)
    h.update(role.encode())
    h.update(b"\x00")
    h.update(text.encode("utf-8", "surrogatepass"))
    h.update(b"\x01")
    return h.digest()


def _common_chars(a: str, b: str) -> int:
    """The length of the longest common prefix of two texts (bisection on slices)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


class _PrefixIndex:
    """Every message prefix of the calls seen (OpenAI): which prefixes occurred and, after each,
    the next messages that followed it."""

    def __init__(self) -> None:
        self.nexts: dict[bytes, dict[tuple[str, str], None]] = {}

    def longest(self, keys: list[bytes], msgs: list[dict[str, str]], cum: list[float], count: TokenCounter) -> float:
        """Tokens of the longest common prefix of a call (its prefix ``keys``) with any call seen."""
        if not self.nexts:
            return 0.0
        # whole messages: prefixes are closed under shortening, so bisect on their count
        lo, hi = 0, len(msgs)  # keys[j] is the prefix of j messages; keys[0] (empty) is in
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if keys[mid] in self.nexts:
                lo = mid
            else:
                hi = mid - 1
        tokens = cum[lo]
        if lo < len(msgs):  # and the part of the next message shared with one that followed
            m = msgs[lo]
            best = 0
            for role, text in self.nexts.get(keys[lo], {}):
                if role == m["role"]:
                    best = max(best, _common_chars(m["content"], text))
            if best:
                tokens += count(m["content"][:best])
        return tokens

    def add(self, keys: list[bytes], msgs: list[dict[str, str]]) -> None:
        for j, m in enumerate(msgs):
            self.nexts.setdefault(keys[j], {})[(m["role"], m["content"])] = None
        self.nexts.setdefault(keys[len(msgs)], {})


def _prefixes(items: list[tuple[str, str]], count: TokenCounter) -> tuple[list[bytes], list[float]]:
    """(keys, tokens) of every prefix of ``items`` ((role, text) pairs), the empty one first."""
    keys, cum = [b""], [0.0]
    for role, text in items:
        keys.append(_chain(keys[-1], role, text))
        cum.append(cum[-1] + count(text))
    return keys, cum


def openai_share(
    seats: Sequence[Sequence[Call]],
    input_price: float,
    cached_price: float,
    *,
    min_tokens: int = OPENAI_MIN_TOKENS,
    increment: int = OPENAI_INCREMENT,
    write_multiplier: float = 1.0,
    shared: bool = False,
    count_tokens: TokenCounter = chars_over_4,
) -> CacheShare:
    """What OpenAI's automatic prompt cache would serve of ``seats`` (each a seat's calls in
    order) at ``input_price`` and ``cached_price`` (dollars per million tokens): see the
    module's docstring for the rules."""
    if min_tokens < 0 or increment < 1:
        raise ValueError("min_tokens must be >= 0 and increment >= 1")
    t = _Tally()
    index = _PrefixIndex()
    for seat in seats:
        if not shared:
            index = _PrefixIndex()
        for call in seat:
            msgs = as_messages(call)
            keys, cum = _prefixes([(m["role"], m["content"]) for m in msgs], count_tokens)
            total = cum[-1]
            if total < min_tokens:
                t.call(total, below_min=True)
                continue
            common = index.longest(keys, msgs, cum, count_tokens)
            read = (common // increment) * increment
            if read < min_tokens:
                read = 0.0
            cacheable = (total // increment) * increment
            t.call(total, read=read, write=max(0.0, cacheable - read), rounding=common - read if read else 0.0)
            index.add(keys, msgs)
    return t.share("openai", min_tokens, input_price, cached_price, input_price * write_multiplier, write_multiplier)


def anthropic_share(
    seats: Sequence[Sequence[Call]],
    input_price: float,
    *,
    cached_price: float | None = None,
    ttl: str = "5m",
    write_multiplier: float | None = None,
    min_tokens: int = ANTHROPIC_DEFAULT_MIN,
    lookback: int = ANTHROPIC_LOOKBACK,
    shared: bool = True,
    count_tokens: TokenCounter = chars_over_4,
) -> CacheShare:
    """What Anthropic's prompt cache would serve of ``seats`` (each a seat's calls in order)
    with the backend's breakpoints, at ``input_price`` dollars per million tokens (reads at
    ``cached_price``, default 0.1 x input; writes at ``write_multiplier`` x input, default by
    ``ttl``: 1.25 for ``5m``, 2 for ``1h``); ``min_tokens`` by model from
    :func:`anthropic_min_tokens`. See the module's docstring for the rules."""
    if ttl not in ANTHROPIC_WRITE:
        raise ValueError(f"ttl must be one of {', '.join(ANTHROPIC_WRITE)}, not {ttl!r}")
    if lookback < 1:
        raise ValueError("lookback must be >= 1")
    read_price = input_price * ANTHROPIC_READ if cached_price is None else cached_price
    multiplier = ANTHROPIC_WRITE[ttl] if write_multiplier is None else write_multiplier
    t = _Tally()
    written: set[bytes] = set()
    for seat in seats:
        if not shared:
            written = set()
        for call in seat:
            system, turns = to_messages_api(as_messages(call), True)
            blocks = [("system", b) for b in system or []] + [(turn["role"], b) for turn in turns for b in turn["content"]]
            keys, cum = _prefixes([(role, b["text"]) for role, b in blocks], count_tokens)
            marks = [i + 1 for i, (_, b) in enumerate(blocks) if "cache_control" in b]  # prefix lengths in blocks
            if len(marks) > ANTHROPIC_MAX_BREAKPOINTS:  # pragma: no cover - the backend never sets more
                raise ValueError(f"{len(marks)} cache breakpoints; the API takes at most {ANTHROPIC_MAX_BREAKPOINTS}")
            total = cum[-1]
            eligible = [j for j in marks if cum[j] >= min_tokens]
            if not eligible:
                t.call(total, below_min=True)
                continue
            read = 0.0
            for j in marks:
                for k in range(j, max(0, j - lookback), -1):
                    if keys[k] in written and cum[k] > read:
                        read = cum[k]
            t.call(total, read=read, write=max(0.0, cum[eligible[-1]] - read))
            written.update(keys[j] for j in eligible)
    return t.share("anthropic", min_tokens, input_price, read_price, input_price * multiplier, multiplier)


class _Tally:
    """The running figures of one simulation."""

    def __init__(self) -> None:
        self.calls = self.calls_below_min = self.cold_calls = 0
        self.input = self.read = self.write = self.below_min = self.cold = self.new = self.rounding = 0.0

    def call(self, total: float, read: float = 0.0, write: float = 0.0, rounding: float = 0.0, below_min: bool = False) -> None:
        self.calls += 1
        self.input += total
        self.read += read
        self.write += write
        if below_min:
            self.calls_below_min += 1
            self.below_min += total
        elif not read:
            self.cold_calls += 1
            self.cold += total
        else:
            self.new += total - read
            self.rounding += rounding

    def share(self, provider: str, min_tokens: int, input_price: float, read_price: float, write_price: float, multiplier: float) -> CacheShare:
        plain = self.input - self.read - self.write
        return CacheShare(
            provider=provider,
            min_tokens=min_tokens,
            calls=self.calls,
            input_tokens=self.input,
            read_tokens=self.read,
            write_tokens=self.write,
            cost_without=self.input * input_price / 1e6,
            cost_with=(plain * input_price + self.read * read_price + self.write * write_price) / 1e6,
            calls_below_min=self.calls_below_min,
            below_min_tokens=self.below_min,
            cold_calls=self.cold_calls,
            cold_tokens=self.cold,
            new_tokens=self.new,
            rounding_tokens=self.rounding,
            write_multiplier=multiplier,
        )

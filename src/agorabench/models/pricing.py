"""What a model's calls cost: the price of each call from the tier it was billed at, the time of
day, the prompt tokens read from the provider's prompt cache and those written to it.

Prices are dollars per million tokens. A call's tier is the one the provider says it served the
call at (``Completion.extra["service_tier"]``: OpenAI echoes ``default``, ``flex``,
``priority``; Gemini's ``x-gemini-service-tier`` header ``standard``, ``flex``, ``priority``; a
provider batch's results carry ``batch``); anything else, or nothing, is the standard tier.

Each tier's prices (:data:`TIERS`), where a model entry's ``tier_prices`` does not give them:

- ``batch``: half of each standard price (OpenAI, Anthropic and Gemini all bill batches so);
- ``flex``: the batch price on OpenAI and Gemini (both document it so), the standard price elsewhere;
- ``priority``: the standard price (no provider publishes one rule: give ``tier_prices.priority``);
- ``off_peak``: the standard price; a standard call whose reply came within the tier's ``hours``
  (UTC, ``"16:30-00:30"`` unless given: DeepSeek's discount hours) is billed at it.

Prompt tokens: those read from the cache at ``cached_input`` (when None: a tenth of the input
price on Anthropic, as it bills every model, the input price elsewhere), those
written to it (``extra["cache_write_tokens"]``, Anthropic) at ``cache_write_multiplier`` × the
input price (None: Anthropic's 1.25 for a 5-minute TTL, 2 for an hour; 1 elsewhere), the rest at
the input price; output tokens (reasoning included) at the output price.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from .base import Completion

#: Anthropic bills a prompt token read from its cache at this share of the input price.
ANTHROPIC_READ = 0.1
#: The tier every call is billed at unless its provider reports another.
STANDARD = "standard"
#: The tiers ``tier_prices`` may price.
TIERS = ("batch", "flex", "priority", "off_peak")
#: The prices each tier may give (dollars per million tokens).
PRICE_KEYS = ("input", "output", "cached_input")
#: DeepSeek's discount hours (UTC), the ``off_peak`` tier's unless it names others.
DEFAULT_OFF_PEAK = "16:30-00:30"
#: Providers that bill their flex tier at the batch price (documented by each).
FLEX_AT_BATCH = frozenset({"openai", "gemini"})
#: What a provider reports for the standard tier (OpenAI ``default``, Gemini ``standard``, ...).
_STANDARD_NAMES = frozenset({"default", "standard", "auto", "scale", "on_demand"})
#: The most a price may be (dollars per million tokens), as for ``price_input``.
MAX_PRICE = 10_000.0

_HOURS = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*-\s*(\d{1,2}):(\d{2})\s*$")


def billed_tier(reported: Any) -> str:
    """The tier a provider's report of a call (``service_tier``) is billed at: one of
    :data:`TIERS` as named, :data:`STANDARD` for anything else (its default names included)."""
    name = str(reported).strip().lower() if isinstance(reported, str) else ""
    return name if name in TIERS and name != "off_peak" else STANDARD


def parse_hours(text: Any) -> tuple[int, int]:
    """``"HH:MM-HH:MM"`` (UTC; past midnight when the end is earlier) as (start, end) minutes
    after midnight; ValueError in one line for anything else (``24:00`` may end a span)."""
    m = _HOURS.match(text) if isinstance(text, str) else None
    if m is None:
        raise ValueError(f"hours {text!r} is not a span of UTC times like \"16:30-00:30\"")
    h1, m1, h2, m2 = (int(g) for g in m.groups())
    if h1 > 23 or m1 > 59 or m2 > 59 or h2 > 24 or (h2 == 24 and m2):
        raise ValueError(f"hours {text!r} names a time that is not on a 24-hour clock")
    start, end = h1 * 60 + m1, h2 * 60 + m2
    if start == end % 1440:
        raise ValueError(f"hours {text!r} is empty (it starts where it ends)")
    return start, end


def within(span: tuple[int, int], when: float) -> bool:
    """Whether the UTC time ``when`` (seconds since the epoch) falls in ``span`` (start
    included, end not; a span whose end is earlier runs past midnight)."""
    minute = int(when // 60) % 1440
    start, end = span
    return start <= minute < end if start < end else (minute >= start or minute < end)


def check_tier_prices(value: Any) -> dict[str, dict[str, Any]]:
    """A model entry's ``tier_prices`` checked: tier names of :data:`TIERS`, prices of
    :data:`PRICE_KEYS` (finite, 0 to :data:`MAX_PRICE`), ``hours`` on ``off_peak`` only (default
    :data:`DEFAULT_OFF_PEAK`). Returns it with prices as floats; ValueError in one line."""
    if not isinstance(value, Mapping):
        raise ValueError("tier_prices must be a table of tiers, e.g. tier_prices.batch = {input = 1.25, output = 5}")
    out: dict[str, dict[str, Any]] = {}
    for tier, prices in value.items():
        if tier not in TIERS:
            raise ValueError(f"tier_prices: unknown tier {tier!r}; the tiers are {', '.join(TIERS)}")
        if not isinstance(prices, Mapping):
            raise ValueError(f"tier_prices.{tier} must be a table of prices, e.g. {{input = 1.25, output = 5}}")
        allowed = PRICE_KEYS + (("hours",) if tier == "off_peak" else ())
        checked: dict[str, Any] = {}
        for key, price in prices.items():
            if key not in allowed:
                raise ValueError(f"tier_prices.{tier}: unknown key {key!r}; it takes {', '.join(allowed)}")
            if key == "hours":
                try:
                    parse_hours(price)
                except ValueError as exc:
                    raise ValueError(f"tier_prices.{tier}: {exc}") from None
                checked[key] = price.strip()
                continue
            if isinstance(price, bool) or not isinstance(price, (int, float)) or not math.isfinite(price) or not 0 <= price <= MAX_PRICE:
                raise ValueError(f"tier_prices.{tier}.{key} = {price!r} is not a price (a number of dollars per million tokens, 0 to {MAX_PRICE:g})")
            checked[key] = float(price)
        if tier == "off_peak":
            checked.setdefault("hours", DEFAULT_OFF_PEAK)
        out[tier] = checked
    return out


@dataclass(frozen=True)
class Rates:
    """One tier's prices: dollars per million input, output and cache-read input tokens."""

    input: float
    output: float
    cached_input: float


def _count(value: Any) -> int:
    """A token count as priced: a positive integer as it is, anything else 0."""
    if type(value) is int:  # the common case, without the isinstance checks
        return value if value > 0 else 0
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


@dataclass
class Pricing:
    """The prices of one model's calls (see the module's docstring for the rules). ``tiers``:
    the entry's ``tier_prices``; ``provider``: whose defaults apply; ``clock``: the time a reply
    came (UTC seconds), for the off-peak hours.

    :meth:`cost` books each reply the first time it prices it: the figure and the tier are kept
    in ``extra["cost"]`` and ``extra["billed_tier"]`` (the model's books and the turn's record
    read one price, even across an hour's edge), and added to :attr:`by_tier`."""

    input: float = 0.0
    output: float = 0.0
    cached_input: float | None = None
    tiers: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    provider: str = ""
    cache_write_multiplier: float | None = None
    cache_ttl: str = "5m"
    clock: Callable[[], float] = time.time
    #: Dollars booked per billed tier (:meth:`cost`).
    by_tier: dict[str, float] = field(default_factory=dict)

    @classmethod
    def for_entry(cls, entry: Any, clock: Callable[[], float] = time.time) -> "Pricing":
        """The pricing of a study's model entry (``price_input``, ``price_output``,
        ``price_cached_input``, ``tier_prices``, ``cache_write_multiplier``, ``cache_ttl`` and its
        spec's provider)."""
        spec = getattr(entry, "model_spec", None)
        return cls(
            entry.price_input,
            entry.price_output,
            entry.price_cached_input,
            tiers=check_tier_prices(getattr(entry, "tier_prices", None) or {}),
            provider=str(getattr(spec, "provider", None) or ""),
            cache_write_multiplier=getattr(entry, "cache_write_multiplier", None),
            cache_ttl=getattr(entry, "cache_ttl", "5m") or "5m",
            clock=clock,
        )

    @property
    def default_cached_input(self) -> float:
        """The price of a prompt token read from the cache when ``price_cached_input`` is unset:
        a tenth of the input price on Anthropic (its documented rate for every model), the
        input price elsewhere (OpenAI's discount differs by model: give ``price_cached_input``)."""
        return self.input * ANTHROPIC_READ if self.provider == "anthropic" else self.input

    @property
    def write_multiplier(self) -> float:
        """What a prompt token written to the cache costs, as a multiple of the input price."""
        if self.cache_write_multiplier is not None:
            return self.cache_write_multiplier
        if self.provider == "anthropic":
            return 2.0 if self.cache_ttl == "1h" else 1.25
        return 1.0

    def rates(self, tier: str) -> Rates:
        """The prices of ``tier`` (a name of :data:`TIERS` or :data:`STANDARD`)."""
        standard = Rates(self.input, self.output, self.default_cached_input if self.cached_input is None else self.cached_input)
        if tier == STANDARD or tier not in TIERS:
            return standard
        if tier == "batch":
            default = Rates(standard.input / 2, standard.output / 2, standard.cached_input / 2)
        elif tier == "flex" and self.provider in FLEX_AT_BATCH:
            default = self.rates("batch")
        else:
            default = standard
        given = self.tiers.get(tier) or {}
        return Rates(*(float(given[k]) if given.get(k) is not None else getattr(default, k) for k in PRICE_KEYS))

    def tier_of(self, c: Completion, when: float | None = None) -> str:
        """The tier ``c`` is billed at: the provider's report; a standard call within the
        ``off_peak`` hours (when priced) at ``off_peak``."""
        tier = billed_tier((c.extra or {}).get("service_tier"))
        peak = self.tiers.get("off_peak")
        if tier == STANDARD and peak is not None:
            if within(parse_hours(peak.get("hours", DEFAULT_OFF_PEAK)), self.clock() if when is None else when):
                return "off_peak"
        return tier

    def price(self, c: Completion, when: float | None = None) -> tuple[float, str]:
        """(dollars, tier) of one reply, nothing booked."""
        tier = self.tier_of(c, when)
        if tier == STANDARD:  # rates(STANDARD)'s figures, without making a Rates per call
            r_input, r_output = self.input, self.output
            r_cached = self.default_cached_input if self.cached_input is None else self.cached_input
        else:
            r = self.rates(tier)
            r_input, r_output, r_cached = r.input, r.output, r.cached_input
        prompt, cached = _count(c.prompt_tokens), _count(c.cached_tokens)
        written = _count((c.extra or {}).get("cache_write_tokens"))
        plain = max(prompt - cached - written, 0)
        dollars = plain * r_input + cached * r_cached + written * r_input * self.write_multiplier + _count(c.completion_tokens) * r_output
        return dollars / 1e6, tier

    def cost(self, c: Completion) -> float:
        """Dollars of one reply: priced and booked the first time (see the class), the same
        figure after."""
        extra = c.extra if c.extra is not None else {}
        if "cost" in extra and "billed_tier" in extra:
            return float(extra["cost"])
        dollars, tier = self.price(c)
        extra["cost"], extra["billed_tier"] = dollars, tier
        c.extra = extra
        self.by_tier[tier] = self.by_tier.get(tier, 0.0) + dollars
        return dollars

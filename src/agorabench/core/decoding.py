"""A model entry's decoding settings: what its calls send (temperature, seed, output budget,
reasoning fields). Decided here once, for the runner (the calls), the plan (the output bound)
and the report (the models table), so that what a report says was sent is what was sent.

The rule: ``temperature = "default"`` sends neither temperature nor seed (the provider's own
sampling); a number is sent with the study's seed. A reasoning model (the entry says so, sets a
reasoning field, or its name is one: :func:`~agorabench.models.reasoning.looks_like_reasoning`)
gets the reasoning budget on top of ``max_tokens``; OpenAI's and Anthropic's reasoning models
are sent no temperature and no seed (they refuse them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..models.base import GenerationSettings
from ..models.providers import PROVIDERS, spec_dialect
from ..models.reasoning import looks_like_reasoning
from .study import ModelEntry

#: The dialect of a model no provider serves (the embedded model).
EMBEDDED_DIALECT = "embedded"

#: Why a model entry's calls carry no temperature: its entry asks for the provider's own
#: sampling (``default``), or it reasons with a provider that refuses one (``reasoning``).
Unsent = Literal["default", "reasoning"]


@dataclass(frozen=True)
class Decoding:
    """What a model entry's calls send (``settings``; the temperature kept is the one sent) and,
    when no temperature is sent, why (``unsent``; None: one is sent)."""

    settings: GenerationSettings
    unsent: Unsent | None


def entry_dialect(entry: ModelEntry) -> str:
    """The dialect an entry's calls speak, from its provider (no backend opened): the
    embedded model's for a spec no provider serves."""
    spec = entry.model_spec
    return spec_dialect(spec) if spec.kind == "hosted" and spec.provider in PROVIDERS else EMBEDDED_DIALECT


def decoding(entry: ModelEntry, seed: int, dialect: str | None = None) -> Decoding:
    """The one rule (module doc) for ``entry`` in a study of ``seed``, speaking ``dialect``
    (None: :func:`entry_dialect`)."""
    dialect = entry_dialect(entry) if dialect is None else dialect
    default = entry.temperature == "default"
    effort = entry.reasoning_effort if isinstance(entry.reasoning_effort, str) else None
    reasoning = entry.reasoning
    if reasoning is None:
        asked = entry.thinking in ("on", "adaptive") or effort not in (None, "none") or entry.reasoning_budget is not None
        reasoning = asked or (entry.thinking != "off" and looks_like_reasoning(dialect, entry.model_spec.name))
    temperature = None if default else entry.temperature
    sent_seed: int | None = None if default else seed
    unsent: Unsent | None = "default" if default else None
    if reasoning and dialect in ("openai", "anthropic"):
        temperature = sent_seed = None
        unsent = unsent or "reasoning"
    settings = GenerationSettings(
        temperature=temperature,
        max_tokens=entry.max_tokens,
        seed=sent_seed,
        reasoning=reasoning,
        reasoning_effort=effort,
        thinking=entry.thinking,
        reasoning_budget=entry.reasoning_budget,
        extra_body=entry.extra_body,
    )
    return Decoding(settings, unsent)


def generation_settings(entry: ModelEntry, seed: int, dialect: str) -> GenerationSettings:
    """What ``entry``'s calls carry when its backend speaks ``dialect`` (:func:`decoding`)."""
    return decoding(entry, seed, dialect).settings


def sent_settings(entry: ModelEntry, seed: int) -> GenerationSettings:
    """What ``entry``'s calls carry, without opening its backend (the dialect from its
    provider): for the plan and the report."""
    return decoding(entry, seed).settings

"""Reasoning models: which models think before they answer, how a study's reasoning settings
reach each provider's wire form, and how a reply's thoughts are kept apart from its answer.

Settings (model-entry fields, see :class:`agorabench.core.study.ModelEntry`):

- ``reasoning``: whether the model reasons (None: guessed from its provider and name,
  :func:`looks_like_reasoning`; any reasoning setting implies it);
- ``reasoning_effort``: ``none`` ... ``xhigh`` (``max`` for Anthropic), as the model accepts;
- ``thinking``: ``on``, ``off`` or ``adaptive`` (Anthropic), the provider's switch;
- ``reasoning_budget``: output tokens the model may spend thinking, on top of ``max_tokens``
  (the answer's cap): a reasoning model's request allows ``max_tokens + reasoning_budget``
  output tokens (:data:`DEFAULT_REASONING_BUDGET` unless set); Anthropic's ``budget_tokens``.

Wire forms by dialect (:func:`chat_fields`, :func:`anthropic_fields`):

=========  ==========================================================================
openai     (OpenAI's own API and Azure) ``max_completion_tokens``, ``reasoning_effort``;
           no temperature, no seed
generic    (any other OpenAI-compatible server: ``NAME@URL``, OpenRouter, Together, LM Studio)
           ``max_tokens``, the model's temperature and seed, ``reasoning_effort``
deepseek   ``max_tokens``, ``thinking: {"type": "enabled" | "disabled"}``
vllm       ``max_tokens``, ``chat_template_kwargs.enable_thinking``, ``reasoning_effort``
ollama     ``max_tokens``, ``reasoning_effort`` (``none`` turns thinking off)
gemini     ``max_tokens``, ``reasoning_effort`` (``none`` turns thinking off), or a thinking
           budget as ``extra_body.google.thinking_config.thinking_budget`` (the documented
           form; unknown top-level fields are refused); 2.5 Pro and Gemini 3 cannot stop
           thinking, Gemini 3 Pro takes only ``low`` and ``high``
llamacpp   ``max_tokens``, ``chat_template_kwargs.enable_thinking``
anthropic  ``max_tokens``, ``thinking`` (enabled with ``budget_tokens`` / adaptive /
           disabled), ``output_config.effort``; temperature only without thinking; Claude
           Opus 4.7 and later refuse ``enabled`` (adaptive with an effort instead)
=========  ==========================================================================

Thoughts: a reply's reasoning arrives in a field of its own (``reasoning_content``,
``reasoning``, Anthropic thinking blocks, Responses API summaries) or inside the text between
``<think>`` and ``</think>`` (:func:`split_thoughts`, also without the opening tag). Either way
it is kept apart from the answer: never parsed, never shown to another player, never sent back.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from .base import GenerationSettings

#: Reasoning efforts a study may name (each provider accepts a subset; a refused one stops the
#: model at its first call with the provider's message).
EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
#: Thinking switches: ``on`` (Anthropic: enabled with a budget), ``off``, ``adaptive`` (Anthropic).
THINKING = ("on", "off", "adaptive")
#: Output tokens a reasoning model may spend thinking unless its entry says otherwise, on top of
#: ``max_tokens``; providers advise reserving tens of thousands for hard problems, a game turn
#: needs far fewer.
DEFAULT_REASONING_BUDGET = 16_000
#: Anthropic's smallest thinking budget.
ANTHROPIC_MIN_BUDGET = 1024
#: Longest reasoning text kept per reply (characters); longer thoughts are cut and marked.
MAX_REASONING_CHARS = 400_000

#: Model names (after the provider prefix) that reason by default, by dialect; any dialect:
#: :data:`_ANY_REASONING`. A study sets ``reasoning = true/false`` where this guess is wrong.
_REASONING_NAMES = {
    "openai": re.compile(r"^(?:openai/)?(?:o\d|gpt-5)", re.I),
    "generic": re.compile(r"^(?:openai/)?(?:o\d|gpt-5)", re.I),  # e.g. OpenRouter's openai/gpt-5
    "anthropic": re.compile(r"claude-(?:opus|sonnet)-5", re.I),
    "deepseek": re.compile(r"reasoner|r1", re.I),
    "gemini": re.compile(r"gemini-(?:2\.5|[3-9])", re.I),
}
_ANY_REASONING = re.compile(r"deepseek-r1|reasoner|qwq|qwen3(?!.*instruct)|gpt-oss|magistral|thinking|(?:^|/)o[134](?:-|$)", re.I)


def looks_like_reasoning(dialect: str, name: str) -> bool:
    """Whether a model of this dialect and name reasons by default (a guess by name, documented
    in the README's "Reasoning models" section)."""
    pattern = _REASONING_NAMES.get(dialect)
    return bool((pattern is not None and pattern.search(name)) or _ANY_REASONING.search(name))


def output_limit(settings: "GenerationSettings") -> int:
    """Output tokens one request allows: the answer's cap, plus the reasoning budget for a
    reasoning model."""
    if not settings.reasoning:
        return settings.max_tokens
    return settings.max_tokens + (settings.reasoning_budget if settings.reasoning_budget is not None else DEFAULT_REASONING_BUDGET)


def chat_fields(dialect: str, settings: "GenerationSettings") -> dict[str, Any]:
    """The token limit, sampling and reasoning fields of a chat-completions request in the
    server's dialect (the ``extra_body`` a study gives is merged last)."""
    limit = output_limit(settings)
    fields: dict[str, Any] = {}
    if settings.reasoning and dialect == "openai":  # o-series, gpt-5: no max_tokens, no sampling
        fields["max_completion_tokens"] = limit
    else:
        fields["max_tokens"] = limit
        fields.update(settings.sampling())
    effort, thinking = settings.reasoning_effort, settings.thinking
    if dialect == "deepseek":
        if thinking is not None:
            fields["thinking"] = {"type": "disabled" if thinking == "off" else "enabled"}
    elif dialect in ("vllm", "llamacpp"):
        if thinking is not None:
            fields["chat_template_kwargs"] = {"enable_thinking": thinking != "off"}
        if effort is not None:
            fields["reasoning_effort"] = effort
    elif dialect == "gemini":
        if thinking == "off":
            fields["reasoning_effort"] = "none"
        elif effort is not None:
            fields["reasoning_effort"] = effort
        elif settings.reasoning_budget is not None:
            fields["extra_body"] = {"google": {"thinking_config": {"thinking_budget": settings.reasoning_budget}}}
    else:  # openai, ollama, generic (any other OpenAI-compatible server)
        if thinking == "off":
            fields["reasoning_effort"] = "none"
        elif effort is not None:
            fields["reasoning_effort"] = effort
    if settings.extra_body:
        fields.update(settings.extra_body)
    return fields


def anthropic_fields(settings: "GenerationSettings") -> dict[str, Any]:
    """``max_tokens``, ``thinking``, ``output_config`` and ``temperature`` of a Messages API
    request. Thinking ``on`` is enabled with ``budget_tokens`` = the reasoning budget and
    ``max_tokens`` = answer cap + budget; a reasoning model is sent no temperature."""
    fields: dict[str, Any] = {"max_tokens": output_limit(settings)}
    thinking = settings.thinking
    if thinking == "on":
        budget = settings.reasoning_budget if settings.reasoning_budget is not None else DEFAULT_REASONING_BUDGET
        fields["thinking"] = {"type": "enabled", "budget_tokens": budget}
    elif thinking == "adaptive":
        fields["thinking"] = {"type": "adaptive"}
    elif thinking == "off":
        fields["thinking"] = {"type": "disabled"}
    if settings.reasoning_effort is not None:
        fields["output_config"] = {"effort": settings.reasoning_effort}
    if settings.temperature is not None and not settings.reasoning:
        fields["temperature"] = settings.temperature
    if settings.extra_body:
        fields.update(settings.extra_body)
    return fields


#: Claude models that refuse ``thinking: {"type": "enabled"}`` (Opus 4.7 and later): adaptive
#: thinking with an effort instead.
_ADAPTIVE_ONLY = re.compile(r"claude-opus-(?:4-(?:[7-9]|\d\d)|[5-9]|\d\d)(?!\d)", re.I)
#: Gemini models whose thinking cannot be turned off (2.5 Pro, Gemini 3 and later).
_ALWAYS_THINKS = re.compile(r"gemini-(?:2\.5-pro|[3-9])", re.I)
#: Gemini 3 Pro's thinking levels are low and high (it refuses the others, e.g. "Thinking level
#: MEDIUM is not supported for this model"); Gemini 3.1 Pro added medium, so only 3.0 Pro is named.
_GEMINI_PRO_LEVELS = re.compile(r"gemini-3(?:\.0)?-pro", re.I)


def setting_problems(dialect: str, settings: "GenerationSettings", name: str = "") -> list[str]:
    """What in ``settings`` this dialect (and model ``name``, after its provider prefix) cannot
    carry, one line each (checked before a study's first game)."""
    problems = []
    effort = settings.reasoning_effort
    if dialect == "anthropic" and settings.thinking == "on" and _ADAPTIVE_ONLY.search(name):
        problems.append(f"{name} refuses thinking = \"on\" (enabled with a budget); use thinking = \"adaptive\" with a reasoning_effort")
    if dialect == "gemini" and _ALWAYS_THINKS.search(name) and (settings.thinking == "off" or effort == "none"):
        problems.append(f"{name} cannot turn its thinking off (thinking = \"off\" / reasoning_effort = \"none\"); use a low reasoning_effort")
    if dialect == "gemini" and _GEMINI_PRO_LEVELS.search(name) and effort not in (None, "none", "low", "high"):
        problems.append(f"{name} takes reasoning_effort \"low\" or \"high\" only (not {effort!r})")
    if dialect == "anthropic" and settings.thinking == "on":
        budget = settings.reasoning_budget if settings.reasoning_budget is not None else DEFAULT_REASONING_BUDGET
        if budget < ANTHROPIC_MIN_BUDGET:
            problems.append(f"reasoning_budget {budget} is below Anthropic's smallest thinking budget ({ANTHROPIC_MIN_BUDGET} tokens)")
    if dialect == "deepseek" and settings.reasoning_effort is not None:
        problems.append("DeepSeek has no reasoning effort setting (use thinking = \"on\" or \"off\")")
    if dialect == "anthropic" and settings.reasoning_effort == "xhigh":
        problems.append("Anthropic's efforts are low, medium, high and max (not xhigh)")
    if dialect != "anthropic" and settings.thinking == "adaptive":
        problems.append("thinking = \"adaptive\" is Anthropic's setting; use \"on\" or \"off\"")
    return problems


def sampling_notes(dialect: str, name: str, settings: "GenerationSettings", temperature: Any) -> list[str]:
    """What a study should know before its run about sampling settings a reasoning model will
    not get (``temperature``: the entry's setting)."""
    if not settings.reasoning or temperature == "default":
        return []
    if dialect == "openai":
        return [f"model {name!r} reasons: its temperature ({temperature}) and seed are not sent (OpenAI's reasoning models accept only their default sampling); the stored temperature is the default"]
    if dialect == "anthropic":
        return [f"model {name!r} thinks: its temperature ({temperature}) is not sent (Anthropic refuses a temperature with thinking, and newer models always)"]
    if dialect == "deepseek":
        return [f"model {name!r} reasons: DeepSeek's reasoner ignores the temperature ({temperature}) it is sent"]
    return []


#: Any thought tag, opening or closing: ``<think>``, ``</think>``, ``<thought>``, ``</thought>``.
_TAG = re.compile(r"</?(?:think|thought)>")


def _scan_thoughts(text: str, unopened: bool) -> tuple[list[str], list[str], bool]:
    """(pieces outside every complete thought, the thoughts, unclosed) of ``text``, in one pass.

    A thought is ``<think>...</think>`` (or ``<thought>...</thought>``), closed by the first
    closing tag of its own kind. With ``unopened``, a closing tag that comes before any other
    tag ends a leading thought whose opening tag the server stripped; any other closing tag
    outside a thought is literal text of the answer. An opening tag never closed leaves the
    reply inside its thoughts (``unclosed``)."""
    outside: list[str] = []
    thoughts: list[str] = []
    pos, closing, opened_at, first = 0, "", 0, True
    for m in _TAG.finditer(text):
        tag = m.group()
        if closing:
            if tag == closing:
                thoughts.append(text[opened_at : m.start()])
                pos, closing = m.end(), ""
        elif not tag.startswith("</"):
            outside.append(text[pos : m.start()])
            closing, opened_at = "</" + tag[1:], m.end()
        elif first and unopened:
            thoughts.append(text[: m.start()])
            pos = m.end()
        first = False
    if closing:
        thoughts.append(text[opened_at:])
        return outside, thoughts, True
    outside.append(text[pos:])
    return outside, thoughts, False


def _joined(pieces: list[str]) -> str:
    """Pieces of text as one, blank ones left out, a blank line between the others."""
    return "\n\n".join(p.strip() for p in pieces if p.strip())


def split_thoughts(text: str) -> tuple[str, str | None, bool]:
    """(answer, thoughts, unclosed) of a reply that may carry its reasoning inside the text.
    The answer is the text outside every complete thought (``<think>...</think>`` or
    ``<thought>...</thought>``): an answer followed by a second thought, or holding a stray
    ``</think>`` after a complete thought, is kept. A reply whose first tag is a closing one
    began with a thought whose opening tag the server stripped. A reply that opens a thought
    and never closes it has no answer (``unclosed``; all its text is thought). A reply without
    such tags comes back as it is, with thoughts None."""
    outside, thoughts, unclosed = _scan_thoughts(text, unopened=True)
    if not thoughts and not unclosed:
        return text, None, False
    if unclosed:
        return "", _TAG.sub("\n", text).strip(), True
    if not any(p.strip() for p in outside[:-1]):  # the answer only after the thoughts: as it always was
        answer = outside[-1].lstrip()
    else:
        answer = _joined(outside)
    return answer, _joined(thoughts), False


def answer_of(text: str) -> tuple[str, bool]:
    """(answer, unclosed) of a text that is read as an answer, for a parser: its complete
    thoughts left out, and whether it opens a thought it never closes (cut reasoning, which
    holds no answer). Unlike :func:`split_thoughts` a closing tag without its opening one is
    literal text here: a reply already split (whose answer may hold a stray ``</think>``)
    reads the same again."""
    if "<th" not in text:
        return text, False
    outside, thoughts, unclosed = _scan_thoughts(text, unopened=False)
    if unclosed:
        return "", True
    if not thoughts:
        return text, False
    return _joined(outside), False


def may_hold_thoughts(text: str) -> bool:
    """A cheap test before :func:`split_thoughts`: whether ``text`` has a thought tag at all."""
    return "<th" in text or "</th" in text


def join_thoughts(*parts: str | None) -> str | None:
    """Reasoning texts from several places (a field and the text) as one; None when none."""
    kept = [p for p in parts if p]
    return "\n\n".join(kept) if kept else (None if all(p is None for p in parts) else "")

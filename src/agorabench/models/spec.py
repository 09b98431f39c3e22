"""Model specs: the one place where a spec string becomes something typed.

A spec says who plays a seat:

- ``local`` (or ``local/ANYTHING``): the embedded model, run in this process;
- ``strategy/NAME``: a scripted player of the game;
- ``human``: a seat for a person, played through ``agora serve``;
- ``http/URL`` (``http/http://host:port/act``): an outside agent, a researcher's own program
  asked for each decision over HTTP (:mod:`agorabench.models.outside`); the URL is the spec;
- ``PROVIDER/MODEL`` for a provider in :data:`agorabench.models.providers.PROVIDERS`
  (``openai/gpt-4o-mini``, ``anthropic/claude-...``, ``vllm/Qwen2.5-7B``, ...), and anything
  at all once a base URL is given (``NAME@http://host:port/v1``, or ``base_url`` in a study file):
  a hosted model, reached over the network.

:func:`parse_spec` reads one into a frozen :class:`ModelSpec`; study files and the command line
both go through it (``ModelEntry.model_spec``), and the runner builds backends from the result.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Literal
from urllib.parse import urlsplit

from ..redact import redact
from .errors import SpecError  # defined beside the backend errors: open_backend raises it too
from .providers import GENERIC_PROVIDER, PROVIDERS

Kind = Literal["local", "strategy", "human", "hosted", "outside"]

#: What starts the spec of an outside agent; the rest is its URL (``http/https://host/act``).
OUTSIDE_PREFIX = "http/"

#: The forms a spec may take, as error messages list them (the providers by name).
SPEC_FORMS = (
    f"local, strategy/NAME, PROVIDER/MODEL (PROVIDER: {', '.join(sorted(PROVIDERS))}), "
    "NAME@URL or PROVIDER/MODEL@URL (an OpenAI-compatible server), http/URL (an outside agent) or human (a person, through agora serve)"
)


@dataclass(frozen=True, slots=True, repr=False)
class ModelSpec:
    """A parsed spec. ``name`` is what the kind needs to find its player: the strategy's name,
    the hosted model's name as the server knows it, the part after ``local/`` (unused), nothing
    for a person, the URL an outside agent is asked at. ``provider`` names the registry entry
    that serves a hosted model (a spec with a URL and an unknown provider prefix is served as
    :data:`GENERIC_PROVIDER`)."""

    text: str
    kind: Kind
    name: str = ""
    provider: str | None = None
    base_url: str | None = None

    @property
    def hosted(self) -> bool:
        return self.kind == "hosted"

    def __str__(self) -> str:
        if self.kind == "outside":  # the URL is the text: credentials in it redacted
            return redact(self.text)
        return self.text + (f"@{redact(self.base_url)}" if self.base_url else "")

    def __repr__(self) -> str:  # the URL's credentials redacted, as everywhere
        url = None if self.base_url is None else redact(self.base_url)
        return f"ModelSpec(text={redact(self.text)!r}, kind={self.kind!r}, name={redact(self.name)!r}, provider={self.provider!r}, base_url={url!r})"


def spec_kind(text: str) -> Kind:
    """The kind of a spec (without its URL) by its form alone; never fails (anything that is
    not local, a strategy, a person or an outside agent is taken for a hosted model, checked by
    :func:`parse_spec`)."""
    if text == "human":
        return "human"
    if is_outside(text):
        return "outside"
    if text.startswith("strategy/"):
        return "strategy"
    if text == "local" or text.startswith("local/"):
        return "local"
    return "hosted"


def is_outside(text: str) -> bool:
    """Whether ``text`` is an outside agent's spec: ``http/`` and then an http(s) URL."""
    return text.startswith((OUTSIDE_PREFIX + "http://", OUTSIDE_PREFIX + "https://"))


def split_url(text: str, base_url: str | None = None) -> tuple[str, str | None]:
    """``PROVIDER/MODEL@URL`` as (``PROVIDER/MODEL``, ``URL``), both stripped (an empty URL is
    None); a spec without ``@``, or an outside agent's (its URL is the spec, an ``@`` in it is
    the URL's), comes back as it is, with ``base_url``. SpecError when the spec names one URL
    and ``base_url`` another."""
    if "@" not in text or is_outside(text.strip()):
        return text, base_url
    spec, _, url = text.partition("@")
    url = url.strip()
    if base_url not in (None, url):
        raise SpecError(f"spec {text!r} names a URL and base_url names another")
    return spec.strip(), url or None


def check_base_url(url: str) -> str:
    """``url`` stripped, if it is an http(s) URL with a host (and a numeric port, if any); else
    SpecError naming it (credentials redacted)."""
    try:
        parts = urlsplit(url.strip())
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
        parts.port  # noqa: B018 - a port that is not a number in range raises ValueError
    except ValueError:
        ok = False
    if not ok:
        raise SpecError(f"base_url {redact(url)!r} is not an http(s) URL with a host (e.g. http://127.0.0.1:8000/v1)")
    return url.strip()


def parse_spec(text: str, base_url: str | None = None, *, owner: str | None = None) -> ModelSpec:
    """The :class:`ModelSpec` of ``text`` (which may carry its URL after ``@``) and ``base_url``.
    SpecError, one line, for an empty spec, two different URLs, a URL that is not http(s), or a
    hosted spec with neither a known provider nor a URL; ``owner`` (the model's name) is named
    in the last message."""
    if not text:
        raise SpecError("empty model spec")
    return _parse(text, base_url, owner)


@lru_cache(maxsize=4096)
def _parse(text: str, base_url: str | None, owner: str | None) -> ModelSpec:
    text, base_url = split_url(text, base_url)
    if base_url is not None:
        base_url = check_base_url(base_url)
    kind = spec_kind(text)
    if kind == "strategy" or kind == "local":
        return ModelSpec(text, kind, text.partition("/")[2], None, base_url)
    if kind == "human":
        return ModelSpec(text, kind, "", None, base_url)
    if kind == "outside":  # the URL is the spec: a base_url beside it would be a second one
        if base_url is not None:
            raise SpecError(f"spec {redact(text)!r} is an outside agent, whose URL is the spec: leave base_url out")
        url = text[len(OUTSIDE_PREFIX) :].strip()
        try:
            return ModelSpec(text, kind, check_base_url(url), None, None)
        except SpecError:
            raise SpecError(f"spec {redact(text)!r}: the outside agent's URL is not an http(s) URL with a host (e.g. http/http://127.0.0.1:8123/act)") from None
    prefix, sep, name = text.partition("/")
    if sep and prefix in PROVIDERS:
        return ModelSpec(text, "hosted", name or text, prefix, base_url)
    if base_url is not None:  # any OpenAI-compatible server; the prefix, if any, only names it
        return ModelSpec(text, "hosted", name or text, GENERIC_PROVIDER, base_url)
    whose = f" for model {owner!r}" if owner is not None else ""
    raise SpecError(f"unknown model spec {text!r}{whose}: use {SPEC_FORMS}")

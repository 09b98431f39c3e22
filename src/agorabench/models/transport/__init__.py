"""Transports: how one chat-completions request reaches an OpenAI-compatible server. All speak
the same wire format (but ``responses``, which translates it) and classify failures alike; a
model entry picks one by name
(``transport = "..."``), and only the chosen one's module (and its client library) is imported:

- ``lean`` (the default): our keep-alive HTTP/1.1 client (:mod:`agorabench.models.http11`),
  bodies through orjson, no response models: a small fraction of the SDK's client CPU per call
  (benchmarks/README.md), which tells when a fast server answers thousands of calls a second;
- ``aiohttp``: the same requests over one aiohttp session (the default before ``lean``);
- ``sdk``: the official ``openai`` SDK over its aiohttp transport;
- ``responses``: OpenAI's Responses API (``/responses``) over the ``lean`` client: the request
  translated to its fields, the answer read back (:mod:`.responses`); the route OpenAI's
  reasoning models are best served by, and the only one some are.

A request is the keyword arguments of the SDK's ``chat.completions.create`` (fields the SDK does
not name travel in ``extra_body``); the HTTP transports send them as one flat JSON body. Retries
are never a transport's: :class:`agorabench.models.model.Model` retries.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol

from ..base import BackendError, Completion

#: Where requests go when a model names no base URL.
DEFAULT_API_URL = "https://api.openai.com/v1"


@dataclass(frozen=True)
class Endpoint:
    """Where a transport sends requests and how it authenticates."""

    #: The base URL as configured (None: the provider's default), named in error messages.
    base_url: str | None
    #: The base URL without ``user:password@`` (what the client connects to).
    client_url: str | None
    api_key: str
    #: ``Basic ...`` when the URL carried credentials (sent instead of the bearer key).
    basic_auth: str | None
    timeout: float

    @property
    def chat_url(self) -> str:
        return (self.client_url or DEFAULT_API_URL).rstrip("/") + "/chat/completions"

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": self.basic_auth or f"Bearer {self.api_key}", "Content-Type": "application/json"}


class Transport(Protocol):
    name: str

    async def send(self, request: dict[str, Any]) -> Completion:
        """The server's completion of ``request`` (its latency is the caller's to measure);
        BackendError for any failure the transport recognises."""
        ...

    def classify(self, exc: BaseException) -> BackendError | None:
        """The BackendError for an exception of this transport's client, None for one it does
        not know (which then reaches the model's own catch-all)."""
        ...

    async def aclose(self) -> None: ...


# each maker imports its transport's module (and client library) when first called


def _lean(endpoint: Endpoint) -> Transport:
    from .lean import LeanTransport

    return LeanTransport(endpoint)


def _aiohttp(endpoint: Endpoint) -> Transport:
    from .aio import AiohttpTransport

    return AiohttpTransport(endpoint)


def _sdk(endpoint: Endpoint) -> Transport:
    from .sdk import SdkTransport

    return SdkTransport(endpoint)


def _responses(endpoint: Endpoint) -> Transport:
    from .responses import ResponsesTransport

    return ResponsesTransport(endpoint)


#: Transports by name, each with the function that makes one for an endpoint.
TRANSPORTS: dict[str, Callable[[Endpoint], Transport]] = {"lean": _lean, "aiohttp": _aiohttp, "sdk": _sdk, "responses": _responses}

DEFAULT_TRANSPORT = "lean"


def open_transport(name: str, endpoint: Endpoint) -> Transport:
    """The transport called ``name`` for ``endpoint`` (its module is imported now); ValueError
    for an unknown name."""
    try:
        make = TRANSPORTS[name]
    except KeyError:
        raise ValueError(f"unknown transport {name!r}; use one of {', '.join(TRANSPORTS)}") from None
    return make(endpoint)

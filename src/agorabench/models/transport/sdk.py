"""The ``sdk`` transport: the official ``openai`` SDK, over its aiohttp transport where that
extra is installed (it holds far more requests in flight than the default httpx one). Response
bodies are bounded as in the other transports (:data:`~agorabench.models.http11.MAX_BODY`, as
sent and once decoded), by wrapping the SDK client's own transport."""

from __future__ import annotations

import zlib
from typing import Any

import openai

from ..base import BackendError, Completion
from ..errors import sdk_error
from ..http11 import MAX_BODY, BodyTooLarge, ProtocolError
from . import Endpoint
from .wire import completion_from_json


class SdkTransport:
    name = "sdk"

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        kwargs: dict[str, Any] = {"base_url": endpoint.client_url, "api_key": endpoint.api_key, "max_retries": 0, "timeout": endpoint.timeout}
        if endpoint.basic_auth:
            kwargs["default_headers"] = {"Authorization": endpoint.basic_auth}
        http_client = _aiohttp_client()
        if http_client is not None:
            _bound_bodies(http_client)
            kwargs["http_client"] = http_client
        self.client = openai.AsyncOpenAI(**kwargs)

    async def send(self, request: dict[str, Any]) -> Completion:
        try:
            resp = await self.client.chat.completions.create(**request)
        except Exception as exc:
            known = self.classify(exc)
            if known is None:
                raise
            raise known from None
        if not hasattr(resp, "choices"):  # the SDK hands back the raw body when it is not JSON
            raise BackendError("the server answered with a page that is not a chat completion (HTML?)", retryable=True)
        if not resp.choices:
            raise BackendError("the server returned no choices", retryable=True)
        # one reading of answers for every transport; pydantic's serializer warnings off: a
        # usage of odd types ("12", NaN, [3]) is said once per model, in our words (usage_dropped)
        return completion_from_json(resp.model_dump(warnings=False))

    def classify(self, exc: BaseException) -> BackendError | None:
        if isinstance(exc, (openai.APIError, ValueError)):
            return sdk_error(exc, openai, self.endpoint.base_url)
        return None

    async def aclose(self) -> None:
        await self.client.close()


def _aiohttp_client() -> Any:
    """The SDK's aiohttp client, or None when the extra is not installed."""
    try:
        from openai import DefaultAioHttpClient

        return DefaultAioHttpClient()
    except Exception:
        return None


def _bound_bodies(client: Any) -> None:
    """Put :class:`_BoundedTransport` around the SDK client's transport; a client without the
    expected attribute is left alone."""
    inner = getattr(client, "_transport", None)
    if inner is not None and hasattr(inner, "handle_async_request"):
        client._transport = _BoundedTransport(inner)


class _BoundedTransport:
    """An httpx-style transport that decodes the bodies of another's responses itself and
    bounds them."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def handle_async_request(self, request: Any) -> Any:
        resp = await self.inner.handle_async_request(request)
        encoding = resp.headers.get("content-encoding", "identity").lower()
        headers = [(k, v) for k, v in resp.headers.raw if k.lower() != b"content-encoding"]
        # the client checks the stream's class: derive from the httpx module's own base class
        base = next((c for c in type(resp.stream).__mro__ if c.__name__ == "AsyncByteStream"), object)
        return type(resp)(resp.status_code, headers=headers, stream=_stream_class(base)(resp.stream, encoding), request=request, extensions=resp.extensions)

    async def aclose(self) -> None:
        await self.inner.aclose()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


_STREAM_CLASSES: dict[type, type] = {}


def _stream_class(base: type) -> type:
    """:class:`_BoundedStream`, made a subclass of ``base`` (httpx's ``AsyncByteStream``)."""
    if base not in _STREAM_CLASSES:
        _STREAM_CLASSES[base] = _BoundedStream if base is object else type("BoundedStream", (_BoundedStream, base), {})
    return _STREAM_CLASSES[base]


class _BoundedStream:
    """One response body, decoded as it arrives; BodyTooLarge once it passes the bound."""

    def __init__(self, inner: Any, encoding: str) -> None:
        self.inner, self.encoding, self.limit = inner, encoding, MAX_BODY
        compressed = encoding in ("gzip", "x-gzip", "deflate")
        self.inflater = zlib.decompressobj(47 if "gzip" in encoding else zlib.MAX_WBITS) if compressed else None

    async def __aiter__(self):
        sent = decoded = 0
        async for piece in self.inner:
            sent += len(piece)
            if sent > self.limit:
                raise BodyTooLarge(f"the server sent more than {self.limit} bytes of body")
            if self.inflater is not None:
                try:
                    piece = self.inflater.decompress(piece, self.limit - decoded + 1)
                except zlib.error as exc:
                    raise ProtocolError(f"a {self.encoding} body that does not decode: {exc}") from None
                if self.inflater.unconsumed_tail:
                    raise BodyTooLarge(f"a {self.encoding} body that decodes to more than {self.limit} bytes")
            decoded += len(piece)
            if decoded > self.limit:
                raise BodyTooLarge(f"a body that decodes to more than {self.limit} bytes")
            yield piece

    async def aclose(self) -> None:
        await self.inner.aclose()

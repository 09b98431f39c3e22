"""The chat-completions wire format as the HTTP transports (``lean``, ``aiohttp``) speak it:
one flat JSON body out (orjson where installed), one JSON answer back, read without response
models. A transport built on it supplies only ``_post``: bytes out, (status, headers, bytes) in."""

from __future__ import annotations

import json
from typing import Any, Mapping

try:
    import orjson

    dumps, loads = orjson.dumps, orjson.loads
except ImportError:  # pragma: no cover - orjson is a dependency; plain json still works
    dumps, loads = (lambda v: json.dumps(v).encode()), json.loads

from ..base import BackendError, Completion
from ..errors import error_message, status_error
from . import Endpoint


def flat_body(request: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON body of an SDK-shaped request: ``extra_body``'s fields at the top level."""
    body = {k: v for k, v in request.items() if k != "extra_body"}
    body.update(request.get("extra_body") or {})
    return body


def completion_from_json(data: Mapping[str, Any], latency: float = 0.0) -> Completion:
    """A chat-completions answer as a :class:`Completion`, with prompt-cache hits from
    ``usage.prompt_tokens_details.cached_tokens`` where the server reports them."""
    choices = data.get("choices") or []
    if not choices:
        raise BackendError("the server returned no choices", retryable=True)
    choice = choices[0]
    usage = data.get("usage") or {}
    details = usage.get("prompt_tokens_details") or {}
    return Completion(
        text=(choice.get("message") or {}).get("content") or "",
        prompt_tokens=usage.get("prompt_tokens") or 0,
        completion_tokens=usage.get("completion_tokens") or 0,
        cached_tokens=details.get("cached_tokens") or 0,
        latency=latency,
        finish_reason=choice.get("finish_reason") or "stop",
    )


def read_answer(status: int, headers: Mapping[str, str], raw: bytes) -> Completion:
    """The completion in an answer, or the BackendError its status or body amounts to."""
    try:
        data = loads(raw)
    except ValueError:
        try:  # orjson refuses lone surrogates (half an emoji); json reads them, and the model
            data = json.loads(raw)  # boundary sanitises the reply
        except ValueError:
            data = None
    if status != 200:
        raise status_error(status, error_message(data, raw), headers)
    if not isinstance(data, dict):
        raise BackendError("the server's answer was cut off or malformed (not a JSON object; an HTML page?)", retryable=True)
    return completion_from_json(data)


class HttpTransport:
    """What the HTTP transports share: building the body, reading the answer, and turning the
    client's exceptions into BackendErrors through ``classify``."""

    name = "http"

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self.url = endpoint.chat_url
        self.headers = endpoint.headers
        self.timeout = endpoint.timeout

    async def send(self, request: dict[str, Any]) -> Completion:
        body = dumps(flat_body(request))
        try:
            status, headers, raw = await self._post(body)
        except BackendError:
            raise
        except Exception as exc:
            known = self.classify(exc)
            if known is None:
                raise
            raise known from None
        return read_answer(status, headers, raw)

    async def _post(self, body: bytes) -> tuple[int, Mapping[str, str], bytes]:  # pragma: no cover - abstract
        raise NotImplementedError

    def classify(self, exc: BaseException) -> BackendError | None:  # pragma: no cover - abstract
        return None

    async def aclose(self) -> None:  # pragma: no cover - abstract
        return None

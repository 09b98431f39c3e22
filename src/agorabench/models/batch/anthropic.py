"""Anthropic's Message Batches.

A batch is posted inline, ``POST /v1/messages/batches`` with
``{"requests": [{"custom_id", "params": <the live Messages request>}]}`` (headers ``x-api-key``
and ``anthropic-version: 2023-06-01``); ``GET /v1/messages/batches/{id}`` says its
``processing_status`` (``in_progress``, ``canceling``, ``ended``) and ``request_counts``
(``processing``, ``succeeded``, ``errored``, ``canceled``, ``expired``); once it has ended its
``results_url`` serves JSONL lines ``{"custom_id", "result": {"type": "succeeded" | "errored" |
"canceled" | "expired", "message" | "error"}}`` in any order; ``POST .../cancel`` stops it.
Limits: 100,000 requests and 256 MB a batch; a custom_id matches ``^[a-zA-Z0-9_-]{1,64}$``.

An item's ``params`` are the live call's body
(:func:`~agorabench.models.anthropic.messages_params`, cache breakpoints and their TTL included), and a
succeeded item's message is read as the live backend reads one
(:func:`~agorabench.models.anthropic.completion_from_message`).
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from ...redact import redact
from ..anthropic import cache_control, completion_from_message, messages_params
from ..base import BackendError, Completion, GenerationSettings
from ..credentials import api_key_from_env
from ..transport.wire import dumps, loads
from .base import BatchItem, BatchState, ItemFailure, unique_items
from ._http import BatchHttp, one_line

#: Where the API is when a model names no base URL.
DEFAULT_ROOT = "https://api.anthropic.com"
#: The API version every call names (the SDK's).
API_VERSION = "2023-06-01"
#: What a custom_id may be.
CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
#: Error types of an errored item that another attempt may get past.
_TRANSIENT = frozenset({"api_error", "overloaded_error", "rate_limit_error", "timeout_error"})
_COUNTS = ("processing", "succeeded", "errored", "canceled", "expired")


class AnthropicBatchClient:
    """The Message Batches API of one model."""

    provider = "anthropic"
    max_requests = 100_000
    max_bytes = 256_000_000

    def __init__(self, model: str, *, base_url: str | None = None, api_key_env: str = "ANTHROPIC_API_KEY", timeout: float = 120.0, prompt_caching: bool = True, cache_ttl: str = "5m") -> None:
        self.model = model
        self.prompt_caching = prompt_caching
        try:
            cache_control(cache_ttl)
        except ValueError as exc:
            raise BackendError(str(exc), retryable=False) from None
        #: The breakpoints' lifetime, as the live backend's ("1h" suits batches, whose requests
        #: may run far apart).
        self.cache_ttl = cache_ttl
        if base_url is not None and base_url.rstrip("/").endswith("/v1"):
            base_url = base_url.rstrip("/")[: -len("/v1")]  # as the live backend (the SDK adds /v1)
        self.base_url = base_url
        # the live backend's identity (AnthropicBackend): the response cache keys agree
        self.identity = f"anthropic:{redact(base_url or 'default')}:{model}"
        api_key = api_key_from_env(model, base_url, api_key_env)
        headers = {"x-api-key": api_key, "anthropic-version": API_VERSION}
        self.http = BatchHttp((base_url or DEFAULT_ROOT).rstrip("/") + "/v1", headers, timeout, base_url)
        self._sent: dict[str, list[str]] = {}

    # -- requests

    def params(self, item: BatchItem) -> dict[str, Any]:
        """The live call's body for ``item``."""
        return messages_params(self.model, item.messages, item.settings, self.prompt_caching, self.cache_ttl)

    def encode(self, item: BatchItem) -> bytes:
        """``item`` as one entry of the batch's ``requests``."""
        return dumps({"custom_id": item.custom_id, "params": self.params(item)})

    def check(self, settings: GenerationSettings) -> str | None:
        """Message Batches take whatever a live call takes."""
        return None

    async def submit(self, items: list[BatchItem]) -> str:
        """Post ``items`` as one batch; its id. BackendError (not retryable) for a custom_id the
        API would refuse or items over the limits."""
        items = unique_items(items)
        if not items:
            raise BackendError("a batch needs at least one request", retryable=False)
        bad = next((i.custom_id for i in items if not CUSTOM_ID.match(i.custom_id)), None)
        if bad is not None:
            raise BackendError(f"custom_id {one_line(bad, 80)!r} is not 1 to 64 letters, digits, '_' or '-', as Anthropic's batches require", retryable=False)
        if len(items) > self.max_requests:
            raise BackendError(f"{len(items):,} requests exceed an Anthropic batch's {self.max_requests:,} (split them with split_items)", retryable=False)
        body = b'{"requests":[' + b",".join(self.encode(item) for item in items) + b"]}"
        if len(body) > self.max_bytes:
            raise BackendError(f"{len(body):,} bytes of requests exceed an Anthropic batch's {self.max_bytes:,} (split them with split_items)", retryable=False)
        batch = await self.http.call("POST", "/messages/batches", body=body, transfer=True)
        batch_id = batch.get("id")
        if not isinstance(batch_id, str) or not batch_id:
            raise BackendError("the provider's answer to the batch's creation named no batch id", retryable=True)
        self._sent[batch_id] = [item.custom_id for item in items]
        return batch_id

    # -- state

    async def _batch(self, batch_id: str) -> dict[str, Any]:
        return await self.http.call("GET", f"/messages/batches/{batch_id}", batch_id=f"batch {batch_id}")

    async def poll(self, batch_id: str) -> BatchState:
        """The batch's processing status and request counts (a Message Batch never fails as a
        whole: its requests fail one by one)."""
        return self._state(batch_id, await self._batch(batch_id))

    @staticmethod
    def _state(batch_id: str, data: Mapping[str, Any]) -> BatchState:
        status = str(data.get("processing_status") or "unknown")
        raw = data.get("request_counts") if isinstance(data.get("request_counts"), Mapping) else {}
        counts = {name: _count(raw, name) for name in _COUNTS}
        counts["total"] = sum(counts.values())
        return BatchState(batch_id, status, status == "ended", counts)

    # -- results

    async def results(self, batch_id: str) -> dict[str, Completion | ItemFailure]:
        """Every result of the ended batch by custom_id (read from its ``results_url`` line by
        line, in any order); a request this client sent that the results leave out is
        ``missing``. BackendError while the batch has not ended."""
        data = await self._batch(batch_id)
        state = self._state(batch_id, data)
        url = data.get("results_url")
        if not state.ended or not isinstance(url, str) or not url:
            raise BackendError(f"batch {batch_id} is still {state.status}: its results can be read once it has ended", retryable=True)
        out: dict[str, Completion | ItemFailure] = {}
        async for line in self.http.lines(url, batch_id=f"results of batch {batch_id}"):
            read = _line(line, batch_id)
            if read is not None:
                out[read[0]] = read[1]
        for custom_id in self._sent.get(batch_id, []):
            if custom_id not in out:
                out[custom_id] = ItemFailure("missing", "the batch ended without a result for this request", retry=True)
        return out

    async def cancel(self, batch_id: str) -> None:
        """Ask the provider to stop the batch (it goes ``canceling``, then ``ended`` with the
        requests not yet run ``canceled``)."""
        await self.http.call("POST", f"/messages/batches/{batch_id}/cancel", batch_id=f"batch {batch_id}")

    async def aclose(self) -> None:
        await self.http.aclose()


def _line(line: bytes, batch_id: str) -> tuple[str, Completion | ItemFailure] | None:
    """(custom_id, answer or failure) of one results line; None for one that names no request."""
    try:
        obj = loads(line)
    except ValueError:
        return None
    if not isinstance(obj, Mapping) or not isinstance(obj.get("custom_id"), str):
        return None
    custom_id = obj["custom_id"]
    result = obj.get("result") if isinstance(obj.get("result"), Mapping) else {}
    kind = result.get("type")
    if kind == "succeeded" and isinstance(result.get("message"), Mapping):
        completion = completion_from_message(dict(result["message"]))
        completion.extra["service_tier"] = "batch"
        completion.extra["batch_id"] = batch_id
        return custom_id, completion
    if kind == "expired":
        return custom_id, ItemFailure("expired", "the batch's 24 hours ran out before this request was processed", retry=True)
    if kind == "canceled":
        return custom_id, ItemFailure("canceled", "the batch was canceled before this request was processed", retry=True)
    error = result.get("error") if isinstance(result.get("error"), Mapping) else {}
    if isinstance(error.get("error"), Mapping):  # {"type": "error", "error": {"type", "message"}}
        error = error["error"]
    error_type = str(error.get("type") or "error")
    message = one_line(f"{error_type}: {error.get('message') or 'no message'}")
    return custom_id, ItemFailure("errored", message, retry=error_type in _TRANSIENT)


def _count(counts: Mapping[str, Any], name: str) -> int:
    value = counts.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0

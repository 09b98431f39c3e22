"""OpenAI's Batch API, and Gemini's OpenAI-compatible one (the same routes below Gemini's
``/v1beta/openai`` base URL).

A batch is a JSONL file uploaded with purpose ``batch``, one request a line::

    {"custom_id": ..., "method": "POST", "url": "/v1/chat/completions", "body": <the live body>}

then ``POST /batches`` with the file's id, the endpoint and the ``24h`` window. A batch moves
through ``validating``, ``in_progress``, ``finalizing`` to ``completed`` (or ``failed`` when its
file is refused, ``expired`` when the window passed, ``cancelling`` / ``cancelled``); its
``output_file_id`` holds the answers (``{"custom_id", "response": {"status_code", "body"}}``) and
its ``error_file_id`` the failures (a non-200 ``response``, or an ``error`` whose code is
``batch_expired``, ``batch_cancelled`` or ``request_timeout``), in any order. Limits: 50,000
requests and 200 MB a file, one model a file.

The body of each line is the live call's (:func:`~agorabench.models.openai_compat.chat_request`,
flattened as the HTTP transports send it; with ``transport = "responses"``, the Responses API's
body on ``/v1/responses``), and the answers are read by the live readers. Two hints of live
calls are left out: ``service_tier`` (a batch is its own tier) and ``prompt_cache_key`` (made from
the decision a call is for, which an item does not carry); neither touches the messages.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Mapping

import aiohttp

from ...redact import redact
from ..base import BackendError, Completion, GenerationSettings
from ..credentials import api_key_from_env, split_credentials
from ..openai_compat import chat_request
from ..transport import DEFAULT_API_URL
from ..transport.responses import completion_from_response, responses_body
from ..transport.wire import completion_from_json, dumps, flat_body, loads
from .base import BatchItem, BatchState, ItemFailure, unique_items
from ._http import BatchHttp, error_text, http_error, one_line

#: Statuses after which a batch changes no more.
ENDED = frozenset({"completed", "failed", "expired", "cancelled"})
#: Error codes of a request the batch never ran, and what they make of the item.
_NOT_RUN = {"batch_expired": "expired", "batch_cancelled": "canceled"}
#: Error codes (and messages) of a passing fault: the request may be asked again.
_TRANSIENT = re.compile(r"timeout|server_error|rate_limit|overloaded|unavailable|internal", re.I)


def gemini_batch_problem(settings: GenerationSettings) -> str | None:
    """Why Gemini's batch mode refuses ``settings`` (it takes no thinking settings): a model that
    reasons must have its thinking off (``thinking = "off"`` or ``reasoning_effort = "none"``);
    None when the settings ask for no thinking."""
    off = settings.thinking == "off" or settings.reasoning_effort == "none"
    if off:
        return None
    if settings.reasoning or settings.thinking is not None or settings.reasoning_effort is not None or settings.reasoning_budget is not None:
        return 'Gemini\'s batch mode takes no thinking settings: set thinking = "off" (or reasoning = false) for this model, or run it without batch'
    return None


class OpenAIBatchClient:
    """The Batch API of one model behind OpenAI's (or Gemini's OpenAI-compatible) routes.
    Gemini's compatible layer states no limits of its own (its native batch mode takes input
    files up to 2 GB); a Gemini client keeps OpenAI's, which hold a file in memory comfortably."""

    max_requests = 50_000
    max_bytes = 200_000_000

    def __init__(self, model: str, *, provider: str = "openai", base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY", timeout: float = 120.0, dialect: str = "openai", transport: str = "lean", key_required: bool | None = None, reasoning_summary: str = "auto") -> None:
        self.provider = provider
        #: The reasoning summary a Responses item asks for (the live transport's setting).
        self.reasoning_summary = reasoning_summary
        self.model = model
        self.dialect = dialect
        self.base_url = base_url
        # the live backend's identity (ChatCompletionsBackend): the response cache keys agree
        self.identity = f"openai:{redact(base_url or 'default')}:{model}"
        required = base_url is None if key_required is None else key_required
        api_key = api_key_from_env(model, None if required else base_url, api_key_env)
        client_url, basic_auth = split_credentials(base_url)
        self.responses = transport == "responses"
        #: The route every line of this client's files names.
        self.endpoint = "/v1/responses" if self.responses else "/v1/chat/completions"
        self._read: Callable[[Mapping[str, Any]], Completion] = completion_from_response if self.responses else completion_from_json
        self.http = BatchHttp(client_url or DEFAULT_API_URL, {"Authorization": basic_auth or f"Bearer {api_key}"}, timeout, base_url)
        #: custom_ids of the batches this client sent, by batch id (to name the missing ones).
        self._sent: dict[str, list[str]] = {}

    # -- requests

    def body(self, item: BatchItem) -> dict[str, Any]:
        """The live call's JSON body for ``item``."""
        request = chat_request(self.model, self.dialect, item.messages, item.settings)
        return responses_body(request, self.reasoning_summary) if self.responses else flat_body(request)

    def encode(self, item: BatchItem) -> bytes:
        """``item``'s line of the input file (without its newline)."""
        return dumps({"custom_id": item.custom_id, "method": "POST", "url": self.endpoint, "body": self.body(item)})

    def check(self, settings: GenerationSettings) -> str | None:
        """Gemini's batch mode takes no thinking settings (:func:`gemini_batch_problem`);
        OpenAI's takes whatever a live call takes."""
        return gemini_batch_problem(settings) if self.provider == "gemini" else None

    async def submit(self, items: list[BatchItem]) -> str:
        """Upload ``items`` as one JSONL file and make a batch of it; the batch's id."""
        items = unique_items(items)
        if not items:
            raise BackendError("a batch needs at least one request", retryable=False)
        for item in items:
            problem = self.check(item.settings)
            if problem:
                raise BackendError(problem, retryable=False)
        if len(items) > self.max_requests:
            raise BackendError(f"{len(items):,} requests exceed a {self.provider} batch's {self.max_requests:,} (split them with split_items)", retryable=False)
        data = b"\n".join(self.encode(item) for item in items) + b"\n"
        if len(data) > self.max_bytes:
            raise BackendError(f"{len(data):,} bytes of requests exceed a {self.provider} batch file's {self.max_bytes:,} (split them with split_items)", retryable=False)
        form = aiohttp.FormData()
        form.add_field("purpose", "batch")
        form.add_field("file", data, filename="agorabench-batch.jsonl", content_type="application/jsonl")
        uploaded = await self.http.call("POST", "/files", form=form, transfer=True)
        file_id = uploaded.get("id")
        if not isinstance(file_id, str) or not file_id:
            raise BackendError("the provider's answer to the file upload named no file id", retryable=True)
        batch = await self.http.call("POST", "/batches", json={"input_file_id": file_id, "endpoint": self.endpoint, "completion_window": "24h"})
        batch_id = batch.get("id")
        if not isinstance(batch_id, str) or not batch_id:
            raise BackendError("the provider's answer to the batch's creation named no batch id", retryable=True)
        self._sent[batch_id] = [item.custom_id for item in items]
        return batch_id

    # -- state

    async def _batch(self, batch_id: str) -> dict[str, Any]:
        return await self.http.call("GET", f"/batches/{batch_id}", batch_id=f"batch {batch_id}")

    async def poll(self, batch_id: str) -> BatchState:
        """The batch's status and request counts (``failed``: the provider's reasons, one line)."""
        return self._state(batch_id, await self._batch(batch_id))

    def _state(self, batch_id: str, data: Mapping[str, Any]) -> BatchState:
        status = str(data.get("status") or "unknown")
        raw = data.get("request_counts") if isinstance(data.get("request_counts"), Mapping) else {}
        total, done, failed = (_count(raw, k) for k in ("total", "completed", "failed"))
        ended = status in ENDED
        counts = {"total": total, "succeeded": done, "errored": failed, "processing": 0 if ended else max(total - done - failed, 0)}
        reason = None
        if status == "failed":
            errors = data.get("errors") if isinstance(data.get("errors"), Mapping) else {}
            found = [one_line(e.get("message") or e.get("code") or "") for e in errors.get("data") or [] if isinstance(e, Mapping)]
            reason = one_line("; ".join(m for m in found if m) or "the provider gave no reason")
        return BatchState(batch_id, status, ended, counts, reason)

    # -- results

    async def results(self, batch_id: str) -> dict[str, Completion | ItemFailure]:
        """Every answer and failure of the ended batch by custom_id (the output and error files
        read line by line, in any order); a request this client sent that neither file names is
        ``missing``. BackendError while the batch has not ended."""
        data = await self._batch(batch_id)
        state = self._state(batch_id, data)
        if not state.ended:
            raise BackendError(f"batch {batch_id} is still {state.status}: its results can be read once it has ended", retryable=True)
        out: dict[str, Completion | ItemFailure] = {}
        for key in ("output_file_id", "error_file_id"):
            file_id = data.get(key)
            if isinstance(file_id, str) and file_id:
                async for line in self.http.lines(f"/files/{file_id}/content", batch_id=f"file {file_id} of batch {batch_id}"):
                    read = self._line(line, batch_id)
                    if read is not None:
                        out[read[0]] = read[1]
        if state.failed is None:
            for custom_id in self._sent.get(batch_id, []):
                if custom_id not in out:
                    out[custom_id] = ItemFailure("missing", "the batch ended without a result for this request", retry=True)
        return out

    def _line(self, line: bytes, batch_id: str) -> tuple[str, Completion | ItemFailure] | None:
        """(custom_id, answer or failure) of one line of an output or error file; None for a
        line that names no request."""
        try:
            obj = loads(line)
        except ValueError:
            return None
        if not isinstance(obj, Mapping) or not isinstance(obj.get("custom_id"), str):
            return None
        custom_id = obj["custom_id"]
        response = obj.get("response") if isinstance(obj.get("response"), Mapping) else None
        error = obj.get("error") if isinstance(obj.get("error"), Mapping) else None
        if response is not None and response.get("status_code") == 200 and isinstance(response.get("body"), Mapping):
            try:
                completion = self._read(response["body"])
            except BackendError as exc:
                return custom_id, ItemFailure("errored", one_line(exc), exc.retryable)
            completion.extra["service_tier"] = "batch"
            completion.extra["batch_id"] = batch_id
            return custom_id, completion
        if response is not None and isinstance(response.get("status_code"), int):
            failure = http_error(response["status_code"], error_text(response.get("body")), None)
            return custom_id, ItemFailure("errored", one_line(failure), failure.retryable)
        code = str((error or {}).get("code") or "")
        message = one_line((error or {}).get("message") or code or "no answer and no reason")
        if code in _NOT_RUN:
            return custom_id, ItemFailure(_NOT_RUN[code], message, retry=True)
        return custom_id, ItemFailure("errored", message, retry=bool(_TRANSIENT.search(code + " " + message)))

    async def cancel(self, batch_id: str) -> None:
        """Ask the provider to stop the batch (it goes ``cancelling``, then ``cancelled``)."""
        await self.http.call("POST", f"/batches/{batch_id}/cancel", batch_id=f"batch {batch_id}")

    async def aclose(self) -> None:
        await self.http.aclose()


def _count(counts: Mapping[str, Any], name: str) -> int:
    value = counts.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0

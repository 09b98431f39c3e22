"""Loopback servers on 127.0.0.1 that behave like the providers' batch APIs, beside the live
routes of ``providers.py`` (same process, same answers: an item of a batch is answered by the
function that answers the live call, so a batch answer equals the live one for the same request).

Run as ``python tests/support/batch_servers.py PORT --provider NAME`` or, in a test,
``with batch_server("openai") as base_url: ...``. Providers:

- ``openai``: the Batch API below ``/v1``: ``POST /files`` (multipart, ``purpose=batch``; a file
  over the byte or request limit is refused with 400), ``POST /batches`` (``input_file_id``,
  ``endpoint``, ``completion_window: "24h"``), ``GET /batches/{id}``, ``POST /batches/{id}/cancel``,
  ``GET /files/{id}/content``. A batch is ``validating`` at first; its file is checked then (each
  line JSON with a ``custom_id`` used once, ``method: POST``, the batch's ``url``, one model in the
  whole file): a file that fails makes the batch ``failed`` with ``errors.data``. It ends
  (``completed``, ``expired``, ``cancelled``) at the poll the behaviour names; answers go to the
  output file, refusals (a non-200 ``response``) and requests never run (``error.code``
  ``batch_expired`` / ``batch_cancelled``) to the error file, each file in shuffled order;
- ``gemini``: the same routes below ``/v1beta/openai`` (and ``/v1``), answered by the Gemini
  loopback, errors in Gemini's list form;
- ``anthropic``: Message Batches below ``/v1``: ``POST /messages/batches`` (``requests`` of
  ``{custom_id, params}``; more than the request limit or an id not matching
  ``^[a-zA-Z0-9_-]{1,64}$`` or used twice: 400; more bytes than the limit: 413),
  ``GET /messages/batches/{id}`` (``processing_status`` ``in_progress`` / ``canceling`` /
  ``ended``, ``request_counts``, ``results_url`` once ended), ``GET .../results`` (JSONL of
  ``{custom_id, result: {type: succeeded | errored | canceled | expired, ...}}``, shuffled),
  ``POST .../cancel``. ``x-api-key`` and ``anthropic-version`` are required.

Behaviour (``POST /control`` with a JSON object, or :func:`control`; each batch keeps what was
set when it was created; ``{"reset": true}`` restores the defaults): ``polls`` (polls until the
batch ends, default 2), ``errors`` (custom_id -> ``[status, message]`` for OpenAI/Gemini,
``[error type, message]`` for Anthropic: that item fails so), ``expire`` (custom_ids, or
``"all"``: never run before the window passed), ``fail`` (a message: the OpenAI/Gemini batch
fails as a whole with it), ``cancel_done`` (items answered before a cancel took effect),
``key`` (the only key accepted; others get 401), ``max_requests`` / ``max_bytes`` (limits, the
provider's by default), ``shuffle`` (default true), ``refuse`` (``[status, message, count]``: the
next ``count`` calls of the batch routes are refused so, in the provider's error shape; a 429
says ``retry-after: 1``), ``drop`` (custom_ids the finished batch leaves out of every
file: a provider's lapse, for the clients' ``missing``).

``GET /stats`` counts the live routes' requests (as ``providers.py`` does) and the batch
routes': ``batches_created``, ``files_uploaded``, ``polls``, ``cancels``, ``downloads``,
``refused_batch`` (4xx of batch routes); ``?bodies=1`` adds the live request bodies (``bodies``)
and every batch item's request body in the order received (``batch_bodies``), so a test can
check that a batch carries exactly what the live call sends and that nothing was sent twice.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import re
import time
import urllib.request
from collections import deque
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import urlsplit

from aiohttp import web

try:
    from .helpers import serving
    from .providers import RESPOND, _anthropic_error, _gemini_error, _openai_error, _Refused, make_app
except ImportError:  # run as a script: tests/support is the first entry of sys.path
    from helpers import serving  # type: ignore[no-redef]
    from providers import RESPOND, _anthropic_error, _gemini_error, _openai_error, _Refused, make_app  # type: ignore[no-redef]

PROVIDERS = ("openai", "anthropic", "gemini")

#: Each provider's documented limits: (requests, bytes) of one batch.
LIMITS = {"openai": (50_000, 200_000_000), "gemini": (50_000, 2_000_000_000), "anthropic": (100_000, 256_000_000)}

#: Where each provider's batch routes are (the base URL :func:`batch_server` yields comes first).
PREFIXES = {"openai": ["/v1"], "gemini": ["/v1beta/openai", "/v1"], "anthropic": ["/v1"]}

DEFAULTS: dict[str, Any] = {
    "polls": 2,
    "errors": {},
    "expire": [],
    "fail": None,
    "cancel_done": 0,
    "key": None,
    "max_requests": None,
    "max_bytes": None,
    "shuffle": True,
    "refuse": None,
    "drop": [],
}

ENDPOINTS = ("/v1/chat/completions", "/v1/responses", "/v1/embeddings", "/v1/completions")
CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + "Z"


def make_batch_app(provider: str, keep_bodies: int = 2000, seed: int = 7, **live_opts: Any) -> web.Application:
    """The aiohttp application of one provider's batch API and its live routes (``live_opts``:
    :func:`providers.make_app`'s options)."""
    if provider not in PROVIDERS:
        raise ValueError(f"unknown provider {provider!r}; expected one of {', '.join(PROVIDERS)}")
    live = make_app(provider, keep_bodies=keep_bodies, **live_opts)
    respond = live[RESPOND]
    rng = random.Random(seed)
    state: dict[str, Any] = {
        "behaviour": json.loads(json.dumps(DEFAULTS)),
        "files": {},
        "batches": {},
        "counters": {"batches_created": 0, "files_uploaded": 0, "polls": 0, "cancels": 0, "downloads": 0, "refused_batch": 0},
        "items": deque(maxlen=keep_bodies),
        "served": 0,
    }
    limit_requests, limit_bytes = LIMITS[provider]

    def limits(b: dict[str, Any]) -> tuple[int, int]:
        return b.get("max_requests") or limit_requests, b.get("max_bytes") or limit_bytes

    def next_id(prefix: str) -> str:
        state["served"] += 1
        return f"{prefix}{state['served']:06d}{rng.getrandbits(48):012x}"

    # ---- errors in each provider's shape

    def refusal(status: int, message: str, kind: str = "invalid_request_error", param: str | None = None, code: str | None = None) -> _Refused:
        if provider == "anthropic":
            return _anthropic_error(status, message, kind)
        if provider == "gemini":
            return _gemini_error(status, message)
        return _openai_error(status, message, param, code, kind)

    def reply(refused: _Refused) -> web.Response:
        state["counters"]["refused_batch"] += 1
        headers = {"retry-after": "1"} if refused.status == 429 else None
        return web.json_response(refused.body, status=refused.status, headers=headers)

    def check_key(request: web.Request) -> None:
        key = state["behaviour"].get("key")
        if provider == "anthropic":
            given = request.headers.get("x-api-key")
            if not given:
                raise refusal(401, "x-api-key header is required", "authentication_error")
            if key is not None and given != key:
                raise refusal(401, "invalid x-api-key", "authentication_error")
            if not request.headers.get("anthropic-version"):
                raise refusal(400, "anthropic-version: header is required")
            return
        auth = request.headers.get("Authorization", "")
        given = auth[len("Bearer ") :] if auth.startswith("Bearer ") else None
        if not given:
            raise refusal(401, "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth.", code="missing_api_key")
        if key is not None and given != key:
            shown = given[:3] + "*" * 4 + given[-4:] if len(given) > 8 else "****"
            raise refusal(401, f"Incorrect API key provided: {shown}. You can find your API key at https://platform.openai.com/account/api-keys.", code="invalid_api_key")

    def outage() -> None:
        refuse = state["behaviour"].get("refuse")
        if refuse and int(refuse[2]) > 0:
            refuse[2] = int(refuse[2]) - 1
            status = int(refuse[0])
            kinds = {429: "rate_limit_error", 529: "overloaded_error"}
            raise refusal(status, str(refuse[1]), kinds.get(status, "api_error" if status >= 500 else "invalid_request_error"))

    def guarded(handler):
        async def run(request: web.Request) -> web.Response:
            try:
                outage()
                check_key(request)
                return await handler(request)
            except _Refused as refused:
                return reply(refused)

        return run

    # ---- OpenAI and Gemini: files and batches

    async def upload(request: web.Request) -> web.Response:
        form = await request.post()
        if form.get("purpose") != "batch":
            raise refusal(400, "'purpose' must be 'batch' for a batch input file." if form.get("purpose") else "Missing required parameter: 'purpose'.", param="purpose")
        field = form.get("file")
        if field is None or not hasattr(field, "file"):
            raise refusal(400, "Missing required parameter: 'file'.", param="file")
        data = field.file.read()
        max_requests, max_bytes = limits(state["behaviour"])
        if len(data) > max_bytes:
            raise refusal(400, f"File is too large: {len(data)} bytes; a batch input file may hold at most {max_bytes} bytes.", param="file")
        lines = [line for line in data.split(b"\n") if line.strip()]
        if len(lines) > max_requests:
            raise refusal(400, f"The file holds {len(lines)} requests; a batch input file may hold at most {max_requests}.", param="file")
        file_id = next_id("file-")
        state["files"][file_id] = {"data": data, "filename": getattr(field, "filename", "upload.jsonl"), "purpose": "batch"}
        state["counters"]["files_uploaded"] += 1
        return web.json_response(file_object(file_id))

    def file_object(file_id: str) -> dict[str, Any]:
        f = state["files"][file_id]
        return {"id": file_id, "object": "file", "bytes": len(f["data"]), "created_at": int(time.time()), "filename": f["filename"], "purpose": f["purpose"], "status": "processed", "status_details": None}

    async def file_info(request: web.Request) -> web.Response:
        file_id = request.match_info["file_id"]
        if file_id not in state["files"]:
            raise refusal(404, f"No such File object: {file_id}", param="id")
        return web.json_response(file_object(file_id))

    async def file_content(request: web.Request) -> web.Response:
        file_id = request.match_info["file_id"]
        if file_id not in state["files"]:
            raise refusal(404, f"No such File object: {file_id}", param="id")
        state["counters"]["downloads"] += 1
        return web.Response(body=state["files"][file_id]["data"], content_type="application/octet-stream")

    def validate(data: bytes, endpoint: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """(lines, errors) of an input file as the batch's validation reads it."""
        lines, errors, seen, models = [], [], set(), set()
        for n, raw in enumerate((r for r in data.split(b"\n") if r.strip()), start=1):
            try:
                obj = json.loads(raw)
            except ValueError:
                errors.append({"code": "invalid_json_line", "message": f"Line {n} is not valid JSON.", "param": None, "line": n})
                continue
            cid = obj.get("custom_id") if isinstance(obj, dict) else None
            if not isinstance(cid, str) or not cid:
                errors.append({"code": "missing_required_parameter", "message": f"Line {n} has no custom_id.", "param": "custom_id", "line": n})
                continue
            if cid in seen:
                errors.append({"code": "duplicate_custom_id", "message": f"The custom_id {cid!r} on line {n} is used more than once in this file.", "param": "custom_id", "line": n})
            seen.add(cid)
            if obj.get("method") != "POST":
                errors.append({"code": "invalid_request", "message": f"Line {n}: the method must be POST.", "param": "method", "line": n})
            if obj.get("url") != endpoint:
                errors.append({"code": "mismatched_endpoint", "message": f"Line {n}: its url {obj.get('url')!r} is not the batch's endpoint {endpoint!r}.", "param": "url", "line": n})
            body = obj.get("body")
            if not isinstance(body, dict):
                errors.append({"code": "invalid_request", "message": f"Line {n} has no body object.", "param": "body", "line": n})
                continue
            models.add(str(body.get("model")))
            lines.append(obj)
        if len(models) > 1:
            errors.append({"code": "mismatched_model", "message": f"A batch input file may name one model; this one names {len(models)}: {', '.join(sorted(models))}.", "param": "body.model", "line": None})
        if not lines and not errors:
            errors.append({"code": "empty_file", "message": "The input file holds no requests.", "param": None, "line": None})
        return lines, errors

    async def create_openai(request: web.Request) -> web.Response:
        try:
            body = await request.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            raise refusal(400, "We could not parse the JSON body of your request.")
        file_id, endpoint, window = body.get("input_file_id"), body.get("endpoint"), body.get("completion_window")
        if window != "24h":
            raise refusal(400, f"Invalid 'completion_window': {window!r}. Only '24h' is supported.", param="completion_window")
        if endpoint not in ENDPOINTS:
            raise refusal(400, f"Invalid 'endpoint': {endpoint!r}.", param="endpoint")
        if file_id not in state["files"]:
            raise refusal(404, f"No such File object: {file_id}", param="input_file_id")
        lines, errors = validate(state["files"][file_id]["data"], endpoint)
        behaviour = json.loads(json.dumps(state["behaviour"]))
        if behaviour.get("fail"):
            errors.append({"code": "batch_failed", "message": str(behaviour["fail"]), "param": None, "line": None})
        batch_id = next_id("batch_")
        now = int(time.time())
        batch = {
            "id": batch_id, "object": "batch", "endpoint": endpoint, "errors": None, "input_file_id": file_id, "completion_window": "24h",
            "status": "validating", "output_file_id": None, "error_file_id": None, "created_at": now, "in_progress_at": None,
            "expires_at": now + 86400, "finalizing_at": None, "completed_at": None, "failed_at": None, "expired_at": None,
            "cancelling_at": None, "cancelled_at": None, "request_counts": {"total": 0, "completed": 0, "failed": 0}, "metadata": body.get("metadata"),
        }
        state["batches"][batch_id] = {"object": batch, "lines": lines, "errors": errors, "behaviour": behaviour, "seen": 0, "cancel": 0}
        for line in lines:
            state["items"].append(line.get("body"))
        state["counters"]["batches_created"] += 1
        return web.json_response(batch)

    async def finish_openai(entry: dict[str, Any]) -> None:
        batch, b = entry["object"], entry["behaviour"]
        kind = "responses" if batch["endpoint"] == "/v1/responses" else "chat"
        expire, errors = b.get("expire") or [], b.get("errors") or {}
        out, err = [], []
        expired = False
        for i, line in enumerate(entry["lines"]):
            cid = line["custom_id"]
            rid = f"req_{rng.getrandbits(64):016x}"
            if cid in (b.get("drop") or []):
                continue
            if entry["cancel"] and i >= int(b.get("cancel_done") or 0):
                err.append({"id": f"batch_req_{rid}", "custom_id": cid, "response": None, "error": {"code": "batch_cancelled", "message": "This request was not run: the batch was cancelled first."}})
            elif expire == "all" or cid in expire:
                expired = True
                err.append({"id": f"batch_req_{rid}", "custom_id": cid, "response": None, "error": {"code": "batch_expired", "message": "This request could not be run before the batch's completion window ended."}})
            elif cid in errors:
                status, message = errors[cid]
                err.append({"id": f"batch_req_{rid}", "custom_id": cid, "response": {"status_code": int(status), "request_id": rid, "body": refusal(int(status), str(message)).body}, "error": None})
            else:
                status, answer = await respond(kind, line["body"], 0)
                record = {"id": f"batch_req_{rid}", "custom_id": cid, "response": {"status_code": status, "request_id": rid, "body": answer}, "error": None}
                (out if status == 200 else err).append(record)
        if b.get("shuffle", True):
            rng.shuffle(out)
            rng.shuffle(err)
        for key, records in (("output_file_id", out), ("error_file_id", err)):
            if records:
                file_id = next_id("file-")
                state["files"][file_id] = {"data": b"".join(json.dumps(r).encode() + b"\n" for r in records), "filename": f"{batch['id']}_{key}.jsonl", "purpose": "batch_output"}
                batch[key] = file_id
        now = int(time.time())
        batch["request_counts"] = {"total": len(entry["lines"]), "completed": len(out), "failed": len(err)}
        batch["finalizing_at"] = now
        if entry["cancel"]:
            batch["status"], batch["cancelled_at"] = "cancelled", now
        elif expired:
            batch["status"], batch["expired_at"] = "expired", now
        else:
            batch["status"], batch["completed_at"] = "completed", now

    async def get_openai(request: web.Request) -> web.Response:
        entry = state["batches"].get(request.match_info["batch_id"])
        if entry is None:
            raise refusal(404, f"No batch found with id '{request.match_info['batch_id']}'.")
        state["counters"]["polls"] += 1
        batch = entry["object"]
        if batch["status"] in ("completed", "failed", "expired", "cancelled"):
            return web.json_response(batch)
        entry["seen"] += 1
        now = int(time.time())
        if entry["errors"]:  # validation ends at the first poll
            batch["status"], batch["failed_at"] = "failed", now
            batch["errors"] = {"object": "list", "data": entry["errors"]}
        elif entry["cancel"] == 1:  # one poll still shows the cancel under way
            entry["cancel"] = 2
        elif entry["cancel"] or entry["seen"] >= int(entry["behaviour"].get("polls") or 1):
            await finish_openai(entry)
        else:
            batch["status"] = "finalizing" if entry["seen"] == int(entry["behaviour"]["polls"]) - 1 and entry["seen"] > 1 else "in_progress"
            batch["in_progress_at"] = batch["in_progress_at"] or now
            batch["request_counts"] = {"total": len(entry["lines"]), "completed": 0, "failed": 0}
        return web.json_response(batch)

    async def cancel_openai(request: web.Request) -> web.Response:
        entry = state["batches"].get(request.match_info["batch_id"])
        if entry is None:
            raise refusal(404, f"No batch found with id '{request.match_info['batch_id']}'.")
        state["counters"]["cancels"] += 1
        batch = entry["object"]
        if batch["status"] in ("validating", "in_progress", "finalizing"):
            entry["cancel"] = 1
            batch["status"], batch["cancelling_at"] = "cancelling", int(time.time())
        return web.json_response(batch)

    # ---- Anthropic: message batches

    async def create_anthropic(request: web.Request) -> web.Response:
        raw = await request.read()
        max_requests, max_bytes = limits(state["behaviour"])
        if len(raw) > max_bytes:
            raise refusal(413, "Request exceeds the maximum allowed number of bytes.", "request_too_large")
        try:
            body = json.loads(raw)
        except ValueError:
            raise refusal(400, "There was an error parsing the body of your request as JSON.") from None
        requests = body.get("requests") if isinstance(body, dict) else None
        if not isinstance(requests, list) or not requests:
            raise refusal(400, "requests: Field required" if not isinstance(requests, list) else "requests: List should have at least 1 item after validation, not 0")
        if len(requests) > max_requests:
            raise refusal(400, f"requests: List should have at most {max_requests} items after validation, not {len(requests)}")
        seen = set()
        for i, r in enumerate(requests):
            cid = r.get("custom_id") if isinstance(r, dict) else None
            if not isinstance(cid, str) or not CUSTOM_ID.match(cid):
                raise refusal(400, f"requests.{i}.custom_id: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'")
            if cid in seen:
                raise refusal(400, f"Duplicate custom_id: {cid}. Each request in a batch needs its own custom_id.")
            seen.add(cid)
            if not isinstance(r.get("params"), dict):
                raise refusal(400, f"requests.{i}.params: Field required")
        batch_id = next_id("msgbatch_")
        now = time.time()
        batch = {
            "id": batch_id, "type": "message_batch", "processing_status": "in_progress",
            "request_counts": {"processing": len(requests), "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0},
            "ended_at": None, "created_at": _iso(now), "expires_at": _iso(now + 86400), "archived_at": None, "cancel_initiated_at": None, "results_url": None,
        }
        state["batches"][batch_id] = {"object": batch, "lines": requests, "behaviour": json.loads(json.dumps(state["behaviour"])), "seen": 0, "cancel": 0, "results": b""}
        for r in requests:
            state["items"].append(r["params"])
        state["counters"]["batches_created"] += 1
        return web.json_response(batch)

    async def finish_anthropic(entry: dict[str, Any], origin: str) -> None:
        batch, b = entry["object"], entry["behaviour"]
        expire, errors = b.get("expire") or [], b.get("errors") or {}
        records, counts = [], {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        for i, r in enumerate(entry["lines"]):
            cid = r["custom_id"]
            if cid in (b.get("drop") or []):
                continue
            if entry["cancel"] and i >= int(b.get("cancel_done") or 0):
                result: dict[str, Any] = {"type": "canceled"}
            elif expire == "all" or cid in expire:
                result = {"type": "expired"}
            elif cid in errors:
                kind, message = errors[cid]
                result = {"type": "errored", "error": {"type": "error", "error": {"type": str(kind), "message": str(message)}}}
            else:
                status, answer = await respond("messages", r["params"], 0)
                result = {"type": "succeeded", "message": answer} if status == 200 else {"type": "errored", "error": answer}
            counts[result["type"]] += 1
            records.append({"custom_id": cid, "result": result})
        if b.get("shuffle", True):
            rng.shuffle(records)
        entry["results"] = b"".join(json.dumps(r).encode() + b"\n" for r in records)
        batch["processing_status"], batch["ended_at"], batch["request_counts"] = "ended", _iso(time.time()), counts
        batch["results_url"] = f"{origin}/v1/messages/batches/{batch['id']}/results"

    def anthropic_entry(request: web.Request) -> dict[str, Any]:
        entry = state["batches"].get(request.match_info["batch_id"])
        if entry is None:
            raise refusal(404, f"No message batch found with id '{request.match_info['batch_id']}'.", "not_found_error")
        return entry

    async def get_anthropic(request: web.Request) -> web.Response:
        entry = anthropic_entry(request)
        state["counters"]["polls"] += 1
        batch = entry["object"]
        if batch["processing_status"] != "ended":
            entry["seen"] += 1
            if entry["cancel"] == 1:  # one poll still shows the cancel under way
                entry["cancel"] = 2
            elif entry["cancel"] or entry["seen"] >= int(entry["behaviour"].get("polls") or 1):
                await finish_anthropic(entry, f"{request.scheme}://{request.host}")
        return web.json_response(batch)

    async def results_anthropic(request: web.Request) -> web.Response:
        entry = anthropic_entry(request)
        if entry["object"]["processing_status"] != "ended":
            raise refusal(404, f"Results for message batch '{entry['object']['id']}' are not available until it has ended.", "not_found_error")
        state["counters"]["downloads"] += 1
        return web.Response(body=entry["results"], content_type="application/binary")

    async def cancel_anthropic(request: web.Request) -> web.Response:
        entry = anthropic_entry(request)
        state["counters"]["cancels"] += 1
        batch = entry["object"]
        if batch["processing_status"] == "in_progress":
            entry["cancel"] = 1
            batch["processing_status"], batch["cancel_initiated_at"] = "canceling", _iso(time.time())
        return web.json_response(batch)

    # ---- control and statistics

    async def set_control(request: web.Request) -> web.Response:
        body = await request.json()
        if body.pop("reset", False):
            state["behaviour"] = json.loads(json.dumps(DEFAULTS))
        unknown = set(body) - set(DEFAULTS)
        if unknown:
            return web.json_response({"error": f"unknown behaviour {sorted(unknown)}"}, status=400)
        state["behaviour"].update(body)
        return web.json_response(state["behaviour"])

    live_stats = next(r.handler for r in live.router.routes() if r.method == "GET" and r.resource is not None and r.resource.canonical == "/stats")

    async def stats(request: web.Request) -> web.Response:
        out = json.loads((await live_stats(request)).body)
        out.update(state["counters"])
        if request.query.get("bodies"):
            out["batch_bodies"] = list(state["items"])
        return web.json_response(out)

    app = web.Application(client_max_size=300 * 2**20)  # above OpenAI's and Anthropic's limits
    app.router.add_get("/stats", stats)
    app.router.add_post("/control", set_control)
    if provider == "anthropic":
        app.router.add_post("/v1/messages/batches", guarded(create_anthropic))
        app.router.add_get("/v1/messages/batches/{batch_id}", guarded(get_anthropic))
        app.router.add_get("/v1/messages/batches/{batch_id}/results", guarded(results_anthropic))
        app.router.add_post("/v1/messages/batches/{batch_id}/cancel", guarded(cancel_anthropic))
    else:
        for prefix in PREFIXES[provider]:
            app.router.add_post(f"{prefix}/files", guarded(upload))
            app.router.add_get(f"{prefix}/files/{{file_id}}", guarded(file_info))
            app.router.add_get(f"{prefix}/files/{{file_id}}/content", guarded(file_content))
            app.router.add_post(f"{prefix}/batches", guarded(create_openai))
            app.router.add_get(f"{prefix}/batches/{{batch_id}}", guarded(get_openai))
            app.router.add_post(f"{prefix}/batches/{{batch_id}}/cancel", guarded(cancel_openai))
    for route in live.router.routes():  # the live routes (chat, messages, models), as providers.py serves them
        if route.resource is None or route.resource.canonical == "/stats" or route.method == "HEAD":
            continue
        app.router.add_route(route.method, route.resource.canonical, route.handler)
    return app


# --------------------------------------------------------------------------------------------
# Running one


@contextlib.contextmanager
def batch_server(provider: str, **opts: Any) -> Iterator[str]:
    """Start this file as the batch server of ``provider`` on a free loopback port; yields its
    base URL (``http://127.0.0.1:PORT/v1``; Gemini's ``.../v1beta/openai``) and stops it on exit.
    ``opts``: the CLI's options by their Python names (``reasoning_tokens=5``)."""
    args = ["--provider", provider]
    for key, value in opts.items():
        args += [f"--{key.replace('_', '-')}", str(value)]
    with serving(Path(__file__), *args, path=PREFIXES[provider][0]) as url:
        yield url


def _root(base_url: str) -> str:
    parts = urlsplit(base_url)
    return f"{parts.scheme}://{parts.netloc}"


def batch_stats(base_url: str, bodies: bool = False) -> dict[str, Any]:
    """The server's statistics (see the module's docstring)."""
    with urllib.request.urlopen(_root(base_url) + "/stats" + ("?bodies=1" if bodies else ""), timeout=5) as resp:
        return json.loads(resp.read())


def control(base_url: str, **behaviour: Any) -> dict[str, Any]:
    """Set the behaviour of the batches created from now on (``reset=True`` first restores the
    defaults); the behaviour now in force."""
    req = urllib.request.Request(_root(base_url) + "/control", data=json.dumps(behaviour).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=5) as resp:
        return json.loads(resp.read())


def main(argv: list[str] | None = None) -> None:
    """``python tests/support/batch_servers.py PORT --provider NAME [--reasoning-tokens N]``."""
    p = argparse.ArgumentParser(description="A loopback server that behaves like a provider's batch API (and its live routes).")
    p.add_argument("port", type=int)
    p.add_argument("--provider", required=True, choices=PROVIDERS)
    p.add_argument("--reasoning-tokens", type=int, default=None, help="reasoning length in tokens of the live answers (default: by effort)")
    p.add_argument("--seed", type=int, default=7, help="seed of the ids and of the results' order")
    a = p.parse_args(argv)
    app = make_batch_app(a.provider, seed=a.seed, reasoning_tokens=a.reasoning_tokens)
    web.run_app(app, host="127.0.0.1", port=a.port, print=None, access_log=None, shutdown_timeout=1.0)


if __name__ == "__main__":
    main()

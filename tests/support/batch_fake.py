"""An in-memory provider batch service for the lockstep's tests: a :class:`BatchService` keeps
the batches (so a second run, with clients of its own, finds those of the first) and hands out
:class:`FakeBatchClient` objects that speak :class:`agorabench.models.batch.BatchClient`.

Its answers are those of the loopback chat server (``fake_openai.answer_for``: a deterministic
function of the messages), so a study played live against that server and in batch mode here
must store the same games. Faults are set on the service: items that expire the first time they
are asked, items that fail for good, a batch that fails whole, batches that never end until
told to (``hold``), and a submission refused."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

from agorabench.models.base import BackendError, Completion, GenerationSettings
from agorabench.models.batch import BatchItem, BatchState, ItemFailure
from support.fake_openai import answer_for


def words(messages: list[dict[str, str]]) -> int:
    return sum(len((m.get("content") or "").split()) for m in messages)


@dataclass
class FakeBatch:
    batch_id: str
    items: list[BatchItem]
    polls: int = 0
    cancelled: bool = False


@dataclass
class BatchService:
    """The provider's side: every batch submitted, by id, and the faults to play."""

    #: Polls a batch takes before it ends.
    polls_to_end: int = 1
    #: While set, no batch ends (a run can be stopped while its batch is open).
    hold: bool = False
    #: Items whose nth request (counting from 1) comes back expired: custom_id -> set of n.
    expire: dict[str, set[int]] = field(default_factory=dict)
    #: The first this many items submitted expire the first time they are asked.
    expire_once: int = 0
    #: Items that fail for good: a text their messages contain -> the provider's message.
    refuse_with: dict[str, str] = field(default_factory=dict)
    #: The next batch (only) fails whole with these words.
    fail_next: str | None = None
    #: The next submission is refused with this error.
    refuse_submit: BackendError | None = None
    #: This many polls (the next ones) answer 503, as an overloaded API does.
    poll_errors: int = 0
    answer: Callable[[list[dict[str, str]]], str] = lambda messages: answer_for(messages, False)
    batches: dict[str, FakeBatch] = field(default_factory=dict)
    #: How many times each custom_id was submitted.
    asked: dict[str, int] = field(default_factory=dict)
    _ids: itertools.count = field(default_factory=lambda: itertools.count(1))
    _failing: set[str] = field(default_factory=set)
    #: Set each time a batch is submitted.
    submitted_event: asyncio.Event | None = None

    def client(self, identity: str = "fake", provider: str = "openai", max_requests: int = 50_000, max_bytes: int = 200_000_000) -> FakeBatchClient:
        return FakeBatchClient(self, identity, provider, max_requests, max_bytes)

    @property
    def submissions(self) -> int:
        return len(self.batches)


class FakeBatchClient:
    """One model's batch API on a :class:`BatchService`."""

    def __init__(self, service: BatchService, identity: str, provider: str, max_requests: int, max_bytes: int) -> None:
        self.service = service
        self.identity = identity
        self.provider = provider
        self.max_requests = max_requests
        self.max_bytes = max_bytes
        self.closed = False

    def check(self, settings: GenerationSettings) -> str | None:
        return None

    async def submit(self, items: list[BatchItem]) -> str:
        s = self.service
        if s.refuse_submit is not None:
            exc, s.refuse_submit = s.refuse_submit, None
            raise exc
        assert len(items) <= self.max_requests, "the lockstep must split at max_requests"
        assert len({i.custom_id for i in items}) == len(items), "custom ids repeat in one batch"
        batch_id = f"batch_{next(s._ids)}"
        s.batches[batch_id] = FakeBatch(batch_id, list(items))
        for item in items:
            s.asked[item.custom_id] = s.asked.get(item.custom_id, 0) + 1
            if s.expire_once > 0:
                s.expire_once -= 1
                s.expire.setdefault(item.custom_id, set()).add(1)
        if s.fail_next is not None:
            s._failing.add(batch_id)
            s.fail_next = None
        if s.submitted_event is not None:
            s.submitted_event.set()
        return batch_id

    async def poll(self, batch_id: str) -> BatchState:
        s = self.service
        if s.poll_errors > 0:
            s.poll_errors -= 1
            raise BackendError("HTTP 503: The server is overloaded or not ready yet.", retryable=True)
        batch = s.batches.get(batch_id)
        if batch is None:
            raise BackendError(f"No batch found with id '{batch_id}'.", retryable=False)
        batch.polls += 1
        total = len(batch.items)
        if batch_id in s._failing:
            return BatchState(batch_id, "failed", True, {"total": total}, failed=f"Batch {batch_id} failed: the input file holds a line that is not a request.")
        if s.hold or batch.polls < s.polls_to_end:
            return BatchState(batch_id, "in_progress", False, {"total": total, "succeeded": 0, "errored": 0, "expired": 0, "processing": total})
        outcome = self._outcomes(batch)
        counts = {"total": total, "succeeded": sum(isinstance(o, Completion) for o in outcome.values())}
        counts["errored"] = sum(isinstance(o, ItemFailure) and o.kind == "errored" for o in outcome.values())
        counts["expired"] = sum(isinstance(o, ItemFailure) and o.kind == "expired" for o in outcome.values())
        return BatchState(batch_id, "completed", True, counts)

    def _outcomes(self, batch: FakeBatch) -> dict[str, Completion | ItemFailure]:
        s = self.service
        out: dict[str, Completion | ItemFailure] = {}
        for item in batch.items:
            text = " ".join(m.get("content") or "" for m in item.messages)
            nth = s.asked.get(item.custom_id, 0)
            refused = next((why for needle, why in s.refuse_with.items() if needle in text), None)
            if refused is not None:
                out[item.custom_id] = ItemFailure("errored", refused, retry=False)
            elif nth in s.expire.get(item.custom_id, set()):
                out[item.custom_id] = ItemFailure("expired", "This request could not be executed before the completion window expired.", retry=True)
            else:
                answer = s.answer(item.messages)
                out[item.custom_id] = Completion(answer, prompt_tokens=words(item.messages), completion_tokens=len(answer.split()), extra={"service_tier": "batch", "batch_id": batch.batch_id})
        return out

    async def results(self, batch_id: str) -> dict[str, Completion | ItemFailure]:
        return self._outcomes(self.service.batches[batch_id])

    async def cancel(self, batch_id: str) -> None:
        self.service.batches[batch_id].cancelled = True

    async def aclose(self) -> None:
        self.closed = True

"""What the batch clients share: the items, states and failures of the batch interface, the
protocol every provider's client follows, and :func:`split_items`, which cuts a list of items
into batches within a client's limits (see :mod:`agorabench.models.batch`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from ..base import BackendError, Completion, GenerationSettings

#: Bytes kept free in every batch for what wraps the requests (the multipart envelope of an
#: uploaded file, the ``{"requests": [...]}`` of an Anthropic batch).
ENVELOPE_BYTES = 64 * 1024


@dataclass(frozen=True)
class BatchItem:
    """One request of a batch: its id (the response-cache key, 64 hex characters: valid for
    every provider), the chat messages and the settings, as a live call would take them."""

    custom_id: str
    messages: list[dict[str, str]]
    settings: GenerationSettings


@dataclass
class BatchState:
    """Where a provider batch stands. ``status`` is the provider's own word; ``ended``: nothing
    will change any more and whatever results there are can be read; ``failed``: the batch as a
    whole failed (one line, the provider's words, redacted)."""

    batch_id: str
    status: str
    ended: bool
    counts: dict[str, int] = field(default_factory=dict)
    failed: str | None = None


@dataclass
class ItemFailure:
    """An item without an answer: ``kind`` is ``errored``, ``expired``, ``canceled`` or
    ``missing``; ``retry`` says whether asking again may help (expired, canceled and missing
    items, transient errors) or not (a request the provider refuses)."""

    kind: str
    message: str
    retry: bool


class BatchClient(Protocol):
    """A provider's batch API for one model."""

    provider: str
    #: The live backend's identity (response-cache keys agree).
    identity: str
    max_requests: int
    max_bytes: int

    def check(self, settings: GenerationSettings) -> str | None:
        """Why the provider's batch mode refuses these settings (one line), or None."""
        ...

    async def submit(self, items: list[BatchItem]) -> str:
        """Send ``items`` (within the limits: :func:`split_items`) as one provider batch; its id."""
        ...

    async def poll(self, batch_id: str) -> BatchState: ...

    async def results(self, batch_id: str) -> dict[str, Completion | ItemFailure]:
        """The ended batch's answers and failures by custom_id."""
        ...

    async def cancel(self, batch_id: str) -> None: ...

    async def aclose(self) -> None: ...


def unique_items(items: list[BatchItem]) -> list[BatchItem]:
    """``items`` with each custom_id once (its first item): the same key is the same request,
    and a provider refuses a batch that repeats an id."""
    seen: set[str] = set()
    out = []
    for item in items:
        if item.custom_id not in seen:
            seen.add(item.custom_id)
            out.append(item)
    return out


def _size(item: BatchItem, client: BatchClient) -> int:
    """Bytes ``item`` takes in a batch of ``client``'s (its serialized request and a separator);
    a client that cannot say is given a generous estimate."""
    encode = getattr(client, "encode", None)
    if encode is not None:
        return len(encode(item)) + 1
    from ..transport.wire import dumps

    return len(dumps({"custom_id": item.custom_id, "messages": item.messages})) + 1024


def split_items(items: list[BatchItem], client: BatchClient) -> list[list[BatchItem]]:
    """``items`` (each custom_id once) in order, cut into batches of at most
    ``client.max_requests`` requests and ``client.max_bytes`` bytes of serialized requests
    (less :data:`ENVELOPE_BYTES`). BackendError (not retryable) for one request larger than a
    whole batch may be."""
    budget = client.max_bytes - ENVELOPE_BYTES
    groups: list[list[BatchItem]] = []
    current: list[BatchItem] = []
    used = 0
    for item in unique_items(items):
        size = _size(item, client)
        if size > budget:
            raise BackendError(f"one request ({size:,} bytes) is larger than a {client.provider} batch may be ({client.max_bytes:,} bytes)", retryable=False)
        if current and (len(current) >= client.max_requests or used + size > budget):
            groups.append(current)
            current, used = [], 0
        current.append(item)
        used += size
    if current:
        groups.append(current)
    return groups

"""The event loop a run uses: uvloop where it is installed, asyncio's own loop elsewhere.

uvloop (libuv under the asyncio API) cuts the client CPU each model call costs in sockets,
callbacks and timers, which is what limits a study against a fast backend
(benchmarks/README.md). It is a dependency on Linux and macOS only; without it, on Windows or
on Python 3.10 (``asyncio.Runner`` with a loop factory came in 3.11), runs use asyncio's loop,
with the same results. ``AGORA_EVENT_LOOP=asyncio`` chooses asyncio's loop even where uvloop
is installed (to compare the two, or to rule uvloop out when looking for a bug).
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any, Callable, Coroutine, TypeVar

T = TypeVar("T")

#: Environment variable naming the loop: ``uvloop`` (the default where installed) or ``asyncio``.
ENV = "AGORA_EVENT_LOOP"


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's loop constructor when it is installed and wanted, else None (asyncio's loop)."""
    if os.environ.get(ENV, "").strip().lower() == "asyncio" or sys.version_info < (3, 11):
        return None
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def loop_name() -> str:
    """``uvloop`` or ``asyncio``: the loop :func:`run` would use."""
    return "asyncio" if loop_factory() is None else "uvloop"


def run(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)`` on the loop :func:`loop_factory` picks."""
    factory = loop_factory()
    if factory is None:
        return asyncio.run(main)
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(main)

"""An aiohttp application served on 127.0.0.1 by an event loop in a thread of this process: a
loopback server for tests that need no process of its own (no interpreter to start, no imports
to repeat), stopped when its ``with`` block ends."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
from typing import Iterator
from unittest import mock

from aiohttp import web


@contextlib.contextmanager
def serving_app(app: web.Application, path: str = "") -> Iterator[str]:
    """Serve ``app`` on a free loopback port until the block ends; yields
    ``http://127.0.0.1:PORT`` + ``path``. The server's loop runs in a daemon thread; on exit
    the runner is cleaned up (connections closed, handlers still running given 1 s) and the
    thread joined."""
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)  # as the servers' own run_app: a handler that never answers holds the exit 1 s at most
    started = threading.Event()
    port: list[int] = []
    failed: list[BaseException] = []

    def serve() -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(runner.setup())
            site = web.TCPSite(runner, "127.0.0.1", 0)
            loop.run_until_complete(site.start())
            port.append(site._server.sockets[0].getsockname()[1])
        except BaseException as exc:  # noqa: BLE001 - raised in the caller's thread
            failed.append(exc)
            started.set()
            return
        started.set()
        loop.run_forever()

    thread = threading.Thread(target=serve, name="thread-app", daemon=True)
    thread.start()
    if not started.wait(30):
        raise TimeoutError("the in-thread server did not start")
    if failed:
        raise failed[0]
    try:
        yield f"http://127.0.0.1:{port[0]}{path}"
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)
        loop.close()


def fake_openai_app(*options: str) -> web.Application:
    """The application of ``tests/support/fake_openai.py`` for its command-line ``options``,
    read by its own ``main`` (its parser and defaults), which is stopped where it would serve."""
    from support import fake_openai

    made: list[web.Application] = []
    with mock.patch.object(fake_openai.web, "run_app", lambda app, **_: made.append(app)), mock.patch.object(sys, "argv", ["fake_openai.py", "0", *options]):
        fake_openai.main()
    (app,) = made
    return app

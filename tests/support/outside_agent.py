"""An outside agent (models/outside.py's other end) on 127.0.0.1 that answers from a script, for
the outside-client tests: each POST gets the script's next step (the last one repeats)."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator

Script = list[tuple[int, bytes, dict[str, str], float]]  # status, body, headers, seconds to wait first


class ScriptedAgent:
    """Answers each request with the next step of ``script`` (the last one repeats) and keeps
    every request's headers and body in ``seen``."""

    def __init__(self) -> None:
        self.script: Script = [(200, b'{"action": {}}', {}, 0.0)]
        self.seen: list[tuple[dict[str, str], bytes]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                server.seen.append((dict(self.headers), body))
                status, out, headers, wait = server.script[min(len(server.seen), len(server.script)) - 1]
                time.sleep(wait)
                try:
                    self.send_response(status)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", str(len(out)))
                    self.end_headers()
                    self.wfile.write(out)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/act"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    @property
    def requests(self) -> int:
        """How many requests have come in so far."""
        return len(self.seen)

    def close(self) -> None:
        """Stops serving and frees the port (a second call does nothing more)."""
        self.http.shutdown()
        self.http.server_close()


@contextmanager
def scripted_agent() -> Iterator[ScriptedAgent]:
    """A ScriptedAgent for the block, closed after it."""
    server = ScriptedAgent()
    try:
        yield server
    finally:
        server.close()

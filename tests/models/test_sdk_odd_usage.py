"""Issue 42, item 10: the ``sdk`` transport (the openai SDK) reading a usage of odd types from a
server (a string, a list, NaN, a fraction) prints none of pydantic's serializer warnings; the
counts are unknown and the model says so once, in its own words."""

from __future__ import annotations

import asyncio
import threading
import warnings
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator

import pytest

from agorabench.models.model import Model
from agorabench.models.openai_compat import OpenAICompatBackend

ODD = b'{"id": "c1", "object": "chat.completion", "created": 1, "model": "fake", "choices": [{"index": 0, "message": {"role": "assistant", "content": "Answer: 3"}, "finish_reason": "stop"}], "usage": {"prompt_tokens": "12", "completion_tokens": [3], "total_tokens": NaN, "completion_tokens_details": {"reasoning_tokens": 1.5}, "prompt_tokens_details": {"cached_tokens": "x"}}}'


@pytest.fixture
def server() -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(ODD)))
            self.end_headers()
            self.wfile.write(ODD)

        def log_message(self, *args: Any) -> None:
            pass

    http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    http.daemon_threads = True
    threading.Thread(target=http.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{http.server_address[1]}/v1"
    http.shutdown()
    http.server_close()


def test_odd_usage_through_the_sdk_prints_no_serializer_warning(server, capfd, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")
    model = Model(OpenAICompatBackend("fake", base_url=server))

    async def go():
        try:
            return [await model.complete([{"role": "user", "content": f"pick {i}"}]) for i in range(5)]
        finally:
            await model.aclose()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        replies = asyncio.run(go())
    assert [str(w.message) for w in caught if "serializ" in str(w.message).lower() or "pydantic" in str(w.message).lower()] == []
    out, err = capfd.readouterr()
    assert "Pydantic" not in out + err and "serializ" not in (out + err).lower(), err
    assert all(r.text == "Answer: 3" and r.prompt_tokens is None and r.completion_tokens is None and r.reasoning_tokens is None for r in replies)
    said = [w for w in model.warnings if "not token counts" in w]
    assert len(said) == 1, model.warnings

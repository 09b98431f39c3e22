"""Issue 42, item 9: a usage whose counts are not counts (NaN) is unknown, never made up. A NaN
output count with a finite ``total_tokens`` once became reasoning tokens of a model that does
not reason, and unknown counts were stored as 0; now they are NULL, an output count left out is
the total less a known prompt count, and reasoning is inferred only from an output count the
server gave."""

from __future__ import annotations

import json
import sqlite3
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator

import pytest

from agorabench.models.transport.wire import completion_from_json
from support.helpers import agora
from support.studies import envy_points, model

NAN = float("nan")


def _chat(usage: dict[str, Any]):
    return completion_from_json({"choices": [{"message": {"content": "Answer: A"}, "finish_reason": "stop"}], "usage": usage})


def test_a_nan_output_with_a_finite_total_makes_up_no_reasoning():
    c = _chat({"prompt_tokens": 40, "completion_tokens": NAN, "total_tokens": 57})
    assert (c.prompt_tokens, c.completion_tokens, c.reasoning_tokens) == (40, 17, None)
    assert "completion_tokens_reported" not in c.extra and "completion_tokens" in c.extra["usage_dropped"]
    c = _chat({"prompt_tokens": NAN, "completion_tokens": NAN, "total_tokens": 57})
    assert (c.prompt_tokens, c.completion_tokens, c.reasoning_tokens) == (None, None, None)
    c = _chat({"prompt_tokens": NAN, "completion_tokens": 5, "total_tokens": 57})
    assert (c.prompt_tokens, c.completion_tokens, c.reasoning_tokens) == (None, 5, None)
    # a server that counts reasoning apart, with every count given, is still read as before
    c = _chat({"prompt_tokens": 40, "completion_tokens": 5, "total_tokens": 57})
    assert (c.prompt_tokens, c.completion_tokens, c.reasoning_tokens) == (40, 17, 12)
    c = _chat({})
    assert (c.prompt_tokens, c.completion_tokens, c.reasoning_tokens) == (None, None, None)


#: What each model of the loopback server reports as its usage (raw JSON: NaN as a server sends it).
USAGE = {
    "nan-both": b'{"prompt_tokens": NaN, "completion_tokens": NaN, "total_tokens": 57}',
    "nan-output": b'{"prompt_tokens": 40, "completion_tokens": NaN, "total_tokens": 57}',
}


class Chat:
    """A chat-completions server on 127.0.0.1 that answers ``B`` with the usage of its model."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                usage = USAGE[body["model"]]
                out = b'{"id": "c1", "object": "chat.completion", "model": "%s", "choices": [{"index": 0, "message": {"role": "assistant", "content": "B"}, "finish_reason": "stop"}], "usage": %s}' % (body["model"].encode(), usage)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *args: Any) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/v1"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()


@pytest.fixture
def chat() -> Iterator[Chat]:
    server = Chat()
    yield server
    server.http.shutdown()
    server.http.server_close()


def test_unknown_counts_are_stored_as_null_and_no_reasoning_is_stored(chat, tmp_path, capsys):
    models = [model(name, f"vllm/{name}@{chat.url}", temperature=0) for name in USAGE]
    study = tmp_path / "nan.toml"
    study.write_text(envy_points("nan_usage", models, matchups="same_model", grid={"matrix": ["M1"]}, fixed={"peer_status": "leading", "margin": "marginal", "peer_move": "B"}))
    db = tmp_path / "nan.db"
    rc, out, err = agora(capsys, "run", str(study), "--db", str(db), "--quiet", "--no-probe")
    assert rc == 0, err
    with sqlite3.connect(db) as conn:
        rows = conn.execute("select g.seats, t.prompt_tokens, t.completion_tokens from turns t join games g on g.id = t.game_id").fetchall()
        reasoning = conn.execute("select count(*) from reasoning where tokens is not null").fetchone()[0]
    seen = {(json.loads(seats)["focal"], p, c) for seats, p, c in rows}  # a turn re-asked adds its calls up
    assert {(m, p, c) for m, p, c in seen if m == "nan-both"} == {("nan-both", None, None)}, seen
    assert all(p % 40 == 0 and c == p // 40 * 17 for m, p, c in seen if m == "nan-output"), seen
    assert reasoning == 0

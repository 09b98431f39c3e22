"""Issue 42, item 13: the dashboard slows down whoever guesses its token (3,000 wrong tokens
once took under 5 s), and a short ``AGORA_DASHBOARD_TOKEN`` is served with a warning."""

from __future__ import annotations

import time

import httpx
import pytest

from agorabench.web.app import create_app
from agorabench.web.dashboard import FREE_TRIES, Throttle
from support.web import TOKEN, AppServer


def test_wrong_tokens_shut_their_address_out_for_a_doubling_while(tmp_path):
    with AppServer(None, tmp_path / "d.db") as server:
        guesser = httpx.Client(base_url=server.url, timeout=10)
        codes = [guesser.get("/dash", headers={"Authorization": f"Bearer guess-{i}"}).status_code for i in range(200)]
        assert codes[:FREE_TRIES] == [401] * FREE_TRIES and set(codes[FREE_TRIES:]) == {429}, codes
        refused = guesser.get("/dash", headers={"Authorization": "Bearer another"})
        assert refused.status_code == 429 and 1 <= int(refused.headers["Retry-After"]) <= 2
        # while shut out, even the right token is not compared; once the wait is over it is
        assert guesser.get(f"/dash?token={TOKEN}").status_code == 429
        time.sleep(float(refused.headers["Retry-After"]) + 0.2)
        assert guesser.get("/dash", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
        # a visit without any token is no guess
        assert all(guesser.get("/dash").status_code == 401 for _ in range(3 * FREE_TRIES))


def test_the_wait_doubles_and_is_bounded():
    now = [0.0]
    t = Throttle(clock=lambda: now[0])
    waits = []
    for _ in range(FREE_TRIES + 12):
        t.failed("10.0.0.1")
        waits.append(t.wait("10.0.0.1"))
    assert waits[: FREE_TRIES - 1] == [0.0] * (FREE_TRIES - 1)
    assert waits[FREE_TRIES - 1 : FREE_TRIES + 3] == [1.0, 2.0, 4.0, 8.0] and max(waits) == 300.0
    assert t.wait("10.0.0.2") == 0.0  # another address is not held back
    t.passed("10.0.0.1")
    assert t.wait("10.0.0.1") == 0.0


@pytest.mark.parametrize("token,warned", [("x", True), ("fifteen-chars-x", True), ("sixteen-chars-xy", False)])
def test_a_short_token_is_served_with_a_warning(tmp_path, capsys, monkeypatch, token, warned):
    monkeypatch.setenv("AGORA_DASHBOARD_TOKEN", token)
    create_app(None, str(tmp_path / "t.db")).state.store.dispose()
    err = capsys.readouterr().err
    assert ("warning" in err and f"{len(token)} character(s)" in err and "16" in err) is warned, err

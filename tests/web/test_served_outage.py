"""Issue 42 item 1: in ``agora serve`` a model server's outage is never final. The loopback
OpenAI-compatible server first hangs on every chat call (``--stall-chat``), then is stopped and
started again on the same port, answering: the participants' games wait through the outage (no
error game, no completion code with bonus 0), the waiting page and the desk say so, and the
restored server gets test calls and then every call, without restarting the app."""

from __future__ import annotations

import json
import time
import urllib.request

import httpx

from agorabench.models import model as model_module
from agorabench.store.participants import Participants
from agorabench.store.store import Store
from support.web import TOKEN, AppServer, Participant, web_study


def _requests(stats: str) -> int:
    return json.load(urllib.request.urlopen(stats, timeout=5))["requests"]


def _to_play(server: AppServer, pid: str) -> Participant:
    p = Participant(server.url, pid)
    p.enter(), p.post("consent", agree="yes"), p.post("instructions")
    return p


def _rows(db) -> dict[str, dict]:
    store = Store(db)
    try:
        return {r["participant"]: r for r in Participants(store).of_study("web_outage")}
    finally:
        store.dispose()


def test_a_served_study_waits_through_a_model_outage_and_plays_on_when_the_server_is_back(tmp_path, fake_openai, monkeypatch):
    monkeypatch.setattr(model_module, "STALL_COOLDOWN", 0.2, raising=False)
    monkeypatch.setattr(model_module, "STALL_MAX_COOLDOWN", 0.4, raising=False)
    url, stats = fake_openai("--stall-chat")
    port = int(url.split(":")[-1].split("/")[0])
    models = [{"name": "opponent", "spec": "openai/fake", "base_url": url, "timeout": 0.3}]
    path = web_study(tmp_path, name="web_outage", seats=[{"alice": "opponent", "bob": "participant"}], models=models, web={"attention_checks": [], "quiz": []})
    db = tmp_path / "web.db"
    with AppServer(path, db) as server:
        desk = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
        first = _to_play(server, "OUT1")  # the model opens the game: its calls hang
        time.sleep(4.0)  # about 8 timed-out calls and tests: a run's breaker would be down by now
        assert _rows(db)["OUT1"]["game_status"] is None, [g["error"] for g in Store(db).games("web_outage")]
        page = first.get(first.url).text
        assert 'id="thinking"' in page and 'id="outage"' in page and "not answering at the moment" in page
        state = first.c.get(f"{first.url}/state").json()
        assert state["waiting"] and str(state["version"]).endswith("-outage")  # the page reloads when it ends
        board = desk.get("/dash").text
        assert 'id="outages"' in board and url in board and "its calls wait" in board
        later = _to_play(server, "OUT2")  # arrives during the outage: waits too, no error game
        time.sleep(1.0)
        assert {k: v["game_status"] for k, v in _rows(db).items()} == {"OUT1": None, "OUT2": None}
        assert 'id="outage"' in later.get(later.url).text

        fake_openai.stop_all()  # the server comes back, on the same address, answering
        _, stats = fake_openai(port=port)
        for p in (first, later):
            assert 'id="turn-form"' in p.until('id="turn-form"', timeout=20)  # the game went on
        assert _requests(stats) > 0
        assert 'id="outages"' not in desk.get("/dash").text
        assert not first.c.get(f"{first.url}/state").json()["waiting"]
        newcomer = _to_play(server, "OUT3")  # after the outage: a game like any other
        newcomer.until('id="turn-form"', timeout=20)
        rows = _rows(db)
        assert all(rows[pid]["game_status"] is None for pid in ("OUT1", "OUT2", "OUT3")), rows


def test_a_run_still_gives_up_on_a_server_that_never_answers():
    """A run's breaker stays final (its games are played again by the next run); a served
    study's breaker keeps testing the server."""
    run, served = model_module.Breaker(1, 0.0, 0.0), model_module.Breaker(1, 0.0, 0.0, final=False)
    from agorabench.models.base import BackendError

    timeout = BackendError("no answer", timed_out=True)
    for b in (run, served):
        b.failed(timeout, "http://x")
        assert b.stalled is not None
        b.failed(timeout, "http://x", test=True)
    assert run.open is not None and "fail at once" in run.outage()
    assert served.open is None and served.stalled is not None and "its calls wait" in served.outage()
    served.answered(test=True)
    assert served.stalled is None and served.outage() is None and served.recovered == 1

"""Issue 42 item 4: ``max_live`` is a cap on what arrives at once, not only on games already
running. Many participants open their links at the same moment (threads, one client each,
against the app served by uvicorn on 127.0.0.1): a live slot is reserved at ``/start``, so no
more than ``max_live`` sessions are let in and no more games are played; a slot comes free when
its game ends, when its participant declines, or when its session is idle past the deadline
before its game started."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import httpx

from agorabench.store.participants import Participants
from agorabench.store.store import Store
from support.web import AppServer, Participant, web_study

CAP = 5
#: The idle deadline of the idle test (seconds): longer than a burst of arrivals takes on a busy machine.
IDLE = 3.0
WEB = {"max_live": CAP, "starts_per_minute": 0, "attention_checks": [], "quiz": []}


def _arrive(base: str, pids: list[str]) -> dict[str, tuple[Participant, httpx.Response]]:
    """Every id opens its link at once, each from its own client (which keeps its cookie)."""

    def one(pid: str) -> tuple[str, tuple[Participant, httpx.Response]]:
        p = Participant(base, pid)
        r = p.c.get(f"/start?PROLIFIC_PID={pid}&STUDY_ID=s&SESSION_ID=x", follow_redirects=False)
        p.url = r.headers.get("location", "")
        return pid, (p, r)

    with ThreadPoolExecutor(max_workers=30) as pool:
        return dict(pool.map(one, pids))


def _stored(db, study: str) -> tuple[int, int]:
    store = Store(db)
    try:
        return len(Participants(store).of_study(study)), len(store.games(study))
    finally:
        store.dispose()


def _finish(p: Participant, timeout: float = 30) -> None:
    """Play Alice's turns (offer 60/40, reject Bob's offers) until the results page."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        page = p.get(p.url).text
        if 'id="submit-results"' in page:
            return
        if 'name="alice_gain"' in page:
            p.post("play", seq=p.seq(), alice_gain="60", bob_gain="40")
        elif 'name="decision"' in page:
            p.post("play", seq=p.seq(), decision="reject")
        else:
            time.sleep(0.05)
    raise AssertionError("the game never ended")


def test_arrivals_at_once_are_held_to_max_live(tmp_path):
    path = web_study(tmp_path, name="web_slots", web=WEB)
    db = tmp_path / "web.db"
    with AppServer(path, db) as server:
        answers = _arrive(server.url, [f"RUSH{i:03d}" for i in range(120)])
        players = [p for p, r in answers.values() if r.status_code == 303]
        refused = [r for _, r in answers.values() if r.status_code == 503]
        assert len(players) == CAP and len(refused) == 120 - CAP, sorted({r.status_code for _, r in answers.values()})
        assert all("The study is full right now" in r.text for r in refused)
        # the admitted ones play; nobody else got a session, so no other game can start
        for p in players:
            p.post("consent", agree="yes"), p.post("instructions")
        for p in players:
            p.until('id="turn-form"')
        assert _stored(db, "web_slots")[0] == CAP
        assert httpx.get(f"{server.url}/start?PROLIFIC_PID=LATE1&STUDY_ID=s&SESSION_ID=x").status_code == 503
        # a game that ends frees its slot: Alice offers, the always-reject Bob refuses, twice
        _finish(players[0])
        late, r = _arrive(server.url, ["LATE2"])["LATE2"]
        assert r.status_code == 303
        assert httpx.get(f"{server.url}/start?PROLIFIC_PID=LATE3&STUDY_ID=s&SESSION_ID=x").status_code == 503
        # a participant who declines frees theirs too
        late.post("consent")
        assert "declined" in late.pages[-1].lower() or "thank you" in late.pages[-1].lower()
        assert httpx.get(f"{server.url}/start?PROLIFIC_PID=LATE4&STUDY_ID=s&SESSION_ID=x").status_code == 303
    assert _stored(db, "web_slots")[0] == CAP + 2


def test_a_session_idle_before_its_game_gives_its_slot_back(tmp_path):
    path = web_study(tmp_path, name="web_slots_idle", web={**WEB, "idle_timeout": IDLE})
    db = tmp_path / "web.db"
    with AppServer(path, db) as server:
        answers = _arrive(server.url, [f"IDLE{i:02d}" for i in range(20)])
        assert sum(r.status_code == 303 for _, r in answers.values()) == CAP
        keeper = next(p for p, r in answers.values() if r.status_code == 303)
        keeper.enter()  # returning with its own cookie: let back in, its slot kept
        assert _arrive(server.url, ["AGAIN0"])["AGAIN0"][1].status_code == 503
        deadline = time.time() + IDLE + 0.8
        while time.time() < deadline:  # the keeper stays active; the others left after entering
            keeper.get(keeper.url)
            time.sleep(0.2)
        again = _arrive(server.url, [f"AGAIN{i:02d}" for i in range(1, 30)])
        assert sum(r.status_code == 303 for _, r in again.values()) == CAP - 1  # the keeper's slot is still held

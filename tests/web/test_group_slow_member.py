"""Issue 41 item 6 in a real browser (Debian's chromium via Playwright, the app served on
127.0.0.1): in a two-person game where one person stops answering, the other's waiting page says,
after a short while, that the other participant is taking a while and by when the computer will
answer for them (the moment of the absent person's deadline, in the waiting person's own clock),
and once the deadline has passed, that the computer answered for them. The ready group study
sets a deadline that fits a group."""

from __future__ import annotations

import datetime as dt
import re
import time
from zoneinfo import ZoneInfo

from agorabench.core.study import load_study
from agorabench.store.participants import Participants
from agorabench.store.store import Store
from agorabench.web.app import time_left, waiting_version
from agorabench.web.settings import web_settings
from support.helpers import ROOT
from support.web import AppServer, Participant, browser, submit, web_study  # noqa: F401  (browser: fixture)

PAIR = [{"alice": "participant", "bob": "participant"}]
LIMIT = 4.0  # seconds a turn waits for its person once they have seen it
ZONE = "America/Sao_Paulo"  # the browser's clock: never UTC, so the page must convert


def _bob_deadline(db, token: str) -> float:
    """When Bob's first turn stops waiting for him: when he saw it, plus the time limit."""
    store = Store(db)
    try:
        row = Participants(store).turn(token, 0)
    finally:
        store.dispose()
    assert row is not None and row["shown_at"] is not None
    return row["shown_at"] + LIMIT


def test_the_one_who_stays_is_told_who_is_slow_and_when_the_computer_answers(browser, tmp_path):
    web = {"attention_checks": [], "quiz": [], "starts_per_minute": 0, "group_fallback": "spe", "group_wait": 60, "time_limit": LIMIT, "idle_timeout": 120}
    path = web_study(tmp_path, name="web_slow", seats=PAIR, models=[{"name": "spe", "spec": "strategy/spe"}], fixed={"money": 100, "horizon": 2}, web=web)
    db = tmp_path / "web.db"
    with AppServer(path, db) as server:
        context = browser.new_context(viewport={"width": 390, "height": 800}, timezone_id=ZONE, locale="en-GB")
        page = context.new_page()
        try:
            page.goto(f"{server.url}/start?PROLIFIC_PID=STAYS&STUDY_ID=s&SESSION_ID=x")
            submit(page, "#agree")
            submit(page, "#continue")
            page.wait_for_selector("#group-waiting")
            bob = Participant(server.url, "GOES")  # Bob arrives, the group is formed
            bob.enter(), bob.post("consent", agree="yes"), bob.post("instructions")
            page.wait_for_selector("#turn-form", timeout=20_000)  # Alice's offer
            page.fill("input[name=alice_gain]", "60")
            page.fill("input[name=bob_gain]", "40")
            submit(page, "#submit-turn")
            bob.until('id="turn-form"')  # Bob sees the offer ... and never answers
            deadline = _bob_deadline(db, bob.url.rsplit("/", 1)[-1])
            # after a short while (a quarter of Bob's 4 s), Alice's waiting page says so by itself
            page.wait_for_selector("#slow-member", timeout=10_000)
            assert time.time() < deadline, "the note came only after the deadline"
            note = page.inner_text("#slow-member")
            assert re.fullmatch(r"The other participant is taking a while\. If they have not answered by \d\d:\d\d:\d\d \((?:in \d s|any moment now)\), the computer will answer for them\.", note), note
            assert page.query_selector("#taken-over") is None
            # the moment is Bob's deadline, in Alice's own clock (not the server's UTC)
            shown = page.inner_text("#takeover-at")
            local = dt.datetime.fromtimestamp(deadline, ZoneInfo(ZONE))
            seconds = lambda h: int(h[:2]) * 3600 + int(h[3:5]) * 60 + int(h[6:8])
            assert abs(seconds(shown) - seconds(local.strftime("%H:%M:%S"))) <= 1, (shown, local)
            assert local.strftime("%H:%M") != dt.datetime.fromtimestamp(deadline, dt.timezone.utc).strftime("%H:%M")
            # the deadline passes: the computer answers for Bob, and Alice is told so, once
            page.wait_for_selector("#taken-over", timeout=15_000)
            assert time.time() >= deadline
            told = page.inner_text("#taken-over")
            assert told == "The other participant did not answer in time, so the computer answered for them."
            text = page.inner_text("body")
            for word in ("seat", "model", "JSON", "fallback"):
                assert word not in text, (word, text)
            assert page.evaluate("document.documentElement.scrollWidth") <= 390
        finally:
            context.close()
    store = Store(db)
    try:
        rows = {r["role"]: r for r in Participants(store).of_study("web_slow")}
        bob_turn = Participants(store).turn(rows["bob"]["token"], 0)
    finally:
        store.dispose()
    assert bob_turn["timed_out"] and rows["bob"]["dropped_out"] is None  # the time limit, not the idle deadline


def test_the_waiting_words_and_the_version_that_reloads_the_page():
    assert [time_left(s) for s in (0.2, -3, 45, 60, 75.4, 600)] == ["any moment now", "any moment now", "in 45 s", "in 1 min", "in 1 min 15 s", "in 10 min"]
    # the waiting page reloads when a member becomes slow and when their deadline moves
    assert waiting_version(7, False) == "7" and waiting_version(7, True) == "7-outage"
    assert waiting_version(7, False, (1_700_000_000.5, "x")) == "7-slow1700000000" != waiting_version(7, False, (1_700_000_090.0, "x"))
    assert waiting_version(7, False, (None, "x")) == "7-slow0"


def test_the_ready_group_study_gives_each_turn_a_deadline_that_fits_a_group():
    """Everyone in a group waits for its slowest member: a turn waits at most 90 s for a person
    who has seen it, and 3 minutes for one who has not (then the computer plays their part)."""
    settings = web_settings(load_study(ROOT / "studies" / "web_commons_group.toml"))
    assert 60 <= settings.time_limit <= 90 and 0 < settings.idle_timeout <= 180

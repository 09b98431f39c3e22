"""The researcher's desk in a real browser (Debian's chromium via Playwright, the app served on
127.0.0.1; issue 30, item 9): the search filters the participants as it is typed, the page's
refresh never wipes a filter being typed (it swaps in the tables only), a refresh brings new
participants in, and the tables fit the screen at 1280 px and at a phone's width."""

from __future__ import annotations

import concurrent.futures
import time

from agorabench.core.runner import run_study
from agorabench.core.study import load_study
from support.web import TOKEN, AppServer, Participant, browser, web_study  # noqa: F401  (browser: fixture)

LONG_ID = "LONG" + "x7" * 40  # 84 characters: an id that must wrap or be cut, never widen the page


def no_overflow(page) -> tuple[int, int]:
    """(scroll width, viewport width) of the page: equal when nothing sticks out sideways."""
    return page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")


def refreshes(page) -> int:
    """How many times the page swapped in fresh tables since it was loaded."""
    return int(page.evaluate("document.querySelector('.desk').dataset.refreshed || '0'"))


def wait_refreshes(page, n: int, timeout: float = 15) -> None:
    """Wait until the page has refreshed ``n`` times more (polled from here: the page's CSP
    forbids the string evaluation of Playwright's own waiting)."""
    target, deadline = refreshes(page) + n, time.time() + timeout
    while refreshes(page) < target:
        assert time.time() < deadline, "the page did not refresh"
        page.wait_for_timeout(100)


def test_a_typed_filter_survives_the_refresh_and_new_participants_arrive(browser, tmp_path):
    path = web_study(tmp_path, name="desk_browser", web={"attention_checks": [], "quiz": []})
    with AppServer(path, tmp_path / "b.db") as server:
        for pid in ("ALPHA1", "ALPHA2", "BRAVO1", LONG_ID):
            Participant(server.url, pid).enter()
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        page = context.new_page()
        try:
            page.goto(f"{server.url}/dash?token={TOKEN}&refresh=1")  # a refresh every second
            assert page.url.endswith("/dash?refresh=1")
            assert page.locator("#participants tr.participant").count() == 4
            page.evaluate("window.notReloaded = true")
            page.click("#participant-filter")
            page.keyboard.type("alp", delay=150)  # typing across a refresh
            assert page.locator("#participants tr.participant:visible").count() == 2  # filtered as typed
            wait_refreshes(page, 2)
            # the refresh swapped the tables in: the text being typed, its focus and the page stayed
            assert page.input_value("#participant-filter") == "alp"
            assert page.evaluate("document.activeElement.id") == "participant-filter"
            assert page.evaluate("window.notReloaded") is True
            assert "q=alp" in page.url  # the filter is in the address, so the server filters the refresh too
            assert page.locator("#participants tr.participant").count() == 2  # the server's rows for q=alp
            assert sorted(page.locator("#participants tr.participant td.pid").all_inner_texts()) == ["ALPHA1", "ALPHA2"]
            page.keyboard.type("ha1", delay=50)
            assert page.locator("#participants tr.participant:visible").count() == 1
            # a new participant matching the filter appears at the next refresh, one who does not, not
            Participant(server.url, "ALPHA33").enter()
            Participant(server.url, "CHARLIE").enter()
            page.fill("#participant-filter", "")
            page.keyboard.type("alpha3")
            page.wait_for_selector("#participants td.pid >> text=ALPHA33", timeout=15_000)
            assert page.locator("#participants tr.participant:visible").count() == 1
            assert page.input_value("#participant-filter") == "alpha3" and page.evaluate("window.notReloaded") is True
            # clearing the search shows everyone again, from the server, at the next refresh
            page.fill("#participant-filter", "")
            page.wait_for_selector("#participants td.pid >> text=CHARLIE", timeout=15_000)
            assert page.locator("#participants tr.participant").count() == 6 and "q=" not in page.url
            # the games page: its filters are not wiped by a refresh either
            page.goto(f"{server.url}/dash/games?refresh=1")
            page.evaluate("window.notReloaded = true")
            page.fill("#filters input[name=model]", "opp")
            wait_refreshes(page, 2)
            assert page.input_value("#filters input[name=model]") == "opp" and page.evaluate("window.notReloaded") is True
        finally:
            context.close()


def test_the_desk_fits_the_screen_on_a_laptop_and_a_phone(browser, tmp_path):
    seats = [{"alice": "participant", "bob": "opponent"}, {"alice": "spe", "bob": "opponent"}]
    models = [{"name": "opponent", "spec": "strategy/always-reject"}, {"name": "spe", "spec": "strategy/spe"}]
    path = web_study(tmp_path, name="desk_fit", web={"attention_checks": [], "quiz": []}, seats=seats, models=models)
    db = tmp_path / "f.db"
    # a stored game (long seats and configuration texts), played in a thread of its own: this
    # one runs Playwright's event loop
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(run_study, load_study(path), db, progress=False, probe=False).result(timeout=120)
    with AppServer(path, db) as server:
        for pid in ("FIT1", LONG_ID):
            Participant(server.url, pid).enter()
        for width, height in ((1280, 800), (390, 844)):
            context = browser.new_context(viewport={"width": width, "height": height})
            page = context.new_page()
            try:
                page.goto(f"{server.url}/dash?token={TOKEN}&refresh=0")
                scroll, view = no_overflow(page)
                assert scroll <= view, (width, scroll, view)
                for table in ("participants", "progress", "spend"):  # each table within the page's column
                    right, column = page.evaluate(f"[document.getElementById('{table}').getBoundingClientRect().right, document.querySelector('main').getBoundingClientRect().right]")
                    assert right <= column + 1, (width, table, right, column)
                # the long id is in the page whole: in its cell's title where the cell cuts it
                cut = page.locator(f"#participants span.cut[title='{LONG_ID}']")
                assert cut.count() == 1
                pseudonym = page.locator("#participants td.pseudonym span.cut").first
                assert pseudonym.get_attribute("title").startswith("human:") and len(pseudonym.get_attribute("title")) == 22
                if width < 700:  # one card per participant: each value beside its label, none off screen
                    assert page.evaluate("getComputedStyle(document.querySelector('#participants tr.participant')).display") == "block"
                    assert page.evaluate("getComputedStyle(document.querySelector('#participants td.pid'), '::before').content").startswith('"participant id')
                else:  # a table, as wide as the page allows
                    assert page.evaluate("getComputedStyle(document.querySelector('#participants tr.participant')).display") == "table-row"
                    assert page.evaluate("document.querySelector('main').getBoundingClientRect().width") > 1000
                page.goto(f"{server.url}/dash/games?refresh=0")
                assert page.locator("#games a[href^='/dash/game/']").count() == 1
                scroll, view = no_overflow(page)
                assert scroll <= view, ("games", width, scroll, view)
            finally:
                context.close()

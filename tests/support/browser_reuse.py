"""One browser page per test module for the participant journeys in a real browser.

A fresh page costs chromium about as much CPU as five or six page loads (a renderer process
started for it, and for ``browser.new_page()`` a context of its own), and most of those tests
need nothing a used page lacks: each starts from an empty cookie jar, so the web app sees a
browser that has never met it, and ends on ``about:blank``, so no page of a stopped server keeps
polling while the next test's server comes up. Tests whose claim is about a second browser or a
new context still make their own.

The context prefers reduced motion: the waiting pages' pulsing dot is then still (the
stylesheet's own ``prefers-reduced-motion`` rule), so a page that waits does not make chromium
draw sixty frames a second; nothing a test reads depends on it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from support.web import browser  # noqa: F401  (the fixture the ones below build on)


@pytest.fixture(scope="module")
def person_context(browser) -> Iterator[Any]:  # noqa: F811
    """The module's one browser context for participants, with reduced motion."""
    context = browser.new_context(reduced_motion="reduce")
    yield context
    context.close()


@contextmanager
def fresh_page(context) -> Iterator[Any]:
    """The page of ``context`` (opened when it has none), cookies cleared: a participant's
    browser the web app has never seen. Left on ``about:blank`` (or closed, when it cannot be)."""
    pages = [p for p in context.pages if not p.is_closed()]
    page = pages[0] if pages else context.new_page()
    context.clear_cookies()
    try:
        yield page
    finally:
        try:
            page.goto("about:blank")
        except Exception:  # noqa: BLE001 - a crashed or stuck page: the next user opens a new one
            page.close()


@pytest.fixture
def person(person_context) -> Iterator[Any]:
    """The module's page as :func:`fresh_page` hands it to one test."""
    with fresh_page(person_context) as page:
        yield page


@pytest.fixture(scope="module")
def browser_and_endpoint() -> Iterator[tuple[Any, str]]:
    """Chromium launched as :func:`support.web.browser` launches it, its DevTools endpoint also
    open on 127.0.0.1: a participant played in another thread (Playwright's sync API is one
    instance per thread) connects there and opens a context of their own instead of starting a
    second chromium. Yields the browser and the endpoint's address."""
    import os
    import shutil
    from pathlib import Path

    from support.helpers import free_port
    from support.web import CHROMIUM, CHROMIUM_ARGS

    if not Path(CHROMIUM).exists():
        if shutil.which("apt-get") and os.geteuid() == 0:
            pytest.fail("chromium is missing: run scripts/setup.sh (it installs the Debian package)")
        pytest.skip("chromium is not installed and cannot be without root")
    from playwright.sync_api import sync_playwright

    port = free_port()
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, "--remote-debugging-address=127.0.0.1", f"--remote-debugging-port={port}"])
        yield b, f"http://127.0.0.1:{port}"
        b.close()

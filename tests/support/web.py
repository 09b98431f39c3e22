"""Helpers of the web-app tests: a study file with a human seat, the app served by uvicorn on
127.0.0.1 (in this process, or as the real `agora serve` command), a participant's HTTP client,
Debian's chromium driven by Playwright, and a participant who fills any game's form."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

import httpx
import pytest

from support.helpers import ROOT, free_port, wait_http
from support.studies import toml_value


#: Debian's chromium-headless-shell where installed (scripts/setup.sh installs it beside chromium):
#: the same engine and version without the full browser's user interface; a new page costs about
#: a third of the CPU (measured 2026-11-29: four journeys 15.5 -> 8.9 s of Chromium CPU). Else
#: the full chromium in its headless mode.
CHROMIUM = next((c for c in ("/usr/bin/chromium-headless-shell", "/usr/bin/chromium") if Path(c).exists()), "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run", "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
]
TOKEN = "test-dashboard-token-0123456789"

WEB = {
    "title": "Test study",
    "completion_code": "",
    "bonus": "1",
    "bonus_max": 5.0,
    "quiz": [{"question": "Is this a test?", "options": ["No", "Yes"], "answer": "Yes"}],
    "attention_checks": [{"after": 1, "question": "Choose Blue.", "options": ["Red", "Blue"], "answer": "Blue"}],
    "questionnaire": [{"name": "why", "question": "Why?"}, {"name": "fair", "question": "Fair?", "kind": "scale", "scale": 5, "scale_labels": ["not fair at all", "completely fair"]}],
}


def study_text(name: str, game: str, seats: list[dict[str, str]], fixed: dict[str, Any], models: list[dict[str, Any]], web: dict[str, Any] | None = None) -> str:
    """A study file (TOML) with a human seat named ``participant``."""
    lines = [f"name = {json.dumps(name)}", f"game = {json.dumps(game)}", 'matchups = "seats"', "seed = 0", f"seats = {toml_value(seats)}", ""]
    lines += ["[fixed]"] + [f"{k} = {toml_value(v)}" for k, v in fixed.items()] + [""]
    for m in [{"name": "participant", "spec": "human"}, *models]:
        lines += ["[[models]]"] + [f"{k} = {toml_value(v)}" for k, v in m.items()] + [""]
    settings = {**WEB, **(web or {})}
    lines += ["[web]"] + [f"{k} = {toml_value(v)}" for k, v in settings.items()]
    return "\n".join(lines) + "\n"


BARGAIN = dict(game="glee.bargaining", seats=[{"alice": "participant", "bob": "opponent"}], models=[{"name": "opponent", "spec": "strategy/always-reject"}])


def web_study(tmp_path, name="web_http", fixed=None, web=None, **kw):
    """Write a study with a participant seat (by default Alice in a bargaining game against an
    always-reject Bob) into ``tmp_path``; ``kw`` replaces game, seats or models."""
    args = {**BARGAIN, **kw}
    path = tmp_path / f"{name}.toml"
    path.write_text(study_text(name, args["game"], args["seats"], fixed or {"money": 100, "horizon": 2}, args["models"], web))
    return path


class Participant:
    """A participant's HTTP client: follows redirects, reads the CSRF value from each page."""

    def __init__(self, base: str, pid: str) -> None:
        self.c = httpx.Client(base_url=base, follow_redirects=True, timeout=30)
        self.pid = pid
        self.pages: list[str] = []

    def get(self, url: str) -> httpx.Response:
        r = self.c.get(url)
        self.pages.append(r.text)
        return r

    def enter(self) -> httpx.Response:
        r = self.get(f"/start?PROLIFIC_PID={self.pid}&STUDY_ID=s&SESSION_ID=x")
        self.url = str(r.url.path)
        return r

    def post(self, stage: str, **data: str) -> httpx.Response:
        page = self.get(self.url).text
        csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
        r = self.c.post(f"{self.url}/{stage}", data={"csrf": csrf, **data})
        self.pages.append(r.text)
        return r

    def until(self, marker: str, timeout: float = 30) -> str:
        deadline = time.time() + timeout
        while time.time() < deadline:
            page = self.get(self.url).text
            if marker in page:
                return page
            time.sleep(0.05)
        raise AssertionError(f"{marker!r} never appeared")

    def past_results(self) -> str:
        """Wait for the results page after the game, continue, and return the questionnaire."""
        results = self.until('id="submit-results"')
        self.post("results")
        self.until("submit-questionnaire")
        return results

    def seq(self) -> str:
        return re.search(r'name="seq" value="(\d+)"', self.until('id="turn-form"')).group(1)


class AppServer:
    """``create_app`` served by uvicorn in a thread of this process, on 127.0.0.1."""

    def __init__(self, study_path: Path | None, db: Path) -> None:
        import uvicorn

        from agorabench.core.study import load_study
        from agorabench.web.app import create_app

        study = load_study(study_path) if study_path else None
        self.app = create_app(study, str(db), dashboard_token=TOKEN)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(self.app, host="127.0.0.1", port=self.port, log_level="warning", access_log=False))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> "AppServer":
        self.thread.start()
        deadline = time.time() + 30
        while not self.server.started:
            if time.time() > deadline or not self.thread.is_alive():
                raise RuntimeError("web app did not start")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


class ServeProcess:
    """The real ``agora serve`` command in a subprocess (killed and started again by tests)."""

    def __init__(self, study_path: Path, db: Path, port: int | None = None) -> None:
        self.args = [sys.executable, "-m", "agorabench", "serve", str(study_path), "--db", str(db), "--host", "127.0.0.1", "--port", str(port or free_port())]
        self.port = int(self.args[-1])
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def start(self) -> "ServeProcess":
        env = {**os.environ, "AGORA_DASHBOARD_TOKEN": TOKEN}
        self.proc = subprocess.Popen(self.args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=ROOT)
        wait_http(self.url + "/", timeout=60, proc=self.proc)
        return self

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


@pytest.fixture(scope="module")
def browser():
    """Debian's chromium through Playwright's Python API, one per test module. Not per session:
    Playwright's sync API keeps an event loop running in this thread, where later tests call
    ``asyncio.run``."""
    if not Path(CHROMIUM).exists():
        if shutil.which("apt-get") and os.geteuid() == 0:
            pytest.fail("chromium is missing: run scripts/setup.sh (it installs the Debian package)")
        pytest.skip("chromium is not installed and cannot be without root")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


Policy = Callable[[str, str, list[str]], str | None]


def submit(page, selector: str, timeout: float = 120_000) -> None:
    """Click the button that sends a form and wait until a new page has loaded: a click alone
    returns before the new page is there, so a look just after it could read the old page (its
    turn form) or none yet (no quiz). The old page is marked and the wait is for a document
    without the mark, which holds however the browser got there (the form's answer, or a reload
    by the page's own polling that cut the answer's navigation short: ERR_ABORTED), in the state
    ``complete``, its stylesheet included: text read while the stylesheet is still on its way has
    its line breaks folded into spaces."""
    page.evaluate("() => { window.__agoraLeft = true; }")
    page.click(selector)
    page.wait_for_function("() => !window.__agoraLeft && document.readyState === 'complete'", timeout=timeout, polling=50)


#: What :func:`fill_turn` reads of the open turn's form, in one call: the prompt's text, and each
#: field (the first element of each name) with its kind, lower bound and, for a radio group, the
#: values of every input of that name.
_FORM = """() => {
  const prompt = document.querySelector('#prompt');
  const fields = [], seen = new Set();
  document.querySelectorAll('#turn-form input:not([type=hidden]), #turn-form textarea').forEach((e, i) => {
    const name = e.getAttribute('name');
    if (seen.has(name)) { return; }  // the other buttons of a radio group
    seen.add(name);
    const kind = e.getAttribute('type') || e.tagName.toLowerCase();
    const options = kind === 'radio' ? [...document.querySelectorAll("#turn-form input[name='" + name + "']")].map(r => r.getAttribute('value')) : [];
    fields.push({index: i, name, kind, min: e.getAttribute('min'), options});
  });
  return {prompt: prompt ? prompt.innerText : '', fields};
}"""


def fill_turn(page, policy: Policy | None = None) -> None:
    """Fill the open turn's form the way a participant would: ``policy(field, prompt, options)``
    may name a value; otherwise the first option, a number within the bounds, or short text.
    The form is read in one call (each call to the browser costs as much as a small page)."""
    form = page.evaluate(_FORM)
    prompt = form["prompt"]
    elements = None
    for f in form["fields"]:
        name, kind = f["name"], f["kind"]
        if kind == "radio":
            options = f["options"]
            choice = (policy(name, prompt, options) if policy else None) or options[0]
            page.check(f"#turn-form input[name='{name}'][value='{choice}']")
            continue
        if kind == "checkbox":
            if not (policy and policy(name, prompt, []) == "true"):
                continue
        elif kind == "number":
            value = policy(name, prompt, []) if policy else None
            if value is None:
                lo = f["min"]
                value = str(max(1, int(float(lo))) if lo not in (None, "") else 1)
        else:
            value = policy(name, prompt, []) if policy else None
            value = value if value is not None else "I think this is reasonable."
        elements = elements or page.query_selector_all("#turn-form input:not([type=hidden]), #turn-form textarea")
        el = elements[f["index"]]
        el.check() if kind == "checkbox" else el.fill(value)


#: What :func:`journey` reads of each page in one call: by id, the element's text (None: not there).
_HERE = """() => Object.fromEntries(['submit-attention', 'progress', 'submit-results', 'result', 'bonus-rule', 'submit-questionnaire', 'prompt']
  .map(id => { const e = document.getElementById(id); return [id, e ? e.innerText : null]; }))"""


def journey(page, base: str, pid: str, policy: Policy | None = None, quiz_answer: str = "Yes", max_turns: int = 40, on_turn: Callable[[Any, int], None] | None = None) -> dict[str, Any]:
    """One participant from the entry link to the completion code; returns what was seen."""
    page.goto(f"{base}/start?PROLIFIC_PID={pid}&STUDY_ID=st1&SESSION_ID=se1")
    submit(page, "#agree")
    instructions = page.inner_text("#instructions")
    submit(page, "#continue")
    if page.query_selector("#submit-quiz"):
        page.check("input[name='q0'][value='No']")
        submit(page, "#submit-quiz")
        page.wait_for_selector("#quiz-error")
        page.check(f"input[name='q0'][value='{quiz_answer}']")
        submit(page, "#submit-quiz")
    turns = attention = 0
    prompts: list[str] = []
    steps: list[str] = []
    result = bonus_rule = ""
    while True:
        try:
            page.wait_for_selector("#turn-form, #submit-attention, #submit-results, #submit-questionnaire", timeout=120_000)
        except Exception as exc:  # say what the participant saw instead
            raise AssertionError(f"no turn after {turns} turns at {page.url}: {page.inner_text('body')[:1500]!r}") from exc
        here = page.evaluate(_HERE)
        if here["submit-attention"] is not None:
            page.check("input[name='answer'][value='Blue']")
            submit(page, "#submit-attention")
            attention += 1
            continue
        if here["progress"] is not None:
            steps.append(here["progress"])
        if here["submit-results"] is not None:
            assert here["result"] is not None and here["bonus-rule"] is not None, page.inner_text("body")[:1500]
            result, bonus_rule = here["result"], here["bonus-rule"]
            submit(page, "#submit-results")
            page.wait_for_selector("#submit-questionnaire")
            break
        if here["submit-questionnaire"] is not None:
            break
        prompts.append(here["prompt"] or "")
        if on_turn:
            on_turn(page, turns)
        fill_turn(page, policy)
        submit(page, "#submit-turn")
        turns += 1
        assert turns <= max_turns, "the game did not end"
    page.fill("textarea[name='a_why']", "It seemed sensible.")
    page.check("input[name='a_fair'][value='4']")
    submit(page, "#submit-questionnaire")
    code = page.inner_text("#code")
    return {"instructions": instructions, "turns": turns, "attention": attention, "code": code, "bonus": page.inner_text("#bonus"), "prompts": prompts, "result": result, "bonus_rule": bonus_rule, "steps": steps}

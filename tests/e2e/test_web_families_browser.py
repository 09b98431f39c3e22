"""Every ready served study (studies/web_*.toml) in a real browser (Debian's chromium via
Playwright) against the web app on 127.0.0.1: a participant goes from consent through the
instructions, the quiz, the whole game (a simple answer policy), the questionnaire and the results
to the completion code. No page may tell a person about language models, the results page says
what happened in words, and the bonus rule is told in words and money, not code names.

The journeys are derived from the study files themselves (their quiz, attention checks and
questionnaire) and the game a family registers, so a new served study is covered without a line
here; the commons study's one journey also checks that an impossible harvest (99,999) is refused
with a message and that the next speaker is a choice among the group's names. A study whose games seat several
people (a group game) is played by as many participants at once, each in a browser context of
their own (cookies and all: to the web app, browsers of their own; the first in the module's page,
the others each in a thread with its own Playwright connected to the module's chromium:
Playwright's sync API is one instance per thread), so the group forms in the waiting room as it
does for real people, and every member's journey gets the same checks. In a group game
the language-model seats are played by the study's own ``group_fallback`` (a scripted strategy
that sits beside them): the members' pages are the same ones, and the studies that seat one person
keep their embedded model, so real model journeys stay covered here at a fraction of the cost."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python < 3.11
    import tomli as tomllib

from agorabench import families
from agorabench.store.participants import Participants
from agorabench.store.store import Store
from support.helpers import ROOT
from support.studies import toml_key, toml_value
from support.browser_reuse import browser_and_endpoint, fresh_page, person, person_context  # noqa: F401  (fixtures)
from support.web import AppServer, submit

SERVED = sorted((ROOT / "studies").glob("web_*.toml"))

#: Words that tell a person they deal with (or are) a language model.
MACHINE_WORDS = re.compile(r"language models?|\bAI\b|\bLLMs?\b|\bmodels?\b|chatbot|artificial intelligence", re.IGNORECASE)
#: Code names of a bonus rule (``alice_gain``, ``my_catch``) and Python's booleans echoed back.
CODE_NAMES = re.compile(r"\b[a-z]+_[a-z_]+\b|\bFalse\b|\bTrue\b")


def _study(path: Path) -> dict[str, Any]:
    return tomllib.loads(path.read_text(encoding="utf-8"))


def _human_seats(data: dict[str, Any]) -> int:
    """How many people one game of the study seats (the most over its seat rows; 1 for a study
    without a seat list): more than one makes it a group game."""
    people = {m["name"] for m in data.get("models", []) if m.get("spec") == "human"}
    return max((sum(1 for v in row.values() if v in people) for row in data.get("seats", [])), default=1) or 1


def _model_seats_scripted(path: Path, data: dict[str, Any], tmp_path: Path) -> Path:
    """A copy of the study at ``path`` whose language-model entries (neither human nor scripted)
    play by the spec of its ``group_fallback`` (a model of the study, or a strategy spec), names
    and display names kept; the copy's path."""
    fallback = data["web"]["group_fallback"]
    spec = next((m["spec"] for m in data["models"] if m["name"] == fallback), fallback)
    assert spec.startswith("strategy/"), spec
    models = [m if m["spec"] == "human" or m["spec"].startswith("strategy/") else {k: v for k, v in {"name": m["name"], "spec": spec, "display_name": m.get("display_name")}.items() if v} for m in data["models"]]
    assert models != data["models"], "no language-model seat to script"
    copy = tmp_path / path.name
    copy.write_text("".join(f"{toml_key(k)} = {toml_value(v)}\n" for k, v in {**data, "models": models}.items()), encoding="utf-8")
    return copy


@pytest.fixture(scope="module")
def browser(browser_and_endpoint):
    """The module's chromium (the one the group members' threads connect to)."""
    return browser_and_endpoint[0]


def _journey_in_own_browser(endpoint: str, base: str, pid: str, web: dict[str, Any], out: dict[str, Any]) -> None:
    """:func:`_journey` in a browser context of its own, by this thread's own Playwright
    connected to the module's chromium at ``endpoint`` (run in a thread beside the test's own
    participant); what was seen, or the exception, goes into ``out``."""
    from playwright.sync_api import sync_playwright

    try:
        with sync_playwright() as p:
            b = p.chromium.connect_over_cdp(endpoint)
            try:
                out["seen"] = _journey(b.new_context(reduced_motion="reduce").new_page(), base, pid, web)
            finally:
                b.close()  # closes the context made here and disconnects; the chromium stays
    except BaseException as exc:  # noqa: BLE001 - re-raised in the test's thread
        out["error"] = exc


def test_every_family_with_a_served_game_has_its_games_served():
    """Each served study names registered games (its game, or each part's), and every family
    that serves one game of its own serves people a ready study (the envy family: both of its
    games; the classic battery: all six of its games in one study)."""
    assert SERVED, "no studies/web_*.toml"
    games = {g for p in SERVED for g in ([part["game"] for part in _study(p).get("parts", [])] or [_study(p)["game"]])}
    assert games <= set(families.game_names())
    for family in ("envy", "glee", "commons"):
        assert any(g == family or g.startswith(family + ".") for g in games), family
    assert {"envy.points", "envy.workplace", "glee.bargaining", "glee.negotiation", "glee.persuasion", "commons"} <= games
    assert {"dictator", "ultimatum", "trust", "public_goods", "prisoners_dilemma", "beauty_contest"} <= games


#: What :func:`_fill` reads of the open turn's form in one call (each call to the browser costs
#: about as much as a small page): each field (the first element of each name) with its tag,
#: kind, bounds and, for a list, its first option that is not disabled.
_FIELDS = """() => {
  const fields = [], seen = new Set();
  document.querySelectorAll('#turn-form input:not([type=hidden]), #turn-form textarea, #turn-form select').forEach((e, i) => {
    const name = e.getAttribute('name');
    if (seen.has(name)) { return; }
    seen.add(name);
    const tag = e.tagName.toLowerCase();
    const first = tag === 'select' ? ([...e.options].find(o => !o.disabled) || {}).value : null;  // a "Choose one" placeholder is no choice
    fields.push({index: i, name, tag, kind: e.getAttribute('type') || tag, min: e.getAttribute('min'), max: e.getAttribute('max'), first});
  });
  return fields;
}"""


def _fill(page, note: str) -> None:
    """The simple answer policy: the first choice of every list, a number within the field's
    bounds (for amounts that must add up to a total, the whole total to the first and nothing to
    the others), a short sentence in every text box."""
    total = re.search(r"add up to \$?([\d,]+(?:\.\d+)?)", note)
    numbers = 0
    fields = page.evaluate(_FIELDS)
    elements = page.query_selector_all("#turn-form input:not([type=hidden]), #turn-form textarea, #turn-form select") if fields else []
    for f in fields:
        name, tag, kind, el = f["name"], f["tag"], f["kind"], elements[f["index"]]
        if kind == "radio":
            page.query_selector_all(f"#turn-form input[name='{name}']")[0].check()
        elif tag == "select":
            el.select_option(f["first"])
        elif kind == "number":
            if total:
                value = total.group(1).replace(",", "") if numbers == 0 else "0"
            else:
                lo, hi = f["min"], f["max"]
                value = str(min(float(hi), max(1.0, float(lo or 0)))) if hi else str(max(1, int(float(lo or 1))))
                value = value.removesuffix(".0")
            numbers += 1
            el.fill(value)
        elif kind == "checkbox":
            continue
        else:
            el.fill("I think this is reasonable.")


#: What :func:`_journey` reads of each page in one call: the page's whole text and, by id, the
#: element's text (None: not there).
_HERE = """() => ({body: document.body.innerText, ...Object.fromEntries(['thinking', 'submit-attention', 'submit-results', 'result', 'bonus-rule', 'submit-questionnaire', 'form-note']
  .map(id => { const e = document.getElementById(id); return [id, e ? e.innerText : null]; }))})"""


def _journey(page, base: str, pid: str, web: dict[str, Any], on_turn=None, max_turns: int = 60) -> dict[str, Any]:
    """One participant of a served study from the entry link to the completion code; returns
    every page's text and what the results page said."""
    texts: list[str] = []

    def seen() -> str:
        text = page.inner_text("body")
        texts.append(text)
        return text

    page.goto(f"{base}/start?PROLIFIC_PID={pid}&STUDY_ID=st1&SESSION_ID=se1")
    seen()
    submit(page, "#agree")
    instructions = page.inner_text("#instructions")
    seen()
    submit(page, "#continue")
    if page.query_selector("#submit-quiz"):
        seen()
        for i, item in enumerate(web.get("quiz", [])):
            page.check(f"input[name='q{i}'][value={json.dumps(item['answer'])}]")
        submit(page, "#submit-quiz")
    attention = {c["question"]: c["answer"] for c in web.get("attention_checks", [])}
    turns = 0
    result = bonus_rule = ""
    waits: list[str] = []
    while True:
        page.wait_for_selector("#turn-form, #submit-attention, #submit-results, #submit-questionnaire, #thinking", timeout=120_000)
        here = page.evaluate(_HERE)
        if here["thinking"] is not None:
            waits.append((turns, here["thinking"]))
            page.wait_for_selector("#turn-form, #submit-attention, #submit-results, #submit-questionnaire", timeout=120_000)
            here = page.evaluate(_HERE)
        text = here["body"]
        texts.append(text)
        if here["submit-attention"] is not None:
            question = next(q for q in attention if q in text)
            page.check(f"input[name='answer'][value={json.dumps(attention[question])}]")
            submit(page, "#submit-attention")
            continue
        if here["submit-results"] is not None:
            assert here["result"] is not None and here["bonus-rule"] is not None, text[:1500]
            result, bonus_rule = here["result"], here["bonus-rule"]
            submit(page, "#submit-results")
            page.wait_for_selector("#submit-questionnaire")
            continue
        if here["submit-questionnaire"] is not None:
            break
        note = here["form-note"] or ""
        if on_turn:
            on_turn(page, turns)
        _fill(page, note)
        submit(page, "#submit-turn")
        turns += 1
        assert turns <= max_turns, "the game did not end"
    questionnaire = page.content()
    for q in web.get("questionnaire", []):
        kind = q.get("kind", "text")
        if kind == "scale":
            page.check(f"input[name='a_{q['name']}'][value='{(q.get('scale', 7) + 1) // 2}']")
        elif kind == "choice":
            page.check(f"input[name='a_{q['name']}'][value={json.dumps(q['options'][0])}]")
        else:
            page.fill(f"textarea[name='a_{q['name']}']", "It seemed sensible.")
    submit(page, "#submit-questionnaire")
    seen()
    return {"instructions": instructions, "turns": turns, "result": result, "bonus_rule": bonus_rule, "texts": texts, "code": page.inner_text("#code"), "bonus": page.inner_text("#bonus"), "waits": waits, "questionnaire": questionnaire}


COMMONS = ROOT / "studies" / "web_commons.toml"


@pytest.fixture(scope="module")
def commons_played(person_context, tmp_path_factory) -> dict[str, Any]:
    """The commons study's journey, played once for the two tests that read it (its page checks
    below and the harvest and speaker checks after them): at the first harvest form an
    impossible harvest is sent past the browser's own check, and at the first choice of the
    next speaker the list's options are read. Returns the journey, what was checked, the store."""
    data = _study(COMMONS)
    checked: dict[str, Any] = {}

    def on_turn(page, n):
        if page.query_selector("input[name='amount']") and "refused" not in checked:
            page.fill("input[name='amount']", "99999")
            page.evaluate("document.querySelector('input[name=amount]').removeAttribute('max')")  # past the browser's own check
            submit(page, "#submit-turn")
            page.wait_for_selector("#form-errors")
            checked["refused"] = page.inner_text("#form-errors")
            checked["max"] = page.get_attribute("input[name='amount']", "max")
        if page.query_selector("select[name='next_speaker']") and "names" not in checked:
            checked["names"] = page.eval_on_selector("select[name='next_speaker']", "s => Array.from(s.options).map(o => o.value)")
            checked["end_button"] = page.inner_text("#button-end_conversation")
            checked["text_inputs"] = [e.get_attribute("name") for e in page.query_selector_all("#turn-form input[type=text]")]

    db = tmp_path_factory.mktemp("web_commons") / "web.db"
    with fresh_page(person_context) as page, AppServer(COMMONS, db) as server:
        seen = _journey(page, server.url, "FCOMMONS", data["web"], on_turn=on_turn)
    return {"seen": seen, "checked": checked, "db": db}


@pytest.mark.parametrize("path", SERVED, ids=[p.stem for p in SERVED])
def test_served_study_journey_in_words_meant_for_people(path, browser_and_endpoint, person, tmp_path, request):
    data = _study(path)
    web = data.get("web", {})
    db = tmp_path / "web.db"
    members = _human_seats(data)  # a group game: every member at once, each in their own browser
    pids = [f"F{abs(hash(path.stem)) % 10**6}" + (f"M{i}" if members > 1 else "") for i in range(members)]
    others = [{} for _ in pids[1:]]
    served = _model_seats_scripted(path, data, tmp_path) if members > 1 else path
    endpoint = browser_and_endpoint[1]
    if path == COMMONS:  # its one journey, shared with the harvest and speaker checks
        played = request.getfixturevalue("commons_played")
        db, journeys = played["db"], [played["seen"]]
    else:
        with AppServer(served, db) as server:
            threads = [threading.Thread(target=_journey_in_own_browser, args=(endpoint, server.url, pid, web, out), daemon=True) for pid, out in zip(pids[1:], others)]
            for t in threads:
                t.start()
            journeys = [_journey(person, server.url, pids[0], web)]
            for t in threads:
                t.join(timeout=300)
                assert not t.is_alive(), f"{path.stem}: a member's journey did not end"
    for out in others:
        if "error" in out:
            raise out["error"]
        journeys.append(out["seen"])
    for seen in journeys:
        _check_journey(path, web, seen)
    store = Store(db)
    try:
        (game,) = store.games(data["name"])
        rows = Participants(store).of_study(data["name"])
    finally:
        store.dispose()
    assert game["status"] == "done"
    # every member played in the one game, each in a seat of their own, the group complete
    assert len(rows) == members and {r["game_id"] for r in rows} == {game["id"]}, rows
    assert sorted(game["seats"][r["role"]] for r in rows) == sorted(f"human:{r['pid_hash']}" for r in rows)
    assert all(r["stage"] == "done" and r["game_status"] == "done" for r in rows), rows
    if members > 1:
        assert all(r["group_info"]["fallback"] == {} and len(r["group_info"]["members"]) == members for r in rows), rows


def _check_journey(path: Path, web: dict[str, Any], seen: dict[str, Any]) -> None:
    """The per-study checks of one participant's journey: pages in words meant for people."""
    assert seen["turns"] >= 1 and seen["instructions"].strip()
    assert seen["code"] == (web.get("completion_code") or seen["code"]) and seen["code"]
    for text in seen["texts"]:  # consent, instructions, quiz, every turn, results, the end
        found = MACHINE_WORDS.search(text)
        assert found is None, f"{path.stem}: a page says {found.group()!r}: {text[max(0, found.start() - 200):found.end() + 100]!r}"
        assert "False" not in text.split() and "True" not in text.split(), text
    # the results page is in words: sentences, no metric dump, the bonus rule without code names
    assert seen["result"].strip() and not re.search(r"\b\w+_\w+\b", seen["result"]), seen["result"]
    assert len(re.findall(r"[.!]", seen["result"])) >= 1 and ": nan" not in seen["result"]
    assert "$" in seen["bonus_rule"] and not CODE_NAMES.search(seen["bonus_rule"]), seen["bonus_rule"]
    # the questionnaire's scale items show their own end labels
    for q in web.get("questionnaire", []):
        if q.get("kind") == "scale":
            labels = q.get("scale_labels", ["strongly disagree", "strongly agree"])
            assert all(label in seen["questionnaire"] for label in labels), (q["name"], labels)
    # "Your answer is in" only once an answer was given: never on a page before the first turn
    for answered, wait in seen["waits"]:
        assert "Waiting for the other player" in wait or "One moment, please" in wait, wait  # a game only the person plays waits for nobody
        assert answered or "Your answer is in" not in wait, wait


def test_commons_refuses_an_impossible_harvest_and_offers_the_group_names(commons_played):
    seen, checked = commons_played["seen"], commons_played["checked"]
    stock = int(checked["max"])
    assert stock > 0 and f"enter a whole number from 0 to {stock}" in checked["refused"] and "99999" in checked["refused"]
    # the names of the other fishers (not the person's own), never a free text field
    assert checked["names"] and set(checked["names"]) < {"John", "Kate", "Jack", "Emma", "Luke"}, checked["names"]
    assert "next_speaker" not in checked["text_inputs"] and "end the meeting" in checked["end_button"]
    assert "You took" in seen["result"] and "The whole group took" in seen["result"]
    assert "2 cents for every ton" in seen["bonus_rule"]

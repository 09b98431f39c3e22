"""Every participant page of every ready served study (studies/web_*.toml), read over HTTP as a
person reads it (the app served by uvicorn on 127.0.0.1, plain HTTP clients, no browser): each
study is played by as many participants as it has human seats to give (a group study's members
at once), from the consent to the completion code. No page shows text written for a model:
"step by step", "JSON", a "YYYY" date format, a "language model"; nor wording that is not
people's ("1 points", "round(s)", "Alice gain: 60", "> " quoting). The pages come from the app's
own templates and the games' wording for people, so a new served study is covered without a line
here."""

from __future__ import annotations

import html
import random
import re
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from agorabench.core.study import load_study
from agorabench.core.study import Study
from agorabench.web.app import create_app
from agorabench.web.rehearse import rehearsal_study
from agorabench.web.rehearse_forms import fill
from agorabench.web.rehearse_pages import read_page
from agorabench.web.settings import web_settings
from support.helpers import ROOT, free_port

SERVED = sorted((ROOT / "studies").glob("web_*.toml"))

#: Text written for a model that no person should read.
FOR_MODELS = re.compile(r"step[- ]by[- ]step|\bJSON\b|YYYY|language models?", re.IGNORECASE)
#: Wording that is not people's (issue 41 item 7): a count of one before a plural, "(s)", a
#: field's code name or a model's quoting read back, a peer named by seat, every study a "game".
NOT_PEOPLES = re.compile(r"(?<![\d.,])\b1 (?:points|tons|rounds|tokens|units|months)\b|\(s\)|End conversation|(?:^|\s)> |\b[A-Za-z]+ gain: |\bPlayer [A-Z]\b|game is over")


def page_text(body: str) -> str:
    """A page's words as a person reads them: no tags, entities decoded, spaces folded."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", body)).split())


class Served:
    """``study`` served by uvicorn in a thread of this process on 127.0.0.1, its language-model
    seats played by a scripted strategy of the game as a rehearsal plays them (nothing is called)."""

    def __init__(self, study: Study, db: Path) -> None:
        import uvicorn

        self.study, _ = rehearsal_study(study, idle=300.0)
        self.app = create_app(self.study, str(db), dashboard_token="t" * 32)
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.server = uvicorn.Server(uvicorn.Config(self.app, host="127.0.0.1", port=port, log_level="warning", access_log=False))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> "Served":
        self.thread.start()
        deadline = time.time() + 30
        while not self.server.started:
            assert time.time() < deadline and self.thread.is_alive(), "web app did not start"
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


def journey(base: str, pid: str, study: Study, texts: list[str], max_pages: int = 600) -> dict[str, Any]:
    """One participant from the entry link to the completion code over HTTP: the quiz answered
    right, attention checks passed, each turn's form filled with its first options and lowest
    bounds (amounts that must add up, split), the questionnaire answered. Every page read goes
    into ``texts``; returns the count of turns and the last page."""
    settings = web_settings(study)
    attention = {c.question: c.answer for c in settings.attention_checks}
    rng = random.Random(0)
    turns = 0
    with httpx.Client(base_url=base, follow_redirects=True, timeout=60) as c:
        r = c.get(f"/start?PROLIFIC_PID={pid}&STUDY_ID=s&SESSION_ID=x")
        url = r.url.path
        for _ in range(max_pages):
            assert r.status_code < 400, (r.status_code, page_text(r.text)[:300])
            texts.append(r.text)
            page = read_page(r.status_code, str(r.url), r.text)
            form = page.form
            if form is None:
                if "code" in page.texts:
                    return {"turns": turns, "last": r.text}
                time.sleep(0.05)  # the waiting page or the waiting room
                r = c.get(url)
                continue
            stage = form.stage
            if stage == "consent":
                data = {"csrf": form.inputs["csrf"].value, "agree": "yes"}
            elif stage == "quiz":
                data = {"csrf": form.inputs["csrf"].value, **{f"q{i}": q.answer for i, q in enumerate(settings.quiz)}}
            elif stage == "attention":
                question = next(q for q in attention if q in page_text(r.text))
                data = {"csrf": form.inputs["csrf"].value, "answer": attention[question]}
            else:
                data = fill(form, rng, "first", page.texts.get("form-note", ""), text="I think this is fair.")
                data = {k: v for k, v in data.items() if k != "end_conversation"}  # keep talking
                turns += stage == "play"
            r = c.post(form.action, data=data)
    raise AssertionError(f"{pid}: no completion code after {max_pages} pages")


def _seats(study: Study) -> tuple[int, int]:
    """How many human seats a study gives to arrivals (its slots) and how many one game seats."""
    specs = [s for s in study.iter_specs() if any(study.models[m].is_human for m in s.seats.values())]
    per_game = [sum(1 for m in s.seats.values() if study.models[m].is_human) for s in specs]
    return sum(per_game), max(per_game)


def play_study(path: Path, db: Path, limit: int = 6) -> list[str]:
    """Every page the participants of ``path`` read, up to ``limit`` arrivals (a group study's
    members at once, each in a thread of their own)."""
    study = load_study(path)
    slots, group = _seats(study)
    texts: list[str] = []
    with Served(study, db) as server:
        arrivals = min(slots, max(limit, group))
        for first in range(0, arrivals, group):
            errors: list[BaseException] = []

            def one(i: int) -> None:
                try:
                    journey(server.url, f"P{path.stem}{i}", server.study, texts)
                except BaseException as exc:  # noqa: BLE001 - raised in the test's thread
                    errors.append(exc)

            threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(first, min(first + group, arrivals))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=300)
            if errors:
                raise errors[0]
    return texts


@pytest.mark.parametrize("path", SERVED, ids=[p.stem for p in SERVED])
def test_no_participant_page_of_a_served_study_is_written_for_a_model(path, tmp_path):
    texts = play_study(path, tmp_path / "w.db")
    assert texts
    for body in texts:
        text = page_text(body)
        for words in (FOR_MODELS, NOT_PEOPLES):
            found = words.search(text)
            assert found is None, f"{path.stem}: a page says {found.group()!r}: {text[max(0, found.start() - 300):found.end() + 200]!r}"

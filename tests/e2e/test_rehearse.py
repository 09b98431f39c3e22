"""`agora serve STUDY --rehearse N`: simulated participants go through the real pages of a served
study over HTTP (uvicorn on 127.0.0.1) on a database of the rehearsal's own; every ready served
study (studies/web_*.toml) rehearses cleanly, and a study with protocol errors (a scale question
without labels, a question nobody can answer, a bonus rule that pays nothing) has each named in
one line and exits with status 1."""

from __future__ import annotations

import csv
import io
import re
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python < 3.11
    import tomli as tomllib

from agorabench.store.participants import Participants
from agorabench.store.store import Store
from support.helpers import ROOT, agora, one_line_error
from support.web import study_text

SERVED = sorted((ROOT / "studies").glob("web_*.toml"))


def games_line(out: str) -> dict[str, int]:
    m = re.search(r"^games: (\d+) completed, (\d+) abandoned, (\d+) ended in errors, (\d+) still running, (\d+) not started", out, re.M)
    assert m, out
    return dict(zip(("done", "abandoned", "error", "running", "not started"), map(int, m.groups())))


def stored_games(db) -> list[dict]:
    store = Store(str(db))
    try:
        return store.games()
    finally:
        store.dispose()


def human_seats(path) -> int:
    """The most human seats of one game of a served study (1: one person per game; more: a
    group game whose members meet in the waiting room)."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    people = {m["name"] for m in data.get("models", []) if m.get("spec") == "human"}
    return max((sum(1 for v in row.values() if v in people) for row in data.get("seats", [])), default=1) or 1


def rows(db) -> list[dict]:
    store = Store(str(db))
    try:
        return Participants(store).of_study(store.games()[0]["study"])
    finally:
        store.dispose()


class _ThreadOutput(io.TextIOBase):
    """``sys.stdout`` or ``sys.stderr`` while rehearsals run side by side: what a rehearsal's
    thread prints goes to that thread's own buffer, anything else to the stream it stands for."""

    def __init__(self, stream) -> None:
        self.stream, self.local = stream, threading.local()

    def write(self, text: str) -> int:
        return (getattr(self.local, "buf", None) or self.stream).write(text)

    def flush(self) -> None:
        self.stream.flush()


#: Rehearsals run at once: a rehearsal mostly waits (on its slow participant and on its leaver's
#: idle timeout), a few side by side keep a core busy at most.
SIDE_BY_SIDE = 4


@pytest.fixture(scope="module")
def rehearsals(request, tmp_path_factory) -> dict[str, Any]:
    """The rehearsals this run's tests of the module read, :data:`SIDE_BY_SIDE` at a time, each in
    a thread: each selected served study's (``agora serve STUDY --rehearse 4`` in this process,
    its printed lines kept apart from the others'), by the study's name: (exit status, stdout,
    stderr, its database, the live database's modification time before); the group study's
    (``web_pair``) and the broken study's (``web_broken``): the same, less the live time; or the
    exception one raised. Every rehearsal runs the command line in this process (the exit
    status is ``main``'s return value, which ``python -m agorabench`` exits with: the real
    process's exit status is tested in tests/e2e/test_cli_errors.py)."""
    from agorabench.cli import main

    tests = {item.originalname: item for item in request.session.items if item.module is request.module}
    out, err = _ThreadOutput(sys.stdout), _ThreadOutput(sys.stderr)

    def in_process(*args: str) -> tuple[int, str, str]:
        out.local.buf, err.local.buf = io.StringIO(), io.StringIO()
        rc = main(list(args))
        return rc, out.local.buf.getvalue(), err.local.buf.getvalue()

    def served(path: Path) -> tuple:
        live = ROOT / "runs" / f"{path.stem}.db"
        live_before = live.stat().st_mtime_ns if live.exists() else None
        db = tmp_path_factory.mktemp(path.stem) / "rehearsal.db"
        return (*in_process("serve", str(path), "--rehearse", "4", "--db", str(db), "--rehearse-idle", "3"), db, live_before)

    def pair() -> tuple:
        folder = tmp_path_factory.mktemp("web_pair")
        db = folder / "pair.db"
        return (*in_process("serve", str(_pair_study(folder)), "--rehearse", "5", "--db", str(db), "--rehearse-idle", "3"), db)

    def broken() -> tuple:
        folder = tmp_path_factory.mktemp("web_broken")
        db = folder / "r.db"
        return (*in_process("serve", str(_broken_study(folder)), "--rehearse", "4", "--db", str(db), "--rehearse-idle", "3"), db)

    jobs: dict[str, Any] = {}
    if "test_protocol_errors_are_named_and_fail" in tests:
        jobs["web_broken"] = broken
    if "test_group_games_wait_in_the_waiting_room" in tests:
        jobs["web_pair"] = pair
    for item in request.session.items:
        if item.module is request.module and item.originalname == "test_every_served_study_rehearses":
            path = item.callspec.params["path"]
            jobs[path.stem] = lambda path=path: served(path)

    def run(job) -> Any:
        try:
            return job()
        except BaseException as exc:  # noqa: BLE001 - raised again in the test that reads it
            return exc

    sys.stdout, sys.stderr = out, err
    try:
        with ThreadPoolExecutor(SIDE_BY_SIDE) as pool:
            done = dict(zip(jobs, pool.map(run, jobs.values())))
    finally:
        sys.stdout, sys.stderr = out.stream, err.stream
    return done


def _result(rehearsals: dict[str, Any], name: str) -> Any:
    found = rehearsals[name]
    if isinstance(found, BaseException):
        raise found
    return found


@pytest.mark.parametrize("path", SERVED, ids=[p.stem for p in SERVED])
def test_every_served_study_rehearses(path, rehearsals):
    assert SERVED, "no studies/web_*.toml"
    rc, out, err, db, live_before = _result(rehearsals, path.stem)
    live = ROOT / "runs" / f"{path.stem}.db"
    tmp_path = db.parent
    assert rc == 0, out + err
    assert f"database: {db}" in out
    g = games_line(out)
    assert g["done"] >= 1 and g["error"] == 0 and g["running"] == 0, out
    for page in ("consent", "instructions", "play", "results", "done"):
        assert re.search(rf"^  {page} +\d+ ", out, re.M), (page, out)
    assert not [line for line in out.splitlines() if line.startswith(("protocol error:", "error:"))], out
    assert "rehearsal: passed (0 protocol error(s), 0 other error(s))" in out
    # the export a real session gives, written next to the rehearsal's database
    games_csv = tmp_path / "rehearsal-export" / "games.csv"
    assert f"export: games: {games_csv}" in out and games_csv.exists()
    with games_csv.open() as f:
        exported = len(list(csv.DictReader(f)))
    # the "games:" line counts every stored game once, a group game too; the export holds each once
    ended = [x for x in stored_games(db) if x["status"] in ("done", "abandoned")]
    assert exported == len(ended) == sum(g[k] for k in ("done", "abandoned")) >= 1
    assert g["done"] == sum(x["status"] == "done" for x in ended), out
    if human_seats(path) > 1:  # group games: fewer games than participants, each with 1..human_seats people
        assert re.search(r"^  waiting room +\d+ ", out, re.M), out  # the members met in the waiting room
        assert all(1 <= sum(str(r).startswith("human:") for r in x["seats"].values()) <= human_seats(path) for x in ended), ended
    # four participants in the rehearsal's own database; the live database untouched
    people = rows(db)
    assert len(people) == 4 and all(p["participant"].startswith("REHEARSAL") for p in people)
    finished = {p["participant"]: f"{p['bonus']:.2f}" for p in people if p["stage"] == "done"}
    assert finished
    with (tmp_path / "rehearsal-export" / "bonus.csv").open() as f:  # the dashboard's bonus file
        assert {row["participant"]: row["bonus"] for row in csv.DictReader(f)} == finished
    assert (live.stat().st_mtime_ns if live.exists() else None) == live_before


BROKEN_WEB = {
    "bonus": "0.01 * alice_gian",  # a misspelt name: nobody is ever paid
    "questionnaire": [
        {"name": "why", "question": "Why?"},
        {"name": "fair", "question": "Fair?", "kind": "scale", "scale": 5, "scale_labels": ["", ""]},
    ],
}


def _broken_study(folder: Path) -> Path:
    """Alice against a Bob who rejects every offer, three rounds (so a leaver leaves mid-game),
    with :data:`BROKEN_WEB`'s protocol errors."""
    study = folder / "web_broken.toml"
    study.write_text(study_text("web_broken", "glee.bargaining", [{"alice": "participant", "bob": "opponent"}], {"money": 100, "horizon": 3}, [{"name": "opponent", "spec": "strategy/always-reject"}], BROKEN_WEB))
    return study


def test_protocol_errors_are_named_and_fail(rehearsals):
    rc, out, err, db = _result(rehearsals, "web_broken")  # `agora serve web_broken.toml --rehearse 4`
    assert rc == 1, out + err
    problems = [line for line in out.splitlines() if line.startswith("protocol error: ")]
    assert len(problems) == 2, out
    assert any("questionnaire item 'fair'" in p and "without labels" in p for p in problems), problems
    assert any("alice_gian" in p and "pays nothing" in p for p in problems), problems
    assert "rehearsal: FAILED (2 protocol error(s), 0 other error(s))" in out
    # the rest of the rehearsal ran: the participant who left mid-game was let go by the idle
    # timeout, the others finished
    g = games_line(out)
    assert g == {"done": 3, "abandoned": 1, "error": 0, "running": 0, "not started": 0}, out
    by_pid = {p["participant"]: p for p in rows(db)}
    assert by_pid["REHEARSAL0002"]["game_status"] == "abandoned"
    assert all(by_pid[f"REHEARSAL000{i}"]["stage"] == "done" for i in (0, 1, 3))


def test_a_question_nobody_can_answer(tmp_path, capsys):
    web = {"questionnaire": [{"name": "pick", "question": "Pick one", "kind": "choice", "options": []}]}
    study = tmp_path / "web_noopt.toml"
    study.write_text(study_text("web_noopt", "glee.bargaining", [{"alice": "participant", "bob": "opponent"}], {"money": 100, "horizon": 2}, [{"name": "opponent", "spec": "strategy/always-accept"}], web))
    rc, out, err = agora(capsys, "serve", str(study), "--rehearse", "1", "--db", str(tmp_path / "r.db"), "--rehearse-idle", "3")
    assert rc == 1, out + err
    problems = [line for line in out.splitlines() if line.startswith("protocol error: ")]
    assert problems == ["protocol error: the 'questionnaire' page cannot be completed: question 'Pick one' offers nothing to answer with"], out


def test_rehearsal_never_uses_a_live_database(tmp_path, capsys):
    study = tmp_path / "web_live.toml"
    study.write_text(study_text("web_live", "glee.bargaining", [{"alice": "participant", "bob": "opponent"}], {"money": 100, "horizon": 2}, [{"name": "opponent", "spec": "strategy/always-accept"}]))
    db = tmp_path / "live.db"
    rc, out, err = agora(capsys, "serve", str(study), "--rehearse", "1", "--db", str(db), "--rehearse-idle", "3")
    assert rc == 0, out + err
    # the same database again now holds participants: it may be a live one, and is refused
    rc, out, err = agora(capsys, "serve", str(study), "--rehearse", "1", "--db", str(db))
    one_line_error(rc, err, "holds 1 participant", "never the live one")
    rc, out, err = agora(capsys, "serve", str(study), "--rehearse", "1", "--rehearse-idle", "0")
    one_line_error(rc, err, "idle timeout")


def _pair_study(folder: Path) -> Path:
    """Pairs of participants in one bargaining game, the ``spe`` strategy their fallback."""
    web = {"group_fallback": "spe", "bonus": {"alice": "0.01 * alice_gain", "bob": "0.01 * bob_gain"}, "attention_checks": []}
    study = folder / "web_pair.toml"
    study.write_text(study_text("web_pair", "glee.bargaining", [{"alice": "participant", "bob": "participant"}], {"money": 100, "horizon": 3}, [{"name": "spe", "spec": "strategy/spe"}], web))
    return study


def test_group_games_wait_in_the_waiting_room(rehearsals):
    """Pairs of participants in one bargaining game (``agora serve web_pair.toml --rehearse 5``):
    the driver waits in the waiting room until its partner comes; the fifth participant's group
    stays incomplete and starts after ``group_wait`` (shortened for the rehearsal) with the
    fallback in the empty seat."""
    rc, out, err, db = _result(rehearsals, "web_pair")
    assert rc == 0, out + err
    assert re.search(r"^  waiting room +\d+ ", out, re.M), out
    assert "group_wait 6 s (study: 300 s)" in out
    by_pid = {p["participant"]: p for p in rows(db)}
    assert by_pid["REHEARSAL0002"]["game_status"] == "abandoned"  # left at the first turn
    assert by_pid["REHEARSAL0004"]["stage"] == "done" and by_pid["REHEARSAL0004"]["game_status"] == "done"  # alone, then the fallback
    # three games, each counted once: two pairs (one abandoned by its leaver) and the lone fifth
    g = games_line(out)
    assert (g["done"], g["abandoned"]) == (2, 1), out
    assert sorted(x["status"] for x in stored_games(db)) == ["abandoned", "done", "done"]


def test_a_quiz_that_cannot_be_passed_and_server_errors(tmp_path):
    """The driver against a small app of its own: a quiz that marks every answer wrong is named
    as a protocol error; a page answered with HTTP 500 is an error."""
    import asyncio
    import threading
    import time

    import uvicorn
    from fastapi import FastAPI
    from fastapi.responses import HTMLResponse, RedirectResponse

    from agorabench.web.rehearse import Participant, Rehearsal, Run
    from support.helpers import free_port

    app = FastAPI()
    quiz = '<body data-stage="quiz"><h2>Quiz</h2><form method="post" action="/p/t/quiz"><input type="hidden" name="csrf" value="c"><fieldset><legend>1. Ready?</legend><label><input type="radio" name="q0" value="no" required> no</label><label><input type="radio" name="q0" value="yes" required> yes</label></fieldset><button type="submit">Submit</button></form></body>'

    @app.get("/start")
    async def start(PROLIFIC_PID: str = ""):
        return RedirectResponse("/p/t" if PROLIFIC_PID.endswith("0") else "/broken", status_code=303)

    @app.get("/p/t")
    async def page():
        return HTMLResponse(quiz)

    @app.post("/p/t/quiz")
    async def answer():
        return RedirectResponse("/p/t?wrong=1", status_code=303)

    @app.get("/broken")
    async def broken():
        return HTMLResponse("<body><p id='message'>Something broke.</p></body>", status_code=500)

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    try:
        result = Rehearsal("fake", "-", f"http://127.0.0.1:{port}", 2)
        run = Run(result.url, "random", "0", slow=0.1, wait_limit=5, result=result)

        async def both():
            await asyncio.gather(Participant(run, 0).journey(), Participant(run, 1).journey())

        asyncio.run(both())
    finally:
        server.should_exit = True
        thread.join(timeout=10)
    assert result.protocol == ["the quiz cannot be passed: question 1 was marked wrong for every one of its 2 options"]
    assert result.errors == ["participant 1: HTTP 500 at GET /broken (message page): Something broke."]
    assert result.screens["quiz"].count == 3 and result.failed

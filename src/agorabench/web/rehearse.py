"""A rehearsal of a served study (``agora serve STUDY --rehearse N``): N simulated participants
go through the real pages over real HTTP before any person does.

The study's app (:func:`~agorabench.web.app.create_app`) is served by uvicorn on 127.0.0.1 on a
free port, in this process, over a database of its own (a new temporary folder, or ``--db``:
never the live database, which a rehearsal refuses to touch). Each simulated participant is an
HTTP client with its own cookies. It reads every page's HTML (forms, field names and types,
bounds, radio groups, options, hidden CSRF fields) and fills it with a policy: ``random`` valid
values (the default) or ``first`` (the first option, the lowest bound). Participants come in a
fixed cycle of behaviours: most finish, some are slow, some leave in the middle of the game (they
stop answering, and their game must end through the idle timeout) and some leave before it
starts (in a group game, their group stays incomplete). A page without a form that polls (the
waiting page, or a waiting room) is read again until it changes.

For the rehearsal only, the study's ``[web]`` settings are changed: a short ``idle_timeout`` (a
few seconds), a ``time_limit`` of at most twice that, no limit on new sessions per address (all
participants come from 127.0.0.1), room for every participant at once and a short wait for a
group to fill. Language-model seats are played by a scripted strategy of the game (its ``random``
one where it has it) unless the models are kept, so nothing is called or paid for.

The rehearsal prints every page reached (how many times, the server's time per request, the time
a participant spent on it), errors (HTTP 400 and above, forms that cannot be completed,
participants never released from a waiting page), games completed and abandoned, the bonuses
computed, and the files a real session exports (games and turns through
:func:`agorabench.analysis.frames.export`, the bonus files from the dashboard). Protocol errors
are named one per line: a page that cannot be completed, a bonus rule that pays nothing, a scale
question without labels at its ends, a quiz that cannot be passed.

This module drives the rehearsal; a page is read by :mod:`.rehearse_pages`, a form filled by
:mod:`.rehearse_forms` and the bonus rules checked by :mod:`.rehearse_bonus`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
import re
import secrets
import socket
import statistics
import tempfile
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from ..core.study import ModelEntry, Study, StudyError, seat_entries
from ..families import strategies
from ..store.participants import Participants
from ..store.store import Store
from .rehearse_bonus import check_bonus, scale_problems
from .rehearse_forms import agree, fill
from .rehearse_pages import Form, Page, read_page
from .settings import WebSettings, web_settings

POLICIES = ("random", "first")
#: The behaviours of simulated participants, dealt in this order (participant i gets
#: ``CYCLE[i % len(CYCLE)]``): finish, slow, leave during the game, leave before it.
CYCLE = ("finish", "slow", "leave", "finish", "slow", "finish", "leave", "drop")
#: Submissions of one page before it counts as one that cannot be completed.
MAX_TRIES = 5
#: Seconds between two reads of a waiting page.
POLL = 0.2


# ------------------------------------------------------------------------------------------
# Results


@dataclass
class Screen:
    """What the participants met on one kind of page."""

    count: int = 0
    request_s: list[float] = field(default_factory=list)
    on_screen_s: list[float] = field(default_factory=list)


@dataclass
class Rehearsal:
    """What a rehearsal found (its lines: :meth:`lines`)."""

    study: str
    db: str
    url: str
    participants: int
    settings: list[str] = field(default_factory=list)
    behaviours: Counter = field(default_factory=Counter)
    #: Participants who stopped answering, by when ("during the game", "before the game").
    left: Counter = field(default_factory=Counter)
    screens: dict[str, Screen] = field(default_factory=lambda: defaultdict(Screen))
    errors: list[str] = field(default_factory=list)
    protocol: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    games: Counter = field(default_factory=Counter)
    bonuses: list[tuple[str, float]] = field(default_factory=list)  # (role, bonus) of finished participants
    exports: list[str] = field(default_factory=list)
    wall_s: float = 0.0

    @property
    def failed(self) -> bool:
        return bool(self.errors or self.protocol)

    def problem(self, line: str) -> None:
        """A protocol error, named once."""
        if line not in self.protocol:
            self.protocol.append(line)

    def error(self, line: str) -> None:
        if line not in self.errors:
            self.errors.append(line)

    def lines(self) -> list[str]:
        out = [f"rehearsal of study {self.study!r}: {self.participants} simulated participant(s) at {self.url} (uvicorn on 127.0.0.1), {self.wall_s:.1f} s"]
        out.append(f"database: {self.db} (the rehearsal's own, never the live one)")
        out += [f"rehearsal settings: {s}" for s in self.settings]
        gone = "; left: " + ", ".join(f"{n} {when}" for when, n in self.left.items()) if self.left else "; nobody left (their games ended first)"
        out.append("participants: " + ", ".join(f"{n} {b}" for b, n in self.behaviours.items()) + gone)
        out.append("pages reached (times; mean seconds per request; mean seconds on the page):")
        for name, s in self.screens.items():
            req = statistics.fmean(s.request_s) if s.request_s else 0.0
            seen_text = f"{statistics.fmean(s.on_screen_s):6.2f} s" if s.on_screen_s else "     - "
            out.append(f"  {name:<16} {s.count:>4}   {req:6.3f} s   {seen_text}")
        g = self.games
        out.append(f"games: {g['done']} completed, {g['abandoned']} abandoned, {g['error']} ended in errors, {g['running']} still running, {g['not started']} not started (participant left before the game)")
        if self.bonuses:
            paid = [b for _, b in self.bonuses]
            by_role = defaultdict(list)
            for role, b in self.bonuses:
                by_role[role].append(b)
            roles = "; ".join(f"{r}: {len(v)} participant(s), ${sum(v):.2f}" for r, v in sorted(by_role.items()))
            out.append(f"bonuses: {sum(1 for b in paid if b > 0)} of {len(paid)} finished participant(s) paid, total ${sum(paid):.2f}, from ${min(paid):.2f} to ${max(paid):.2f} ({roles})")
        else:
            out.append("bonuses: no participant finished")
        out += [f"export: {e}" for e in self.exports]
        out += [f"warning: {w}" for w in self.warnings]
        out += [f"error: {e}" for e in self.errors]
        out += [f"protocol error: {p}" for p in self.protocol]
        out.append("rehearsal: " + ("FAILED" if self.failed else "passed") + f" ({len(self.protocol)} protocol error(s), {len(self.errors)} other error(s))")
        return out


# ------------------------------------------------------------------------------------------
# The study as rehearsed


def rehearsal_study(study: Study, idle: float, keep_models: bool = False) -> tuple[Study, list[str]]:
    """A copy of ``study`` with the rehearsal's settings (short idle timeout and time limit, no
    start limit, room for everyone, a short ``group_wait``) and, unless ``keep_models``, every
    language-model seat played by a scripted strategy of the game (:func:`_stand_in`); the lines
    that say what changed."""
    web = dict(study.file.web)
    said: list[str] = []
    limit = float(web.get("time_limit", 0) or 0)
    web["idle_timeout"] = idle
    web["time_limit"] = min(limit, 2 * idle) if limit else 0
    web["starts_per_minute"] = 0
    web["max_live"] = max(int(web.get("max_live", 50) or 50), 10_000)
    said.append(f"idle_timeout {idle:g} s (study: {float(study.file.web.get('idle_timeout', 600)):g} s), time_limit {web['time_limit']:g} s (study: {limit:g} s), no start limit per address, no cap on live games")
    if "group_wait" in WebSettings.model_fields:  # group games: an incomplete group starts soon
        wait = float(web.get("group_wait", WebSettings.model_fields["group_wait"].default))
        web["group_wait"] = min(wait, 2 * idle)
        said.append(f"group_wait {web['group_wait']:g} s (study: {wait:g} s): a group that stays incomplete starts with the fallback in the empty seats")
    models = list(study.file.models)
    if not keep_models:
        llm = {name for name, e in study.models.items() if not (e.is_human or e.is_strategy)}
        roles: dict[str, set[tuple[str, str]]] = defaultdict(set)  # model -> (game, role)
        for n, spec in enumerate(study.iter_specs()):
            if n > 20_000:
                break
            for role, model in spec.seats.items():
                if model in llm:
                    roles[model].add((spec.game, role))
        replaced, kept = [], []
        for i, entry in enumerate(models):
            seated = roles.get(entry.name)
            if seated is None or [e.name for e in entry.efforts()] != [entry.name]:
                continue
            name = _stand_in(seated)
            if name is not None:
                models[i] = ModelEntry(name=entry.name, spec=f"strategy/{name}", display_name=entry.display_name)
                replaced.append(f"{entry.name} (by strategy/{name})")
            else:
                kept.append(entry.name)
        if replaced:
            said.append(f"language-model seats played by a scripted strategy of the game (nothing is called or paid): {', '.join(replaced)}")
        if kept:
            said.append(f"language models kept (no scripted strategy of the game plays their roles): {', '.join(kept)}")
    else:
        said.append("language models kept as the study names them (their calls are made and paid)")
    file = study.file.model_copy(update={"web": web, "models": models})
    return dataclasses.replace(study, file=file, models=seat_entries(models)), said


def _stand_in(seated: set[tuple[str, str]]) -> str | None:
    """The scripted strategy that takes a language model's seats (``(game, role)`` pairs) in a
    rehearsal: the games' ``random`` strategy, else the first strategy that plays every one of
    those roles in every one of those games; None when there is none."""
    games = sorted({g for g, _ in seated})
    candidates = ["random", *strategies(games[0])]

    def plays(name: str, game: str, role: str) -> bool:
        factory = strategies(game).get(name)
        allowed = tuple(getattr(factory, "plays", ()) or ()) if factory is not None else ()
        return factory is not None and (not allowed or role in allowed)

    for name in candidates:
        if all(plays(name, g, r) for g, r in seated):
            return name
    return None


def live_participants(db: str, study: str) -> int:
    """How many participants of ``study`` the database ``db`` holds (0 for a new file)."""
    if "://" not in db and not Path(db).exists():
        return 0
    store = Store(db)
    try:
        return len(Participants(store).of_study(study)) if _has_participants(store) else 0
    finally:
        store.dispose()


def _has_participants(store: Store) -> bool:
    import sqlalchemy as sa

    from ..store.schema import participants

    return sa.inspect(store.engine).has_table(participants.name)


# ------------------------------------------------------------------------------------------
# One simulated participant


class Participant:
    """One simulated participant: an HTTP client with its own cookies and a behaviour."""

    def __init__(self, run: "Run", index: int) -> None:
        import httpx

        self.run = run
        self.index = index
        self.behaviour = CYCLE[index % len(CYCLE)]
        self.rng = random.Random(f"{run.seed}:{index}")
        self.pid = f"REHEARSAL{index:04d}"
        self.client = httpx.AsyncClient(base_url=run.url, follow_redirects=True, timeout=60)
        #: Play turns a leaver answers before leaving: none in the first round of the cycle of
        #: behaviours, one in the next, and so on.
        self.leave_after = (index // len(CYCLE)) % 2
        self.turns = 0
        self.shown = time.monotonic()
        self.last: Page | None = None

    async def _get(self, url: str) -> Page:
        return await self._request("GET", url)

    async def _request(self, method: str, url: str, data: dict[str, str] | None = None) -> Page:
        import httpx

        t = time.monotonic()
        try:
            r = await self.client.request(method, url, data=data)
        except httpx.HTTPError as exc:
            where = re.sub(r"/p/[^/?]+", "/p/<session>", url.split("?")[0])
            self.run.result.error(f"participant {self.index}: {method} {where} failed: {type(exc).__name__}: {exc}")
            raise _Stop from None
        elapsed = time.monotonic() - t
        page = read_page(r.status_code, str(r.url), r.text)
        now = time.monotonic()
        name = page.name
        screens = self.run.result.screens
        if self.last is None or method == "POST" or name != self.last.name:  # a new page
            if self.last is not None:  # the time spent on the page just left
                screens[self.last.name].on_screen_s.append(t - self.shown)
            screens[name].count += 1
            screens[name].request_s.append(elapsed)
            self.shown = now
        self.last = page
        if r.status_code >= 400:
            what = page.texts.get("message") or page.heading or r.reason_phrase
            where = re.sub(r"/p/[^/?]+", "/p/<session>", urlsplit(str(r.url)).path)  # no session token in the output
            self.run.result.error(f"participant {self.index}: HTTP {r.status_code} at {method} {where} ({name} page): {what}")
            raise _Stop
        return page

    async def _slow(self) -> None:
        if self.behaviour == "slow":
            await asyncio.sleep(self.run.slow * (0.5 + self.rng.random()))

    async def journey(self) -> None:
        try:
            await asyncio.sleep(0.05 * self.index)
            page = await self._get(f"/start?PROLIFIC_PID={self.pid}&STUDY_ID=rehearsal&SESSION_ID=s{self.index}")
            path = urlsplit(page.url).path
            waited_since: float | None = None
            refused: dict[str, int] = Counter()
            quiz: dict[int, list[str]] = {}
            for _ in range(2_000):
                form = page.form
                if form is None:
                    if page.name == "done":
                        return
                    if not (page.poll or page.refresh):  # a message page that ends the journey early
                        self.run.result.error(f"participant {self.index}: the journey ended on a page with no form and no completion code: {(page.texts.get('message') or page.heading)[:200]!r}")
                        return
                    waited_since = waited_since or time.monotonic()
                    if time.monotonic() - waited_since > self.run.wait_limit:
                        self.run.result.error(f"participant {self.index}: waited {self.run.wait_limit:g} s on the {page.name!r} page ({page.heading or page.texts.get('message', '')!r}) and was never released")
                        return
                    await asyncio.sleep(POLL)
                    page = await self._get(path)
                    continue
                waited_since = None
                stage = form.stage
                if not self.check(page):
                    return  # a form nobody can complete: named once, the participant stops here
                if self.behaviour == "drop" and stage not in ("consent",):
                    self.run.result.left["before the game"] += 1
                    return  # left before the game: in a group game, the group stays incomplete
                if self.behaviour == "leave" and stage in ("play", "attention") and self.turns >= self.leave_after:
                    self.run.result.left["during the game"] += 1
                    return  # stops answering: the game must end through the idle timeout
                await self._slow()
                note = page.texts.get("form-note", "")
                if stage == "consent":
                    data = {**fill(form, self.rng, self.run.policy), **agree(form)}
                elif stage == "quiz":
                    data = self.quiz_answers(form, page, quiz)
                    if data is None:
                        return
                else:
                    data = fill(form, self.rng, self.run.policy, note)
                before = _seq(page)
                page = await self._request("POST", form.action, data)
                same = page.form is not None and page.form.stage == stage
                if stage == "play":
                    refused_now = same and bool(page.errors) and _seq(page) == before
                    self.turns += 0 if refused_now else 1
                else:  # a quiz marked wrong is answered again above, with other options
                    refused_now = stage != "quiz" and same and (bool(page.errors) or "missing=" in page.url)
                if refused_now:
                    refused[stage] += 1
                    if refused[stage] >= MAX_TRIES:
                        why = "; ".join(page.errors)[:300] or "the same page came back"
                        self.run.result.problem(f"the {stage!r} page cannot be completed: the server refused {MAX_TRIES} filled forms ({why})")
                        return
            self.run.result.error(f"participant {self.index}: the journey did not end after 2,000 pages")
        except _Stop:
            return
        finally:
            await self.client.aclose()

    def quiz_answers(self, form: Form, page: Page, tried: dict[int, list[str]]) -> dict[str, str] | None:
        """The quiz form: a first guess, then for each question the page marks wrong an option
        not yet tried; None (and a protocol error) when a question has none left."""
        wrong = [int(x) - 1 for x in parse_qs(urlsplit(page.url).query).get("wrong", [""])[0].split(".") if x.isdigit()]
        data = fill(form, self.rng, self.run.policy)
        for name, f in form.inputs.items():
            m = re.fullmatch(r"q(\d+)", name)
            if not m or f.kind != "radio":
                continue
            i = int(m.group(1))
            seen = tried.setdefault(i, [])
            if seen and i not in wrong:
                data[name] = seen[-1]  # it was right: keep it
                continue
            left = [o for o in f.options if o not in seen]
            if not left:
                self.run.result.problem(f"the quiz cannot be passed: question {i + 1} was marked wrong for every one of its {len(f.options)} options")
                return None
            data[name] = left[0] if self.run.policy == "first" else self.rng.choice(left)
            seen.append(data[name])
        return data

    def check(self, page: Page) -> bool:
        """Protocol checks of a page's content: every scale question labelled at both ends, every
        question offering something to answer with (False: the page cannot be completed)."""
        for name, ends in page.scale_ends.items():
            if len(ends) < 2 or not all(e.strip() for e in ends):
                self.run.result.problem(f"questionnaire item {name.removeprefix('a_')!r} is a scale without labels at its ends (scale_labels empty): a participant cannot tell which end means what")
        for legend in page.unanswerable:
            self.run.result.problem(f"the {page.name!r} page cannot be completed: question {legend[:80]!r} offers nothing to answer with")
        return not page.unanswerable


def _seq(page: Page) -> str:
    f = page.form
    return f.inputs["seq"].value if f is not None and "seq" in f.inputs else ""


class _Stop(Exception):
    """A participant's journey ends here (the reason is recorded)."""


# ------------------------------------------------------------------------------------------
# The rehearsal


@dataclass
class Run:
    url: str
    policy: str
    seed: str
    slow: float
    wait_limit: float
    result: Rehearsal


async def _drive(run: Run, n: int) -> None:
    people = [Participant(run, i) for i in range(n)]
    for p in people:
        run.result.behaviours[p.behaviour] += 1
    await asyncio.gather(*(p.journey() for p in people))


def _wait_for_games(store: Store, study: str, deadline: float) -> list[dict[str, Any]]:
    """The participants' rows once every game that started has ended (or at ``deadline``)."""
    rows = Participants(store)
    while True:
        found = rows.of_study(study)
        if all(r["game_status"] is not None or r["stage"] not in ("play",) for r in found) or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def _export(result: Rehearsal, store: Store, study: str, folder: Path, url: str, token: str) -> None:
    """The files a real session exports: games and turns (as ``agora export`` writes them) and
    the bonus files of the dashboard."""
    import httpx

    from ..analysis import frames

    folder.mkdir(parents=True, exist_ok=True)
    for table in (t for t in frames.TABLES if t != "judgements"):  # games, turns, participants (judgements come from agora judge, not a session)
        out = folder / f"{table}.csv"
        try:
            rows = frames.export(store, study, table, "csv", str(out))
        except ValueError as exc:
            result.error(f"export of the {table} table failed: {exc}")
            continue
        result.exports.append(f"{table}: {out} ({rows} rows)" if rows else f"{table}: no rows, no file written")
    with httpx.Client(base_url=url, timeout=60, headers={"Authorization": f"Bearer {token}"}) as client:
        for name in ("bonus.csv", "bonus-prolific.txt"):
            r = client.get(f"/dash/{name}")
            if r.status_code >= 400:
                result.error(f"dashboard export /dash/{name}: HTTP {r.status_code}")
                continue
            (folder / name).write_text(r.text, encoding="utf-8")
            result.exports.append(f"{name}: {folder / name} ({max(0, len(r.text.splitlines()) - (name == 'bonus.csv'))} participant line(s), from the dashboard)")


def temp_prefix(name: str) -> str:
    """The prefix of a rehearsal's temporary folder: the study's name with anything but letters,
    digits, ``.``, ``_`` and ``-`` made ``_`` and cut to 40 characters, so that any name (``pilot/v2``,
    ``../x``, a long one) is one folder in the temporary directory."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._")[:40] or "study"
    return f"agora-rehearse-{safe}-"


def rehearse(
    study: Study,
    n: int,
    db: str | None = None,
    policy: str = "random",
    idle: float = 4.0,
    keep_models: bool = False,
    export_to: str | Path | None = None,
    wait_limit: float | None = None,
) -> Rehearsal:
    """Send ``n`` simulated participants through the served ``study`` (see the module
    docstring) and return what was found. ``db`` must be a new or rehearsal database (one that
    holds participants of the study is refused: it may be the live one); without it a new
    temporary folder holds the database and the exported files."""
    import uvicorn

    from .app import create_app

    if n < 1:
        raise StudyError(f"--rehearse needs at least 1 participant, not {n}")
    if policy not in POLICIES:
        raise StudyError(f"unknown rehearsal policy {policy!r}: use one of {', '.join(POLICIES)}")
    if not idle > 0:
        raise StudyError(f"the rehearsal's idle timeout must be above 0 seconds, not {idle}")
    if db is None:
        folder = Path(tempfile.mkdtemp(prefix=temp_prefix(study.name)))
        db = str(folder / "rehearsal.db")
    else:
        held = live_participants(db, study.name)
        if held:
            raise StudyError(f"{db} holds {held} participant(s) of study {study.name!r}: a rehearsal writes to a database of its own, never the live one (leave out --db for a temporary one)")
        folder = Path(db).resolve().parent if "://" not in db else Path(tempfile.mkdtemp(prefix=temp_prefix(study.name)))
    export_folder = Path(export_to) if export_to else folder / (f"{Path(db).stem}-export" if "://" not in db else "export")
    rehearsed, said = rehearsal_study(study, idle, keep_models)
    web_settings(rehearsed)  # the [web] table as rehearsed is checked before anything starts
    rehearsed.check_keys()  # only models kept need their keys
    token = secrets.token_urlsafe(24)
    app = create_app(rehearsed, db, dashboard_token=token)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True, name="agora-rehearsal-server")
    result = Rehearsal(study.name, db, url, n, settings=said)
    for problem in scale_problems(study):
        result.problem(problem)
    t0 = time.monotonic()
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise StudyError("the rehearsal's web server did not start")
            time.sleep(0.05)
        run = Run(url, policy, f"{study.file.seed}", slow=min(0.5, idle / 4), wait_limit=wait_limit if wait_limit is not None else max(30.0, 6 * idle), result=result)
        asyncio.run(_drive(run, n))
        store: Store = app.state.store
        rows = _wait_for_games(store, study.name, time.monotonic() + 3 * idle + 30)
        left = {f"REHEARSAL{i:04d}" for i in range(n) if CYCLE[i % len(CYCLE)] == "leave"}
        counted: set[str] = set()  # a group game counts once, by its stored status
        for r in rows:
            status = r["game_status"]
            if status == "declined":
                continue
            if status is None:
                result.games["running" if r["stage"] == "play" else "not started"] += 1
                if r["stage"] == "play":
                    result.error(f"participant {r['participant']}: the game never ended (a participant who stops answering must be let go by the idle timeout of {idle:g} s)")
                continue
            if r["game_id"] not in counted:
                counted.add(r["game_id"])
                stored = store.game(r["game_id"])
                result.games[(stored or {}).get("status") or status] += 1
            if status == "error":
                result.error(f"participant {r['participant']}: the game ended in an error")
            if status == "abandoned" and r["participant"] not in left:
                result.warnings.append(f"participant {r['participant']} kept answering but the game was stored as abandoned (idle timeout {idle:g} s too short for this machine?)")
            if status == "done" and r["participant"] in left:
                pass  # left after the game's last turn: it finished without them
            if r["stage"] == "done":
                result.bonuses.append((r["role"], float(r["bonus"] or 0.0)))
        check_bonus(result, rehearsed, store, rows)
        if store.games(study.name):
            _export(result, store, study.name, export_folder, url, token)
        else:
            result.exports.append("nothing to export: no game was stored")
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()
        result.wall_s = time.monotonic() - t0
    return result

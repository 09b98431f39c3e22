"""The web app: participant pages of a served study and the researcher dashboard.

``create_app(study, db)`` builds a FastAPI app; ``serve`` runs it with uvicorn. Pages are
server-rendered Jinja2 with autoescaping (every model text is escaped); a few lines of plain
JavaScript poll for the other player's move (and, in a group game's waiting room, for the
group to be complete) and count down the turn's time limit.

Security: a participant's pages live under ``/p/<token>``, a 256-bit random session token, and
every form carries the session's CSRF value, checked on the server; a page shows only the
participant's own transcript (what their role was told), never the configuration, another
role's transcript or a strategy's observation, so hidden values never reach the browser.
"""

from __future__ import annotations

import collections
import hmac
import os
import secrets
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles

from ..core.study import Study
from ..store.store import Store
from ..text import typed
from .dashboard import Dashboard
from .forms import MAX_TEXT, answer_text, form_fields, parse_form
from .pages import HERE, not_found, page, templates
from .participants import id_refusal, participant_from_query
from .play import Manager, for_person
from .settings import WebSettings

# ``page``, ``not_found`` and ``templates`` live in pages.py (shared with the dashboard) and are
# still importable from here.
__all__ = ["create_app", "not_found", "page", "progress", "questionnaire_answers", "serve", "templates"]

SESSION_COOKIE = "agora_session"
STAGES = ("consent", "instructions", "quiz", "play", "results", "questionnaire", "done")
#: What a participant reads for each stage in the progress line ("Step 3 of 6: Quiz").
STAGE_NAMES = {"consent": "Consent", "instructions": "Instructions", "quiz": "Quiz", "play": "The game", "results": "Your result", "questionnaire": "Questions", "done": "Finish"}


def progress(stage: str, quiz: bool, questionnaire: bool) -> dict[str, Any] | None:
    """Where ``stage`` is among the steps this study shows (the quiz and the questionnaire only
    when it has them): ``{"n", "of", "name"}``, or None for a stage that is no step."""
    steps = [x for x in STAGES if (x != "quiz" or quiz) and (x != "questionnaire" or questionnaire)]
    return {"n": steps.index(stage) + 1, "of": len(steps), "name": STAGE_NAMES[stage]} if stage in steps else None
#: Response headers of every page: no framing, no sniffing, no outside resources.
SECURITY_HEADERS = {
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'",
}


#: The shortest dashboard token served without a warning.
MIN_TOKEN = 16


def create_app(study: Study | None, db: str, dashboard_token: str | None = None) -> FastAPI:
    """The app for ``study`` (participants and dashboard) or, without a study, the dashboard
    over the database ``db`` alone. The dashboard token comes from ``AGORA_DASHBOARD_TOKEN``
    unless given; without either a random one is made and printed once."""
    store = Store(db)
    manager = Manager(study, store) if study is not None else None
    token = dashboard_token or os.environ.get("AGORA_DASHBOARD_TOKEN") or ""
    if not token:
        token = secrets.token_urlsafe(24)
        print(f"agora serve: dashboard token (set AGORA_DASHBOARD_TOKEN to choose one): {token}", file=sys.stderr)
    elif len(token) < MIN_TOKEN:
        print(f"agora serve: warning: the dashboard token has {len(token)} character(s); one of {MIN_TOKEN} or more is much harder to guess (leave AGORA_DASHBOARD_TOKEN unset for a random one)", file=sys.stderr)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        if manager is not None:
            await manager.resume_all()
        yield
        if manager is not None:
            await manager.stop()
        await app.state.dashboard.stop()
        store.dispose()

    app = FastAPI(lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.store = store
    app.state.manager = manager
    app.state.study = study
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")

    @app.middleware("http")
    async def headers(request: Request, call_next):
        response = await call_next(request)
        for k, v in SECURITY_HEADERS.items():
            response.headers.setdefault(k, v)
        return response

    app.state.dashboard = Dashboard(app, store, study, manager, token)

    @app.get("/", response_class=HTMLResponse)
    async def home(request: Request):
        title = manager.settings.title if manager else "agorabench"
        return page(request, "message.html", title=title or "agorabench", message="Please use the link you received to take part.", status=200)

    if manager is not None:
        add_participant_routes(app, manager)
    return app


#: Most form errors kept with one turn (a participant posting nonsense for ever adds no more).
MAX_KEPT_ERRORS = 50


@dataclass
class Visit:
    """One request to a participant's session that passed the shared checks (the session
    exists, the browser owns it and, for a form, the CSRF value matches and the form belongs
    to the current stage): what a stage's handler works from."""

    request: Request
    m: Manager
    token: str
    row: dict[str, Any]
    #: The page's template context (GET): token, CSRF value, title, stage, progress step.
    ctx: dict[str, Any] = field(default_factory=dict)
    #: The submitted form's text fields (POST).
    data: dict[str, str] = field(default_factory=dict)

    @property
    def s(self) -> WebSettings:
        """The study's ``[web]`` settings."""
        return self.m.settings

    def back(self) -> RedirectResponse:
        """Back to the session's page, which shows whatever the current stage is."""
        return RedirectResponse(f"/p/{self.token}", status_code=303)


#: A stage's page: the response to ``GET /p/<token>`` while the session is at that stage.
Page = Callable[[Visit], Awaitable[Response]]
#: A stage's form handler: its response, or None for "back to the session's page".
Submission = Callable[[Visit], Awaitable[Response | None]]


# pages (GET /p/<token>), one per stage -----------------------------------------------------


async def consent_page(v: Visit) -> Response:
    """The consent text with its agree / decline form."""
    return page(v.request, "consent.html", consent=v.s.consent, **v.ctx)


async def instructions_page(v: Visit) -> Response:
    """The role's rules; the game is set up (not started) so they can be shown."""
    live = await v.m.start(v.row, play=False)
    _, spec = v.m.spec_for(v.row)
    on_timeout = v.m.study.game_class(spec.game).on_timeout
    return page(v.request, "instructions.html", instructions=live.system, time_limit=v.s.time_limit, on_timeout=on_timeout, **v.ctx)


async def quiz_page(v: Visit) -> Response:
    """The quiz, marking the questions a refused attempt got wrong (``?wrong=1.3``)."""
    live = await v.m.start(v.row, play=False)
    wrong = [int(x) - 1 for x in (v.request.query_params.get("wrong") or "").split(".") if x.isdigit()]
    return page(v.request, "quiz.html", items=v.s.quiz, errors=len(wrong), wrong=wrong, instructions=live.system, **v.ctx)


async def play_page(v: Visit) -> Response:
    """The game: the group's waiting room, a due attention check, the wait for the other
    player, or the person's turn with its form (and the errors of a refused answer)."""
    m, s, token, ctx = v.m, v.s, v.token, dict(v.ctx)
    live = await m.start(v.row, play=True)
    since = m.waiting_since(token)
    if since is not None:  # a group game: waiting in the waiting room for the others
        waited = int(time.time() - since)
        return page(v.request, "group_wait.html", waiting=waited, group_wait=int(s.group_wait), version=live.version, poll=True, **ctx)
    check = m.due_attention(v.row)
    if check is not None:
        return page(v.request, "attention.html", check=check, **ctx)
    messages = [dict(x) for x in live.messages]
    for x, parts in zip(messages, live.parts):
        x["content"] = for_person(parts, live.formats) if x["role"] == "user" else answer_text(x["content"], live.fields)
    history = [x for x in messages if x["role"] != "system"]
    p = live.pending
    ctx.update(instructions=live.system, history=history, version=live.version, poll=True, notice=live.notice)
    if p is None:
        if live.echo:  # answered, and the game has not yet told the person anything since
            history.append({"role": "assistant", "content": live.echo})
        outage = bool(m.outages(v.row))
        slow = m.slow_member(live)
        ctx["version"] = waiting_version(live.version, outage, slow)
        return page(v.request, "wait.html", waiting=int(time.time() - live.waiting_since) if live.waiting_since else 0, alone=m.alone(v.row), outage=outage, slow=slow_words(slow), **ctx)
    m.mark_shown(live)
    remaining = max(0, int(p.shown_at + s.time_limit - time.time())) if s.time_limit else None
    prompt = history.pop() if history and history[-1]["role"] == "user" else None
    errors, p.errors = p.errors, []
    values = p.values if errors else {}  # what the person entered, kept after a refused form
    return page(v.request, "play.html", prompt=prompt, fields=form_fields(p.request.action_type, live.role), note=p.request.action_type.form_note(), values=values, seq=p.seq, errors=errors, remaining=remaining, max_text=MAX_TEXT, **ctx)


def waiting_version(version: int, outage: bool, slow: tuple[float | None, str] | None = None) -> str:
    """The version a waiting page is shown at and polls for: the game's, marked while a model
    server of the game does not answer and while another member of the group keeps the person
    waiting (with when the computer answers for them), so that the page reloads when an outage
    begins or ends, when the wait for a member becomes long, and when its deadline moves."""
    text = f"{version}-outage" if outage else str(version)
    if slow is not None:
        text += f"-slow{int(slow[0] or 0)}"
    return text


def slow_words(slow: tuple[float | None, str] | None) -> dict[str, Any] | None:
    """What the waiting page says about a member who keeps the group waiting: who ("The other
    participant"), and, when the computer will answer for them, that moment as seconds since
    the epoch, as UTC (what a page without scripts shows) and ISO 8601, and the seconds left (from
    which the page shows the moment in the person's own clock); None while nobody keeps them
    waiting."""
    if slow is None:
        return None
    at, who = slow
    if at is None:
        return {"who": who, "at": None}
    return {"who": who, "at": round(at, 3), "utc": time.strftime("%H:%M:%S UTC", time.gmtime(at)), "iso": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at)), "left": round(max(0.0, at - time.time()), 3), "left_words": time_left(at - time.time())}


def time_left(seconds: float) -> str:
    """How long until a moment, as a person says it: "in 45 s", "in 1 min 15 s", "any moment now"."""
    n = round(seconds)
    if n <= 0:
        return "any moment now"
    return f"in {n // 60} min" + (f" {n % 60} s" if n % 60 else "") if n >= 60 else f"in {n} s"


async def results_page(v: Visit) -> Response:
    """The game's outcome and bonus, after any attention check the game ended before reaching."""
    check = v.m.due_attention(v.row, ended=True)
    if check is not None:
        return page(v.request, "attention.html", check=check, **v.ctx)
    lines, bonus_text = v.m.results(v.row)
    return page(v.request, "results.html", lines=lines, bonus_text=bonus_text, bonus=v.row["bonus"] or 0.0, **v.ctx)


async def questionnaire_page(v: Visit) -> Response:
    """The end questionnaire, saying how many required answers a refused attempt missed."""
    return page(v.request, "questionnaire.html", items=v.s.questionnaire, errors=v.request.query_params.get("missing"), **v.ctx)


async def done_page(v: Visit) -> Response:
    """The finish: completion code, bonus and the link back to the recruitment platform."""
    row = v.row
    return page(v.request, "done.html", code=row["code"], bonus=row["bonus"] or 0.0, url=v.s.completion_url.replace("{code}", row["code"] or ""), **v.ctx)


#: The page of each stage; a stage not listed shows the finish page.
PAGES: dict[str, Page] = {
    "consent": consent_page,
    "instructions": instructions_page,
    "quiz": quiz_page,
    "play": play_page,
    "results": results_page,
    "questionnaire": questionnaire_page,
    "done": done_page,
}


# forms (POST /p/<token>/<stage>), one per stage ---------------------------------------------


async def consent_submit(v: Visit) -> Response | None:
    """Agreeing moves on to the instructions (and sets the game up); anything else declines."""
    m, token = v.m, v.token
    if v.data.get("agree") != "yes":
        m.update(token, stage="done", game_status="declined", code="")
        return page(v.request, "declined.html", title="Thank you", decline_code=v.s.decline_code, decline_url=v.s.decline_url)
    m.update(token, stage="instructions", consented_at=time.time())
    await m.start(m.get(token), play=False)  # the game starts at the play screen
    return None


async def instructions_submit(v: Visit) -> Response | None:
    """On to the quiz, or straight to the game when the study has none."""
    v.m.update(v.token, stage="quiz" if v.s.quiz else "play")
    return None


async def quiz_submit(v: Visit) -> Response | None:
    """Every attempt is counted; all answers right moves on to the game, otherwise the quiz
    page comes back naming the questions to look at again."""
    wrong = [i for i, item in enumerate(v.s.quiz) if v.data.get(f"q{i}") != item.answer]
    v.m.update(v.token, quiz_attempts=v.row["quiz_attempts"] + 1, **({} if wrong else {"stage": "play"}))
    if wrong:
        return RedirectResponse(f"/p/{v.token}?wrong={'.'.join(str(i + 1) for i in wrong)}", status_code=303)
    return None


async def attention_submit(v: Visit) -> Response | None:
    """The answer to the attention check now due (during the game or at the results), kept
    with the participant; nothing is recorded when no check is due."""
    m, row = v.m, v.row
    ended = row["stage"] == "results"
    check = m.due_attention(row, ended=ended)
    if check is not None:
        m.update(v.token, attention=[*(row["attention"] or []), m.attention_record(row, check, v.data.get("answer", ""), ended)])
    return None


async def play_submit(v: Visit) -> Response | None:
    """The answer to the pending turn (the form's ``seq`` must be that turn's): parsed on the
    server; a refused form keeps its errors and values for the next page."""
    m, data = v.m, v.data
    live = m.live.get(v.token)
    p = live.pending if live else None
    try:
        seq = int(data.get("seq", "-1"))
    except ValueError:
        seq = -1
    if p is None or p.seq != seq:
        return None
    action, errors = parse_form(p.request.action_type, data, live.role)
    if action is None:
        p.errors = errors  # shown on the next page, kept with the turn
        p.values = {k: x[:MAX_TEXT] for k, x in data.items() if k in p.request.action_type.model_fields}
        p.all_errors = (p.all_errors + errors)[:MAX_KEPT_ERRORS]  # a bounded record of nonsense
        return None
    m.answer(live, seq, action, p.all_errors)
    await m.settle(live, p)
    return None


async def results_submit(v: Visit) -> Response | None:
    """On to the questionnaire."""
    v.m.update(v.token, stage="questionnaire")
    return None


async def questionnaire_submit(v: Visit) -> Response | None:
    """All required answers finish the study with its completion code; otherwise the
    questionnaire comes back saying how many are missing."""
    answers, missing = questionnaire_answers(v.s.questionnaire, v.data)
    if missing:
        return RedirectResponse(f"/p/{v.token}?missing={len(missing)}", status_code=303)
    code = v.s.completion_code or secrets.token_hex(5).upper()
    v.m.update(v.token, stage="done", answers=answers, code=code, finished_at=time.time())
    return None


#: The form handler of each stage; a stage not listed has no form (404).
SUBMISSIONS: dict[str, Submission] = {
    "consent": consent_submit,
    "instructions": instructions_submit,
    "quiz": quiz_submit,
    "attention": attention_submit,
    "play": play_submit,
    "results": results_submit,
    "questionnaire": questionnaire_submit,
}


def current_form(stage: str, at: str) -> bool:
    """Whether a form of ``stage`` belongs to a session at stage ``at``: its own stage's, or an
    attention check's during the game or at the results (anything else is stale or repeated)."""
    return stage == at or (stage == "attention" and at in ("play", "results"))


def add_participant_routes(app: FastAPI, m: Manager) -> None:
    """The participant routes: entry, resume link, the session's page and its forms, and the
    state the page polls. Every session route checks the session and its cookie first; a form
    also its CSRF value and its stage; then the stage's handler (:data:`PAGES`,
    :data:`SUBMISSIONS`) answers."""
    s = m.settings

    starts: dict[str, collections.deque] = {}  # client address -> times of its recent new sessions

    def too_many_starts(request: Request) -> bool:
        """Whether this client address opened ``starts_per_minute`` new sessions in the last
        minute (behind a proxy every client shares its address: raise the limit or set it 0)."""
        if not s.starts_per_minute:
            return False
        now, host = time.monotonic(), request.client.host if request.client else "?"
        recent = starts.setdefault(host, collections.deque())
        while recent and now - recent[0] > 60:
            recent.popleft()
        if len(recent) >= s.starts_per_minute:
            return True
        recent.append(now)
        if len(starts) > 10_000:  # forget idle addresses
            for key in [k for k, v in starts.items() if not v or now - v[-1] > 60]:
                del starts[key]
        return False

    @app.get("/start")
    async def start(request: Request):
        found = participant_from_query(typed(dict(request.query_params)))  # NUL dropped: typed text
        if found is None:
            return page(request, "message.html", title="Link incomplete", message="This link has no valid participant id. Please use the link you were given.", status=400)
        source, participant, params = found
        refusal = id_refusal(participant, s.participant_ids)
        if refusal is not None:
            return page(request, "message.html", title="Link not valid", message=refusal, status=400)
        if not s.admits(participant):
            return page(request, "message.html", title="Link not valid", message="This participant id is not admitted to the study. Please use the link you were given.", status=403)
        cookie = request.cookies.get(SESSION_COOKIE, "")
        # returning only with this participant's own live session of this study: any other
        # cookie (made up, stale, another person's) is a new arrival, held to both limits
        returning = m.returning(cookie, participant)
        if not returning and too_many_starts(request):
            return page(request, "message.html", title="Please wait", message="Too many new sessions were opened from your address just now. Please try again in a minute.", status=429)
        # the cap counts games running and slots held by sessions whose game has not started
        # (Manager.live_count): checked and reserved with no await in between, so arrivals at
        # the same moment cannot all pass it
        running = m.live_count()
        if running >= s.max_live and not returning:
            return page(request, "message.html", title="Please wait", message=f"The study is full right now ({running} games running). Please open your link again in a few minutes.", status=503)
        token, new = m.enter(source, participant, params)
        if not new and not hmac.compare_digest(cookie, token):
            return page(request, "message.html", title="Already started", message="This participant id has already started the study. Please continue in the browser where you started, or ask the researcher for a resume link.", status=409)
        row = m.get(token)
        if row is not None and row["game_status"] is None:
            m.hold(token)
        response = RedirectResponse(f"/p/{token}", status_code=303)
        response.set_cookie(SESSION_COOKIE, token, httponly=True, samesite="lax")
        return response

    def load(token: str) -> dict[str, Any] | None:
        return m.get(token)

    @app.get("/resume/{code}")
    async def resume(request: Request, code: str):
        """A resume link from the dashboard: binds this browser to the participant's session."""
        token = m.take_resume(code[:100])
        if token is None:
            return page(request, "message.html", title="Link not valid", message="This resume link was already used or has expired. Please ask the researcher for a new one.", status=403)
        response = RedirectResponse(f"/p/{token}", status_code=303)
        response.set_cookie(SESSION_COOKIE, token, httponly=True, samesite="lax")
        return response

    def owned(request: Request, token: str) -> bool:
        """Whether the request carries this session's cookie: the URL alone is no credential."""
        return hmac.compare_digest(request.cookies.get(SESSION_COOKIE, ""), token)

    def foreign(request: Request) -> HTMLResponse:
        return page(request, "message.html", title="Please use your entry link", message="This page belongs to a session started in another browser. Please open the study again through the link you were given.", status=403)

    @app.get("/p/{token}", response_class=HTMLResponse)
    async def show(request: Request, token: str):
        """The page of the session's current stage, after the session checks; a declined
        session shows the decline page, and a game that ended before the person reached it
        moves the session on to the results."""
        row = load(token)
        if row is None:
            return not_found(request)
        if not owned(request, token):
            return foreign(request)
        m.seen(token)
        stage = row["stage"]
        ctx: dict[str, Any] = {"token": token, "csrf": row["csrf"], "title": s.title or "Study", "stage": stage, "step": progress(stage, bool(s.quiz), bool(s.questionnaire))}
        if row["game_status"] == "declined":
            return page(request, "declined.html", decline_code=s.decline_code, decline_url=s.decline_url, **ctx)
        if stage == "play" and row["game_status"] is not None:  # the game ended before the person reached it
            m.update(token, stage="results")
            return RedirectResponse(f"/p/{token}", status_code=303)
        return await PAGES.get(stage, done_page)(Visit(request, m, token, row, ctx=ctx))

    @app.get("/p/{token}/state")
    async def state(request: Request, token: str):
        row = load(token)
        if row is None:
            return JSONResponse({"error": "not found"}, status_code=404)
        if not owned(request, token):
            return JSONResponse({"error": "session cookie missing"}, status_code=403)
        m.seen(token)
        live = m.live.get(token)
        waiting = bool(live and live.pending is None)
        version = waiting_version(live.version, bool(m.outages(row)), m.slow_member(live)) if live and waiting and row["stage"] == "play" and m.waiting_since(token) is None else (live.version if live else 0)
        return {"stage": row["stage"], "version": version, "waiting": waiting}

    @app.post("/p/{token}/{stage}")
    async def submit(request: Request, token: str, stage: str):
        """A stage's form, after the session checks and the CSRF check; a stale or repeated
        form goes back to the current page, a stage without a form is not found."""
        row = load(token)
        if row is None:
            return not_found(request)
        if not owned(request, token):
            return foreign(request)
        m.seen(token)
        form = await request.form()
        data = {k: typed(v) for k, v in form.items() if isinstance(v, str)}  # NUL dropped where text enters
        if not hmac.compare_digest(data.get("csrf", ""), row["csrf"]):
            return page(request, "message.html", title="Expired form", message="This form is not valid any more. Please reload the page.", status=403)
        visit = Visit(request, m, token, row, data=data)
        if not current_form(stage, row["stage"]):
            return visit.back()  # a stale or repeated submission: show the current page
        handler = SUBMISSIONS.get(stage)
        if handler is None:
            return not_found(request)
        response = await handler(visit)
        return visit.back() if response is None else response


def questionnaire_answers(items, data: dict[str, str]) -> tuple[dict[str, Any], list[str]]:
    """The end questionnaire's answers, checked on the server; the names of missing ones."""
    answers: dict[str, Any] = {}
    missing: list[str] = []
    for q in items:
        value = (data.get(f"a_{q.name}") or "").strip()[:MAX_TEXT]
        if q.kind == "choice" and value not in q.options:
            value = ""
        if q.kind == "scale":
            value = int(value) if value.isdigit() and 1 <= int(value) <= q.scale else ""
        if value == "" and q.required:
            missing.append(q.name)
        answers[q.name] = value
    return answers, missing


def serve(study: Study | None, db: str, host: str = "127.0.0.1", port: int = 8000) -> None:
    """Run the app with uvicorn until interrupted (no access log: URLs carry session tokens)."""
    import uvicorn

    app = create_app(study, db)
    print(f"agora serve: http://{host}:{port}/  (participants enter at /start?PROLIFIC_PID=... ; dashboard at /dash)", file=sys.stderr)
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)

"""The researcher dashboard: studies and their progress, the served study's spend beside its cost
plan, a filterable games table, the transcript of any game, live participants (their platform id
beside the pseudonym, with a search), the latest report, a model-only run, and the bonus export.
The overview and games pages refresh their tables only (``static/app.js``), so a filter being
typed is never wiped. Every route needs the dashboard token (``Authorization: Bearer``, or
``?token=`` once, which sets an HTTP-only cookie); without it the answer is 401. Wrong tokens
slow their sender down (:class:`Throttle`): after :data:`FREE_TRIES` wrong tokens from one
address, that address is answered 429 for a while that doubles with each further wrong token."""

from __future__ import annotations

import asyncio
import csv
import hashlib
import hmac
import io
import inspect
import json
import tempfile
import threading
import time
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response

from ..core.seats import participant, person_seat
from ..core.study import Study
from ..store.store import Store
from ..store.participants import Participants
from .forms import answer_lines
from .pages import page
from .participants import participant_key
from .settings import money_text

COOKIE = "agora_dash"

#: Wrong tokens an address may send before it is slowed down; the first wait (seconds), which
#: doubles with each further wrong token, up to the longest; how long a wrong token is remembered.
FREE_TRIES, FIRST_WAIT, LONGEST_WAIT, MEMORY = 10, 1.0, 300.0, 600.0


class Throttle:
    """Wrong dashboard tokens per client address: once an address has sent :data:`FREE_TRIES`
    wrong ones (within :data:`MEMORY` seconds), each further wrong token shuts it out for
    :data:`FIRST_WAIT` seconds, doubled every time (at most :data:`LONGEST_WAIT`); while shut
    out, none of its tokens is even compared. 3,000 guesses once took under 5 seconds."""

    def __init__(self, clock=time.monotonic) -> None:
        self.clock = clock
        self.failures: dict[str, list[float]] = {}
        self.until: dict[str, float] = {}

    def wait(self, host: str) -> float:
        """Seconds ``host`` must still wait (0: it may try)."""
        return max(0.0, self.until.get(host, 0.0) - self.clock())

    def failed(self, host: str) -> None:
        """A wrong token from ``host``."""
        now = self.clock()
        recent = [t for t in self.failures.get(host, []) if now - t < MEMORY] + [now]
        self.failures[host] = recent[-100:]
        if len(recent) >= FREE_TRIES:
            self.until[host] = now + min(LONGEST_WAIT, FIRST_WAIT * 2 ** (len(recent) - FREE_TRIES))
        if len(self.failures) > 10_000:  # forget addresses that have gone quiet
            for key in [k for k, v in self.failures.items() if now - v[-1] >= MEMORY]:
                self.failures.pop(key, None)
                self.until.pop(key, None)

    def passed(self, host: str) -> None:
        """The right token from ``host``: its wrong ones are forgotten."""
        self.failures.pop(host, None)
        self.until.pop(host, None)


def participant_status(row: dict[str, Any]) -> str:
    """What happened to a participant, in one word: ``declined`` (no consent), ``done``
    (completion code shown), ``abandoned`` or ``error`` (their game ended that way), ``playing``
    (at the table), else the stage they are at (consent, instructions, quiz, questionnaire)."""
    if row.get("game_status") == "declined":
        return "declined"
    if row.get("stage") == "done":
        return "done"
    if row.get("game_status") in ("abandoned", "error"):
        return str(row["game_status"])
    return "playing" if row.get("stage") == "play" else str(row.get("stage") or "")


def _rounded(value: Any, digits: int = 4) -> Any:
    """``value`` for reading: every float rounded to ``digits`` decimals (in lists and dicts too)."""
    if isinstance(value, float):
        return round(value, digits)
    if isinstance(value, dict):
        return {k: _rounded(v, digits) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v, digits) for v in value]
    return value


class Dashboard:
    """Registers the ``/dash`` routes on ``app``."""

    def __init__(self, app: FastAPI, store: Store, study: Study | None, manager, token: str) -> None:
        self.store = store
        self.study = study
        self.manager = manager
        self.token = token
        self.csrf = hmac.new(token.encode(), b"dashboard-form", hashlib.sha256).hexdigest()
        self.throttle = Throttle()
        self.run_task: asyncio.Task | None = None
        self.run_message = ""
        #: The cost plan of the whole study (:func:`~agorabench.core.plan.build_plan`, no game
        #: counted as done), built once when the dashboard starts, on a thread of its own;
        #: ``plan_state`` is ``computing``, ``ready`` or ``unavailable`` (``plan_problem`` says why).
        self.plan: Any = None
        self.plan_state = "unavailable"
        self.plan_problem = "no study is served (the dashboard shows a database alone)"
        if study is not None:
            self.plan_state, self.plan_problem = "computing", ""
            threading.Thread(target=self._build_plan, name="dashboard-plan", daemon=True).start()
        self._routes(app)

    def _build_plan(self) -> None:
        """Build the study's cost plan (every game, none counted as done) off the event loop;
        a failure is kept as a one-line reason, never raised."""
        from ..core.plan import build_plan

        try:
            self.plan = asyncio.run(build_plan(self.study))
            self.plan_state = "ready"
        except Exception as exc:  # shown on the dashboard, never a crash of the server
            self.plan_problem = f"the estimate could not be computed: {type(exc).__name__}: {exc}"
            self.plan_state = "unavailable"

    def allowed(self, request: Request) -> bool:
        header = request.headers.get("authorization", "")
        given = header[7:] if header.lower().startswith("bearer ") else request.cookies.get(COOKIE, "") or request.query_params.get("token", "")
        ok = bool(given) and hmac.compare_digest(given.encode(), self.token.encode())
        host = request.client.host if request.client else "?"
        if ok:
            self.throttle.passed(host)
        elif given:  # a wrong token (none at all is a visit, not a guess)
            self.throttle.failed(host)
        return ok

    async def stop(self) -> None:
        if self.run_task is not None and not self.run_task.done():
            self.run_task.cancel()
            await asyncio.gather(self.run_task, return_exceptions=True)

    # queries (through the store) ---------------------------------------------------------
    def progress(self) -> list[dict[str, Any]]:
        """Per study: games by status (``done``; ``abandoned``: a participant left, the game is
        not failed; ``error``: every other status), model calls (uncached turns), tokens, cost,
        invalid rate."""
        counts = self.store.status_counts()
        totals = self.store.turn_totals()
        out: dict[str, dict[str, Any]] = {}
        for study, by_status in counts.items():
            row = out.setdefault(study, {"study": study, "done": 0, "error": 0, "abandoned": 0, "turns": 0, "calls": 0, "tokens": 0, "cost": 0.0, "invalid_rate": 0.0})
            for status, n in by_status.items():
                row[status if status in ("done", "abandoned") else "error"] += n
        for study, t in totals.items():
            row = out.setdefault(study, {"study": study, "done": 0, "error": 0, "abandoned": 0})
            n = t["turns"]
            row.update(turns=n, calls=t["calls"] or 0, tokens=t["tokens"] or 0, cost=round(t["cost"] or 0.0, 4), invalid_rate=round((t["invalid"] or 0) / n, 3) if n else 0.0)
        if self.manager is not None:
            row = out.setdefault(self.study.name, {"study": self.study.name, "done": 0, "error": 0, "abandoned": 0, "turns": 0, "calls": 0, "tokens": 0, "cost": 0.0, "invalid_rate": 0.0})
            row["running"] = len({id(lv.task) for lv in self.manager.live.values() if lv.task is not None and not lv.task.done()})  # a group's members share one
        return sorted(out.values(), key=lambda r: r["study"])

    def spend(self) -> dict[str, Any]:
        """The served study's spend so far beside its plan. Per language model (a seat's model
        name): the calls bought (turns not answered from the response cache), their input tokens
        (``cached``: of them read from the provider's prompt cache, ``cache_write``: written to
        it), output and reasoning tokens (None: no call reported any), their cost and its part
        per billed tier (``by_tier``), the calls made again at the standard tier (``fallbacks``),
        whether the model has
        prices (money is shown only then), and ``plan`` (the estimate's games, calls, input and
        output tokens and cost) once the plan is ready; ``total`` sums them. Turns of scripted
        players and people (``human:<hash>`` seats) cost nothing: only counted, as ``free_turns``."""
        models = self.study.models if self.study is not None else {}
        per: dict[str, dict[str, Any]] = {}
        free = 0

        def row_of(name: str) -> dict[str, Any]:
            entry = models.get(name)
            return per.setdefault(name, {"model": name, "calls": 0, "input": 0, "cached": 0, "cache_write": 0, "output": 0, "reasoning": None, "cost": 0.0, "by_tier": {}, "fallbacks": 0, "priced": entry is not None and bool(entry.price_input or entry.price_output), "plan": None})

        for r in self.store.spend_by_seat(self.study.name) if self.study is not None else []:
            seats = r["seats"] if isinstance(r["seats"], dict) else {}
            name = str(seats.get(r["role"], "?"))
            entry = models.get(name)
            if participant(name) is not None or (entry is not None and (entry.is_strategy or entry.is_human)):
                free += r["turns"]
                continue
            row = row_of(name)
            for k in ("calls", "input", "output", "cached", "cache_write", "fallbacks"):
                row[k] += r.get(k) or 0
            row["cost"] += r["cost"]
            for tier, dollars in (r.get("by_tier") or {}).items():
                row["by_tier"][tier] = row["by_tier"].get(tier, 0.0) + dollars
            if r["reasoning"] is not None:
                row["reasoning"] = (row["reasoning"] or 0) + r["reasoning"]
            row["priced"] = row["priced"] or (entry is None and r["cost"] > 0)
        plan = self.plan if self.plan_state == "ready" else None
        for name, m in plan.models.items() if plan is not None else ():
            row_of(name)["plan"] = {"games": m.games, "calls": round(m.calls), "input": round(m.input_tokens), "output": round(m.output_tokens), "cost": m.cost}
        rows = sorted(per.values(), key=lambda r: r["model"])
        by_tier: dict[str, float] = {}
        for r in rows:
            for tier, dollars in r["by_tier"].items():
                by_tier[tier] = by_tier.get(tier, 0.0) + dollars
        total = {
            "calls": sum(r["calls"] for r in rows),
            "input": sum(r["input"] for r in rows),
            "cached": sum(r["cached"] for r in rows),
            "cache_write": sum(r["cache_write"] for r in rows),
            "fallbacks": sum(r["fallbacks"] for r in rows),
            "by_tier": by_tier,
            "output": sum(r["output"] for r in rows),
            "reasoning": None if all(r["reasoning"] is None for r in rows) else sum(r["reasoning"] or 0 for r in rows),
            "cost": sum(r["cost"] for r in rows),
            "priced": any(r["priced"] for r in rows),
            "plan": None if plan is None else {"games": plan.todo, "calls": round(plan.calls), "input": round(plan.input_tokens), "output": round(plan.output_tokens), "cost": plan.cost},
        }
        return {"models": rows, "total": total, "free_turns": free, "plan": plan, "plan_state": self.plan_state, "plan_problem": self.plan_problem}

    def participant_rows(self, query: str = "") -> list[dict[str, Any]]:
        """The served study's participants whose external id (as given or as its key), source or
        pseudonym (``human:<hash>``, with or without ``human:``) contains ``query`` (case does
        not matter); every participant for an empty query."""
        rows = self.manager.participants() if self.manager is not None else []
        q = participant_key(query)
        if not q:
            return rows
        return [p for p in rows if any(q in participant_key(str(v)) for v in (p.get("participant") or "", person_seat(p.get('pid_hash') or ''), p.get("source") or ""))]

    def running(self, study: str = "") -> list[dict[str, Any]]:
        """The games being played now, not yet stored: participants' live games and games a run
        holds a claim on, each with who plays it and for how long (seconds)."""
        now = time.time()
        out = []
        if self.manager is not None and (not study or study == self.study.name):
            for p in self.manager.participants():
                lv = self.manager.live.get(p["token"])
                if lv is not None and lv.task is not None and not lv.task.done():
                    out.append({"game_id": p["game_id"], "study": self.study.name, "who": f"participant human:{p['pid_hash']} ({p['role']})", "seconds": round(now - p["created"])})
        for c in self.store.running(study):
            out.append({"game_id": c["game_id"], "study": c["study"], "who": f"run {c['owner']}", "seconds": None})
        return out

    def game_rows(self, study: str = "", model: str = "", status: str = "", config: str = "", game: str = "", limit: int = 500) -> list[dict[str, Any]]:
        """The games table: the newest games first, filtered by study, status and kind of game
        in the store, by a model name or a piece of configuration in their seats' and config's
        JSON text here; at most ``limit`` rows."""
        rows = []
        for d in self.store.game_summaries(study=study, status=status, game=game):
            seats = json.dumps(d["seats"], sort_keys=True)
            cfg = json.dumps(d["config"], sort_keys=True)
            if model and model not in seats:
                continue
            if config and config not in cfg:
                continue
            d["seats_text"], d["config_text"] = seats, cfg
            rows.append(d)
            if len(rows) >= limit:
                break
        return rows

    def game(self, game_id: str) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        """A game's row and its turns, or (None, []). Each turn's ``messages`` are what its
        prompt added to the role's previous one (all of it when the prompt does not extend the
        previous one, e.g. after a restarted transcript); ``reasks`` are the answers that could
        not be used and the feedback that asked again, read from the role's next prompt (the
        store keeps prompts, so a role's last turn shows only its final error). A turn's
        thoughts (``reasoning``, ``reasoning_tokens``, ``finish_reason``) stay apart from its
        reply and its messages: the page folds them into a block of their own."""
        g = self.store.game(game_id)
        if g is None:
            return None, []
        turns = self.store.turns(game_id=game_id)
        prompts = [list(t.get("messages") or []) for t in turns]
        before: dict[str, list[dict[str, Any]]] = {}
        for i, t in enumerate(turns):
            full = prompts[i]
            seen = before.get(t["role"], [])
            t["messages"] = full[len(seen) :] if seen and full[: len(seen)] == seen else full
            later = next((prompts[j] for j in range(i + 1, len(turns)) if turns[j]["role"] == t["role"]), None)
            n = 2 * (t.get("retries") or 0)
            exchange = later[len(full) : len(full) + n] if later is not None and later[: len(full)] == full else []
            t["reasks"] = [(exchange[k]["content"], exchange[k + 1]["content"]) for k in range(0, len(exchange) - 1, 2)]
            before[t["role"]] = full + exchange + ([{"role": "assistant", "content": t.get("raw") or ""}] if t.get("raw") else [])
        self._as_seen(g, turns)
        return g, turns

    def _as_seen(self, g: dict[str, Any], turns: list[dict[str, Any]]) -> None:
        """Give each turn of a person's seat ``person``: the turn as the person saw it (what
        they read, in their words, and what they filled in, with the form's labels; money as
        the pages write it in a game whose configuration states an amount of money), and how it
        ended (answered, no answer in time, played by the computer after they stopped answering).
        A person's n-th turn of the game is their n-th web turn; a turn from before the desk
        kept what people saw says so."""
        seats = g.get("seats") or {}
        if not any(participant(v) for v in seats.values()):
            return
        web = Participants(self.store).turns_of_game(g["study"], g["id"])
        amount = money_text if isinstance(g.get("config"), dict) and isinstance(g["config"].get("money"), (int, float)) else None
        count: dict[str, int] = {}
        for t in turns:
            if participant(seats.get(t["role"])) is None:
                continue
            n = count[t["role"]] = count.get(t["role"], 0) + 1
            rows = web.get(t["role"], [])
            row = rows[n - 1] if n <= len(rows) else None
            seen = (row or {}).get("as_seen") or {}
            fields = {k: (v[0], v[1]) for k, v in (seen.get("fields") or {}).items()}
            answer = answer_lines(t["action"] if isinstance(t.get("action"), dict) else {}, fields, amount)
            if row is None:
                how = "played by the computer: the person had stopped answering" if rows else "no record of the person's pages for this turn"
            elif row.get("timed_out"):
                how = "no answer in time: the computer answered for them"
            else:
                how = f"answered after {row['response_time']:.1f} s" if row.get("response_time") is not None else "answered"
                errors = [e for e in row.get("errors") or [] if isinstance(e, str)]
                if errors:
                    how += f", after {len(errors)} refused form{'s' if len(errors) != 1 else ''}"
            t["person"] = {"read": seen.get("read") or [], "instructions": seen.get("instructions"), "answer": answer, "how": how, "kept": bool(seen), "answered": row is not None and not row.get("timed_out")}

    # routes -------------------------------------------------------------------------------
    def _routes(self, app: FastAPI) -> None:
        def refuse(request: Request) -> Response:
            return page(request, "message.html", title="Dashboard", message="The dashboard needs its token.", status=401)

        def authed(handler):
            async def wrapper(request: Request, **kwargs):
                wait = self.throttle.wait(request.client.host if request.client else "?")
                if wait > 0:  # too many wrong tokens from this address: not even compared
                    response = page(request, "message.html", title="Dashboard", message=f"Too many wrong tokens from your address. Please wait {wait:.0f} s.", status=429)
                    response.headers["Retry-After"] = str(max(1, round(wait)))
                    return response
                if not self.allowed(request):
                    return refuse(request)
                if request.query_params.get("token") and request.method == "GET":
                    response = RedirectResponse(_relative(request.url.remove_query_params("token")), status_code=303)
                    response.set_cookie(COOKIE, self.token, httponly=True, samesite="strict")
                    return response
                return await handler(request, **kwargs)

            wrapper.__name__ = handler.__name__
            wrapper.__signature__ = inspect.signature(handler)
            return wrapper

        @app.get("/dash", response_class=HTMLResponse)
        @authed
        async def overview(request: Request):
            query = request.query_params.get("q", "")[:200]
            live = self.participant_rows(query)
            for p in live:
                lv = self.manager.live.get(p["token"])
                p["waiting_for"] = "" if lv is None or p["stage"] != "play" else ("participant" if lv.pending is not None else "model")
                p["status"] = participant_status(p)
                p["started"] = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(p["created"]))
                p["minutes"] = f"{(p['updated'] - p['created']) / 60:.1f}"
                p["idle"] = f"{(time.time() - p['updated']) / 60:.1f}"
            running = self.run_task is not None and not self.run_task.done()
            every = len(self.manager.participants()) if self.manager is not None and query else len(live)
            spend = self.spend() if self.study is not None else None
            return page(request, "dash.html", title="Dashboard", progress=self.progress(), participants=live, shown_of=every, q=query, spend=spend, study=self.study, csrf=self.csrf, running=running, run_message=self.run_message, refresh=_refresh(request), outages=self.manager.outages() if self.manager is not None else {})

        @app.get("/dash/games", response_class=HTMLResponse)
        @authed
        async def games_table(request: Request):
            f = {k: request.query_params.get(k, "")[:200] for k in ("study", "model", "status", "config", "game")}
            return page(request, "dash_games.html", title="Games", rows=self.game_rows(**f), running=self.running(f["study"]), filters=f, refresh=_refresh(request))

        @app.get("/dash/game/{game_id}", response_class=HTMLResponse)
        @authed
        async def transcript(request: Request, game_id: str):
            g, ts = self.game(game_id)
            if g is None:
                return page(request, "message.html", title="Not found", message="No such game.", status=404)
            roles = sorted({t["role"] for t in ts})
            return page(request, "dash_game.html", title=f"Game {game_id}", g=g, turns=ts, roles=roles, dumps=lambda v: json.dumps(_rounded(v), indent=1, ensure_ascii=False, sort_keys=True))

        @app.get("/dash/report", response_class=HTMLResponse)
        @authed
        async def report(request: Request):
            from ..analysis.report import build_report

            name = request.query_params.get("study") or (self.study.name if self.study else "")
            with tempfile.TemporaryDirectory() as tmp:
                try:  # plots take a while: off the event loop, so participants are not held up
                    path = await asyncio.to_thread(build_report, self.store, name, tmp)
                except ValueError as exc:
                    return page(request, "message.html", title="Report", message=str(exc), status=404)
                # the report is one self-contained file with inline styles and images
                return HTMLResponse(path.read_text(encoding="utf-8"), headers={"Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src data:"})

        @app.get("/dash/bonus.csv")
        @authed
        async def bonus(request: Request):
            buf = io.StringIO()
            w = csv.writer(buf)
            w.writerow(["participant", "source", "completion_code", "bonus"])
            for p in self.manager.participants() if self.manager is not None else []:
                if p["stage"] == "done" and p["code"]:
                    w.writerow([p["participant"], p["source"], p["code"], f"{p['bonus'] or 0:.2f}"])
            return PlainTextResponse(buf.getvalue(), media_type="text/csv", headers={"Content-Disposition": "attachment; filename=bonus.csv"})

        @app.get("/dash/bonus-prolific.txt")
        @authed
        async def bonus_prolific(request: Request):
            """The bonuses as Prolific's bulk bonus box takes them: one ``ID,amount`` line per
            Prolific participant who finished with a bonus above zero, no header."""
            lines = [
                f"{p['participant']},{p['bonus']:.2f}"
                for p in (self.manager.participants() if self.manager is not None else [])
                if p["stage"] == "done" and p["code"] and p["source"] == "prolific" and (p["bonus"] or 0) > 0
            ]
            return PlainTextResponse("".join(line + "\n" for line in lines), headers={"Content-Disposition": "attachment; filename=bonus-prolific.txt"})

        @app.post("/dash/resume/{token}")
        @authed
        async def resume_link(request: Request, token: str):
            """A fresh one-time link (valid 24 hours) that lets a participant go on in another
            browser or device; shown once, only its hash is kept."""
            form = await request.form()
            if not hmac.compare_digest(str(form.get("csrf", "")), self.csrf):
                return page(request, "message.html", title="Dashboard", message="Expired form.", status=403)
            if self.manager is None or self.manager.get(token) is None:
                return page(request, "message.html", title="Dashboard", message="No such participant.", status=404)
            code = self.manager.issue_resume(token)
            link = str(request.base_url).rstrip("/") + f"/resume/{code}"
            return page(request, "message.html", title="Resume link", message=f"Send this link to the participant; it works once, in any browser, for 24 hours: {link}", link=link)

        @app.post("/dash/run")
        @authed
        async def run(request: Request):
            form = await request.form()
            if not hmac.compare_digest(str(form.get("csrf", "")), self.csrf):
                return page(request, "message.html", title="Dashboard", message="Expired form.", status=403)
            if self.study is None:
                return page(request, "message.html", title="Dashboard", message="No study is served; start agora serve with a study file.", status=400)
            if self.run_task is None or self.run_task.done():
                self.run_task = asyncio.create_task(self._run())
            return RedirectResponse("/dash", status_code=303)

    async def _run(self) -> None:
        """Play (or resume) the study's games that have no human seat."""
        from ..core.runner import Runner

        runner = Runner(self.study, self.store, progress=False)
        self.run_message = "model-only run in progress"
        try:
            stats = await runner.run()
            self.run_message = f"last model-only run: {stats.done} played, {stats.skipped} skipped, {stats.errors} errors"
        except Exception as exc:  # shown on the dashboard, never a crash of the server
            self.run_message = f"model-only run failed: {type(exc).__name__}: {exc}"


#: Seconds between refreshes of the overview and games pages (``?refresh=0`` pauses it).
REFRESH = 10


def _refresh(request: Request) -> int:
    """The page's auto-refresh in seconds: ``REFRESH`` unless the address says otherwise."""
    value = request.query_params.get("refresh", "")
    return max(0, min(int(value), 3600)) if value.isdigit() else REFRESH


def _relative(url) -> str:
    """Path and query of ``url`` only: a redirect never echoes the request's ``Host`` header."""
    return url.path + (f"?{url.query}" if url.query else "")

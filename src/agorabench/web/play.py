"""A participant's live game: their journey through a study, and the desk through which a person
plays a seat (settings and bonus rules: :mod:`.settings`; who a participant is: :mod:`.participants`).

Journey (one row in ``web_participants``, ``stage`` in this order): ``consent`` →
``instructions`` → ``quiz`` → ``play`` (with attention checks after configured turns) →
``questionnaire`` → ``done`` (completion code and bonus).

A person's game is the study's game spec with the human seat replaced by
``human:<hash of study and participant id>``; it is played by the study's runner with a
:class:`~agorabench.core.agents.Human` in that seat and stored like any other game.

Resuming. Every answer the person gives (or a timeout) is written to ``web_turns`` before the
game sees it, and when a turn was opened and first shown is written too. After a server restart
the game is played again from its start: the recorded answers are replayed in order, model
answers come from the response cache and scripted players are seeded, so the game reaches the
same open turn with the same clocks (the time limit from when it was shown, the idle deadline
from when it was opened, both across restarts; a participant who had gone stays gone); nothing
is asked twice and nothing is lost.
"""

from __future__ import annotations

import asyncio
import hashlib
import secrets
import sys
import time
from dataclasses import dataclass, field
from typing import Any


from ..core.actions import Action
from ..core.agents import Human, HumanAnswer
from ..core.coverage import run_seating
from ..core.game import Game
from ..core.runner import Runner
from ..core.study import GameSpec, Study, StudyError
from ..core.table import FORMAT, RULES, Part, TurnRequest, without
from ..redact import redact
from ..store.participants import Participants
from ..store.store import Store
from .participants import display_id, participant_key, pid_hash
from .settings import AttentionCheck, bonus_values, evaluate_bonus, explain_bonus, web_settings

# ------------------------------------------------------------------------------------------
# The desk: a person's seat as the game sees it


@dataclass
class Pending:
    """The turn waiting for the person."""

    seq: int
    request: TurnRequest
    shown_at: float | None
    #: Validation errors of the last submission (shown once) and of all submissions (stored).
    errors: list[str] = field(default_factory=list)
    all_errors: list[str] = field(default_factory=list)
    #: What the person entered in a refused form, shown again with the errors.
    values: dict[str, str] = field(default_factory=dict)
    answer: HumanAnswer | None = None
    done: bool = False
    wake: asyncio.Event = field(default_factory=asyncio.Event)


class Seat:
    """Implements :class:`~agorabench.core.agents.Desk` for one participant: replays recorded
    answers, then shows the open turn and waits for the form (or the time limit)."""

    def __init__(self, live: "Live") -> None:
        self.live = live
        self.seq = 0

    async def wait_answer(self, request: TurnRequest) -> HumanAnswer | None:
        live = self.live
        seq, self.seq = self.seq, self.seq + 1
        live.formats.add(request.action_type.format_instructions())
        row = live.manager.turn_row(live.token, seq)
        limit = live.manager.settings.time_limit
        idle = live.manager.settings.idle_timeout
        if row is not None and (row["answered_at"] is not None or row["timed_out"]):
            live.messages, live.parts = list(request.messages), list(request.parts)
            if row["timed_out"]:
                # replayed after a restart: a turn that timed out past its idle deadline means
                # the participant had gone, and stays so (the game is stored as abandoned)
                if idle and row["opened_at"] is not None and row["answered_at"] is not None and row["answered_at"] - row["opened_at"] >= idle:
                    live.abandoned = True
                return None
            action = request.action_type.model_validate(row["action"])
            return HumanAnswer(action, row["response_time"] or 0.0, tuple(row["errors"] or ()))
        # the idle deadline counts from when the turn was first opened, also by a server that
        # stopped since: a restart gives a participant who left no fresh idle period
        opened = time.time()
        if row is None:
            live.manager.insert_turn(live.token, seq, opened)
        elif row["opened_at"] is not None:
            opened = row["opened_at"]
        else:  # stored before turns recorded their opening: counted from now, and from now on
            live.manager.rows.mark_opened(live.token, seq, opened)
        pending = Pending(seq, request, row["shown_at"] if row else None)
        live.pending, live.messages, live.parts = pending, list(request.messages), list(request.parts)
        live.touch()
        if live.abandoned:
            live.manager.record_timeout(live.token, seq)
            live.pending = None
            return None
        idle_at = opened + idle if idle else None
        while not pending.done:
            deadlines = [t for t in (None if (not limit or pending.shown_at is None) else pending.shown_at + limit, idle_at) if t is not None]
            now = time.time()  # one reading: past the idle deadline is also past the turn's
            timeout = min(deadlines) - now if deadlines else None
            if idle_at is not None and now >= idle_at:
                live.abandoned = True  # gone: the fallback answers every turn from now on
            if timeout is not None and timeout <= 0:
                live.manager.record_timeout(live.token, seq)
                pending.done = True
                break
            pending.wake.clear()
            try:
                await asyncio.wait_for(pending.wake.wait(), timeout)
            except asyncio.TimeoutError:
                pass
        live.pending = None
        live.touch()
        return pending.answer


@dataclass
class Live:
    """A participant's game while the server runs."""

    token: str
    manager: "Manager"
    role: str
    task: asyncio.Task | None = None
    pending: Pending | None = None
    messages: list[dict[str, str]] = field(default_factory=list)
    #: ``messages``, each as its parts by kind (:meth:`~agorabench.core.table.Table.parts`).
    parts: list[tuple[Part, ...]] = field(default_factory=list)
    formats: set[str] = field(default_factory=set)
    version: int = 0
    system: str = ""
    #: The participant let a turn pass its idle deadline: the game is stored as ``abandoned``.
    abandoned: bool = False
    #: When the participant last answered (the waiting page counts from it).
    waiting_since: float = 0.0

    def touch(self) -> None:
        self.version += 1


class Manager:
    """All participants of one served study: assignment, stages, live games."""

    def __init__(self, study: Study, store: Store, runner: Runner | None = None) -> None:
        self.study = study
        self.store = store
        self.settings = web_settings(study)
        self.runner = runner or Runner(study, store, progress=False)
        #: The participants' rows (tables ``web_participants`` and ``web_turns``).
        self.rows = Participants(store)
        self.rows.create_tables()
        store.record_run(study.name, run_seating(study))  # the seating participants' games are played with
        study.check_size()  # a design without games, or too large, is refused before it is generated
        # only the games with a person in a seat are kept (the model-only ones stream past): a
        # new participant gets the n-th of them by order of arrival, a returning one theirs by id
        self.human_specs = [s for s in study.iter_specs() if self._human_roles(s)]
        if not self.human_specs:
            raise StudyError(f"study {study.name!r} has no game with a human seat (a model with spec = \"human\")")
        self.by_id = {s.id: s for s in self.human_specs}
        self.live: dict[str, Live] = {}

    def _human_roles(self, spec: GameSpec) -> list[str]:
        return [r for r, m in spec.seats.items() if self.study.models[m].is_human]

    # rows ---------------------------------------------------------------------------------
    def get(self, token: str) -> dict[str, Any] | None:
        if not token or len(token) > 64:
            return None
        return self.rows.get(token, self.study.name)

    def update(self, token: str, **values: Any) -> None:
        self.rows.update(token, **values)

    def turn_row(self, token: str, seq: int) -> dict[str, Any] | None:
        return self.rows.turn(token, seq)

    def insert_turn(self, token: str, seq: int, opened_at: float) -> None:
        self.rows.insert_turn(token, seq, opened_at)

    def record_timeout(self, token: str, seq: int) -> None:
        self.rows.record_timeout(token, seq)

    def participants(self) -> list[dict[str, Any]]:
        return self.rows.of_study(self.study.name)

    # entry --------------------------------------------------------------------------------
    def pseudonyms(self, participant: str) -> tuple[str, ...]:
        """The pseudonyms a participant id may have in this study: the hash of its key (look-alike
        ids share it; a lower-case ASCII id is its own key, so its pseudonym never changed), then
        that of the id exactly as given, which a row entered before ids were normalised has."""
        h, old = pid_hash(self.study.name, participant_key(participant)), pid_hash(self.study.name, participant)
        return (h,) if old == h else (h, old)

    def returning(self, cookie: str, participant: str) -> bool:
        """Whether ``cookie`` is the session of this participant in this study: only then is an
        arrival a returning one (no start limit, no cap on live games); any other cookie, made
        up, expired or another participant's, makes it a new arrival."""
        row = self.get(cookie) if cookie else None
        return row is not None and row["pid_hash"] in self.pseudonyms(participant)

    def enter(self, source: str, participant: str, params: dict[str, str]) -> tuple[str, bool]:
        """The session token of a participant; (token, False) when the id (or a look-alike of it:
        :func:`~.participants.participant_key`) has started before (the caller lets them back in
        only with their own session cookie). A new participant plays the study's human games in
        turn, by the order of arrival; the id is stored NFKC-normalised with its case kept."""
        h, *aliases = self.pseudonyms(participant)

        def new_row(n: int) -> dict[str, Any]:  # n: how many participants entered before
            base = self.human_specs[n % len(self.human_specs)]
            role = self._human_roles(base)[0]
            game_id = hashlib.sha256(f"{base.id}:{h}".encode()).hexdigest()[:24]
            now = time.time()
            return dict(
                token=secrets.token_urlsafe(32), participant=display_id(participant), source=source, params=params,
                csrf=secrets.token_urlsafe(24), stage="consent", base_spec=base.id, game_id=game_id, role=role,
                quiz_attempts=0, attention=[], answers={}, created=now, updated=now,
            )

        return self.rows.enter(self.study.name, h, new_row, tuple(aliases))

    # games --------------------------------------------------------------------------------
    def spec_for(self, row: dict[str, Any]) -> tuple[GameSpec, GameSpec]:
        base = self.by_id.get(row["base_spec"])
        if base is None:
            raise StudyError(f"participant's game {row['base_spec']} is no longer in the study file")
        seats = {r: (f"human:{row['pid_hash']}" if r == row["role"] else m) for r, m in base.seats.items()}
        return base, GameSpec(row["game_id"], base.game, base.config, seats, base.repeat, base.seed, base.nature_seed)

    async def start(self, row: dict[str, Any], play: bool = True) -> Live:
        """The participant's live game: its instructions read (no model is called for that), and
        with ``play`` the game started (or restarted, replaying) if not running. The game, and so
        every model call for it, starts only when the person reaches the play screen: someone
        who consents and leaves costs nothing."""
        live = self.live.get(row["token"])
        base, spec = self.spec_for(row)
        if live is None:
            live = Live(row["token"], self, row["role"])
            self.live[row["token"]] = live
            live.system = await instructions_text(self.study, self.runner, base, row["role"])
        if play and live.task is None and row["game_status"] is None:
            live.task = asyncio.create_task(self._play(live, base, spec))
        return live

    async def _play(self, live: Live, base: GameSpec, spec: GameSpec) -> None:
        entries = {r: self.study.models[m] for r, m in base.seats.items()}
        try:
            status = await self.runner.play_one(spec, seated={live.role: Human(Seat(live))}, entries=entries)
        except StudyError:  # e.g. an unknown strategy: the study file's problem, shown on the dashboard
            status = "error"
        except Exception as exc:  # e.g. the store failed: the person must not wait for ever
            print(f"agora serve: game {spec.id} stopped: {redact(f'{type(exc).__name__}: {exc}')}", file=sys.stderr)
            status = "error"
        if live.abandoned and status == "done":
            status = "abandoned"
            self.store.set_status(spec.id, status)
        game = self.store.game(spec.id)
        rule = self.settings.bonus_rule(live.role)
        bonus = evaluate_bonus(rule, bonus_values(game and game["outcome"], game and game["metrics"]), self.settings.bonus_max) if status == "done" else 0.0
        row = self.get(live.token)
        if row and row["stage"] == "play":
            self.update(live.token, stage="results", game_status=status, bonus=bonus)
        else:
            self.update(live.token, game_status=status, bonus=bonus)
        live.pending = None
        live.touch()

    def issue_resume(self, token: str, hours: float = 24.0) -> str:
        """A fresh one-time resume code for a participant (the dashboard's "resume link"): the
        way back in from another browser or device, since a session is bound to its cookie.
        Only its hash is stored; a newer code replaces an older one."""
        code = secrets.token_urlsafe(24)
        self.update(token, resume_hash=hashlib.sha256(code.encode()).hexdigest(), resume_expires=time.time() + hours * 3600)
        return code

    def take_resume(self, code: str) -> str | None:
        """The session token a resume code opens (once, before it expires), or None."""
        return self.rows.take_resume(self.study.name, hashlib.sha256(code.encode()).hexdigest(), time.time())

    def results(self, row: dict[str, Any]) -> tuple[list[str], str]:
        """What the participant is told when their game is over: the game's own account of the
        outcome for their role (:meth:`~agorabench.core.game.Game.describe`) and how the study's
        bonus rule gives their bonus."""
        base, spec = self.spec_for(row)
        game = self.store.game(spec.id)
        status = row["game_status"]
        rule = self.settings.bonus_rule(row["role"])
        if game is None or not game.get("outcome"):
            return ["Your game ended before it was finished."], explain_bonus(rule, {}, self.settings.bonus_max, finished=False)
        cls: type[Game] = self.study.game_class(spec.game)
        names = {r: self.study.models[m].seat_label(i) for i, (r, m) in enumerate(base.seats.items())}
        lines = cls(cls.Config(**spec.config), self.runner.prompts_for(cls), names).describe(game["outcome"], row["role"])
        if status == "abandoned":
            lines = ["You did not answer in time, so the game played on without you; it counts as not finished.", *lines]
        values = bonus_values(game["outcome"], game.get("metrics"))
        return lines, explain_bonus(rule, values, self.settings.bonus_max, finished=status == "done")

    async def resume_all(self) -> int:
        """Restart the games of participants who were playing when the server stopped (those
        still reading instructions start theirs when they reach the play screen)."""
        n = 0
        for row in self.participants():
            if row["stage"] == "play" and row["game_status"] is None:
                await self.start(row)
                n += 1
        return n

    def answer(self, live: Live, seq: int, action: Action, errors: list[str]) -> bool:
        """Record a valid answer to the open turn ``seq`` and hand it to the game (False when
        that turn is no longer open: a second click or a stale page is ignored)."""
        p = live.pending
        if p is None or p.seq != seq or p.done:
            return False
        now = time.time()
        live.waiting_since = now
        shown = p.shown_at or now
        response_time = now - shown
        self.rows.record_answer(live.token, seq, action.model_dump(mode="json"), now, response_time, list(errors))
        p.answer, p.done = HumanAnswer(action, response_time, tuple(errors)), True
        p.wake.set()
        return True

    async def settle(self, live: Live, answered: Pending, wait: float = 1.0) -> None:
        """Give the game up to ``wait`` seconds to reach the person's next turn or its end, so
        that against a quick opponent the next page is the next turn, not the waiting page."""
        deadline = time.monotonic() + wait
        while (live.pending is answered or live.pending is None) and not (live.task and live.task.done()) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)

    def mark_shown(self, live: Live) -> None:
        """Start the clock of the open turn when the participant first sees its form."""
        p = live.pending
        if p is not None and p.shown_at is None:
            p.shown_at = time.time()
            self.rows.mark_shown(live.token, p.seq, p.shown_at)
            p.wake.set()

    def answered_turns(self, token: str) -> int:
        return self.rows.answered_count(token)

    def due_attention(self, row: dict[str, Any]) -> AttentionCheck | None:
        """The attention check to show now, if the participant has reached one not yet taken."""
        done = {a["after"] for a in row["attention"] or []}
        answered = self.answered_turns(row["token"])
        for check in self.settings.attention_checks:
            if check.after not in done and answered >= check.after:
                return check
        return None

    async def stop(self) -> None:
        for live in self.live.values():
            if live.task is not None and not live.task.done():
                live.task.cancel()
        await asyncio.gather(*(lv.task for lv in self.live.values() if lv.task is not None), return_exceptions=True)


# ------------------------------------------------------------------------------------------
# Instructions: the role's own system prompt, rendered by the game


async def instructions_text(study: Study, runner: Runner, spec: GameSpec, role: str) -> str:
    """What the game tells ``role`` before the first decision (its system message, from
    :meth:`~agorabench.core.game.Game.instructions`), without the answer-format part meant for
    models (:func:`for_person`)."""
    game_cls: type[Game] = study.game_class(spec.game)
    config = game_cls.Config(**spec.config)
    names = {r: study.models[m].seat_label(i) for i, (r, m) in enumerate(spec.seats.items())}
    told = await game_cls(config, runner.prompts_for(game_cls), names).instructions(seed=spec.seed, nature_seed=spec.nature_seed)
    system = told.system.get(role, "")
    rules = told.rules.get(role, system)
    return rules if rules != system.strip() else for_person((Part(RULES, system),), set(told.formats))


def for_person(parts: tuple[Part, ...], formats: set[str]) -> str:
    """A message as a person reads it: without its answer-format part (marked in the templates,
    see :mod:`agorabench.core.speech`), which the form replaces. A message with no marked
    format part (a researcher's own template without the mark) is shown without the action
    types' format instructions, found as they are written."""
    if any(p.kind == FORMAT for p in parts):
        return without(parts, FORMAT).strip()
    text = "".join(p.text for p in parts)
    for f in formats:
        text = text.replace(f, "")
    return text.strip()

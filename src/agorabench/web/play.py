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

Group games. A game with several human seats (a study seating ``participant`` in several roles
of one seating) is played by several people, each through their own :class:`Live` and
:class:`Seat` (their own open turn, pages, transcript, time limit and idle deadline). Arriving
participants are given the human seats in turn (``Manager.slots``: every human role of every
game). A participant who reaches the play screen of a group game waits in the *waiting room*
until someone waits for each of the game's other human seats; then the group is formed and the
game starts. After ``[web] group_wait`` seconds without a full group, the game starts with the
participants who are there and the empty seats go to ``[web] group_fallback``: the stored game's
seat names the fallback, and every member's ``group_info`` says which seats it took after how
many seconds of waiting. A group game's id derives from the study game's id and its members
(:func:`group_game_id`): after a restart the same group plays the same game again, every
member's recorded answers replayed. A member who passes the idle deadline has *dropped out*:
from that turn on the fallback plays their seat (:class:`GroupSeat`) and the game goes on for the
others. The stored game's status is then ``abandoned`` (as a one-person game whose person left),
the dropout's row records ``dropped_out`` and ``game_status = "abandoned"`` (no bonus), and the
members who stayed finish with ``game_status = "done"`` and their own role's bonus. A member who
keeps the others waiting past a short while (:meth:`Manager.slow_member`) is named on their waiting
pages with the moment the computer will answer for them (their turn's deadline,
:meth:`Pending.deadline`); when it has, they are told once (:meth:`Manager.taken_over`).

What a person saw is kept for the researcher's desk: each turn's new messages in their words and
the form's labels (``web_turns.as_seen``, :meth:`Seat.as_seen`).
"""

from __future__ import annotations

import asyncio
import hashlib
import secrets
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable


from ..core.actions import Action
from ..core.agents import Human, HumanAnswer, Reply
from ..core.coverage import run_seating
from ..core.game import Game
from ..core.runner import Runner
from ..core.seats import person_seat, seat_kind
from ..core.study import GameSpec, ModelEntry, Study, StudyError
from ..core.speech import QUOTE_PREFIX
from ..core.table import FORMAT, RULES, SPEECH, Part, Player, TurnRequest
from ..redact import redact
from ..store.participants import Participants
from ..store.store import Store
from .forms import FormField, form_fields, person_answer
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
    #: When the game opened the turn (its idle deadline counts from here).
    opened: float = 0.0
    #: Validation errors of the last submission (shown once) and of all submissions (stored).
    errors: list[str] = field(default_factory=list)
    all_errors: list[str] = field(default_factory=list)
    #: What the person entered in a refused form, shown again with the errors.
    values: dict[str, str] = field(default_factory=dict)
    answer: HumanAnswer | None = None
    done: bool = False
    wake: asyncio.Event = field(default_factory=asyncio.Event)

    def deadline(self, limit: float, idle: float) -> float | None:
        """When the turn stops waiting for the person and the computer answers instead: the time
        limit counted from when they first saw the form, or the idle deadline counted from when
        the turn opened, whichever comes first; None when neither applies (no limit, no idle
        deadline: the game waits for the person)."""
        ends = [t for t in (self.shown_at + limit if limit and self.shown_at is not None else None, self.opened + idle if idle else None) if t is not None]
        return min(ends) if ends else None


class Seat:
    """Implements :class:`~agorabench.core.agents.Desk` for one participant: replays recorded
    answers, then shows the open turn and waits for the form (or the time limit)."""

    def __init__(self, live: "Live") -> None:
        self.live = live
        self.seq = 0
        #: Whether the last answer came from the record (a replay after a restart), not the person now.
        self.replayed = False
        #: How many of the role's messages the previous turn held: the next turn's are new after them.
        self.known = 0

    def as_seen(self, request: TurnRequest, seq: int, known: int) -> dict[str, Any]:
        """The turn as the person sees it, for the researcher's desk (``web_turns.as_seen``): the
        messages new since their previous turn in their words (:func:`for_person`; their own
        earlier answer left out, the desk shows it with that turn), the form's labels by field,
        and on the first turn the instructions. ``known``: how many messages the previous turn
        held (all are new when this turn's do not extend them)."""
        live = self.live
        messages, parts = list(request.messages), list(request.parts)
        start = known if known <= len(messages) else 0
        read = [for_person(p, live.formats) for m, p in zip(messages[start:], parts[start:]) if m["role"] == "user"]
        seen: dict[str, Any] = {"read": [t for t in read if t], "fields": {f.name: [f.label, f.kind] for f in form_fields(request.action_type, live.role)}}
        if seq == 0:
            seen["instructions"] = live.system
        return seen

    async def wait_answer(self, request: TurnRequest) -> HumanAnswer | None:
        live = self.live
        seq, self.seq = self.seq, self.seq + 1
        live.formats.add(request.action_type.format_instructions())
        live.fields.update({f.name: f for f in form_fields(request.action_type, live.role)})
        live.echo = None  # the turn's messages hold every earlier answer
        known, self.known = self.known, len(request.messages)
        self.replayed = False
        row = live.manager.turn_row(live.token, seq)
        limit = live.manager.settings.time_limit
        idle = live.manager.settings.idle_timeout
        if row is not None and (row["answered_at"] is not None or row["timed_out"]):
            live.messages, live.parts = list(request.messages), list(request.parts)
            self.replayed = True
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
        pending = Pending(seq, request, row["shown_at"] if row else None, opened)
        live.pending, live.messages, live.parts = pending, list(request.messages), list(request.parts)
        live.manager.rows.record_view(live.token, seq, self.as_seen(request, seq, known))
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


class GroupSeat:
    """A person's seat in a group game: their :class:`Seat` until they pass the idle deadline
    (drop out); from that turn on the group's fallback plays the seat, so the game goes on for
    the others. Replayed after a restart, the recorded timeout past the deadline hands the seat
    to the fallback at the same turn again (the fallback's own turns are not in ``web_turns``:
    a strategy is seeded and a model's answers come from the response cache)."""

    def __init__(self, live: "Live", fallback: Callable[[], Player]) -> None:
        self.live = live
        self.seat = Seat(live)
        self.person = Human(self.seat)
        self.make_fallback = fallback
        self.fallback: Player | None = None

    async def act(self, request: TurnRequest) -> Reply:
        if not self.live.abandoned:
            reply = await self.person.act(request)
            if reply.timed_out and not self.seat.replayed:  # the others are told, once
                self.live.manager.taken_over(self.live, for_good=self.live.abandoned)
            if not (reply.timed_out and self.live.abandoned):
                return reply
            self.live.manager.mark_dropout(self.live)
        if self.fallback is None:
            self.fallback = self.make_fallback()
        return await self.fallback.act(request)


def group_game_id(base_id: str, members: dict[str, str], fallback: dict[str, str]) -> str:
    """The id of a group game: from the study game's id, its members' pseudonyms by role and
    the fallback in each seat nobody came for, so the same group always plays the same game."""
    seats = ",".join(f"{r}=" + (person_seat(members[r]) if r in members else f"fallback:{fallback[r]}") for r in sorted({*members, *fallback}))
    return hashlib.sha256(f"{base_id}:group:{seats}".encode()).hexdigest()[:24]


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
    #: The form fields of the turns asked so far, by name: a past answer is read back in their words.
    fields: dict[str, FormField] = field(default_factory=dict)
    #: The answer just given, in the person's words, until the game's next message to them holds
    #: it: the waiting page shows it.
    echo: str | None = None
    #: A group game's members by role (this one included); empty in a one-person game.
    group: dict[str, "Live"] = field(default_factory=dict)
    #: What the person is told once about another member (the computer answered for them), shown
    #: on their pages until they next answer.
    notice: str | None = None

    def touch(self) -> None:
        self.version += 1


#: Seconds a session whose game has not started keeps its live slot unseen when
#: ``idle_timeout`` is 0.
SLOT_IDLE = 600.0
#: Seconds another member of a group may keep a person waiting before the waiting page says so
#: (and when the computer will answer for them).
SLOW_AFTER = 15.0


class Manager:
    """All participants of one served study: assignment, stages, live games."""

    def __init__(self, study: Study, store: Store, runner: Runner | None = None) -> None:
        self.study = study
        self.store = store
        self.settings = web_settings(study)
        self.runner = runner or Runner(study, store, progress=False)
        # a served study has no next run to play its failed games again: a server that stops
        # answering makes its calls wait (a test call now and then) instead of failing them
        self.runner.seating.outage_final = False
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
        #: The human seats new participants are given in turn: each human role of each game (one
        #: per game where a game has one person, as before group games existed).
        self.slots = [(s, r) for s in self.human_specs for r in self._human_roles(s)]
        self.live: dict[str, Live] = {}
        #: Who plays the empty seats of group games and the seats of their dropouts.
        self.fallback = self._group_fallback()
        #: The waiting room: study game id -> human role -> {token: when they began waiting}.
        self.waiting: dict[str, dict[str, dict[str, float]]] = {}
        #: Group games started by this server: game id -> the task playing it.
        self.groups: dict[str, asyncio.Task] = {}
        self._timers: set[asyncio.Task] = set()
        #: Live slots (``max_live``): session token -> when the session was last seen
        #: (time.monotonic()), from its entry until its game ends, it declines, or it is idle
        #: past the deadline before its game started (:meth:`live_count`).
        self.held: dict[str, float] = {}

    def _human_roles(self, spec: GameSpec) -> list[str]:
        return [r for r, m in spec.seats.items() if self.study.models[m].is_human]

    def is_group(self, base: GameSpec) -> bool:
        """Whether ``base`` is a group game (more than one human seat)."""
        return len(self._human_roles(base)) > 1

    def _group_fallback(self) -> ModelEntry | None:
        """The ``[web] group_fallback`` entry: a model of the study by name, else the study's
        model with that spec, else a ``strategy/NAME`` spec itself. Required (and checked here,
        before anyone enters) when a game has more than one human seat."""
        name = self.settings.group_fallback.strip()
        groups = [s for s in self.human_specs if self.is_group(s)]
        if not name:
            if groups:
                raise StudyError(
                    f"study {self.study.name!r}: game {groups[0].id} seats people in {len(self._human_roles(groups[0]))} roles; "
                    f"set web.group_fallback (a model name of the study or strategy/NAME) to play the seats of people who do not come or who leave"
                )
            return None
        models = self.study.models
        entry = models.get(name) or next((m for m in models.values() if m.spec == name), None)
        if entry is None and seat_kind(name).scripted:
            entry = ModelEntry(name=name, spec=name)
        if entry is None:
            known = ", ".join(sorted(m for m, e in models.items() if not e.is_human))
            raise StudyError(f"study {self.study.name!r}: web.group_fallback {name!r} is neither a model of the study ({known}) nor strategy/NAME")
        if entry.is_human:
            raise StudyError(f"study {self.study.name!r}: web.group_fallback {name!r} is a human seat; name a model or strategy/NAME")
        if entry.is_strategy:
            for spec in groups:  # an unknown strategy, or bad parameters, fail before anyone enters
                self.runner._player(entry, spec)
        return entry

    # rows ---------------------------------------------------------------------------------
    def get(self, token: str) -> dict[str, Any] | None:
        if not token or len(token) > 64:
            return None
        return self.rows.get(token, self.study.name)

    def update(self, token: str, **values: Any) -> None:
        self.rows.update(token, **values)
        if values.get("game_status") is not None:  # the game is over (or declined): its live slot is free
            self.held.pop(token, None)

    # live slots ---------------------------------------------------------------------------
    def slot_deadline(self) -> float:
        """Seconds a session whose game has not started keeps its live slot without being seen:
        ``idle_timeout``, or :data:`SLOT_IDLE` when that is 0 (never abandoned)."""
        return self.settings.idle_timeout or SLOT_IDLE

    def live_count(self) -> int:
        """Games running or reserved now, against ``max_live``: each running game once (a
        group's members share one), each session holding a slot whose game has not started
        once; a slot whose game ended, or whose session was not seen for
        :meth:`slot_deadline` before its game started, is freed here."""
        now, deadline = time.monotonic(), self.slot_deadline()
        counted: set[Any] = set()
        for token, seen in list(self.held.items()):
            live = self.live.get(token)
            task = live.task if live is not None else None
            if task is not None:
                if task.done():
                    del self.held[token]
                else:
                    counted.add(id(task))
            elif now - seen > deadline:
                del self.held[token]
            else:
                counted.add(token)
        for live in self.live.values():  # games restarted after a restart, or of returning people
            if live.task is not None and not live.task.done():
                counted.add(id(live.task))
        return len(counted)

    def hold(self, token: str) -> None:
        """Reserve a live slot for the session (or renew it: it was seen now)."""
        self.held[token] = time.monotonic()

    def seen(self, token: str) -> None:
        """The session made a request: a slot it holds is kept from the idle deadline."""
        if token in self.held:
            self.held[token] = time.monotonic()

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
            base, role = self.slots[n % len(self.slots)]
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
        info = row.get("group_info")
        if info:  # a formed group: its members' pseudonyms and the fallback in the empty seats
            members, fallback = info["members"], info["fallback"]
            seats = {r: (person_seat(members[r]) if r in members else fallback.get(r, m)) for r, m in base.seats.items()}
        else:
            seats = {r: (person_seat(row["pid_hash"]) if r == row["role"] else m) for r, m in base.seats.items()}
        return base, GameSpec(row["game_id"], base.game, base.config, seats, base.repeat, base.seed, base.nature_seed)

    def alone(self, row: dict[str, Any]) -> bool:
        """Whether the participant's game asks nobody but them (a one-question test, the
        workplace scenes): their waiting page then waits for no other player."""
        base = self.by_id.get(row["base_spec"])
        if base is None:
            return False
        cls: type[Game] = self.study.game_class(base.game)
        return tuple(cls.active_roles(cls.Config(**base.config))) == (row["role"],)

    async def start(self, row: dict[str, Any], play: bool = True) -> Live:
        """The participant's live game: its instructions read (no model is called for that), and
        with ``play`` the game started (or restarted, replaying) if not running. The game, and so
        every model call for it, starts only when the person reaches the play screen: someone
        who consents and leaves costs nothing."""
        live = self.live.get(row["token"])
        base, spec = self.spec_for(row)
        if live is None or not live.system:  # (a group member's Live may come from the group's start)
            if live is None:
                live = Live(row["token"], self, row["role"])
                self.live[row["token"]] = live
            live.system = await instructions_text(self.study, self.runner, base, row["role"])
        if play and live.task is None and row["game_status"] is None:
            if not self.is_group(base):
                live.task = asyncio.create_task(self._play({live.role: live}, base, spec))
            elif not row.get("group_info"):
                self._wait_for_group(row, base)
            else:
                self._launch(base, row["game_id"])
        return live

    def outages(self, row: dict[str, Any] | None = None) -> dict[str, str]:
        """The model servers of the study (of the participant's game only, given ``row``) that do
        not answer now: server -> one line. Their calls wait; the desk and the waiting page say so."""
        names: set[str] | None = None
        if row is not None:
            base = self.by_id.get(row["base_spec"])
            names = set(base.seats.values()) if base is not None else set()
            if self.fallback is not None:
                names.add(self.fallback.name)
        return self.runner.outages(names)

    # the waiting room ---------------------------------------------------------------------
    def waiting_since(self, token: str) -> float | None:
        """When the participant began waiting for their group, while they wait; else None."""
        for room in self.waiting.values():
            for tokens in room.values():
                if token in tokens:
                    return tokens[token]
        return None

    def _wait_for_group(self, row: dict[str, Any], base: GameSpec) -> None:
        """Put the participant in the waiting room of their game (once; since when is stored,
        so a restart does not make them wait again from the start) and form what groups can be."""
        room = self.waiting.setdefault(base.id, {}).setdefault(row["role"], {})
        if row["token"] in room:
            return
        since = row.get("waiting_since")
        if since is None:
            since = time.time()
            self.update(row["token"], waiting_since=since)
        room[row["token"]] = since
        self._match(base)
        if row["token"] in room:  # still waiting: look again when their wait is over
            timer = asyncio.create_task(self._match_later(base, since + self.settings.group_wait - time.time()))
            self._timers.add(timer)
            timer.add_done_callback(self._timers.discard)

    async def _match_later(self, base: GameSpec, delay: float) -> None:
        await asyncio.sleep(max(0.0, delay) + 0.05)
        self._match(base)

    def _match(self, base: GameSpec) -> None:
        """Form the groups the waiting room of ``base`` allows: the first to arrive for each
        human seat, once every seat has someone; or, once the longest waiting of them has waited
        ``group_wait`` seconds, those there are with the fallback in the other seats."""
        room = self.waiting.get(base.id, {})
        roles = self._human_roles(base)
        while True:
            first = {r: min(room[r], key=room[r].__getitem__) for r in roles if room.get(r)}
            if not first:
                return
            if len(first) < len(roles) and time.time() - min(room[r][t] for r, t in first.items()) < self.settings.group_wait:
                return
            self._form(base, first)
            for r, t in first.items():
                del room[r][t]

    def _form(self, base: GameSpec, members: dict[str, str]) -> None:
        """Form the group ``members`` (role -> token) of ``base``: one game id for all, written to
        every member's row in one transaction (with who waited how long and which seats the
        fallback took), and start its game."""
        now = time.time()
        rows = {r: self.get(t) for r, t in members.items()}
        fallback = {r: self.fallback.name for r in self._human_roles(base) if r not in members} if self.fallback else {}
        pids = {r: row["pid_hash"] for r, row in rows.items()}
        game_id = group_game_id(base.id, pids, fallback)
        waited = {r: round(now - (row.get("waiting_since") or now), 1) for r, row in rows.items()}
        note = ""
        if fallback:
            seats = ", ".join(fallback)
            note = f"seat{'s' if len(fallback) > 1 else ''} {seats} filled by fallback {self.fallback.name} after waiting {max(waited.values()):.0f} s"
        info = {"members": pids, "fallback": fallback, "formed": now, "note": note}
        self.rows.form_group({members[r]: {"game_id": game_id, "group_info": {**info, "waited": waited[r]}} for r in members})
        self._launch(base, game_id)

    def _launch(self, base: GameSpec, game_id: str) -> None:
        """Start the group game ``game_id`` (once): every member's Live, one task for all."""
        if game_id in self.groups:
            return
        rows = self.rows.of_game(self.study.name, game_id)
        if not rows or any(r["game_status"] is not None for r in rows):
            return
        lives: dict[str, Live] = {}
        for row in rows:
            live = self.live.get(row["token"])
            if live is None:  # its instructions are read when its page is next shown
                live = self.live[row["token"]] = Live(row["token"], self, row["role"])
            lives[row["role"]] = live
        _, spec = self.spec_for(rows[0])
        task = asyncio.create_task(self._play(lives, base, spec))
        self.groups[game_id] = task
        for live in lives.values():
            live.task = task
            live.group = lives
            live.touch()  # the waiting pages reload

    def taken_over(self, live: Live, for_good: bool) -> None:
        """A group member's turn reached its deadline unanswered and the computer answered for
        them (``for_good``: they passed the idle deadline, and it plays their part from now on):
        every other member is told once, on their next pages."""
        others = [lv for lv in live.group.values() if lv is not live]
        who = "The other participant" if len(others) == 1 else "Another participant"
        then = " and will play their part from now on" if for_good else ""
        for other in others:
            other.notice = f"{who} did not answer in time, so the computer answered for them{then}."
            other.touch()

    def slow_member(self, live: Live) -> tuple[float | None, str] | None:
        """While ``live`` waits on another member of its group past a short while: when the
        computer will answer for that member (the earliest such deadline; None when their turn
        has none) and who they are in words; None while nobody keeps the group waiting. A short
        while: :data:`SLOW_AFTER` seconds of that member's open turn, or a quarter of the time it
        gives them where that is shorter."""
        if live.pending is not None:
            return None
        others = [lv for lv in live.group.values() if lv is not live]
        now, limit, idle = time.time(), self.settings.time_limit, self.settings.idle_timeout
        slow: list[float | None] = []
        for other in others:
            p = other.pending
            if p is None or p.done or other.abandoned:
                continue
            deadline = p.deadline(limit, idle)
            after = SLOW_AFTER if deadline is None else min(SLOW_AFTER, (deadline - p.opened) / 4)
            if now - p.opened >= after:
                slow.append(deadline)
        if not slow:
            return None
        known = [t for t in slow if t is not None]
        return (min(known) if known else None), ("The other participant" if len(others) == 1 else "Another participant")

    def mark_dropout(self, live: Live) -> None:
        """A group member passed the idle deadline: their seat goes to the fallback (recorded
        once; a replay after a restart finds it recorded)."""
        row = self.get(live.token)
        if row is not None and row.get("dropped_out") is None:
            self.update(live.token, dropped_out=time.time())

    # playing ------------------------------------------------------------------------------
    async def _play(self, lives: dict[str, Live], base: GameSpec, spec: GameSpec) -> None:
        """Play the game of ``lives`` (one person, or a group) and write each one's result."""
        entries = {r: self.study.models[m] for r, m in base.seats.items()}
        group = self.is_group(base)
        if group:
            fallback = self.fallback
            assert fallback is not None  # checked when the manager was made
            for r in self._human_roles(base):
                if r not in lives:  # nobody came for this seat: the fallback plays it
                    entries[r] = fallback
            seated: dict[str, Player] = {r: GroupSeat(lv, lambda: self.runner._player(fallback, spec)) for r, lv in lives.items()}
        else:
            seated = {r: Human(Seat(lv)) for r, lv in lives.items()}

        def stored_as(status: str) -> str:  # someone left: not a clean observation (stored so in the game's one write)
            return "abandoned" if status == "done" and any(lv.abandoned for lv in lives.values()) else status

        try:
            status = await self.runner.play_one(spec, seated=seated, entries=entries, stored_as=stored_as)
        except StudyError:  # e.g. an unknown strategy: the study file's problem, shown on the dashboard
            status = "error"
        except Exception as exc:  # e.g. the store failed: the person must not wait for ever
            print(f"agora serve: game {spec.id} stopped: {redact(f'{type(exc).__name__}: {exc}')}", file=sys.stderr)
            status = "error"
        game = self.store.game(spec.id)
        for live in lives.values():
            own = "abandoned" if live.abandoned and status == "done" else status
            values = bonus_values(game and game["outcome"], game and game["metrics"], live.role)
            bonus = evaluate_bonus(self.settings.bonus_rule(live.role), values, self.settings.bonus_max) if own == "done" else 0.0
            row = self.get(live.token)
            if row and row["stage"] == "play":
                self.update(live.token, stage="results", game_status=own, bonus=bonus)
            else:
                self.update(live.token, game_status=own, bonus=bonus)
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
        lines = cls(cls.Config(**spec.config), self.runner.prompts_for(cls), names, people={row["role"]}).describe(game["outcome"], row["role"])
        if status == "abandoned":
            lines = ["You did not answer in time, so the game played on without you; it counts as not finished.", *lines]
        elif row.get("group_info"):
            others = [r for r in self.rows.of_game(self.study.name, row["game_id"]) if r["token"] != row["token"]]
            if any(r.get("dropped_out") for r in others):
                lines = ["Another participant stopped answering, so the computer played their part from then on.", *lines]
            if row["group_info"].get("fallback"):
                lines = ["Not every participant the game needed arrived in time, so the computer played the missing parts.", *lines]
        values = bonus_values(game["outcome"], game.get("metrics"), row["role"])
        return lines, explain_bonus(rule, values, self.settings.bonus_max, finished=status == "done", role=row["role"], words=self.settings.bonus_words(row["role"]))

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
        live.echo = person_answer(action, live.fields)
        live.notice = None  # told once: gone after the person's next answer
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

    def due_attention(self, row: dict[str, Any], ended: bool = False) -> AttentionCheck | None:
        """The attention check to show now, if the participant has reached one not yet taken;
        with ``ended`` (their game is over) any check not yet taken, so that every participant
        meets every check whatever their role and however soon their game ended."""
        done = {a["after"] for a in row["attention"] or []}
        answered = None if ended else self.answered_turns(row["token"])
        for check in self.settings.attention_checks:
            if check.after not in done and (answered is None or answered >= check.after):
                return check
        return None

    def attention_record(self, row: dict[str, Any], check: AttentionCheck, answer: str, ended: bool) -> dict[str, Any]:
        """How a check's answer is stored: the answer, whether it passed, and ``in_play``: True
        when it was shown during the game after the ``after``-th answered turn, False when the
        game ended before the participant reached it and it was shown afterwards (before the
        results and the questionnaire)."""
        return {"after": check.after, "answer": answer[:200], "passed": answer == check.answer, "in_play": not ended, "turns": self.answered_turns(row["token"])}

    async def stop(self) -> None:
        for timer in list(self._timers):
            timer.cancel()
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
    told = await game_cls(config, runner.prompts_for(game_cls), names, people={role}).instructions(seed=spec.seed, nature_seed=spec.nature_seed)
    system = told.system.get(role, "")
    if not system.strip():  # a game that asks its question with no rules before it
        return NO_RULES
    rules = told.rules.get(role, system)
    return rules if rules != system.strip() else for_person((Part(RULES, system),), set(told.formats))


#: The instructions page of a game that gives no rules before its first question.
NO_RULES = "There are no rules to read first: everything you need is in the question on the next page."


def for_person(parts: tuple[Part, ...], formats: set[str]) -> str:
    """A message as a person reads it: without its answer-format part (marked in the templates,
    see :mod:`agorabench.core.speech`), which the form replaces, and another player's words
    between quotation marks instead of the ``> `` lines models read (:func:`spoken`). A message
    with no marked format part (a researcher's own template without the mark) is shown without
    the action types' format instructions, found as they are written."""
    text = "".join(spoken(p.text) if p.kind == SPEECH else p.text for p in parts if p.kind != FORMAT)
    if any(p.kind == FORMAT for p in parts):
        return text.strip()
    for f in formats:
        text = text.replace(f, "")
    return text.strip()


def spoken(quoted: str) -> str:
    """Another player's words, quoted for models (every line after ``> ``), as a person reads
    them: the lines without the prefix, between quotation marks."""
    lines = [line.removeprefix(QUOTE_PREFIX).removeprefix(QUOTE_PREFIX.strip()) for line in quoted.split("\n")]
    body = "\n".join(lines).strip()
    return f"\u201c{body}\u201d" if body else ""

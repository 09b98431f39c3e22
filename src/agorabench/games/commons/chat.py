"""The commons' monthly group chat: the report steps that open it, who speaks first and next,
the remarks (at most K conversation steps, the report included), and the manager's reading of
the agreed limit from the minutes. Each step takes the game (its configuration, scenario and
words) and the play (:class:`.play.Play`: names, memory streams, leaders); with ``memory = "retrieved"`` a speaker's memories come from :mod:`.recall`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...core.speech import format_part
from ...core.table import Prompt, Table
from .actions import Limit, person_remark, Remark, Utterance
from .election import leading_speaker, persona_lines
from .recall import recall, RECENT_STEPS, recall_block, REMARK_TOP_K
from .rules import public

if TYPE_CHECKING:
    from .commons import Commons
    from .play import Play


def report_steps(game: Commons, play: Play, present: list[str], collected: dict[str, int]) -> list[dict[str, Any]]:
    """The conversation steps that open the chat: the manager's report (one step, catches
    only), each agent's own line (one step each), or none; ``report_wording = "original"``
    words them as the original does (its sentences joined by a space, as its code joins them)."""
    c, s, names = game.config, game.scenario, play.names
    original = c.report_wording == "original"
    if c.report == "none":
        return []
    if c.report == "individual":
        key = "individual_line_original" if original else "individual_line"
        return [{"speaker": r, "name": names[r], "message": game.say(key, amount=collected[r]), "report": True} for r in present]
    if original:
        text = " ".join([game.say("report_intro_original"), *(game.say("report_line_original", name=names[r], amount=collected[r]) for r in present)])
        return [{"speaker": "manager", "name": s.manager, "message": text, "report": True}]
    lines = [game.say("report_line", name=names[r], amount=collected[r]) for r in present]
    text = game.render("report", lines=lines, stock=None, collapsed=False, show_stock=False)
    return [{"speaker": "manager", "name": s.manager, "message": text, "report": True}]


def first_speaker(game: Commons, table: Table, present: list[str], month: int) -> str:
    """Who opens the month's chat: seat 0 (``fixed``), a random agent, or seat (t−1) mod N."""
    order = game.config.first_speaker
    if order == "random":
        return table.rng.choice(present)
    if order == "rotating":
        return present[(month - 1) % len(present)]
    return present[0]


async def discuss(game: Commons, play: Play, table: Table, roles: list[str], month: int, next_stock: int, history, agreed, opening_steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The month's group chat: at most K steps in all, the opening report steps included."""
    c, s, names = game.config, game.scenario, play.names
    share_next = game.share(s.sustainable_total(next_stock), len(roles))
    speaker = leading_speaker(play, roles) or first_speaker(game, table, roles, month)  # a leader opens (leadership)
    remarks = max(0, c.max_conversation_steps - len(opening_steps))
    opening = game.render("discuss_open", steps=remarks, first=names[speaker])
    retrieved = c.recalls
    if not retrieved:
        table.tell_all(roles, opening)
        for step in opening_steps:
            table.tell_all(roles, game.say("heard", speaker=step["name"], message=step["message"]))
    said: list[dict[str, Any]] = []
    for _step in range(remarks):
        obs = {
            "phase": "discuss",
            "month": month,
            "me": speaker,
            "names": {r: names[r] for r in roles},
            "n_agents": len(roles),
            "inverse": s.inverse,
            "next_stock": next_stock,
            "sustainable_share_next": share_next,
            "agreed_limit": agreed,
            "messages": [dict(m) for m in said],
            "history": [public(h) for h in history],
        }
        task = game.render("discuss_format", speaker)
        text = "\n".join([*persona_lines(game, play, speaker, policy=False), game.render("discuss_turn", speaker, name=names[speaker])]) + "\n" + task
        if retrieved:
            # the speaker's memories for the empty context (the original's, always empty,
            # embedded as a query like any other) and for each of the last four steps, five
            # each, dated; then the chat so far
            steps = [m for m in opening_steps + said if m["message"]]
            focal = [""] + [m["message"] for m in steps[-RECENT_STEPS:]]
            when = play.dates(month).chat
            memories = await recall(game, play, table, speaker, focal, when, REMARK_TOP_K)
            obs["memories"] = [m.text for m in memories]
            heard = [game.say("heard", speaker=m["name"], message=m["message"]) for m in steps]
            text = "\n".join([recall_block(game, play, speaker, "place_chat", when, memories), "\n\n".join([opening, *heard, text])])
            table.forget_before(speaker, table.mark(speaker))
        kind = Utterance if c.ask_proposal else Remark
        fallback = kind(message="", end_conversation=False)
        if speaker in game.people:  # a person names the next speaker from a list, ends with a button
            kind = person_remark(kind, tuple(names[r] for r in roles if r != speaker))
        u = await table.ask(speaker, Prompt(text, obs, phase="discuss", instructions=task), kind, fallback)
        table.note_metrics(speaker, {"month": month})
        u = u or fallback
        entry = {"speaker": speaker, "name": names[speaker], "message": u.message, "proposed_limit": getattr(u, "proposed_limit", None), "end": u.end_conversation, "valid": table.last_valid(speaker)}
        said.append(entry)
        if u.message and not retrieved:
            heard = game.say("heard", speaker=names[speaker], message=u.message)
            table.tell_all([r for r in roles if r != speaker], heard)
        if u.end_conversation:
            break
        speaker = next_speaker(game, play, table, roles, speaker, u.next_speaker)
    if not retrieved:
        table.tell_all(roles, game.render("discuss_close"))
    return said


def next_speaker(game: Commons, play: Play, table: Table, roles: list[str], current: str, named: str) -> str:
    """Who speaks after ``current``: the agent it named (``chosen``; a name that fits no other
    agent passes to the next seat), a random other agent, or the next seat."""
    order = game.config.speaker_order
    if order == "random":
        return table.rng.choice([r for r in roles if r != current])
    if order == "chosen":
        by_name = play.by_name
        key = named.strip().strip(".!\"'").strip()
        target = by_name.get(key) or next((r for n, r in by_name.items() if n.lower() == key.lower()), None)
        if target is not None and target != current and target in roles:
            return target
    return roles[(roles.index(current) + 1) % len(roles)]


async def summarise(game: Commons, table: Table, roles: list[str], month: int, said: list[dict[str, Any]], agreed, history) -> int | None:
    """The manager reads the minutes and states the agreed limit; 0 means none agreed."""
    minutes = "\n".join(game.say("heard", speaker=m["name"], message=m["message"]) for m in said if m["message"]) or "-"
    obs = {"phase": "summary", "month": month, "messages": [dict(m) for m in said if not m.get("report")], "agreed_limit": agreed, "history": [public(h) for h in history]}
    text = game.render("summary", month=month, minutes=minutes)
    retrieved = game.config.recalls
    if game.config.summariser_memory == "month" or retrieved:
        table.forget_before("manager", table.mark("manager"))
    answer = await table.ask("manager", Prompt(text, obs, phase="summary", instructions=format_part(text)), Limit, Limit(limit=0))
    table.note_metrics("manager", {"month": month})
    limit = answer.limit if answer is not None and answer.limit > 0 else None
    if limit is not None and not retrieved:  # retrieved: a memory, written after the notes
        table.tell_all(roles, game.render("limit", limit=limit))
    return limit

"""The commons game's memory steps (``memory = "retrieved"``, the original's memory stream of
:mod:`.memory`): what a decision recalls and how it is shown, and the memory calls an agent makes
each month (two notes after the chat, insights at home, a rating of each). Each step takes the
game (its configuration, scenario and words) and the play (:class:`.play.Play`: names, memory
streams, calendar)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Iterable

from ...core.actions import Action
from ...core.table import Prompt, Table
from .actions import Insights, Note, Rating
from .memory import Memory, first_sentence, format_date, memory_lines, split_insights

if TYPE_CHECKING:
    from .commons import Commons
    from .play import Play

#: Memories shown at a harvest (per focal point; the harvest has one), per focal point at a
#: remark, and at the reflection (the original's top_k; a scenario file's ``[memory]`` table may
#: set the harvest's: 14 in pollution).
HARVEST_TOP_K, REMARK_TOP_K, REFLECT_TOP_K = 10, 5, 10
DEFAULT_TOP_K = {"harvest": HARVEST_TOP_K, "reflect": REFLECT_TOP_K}
#: How many memories a harvest and a reflection take with ``focal_points = "earlier"`` (commons-6).
EARLIER_TOP_K = 10
#: How many of the chat's latest steps are a remark's focal points (besides the empty context).
RECENT_STEPS = 4
#: A rating that stays unusable counts as this (the original's default).
DEFAULT_RATING = 5


async def recall(game: Commons, play: Play, table: Table, role: str, focal: list[str], now: datetime, top_k: int) -> list[Memory]:
    """The role's memories for ``focal`` at ``now`` (:meth:`MemoryStream.retrieve`), every
    text embedded through the table first: each focal point after the configuration's
    ``embeddings_query_prefix`` (the original's by default, so the empty context is the
    prefix alone), each memory bare. A query that is empty (the empty context without a
    prefix) has nothing to embed: relevance 0 to everything."""
    stream = play.streams[role]
    if not stream.retrievable(now):
        return []
    prefix = game.config.embeddings_query_prefix
    texts = [t for t in stream.texts_to_embed(focal, now, prefix) if t]
    todo = stream.cache.missing(texts)
    if todo:
        stream.cache.put(todo, await table.embed(todo))
    if "" not in stream.cache and any(not prefix + f for f in focal):
        stream.cache.put([""], [[0.0] * len(stream.cache.get(texts[-1]))])
    return stream.retrieve(focal, now, top_k, query_prefix=prefix)


def focal(game: Commons, decision: str) -> tuple[str, int]:
    """The focal point of a harvest or a reflection (``decision``) and how many memories it
    takes, from the scenario's ``[memory]`` table (``focal_points``)."""
    table = game.scenario.memory
    if game.config.focal_points == "earlier":
        return table[f"{decision}_focal_earlier"], EARLIER_TOP_K
    return table[f"{decision}_focal"], int(table.get(f"{decision}_top_k", DEFAULT_TOP_K[decision]))


def note_month(table: Table, roles: Iterable[str], month: int) -> None:
    """Give each role's latest turn its month (every commons turn carries one)."""
    for r in roles:
        table.note_metrics(r, {"month": month})


def recall_block(game: Commons, play: Play, role: str, place: str, when: datetime, memories: list[Memory], numbered: bool = False) -> str:
    """Where and when, then the memories shown, one dated line each (a person's wording when a
    person plays ``role``)."""
    name = play.names[role]
    return game.render("recall", role, name=name, place=game.say(place), date=format_date(when), lines=memory_lines(memories, numbered))


def ask_alone(table: Table, role: str, prompt: Prompt, kind: type[Action], fallback: Action) -> tuple[Prompt, type[Action], Action]:
    """(prompt, kind, fallback) for :meth:`Table.ask_each`, the role shown only its system
    text and this prompt."""
    table.forget_before(role, table.mark(role))
    return prompt, kind, fallback


async def rate(game: Commons, play: Play, table: Table, month: int, thoughts: dict[str, list[str]], source: str) -> dict[str, list[int]]:
    """Each role's rating (1-10) of each of its thoughts: one call per thought, the roles
    at once, a role's thoughts one after another."""
    out: dict[str, list[int]] = {r: [] for r in thoughts}
    for i in range(max((len(v) for v in thoughts.values()), default=0)):
        asks = {}
        for r, texts in thoughts.items():
            if i < len(texts):
                name = play.names[r]
                text = game.render("memory_rate", name=name, thought=texts[i])
                task = game.render("memory_rate_task", name=name)
                obs = {"phase": "memory_rate", "month": month, "me": r, "thought": texts[i], "source": source}
                asks[r] = ask_alone(table, r, Prompt(text + "\n" + task, obs, phase="memory_rate", instructions=task), Rating, Rating(rating=DEFAULT_RATING))
        answers = await table.ask_each(asks)
        note_month(table, asks, month)
        for r, a in answers.items():
            out[r].append(a.rating if a is not None else DEFAULT_RATING)
    return out


async def write_notes(game: Commons, play: Play, table: Table, present: list[str], month: int, steps: list[dict[str, Any]], limit: int | None, next_stock: int) -> None:
    """After the chat, each agent's planning note and interesting note (each rated), then
    the agreed limit (always shown while it lives, not rated)."""
    s = game.scenario
    when = play.dates(month).chat
    minutes = "\n".join(game.say("heard", speaker=m["name"], message=m["message"]) for m in steps if m["message"]) or "-"
    share_next = game.share(s.sustainable_total(next_stock), len(present))
    for question in ("note_plan", "note_interest"):
        asks = {}
        for r in present:
            name = play.names[r]
            text = game.render("memory_note", name=name, minutes=minutes)
            task = game.render("memory_note_task", name=name, question=question)
            obs = {"phase": "memory_note", "note": question.removeprefix("note_"), "month": month, "me": r, "inverse": s.inverse, "agreed_limit": limit, "sustainable_share_next": share_next, "messages": [dict(m) for m in steps]}
            asks[r] = ask_alone(table, r, Prompt(text + "\n" + task, obs, phase="memory_note", instructions=task), Note, Note(note=""))
        answers = await table.ask_each(asks)
        note_month(table, asks, month)
        notes = {r: first_sentence(a.note) if a is not None else "" for r, a in answers.items()}
        notes = {r: [n] if n else [] for r, n in notes.items()}  # an empty note is not kept
        ratings = await rate(game, play, table, month, notes, "note")
        for r in present:
            for text, rating in zip(notes[r], ratings[r]):
                play.streams[r].add("thought", text, when, importance=rating)
    if limit is not None:
        for r in present:
            play.streams[r].add("thought", game.render("limit", limit=limit), when, always_include=True)


async def reflect(game: Commons, play: Play, table: Table, present: list[str], month: int) -> None:
    """At home on the month's last day: each agent's insights from its top 10 memories for
    the reflection's focal point, each insight rated."""
    when = play.dates(month).reflection
    asks, shown = {}, {}
    point, top_k = focal(game, "reflect")
    for r in present:
        shown[r] = await recall(game, play, table, r, [point], when, top_k)
        if not shown[r]:
            continue
        name = play.names[r]
        text = recall_block(game, play, r, "place_home", when, shown[r], numbered=True)
        task = game.render("memory_insight_task", name=name)
        obs = {"phase": "memory_insight", "month": month, "me": r, "memories": [m.text for m in shown[r]]}
        asks[r] = ask_alone(table, r, Prompt(text + "\n" + task, obs, phase="memory_insight", instructions=task), Insights, Insights(insights=""))
    if not asks:
        return
    answers = await table.ask_each(asks)
    note_month(table, asks, month)
    insights = {r: split_insights(a.insights, len(shown[r])) if a is not None else [] for r, a in answers.items()}
    ratings = await rate(game, play, table, month, insights, "insight")
    for r in asks:
        for text, rating in zip(insights[r], ratings[r]):
            play.streams[r].add("thought", text, when, importance=rating)

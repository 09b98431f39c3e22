"""A served study with many participants, built through the web app's Manager (what `agora
serve` runs, no HTTP): each person enters with a Prolific id, consents, takes the quiz, plays
Alice in a GLEE bargaining game against a scripted Bob with a scripted answer policy (a seeded
random GLEE strategy deciding each turn the Seat opens), takes the attention check when it is due
and answers the questionnaire; the model-only games of the same study are played by its runner."""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agorabench.core.runner import Runner
from agorabench.core.study import load_study
from agorabench.families import strategies
from agorabench.store.store import Store
from agorabench.web.play import Manager
from support.web import study_text

#: The seatings: a person as Alice, and two scripted Alices, all against a random Bob.
SEATS = [{"alice": "participant", "bob": "opponent"}, {"alice": "spe", "bob": "opponent"}, {"alice": "bot", "bob": "opponent"}]
MODELS = [{"name": "spe", "spec": "strategy/spe"}, {"name": "bot", "spec": "strategy/random"}, {"name": "opponent", "spec": "strategy/random"}]


def study_file(tmp_path: Path, name: str, people: int) -> Path:
    """A bargaining study whose design has ``people`` games with a person as Alice (one per
    participant) and as many for each scripted Alice."""
    text = study_text(name, "glee.bargaining", SEATS, {"money": 100, "horizon": 3}, MODELS)
    text = text.replace("seed = 0\n", f"seed = 0\nrepeats = {people}\n", 1)
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return path


@dataclass
class Person:
    """What one scripted participant did (what the export must show)."""

    pid: str
    token: str = ""
    quiz_tries: int = 1
    attention_answer: str = ""
    answers: dict[str, Any] = field(default_factory=dict)
    finished: bool = True


def _policy(seed: int):
    """A scripted answer policy: GLEE's random strategy for bargaining, seeded per person."""
    player = strategies("glee.bargaining")["random"]()
    rng = random.Random(seed)

    def decide(request):
        request.rng = rng
        return player.decide(request)

    return decide


async def play_person(manager: Manager, person: Person, i: int, decide=None) -> None:
    """One participant from entry to the questionnaire (done unless ``person.finished`` is
    False), answering each turn with ``decide(request)`` (default: a seeded GLEE policy)."""
    token, new = manager.enter("prolific", person.pid, {"STUDY_ID": "study-1", "SESSION_ID": f"s{i}"})
    assert new
    person.token = token
    manager.update(token, stage="instructions")  # consented
    manager.update(token, quiz_attempts=person.quiz_tries, stage="play")  # the quiz passed at the last try
    live = await manager.start(manager.get(token))
    decide = decide or _policy(i)
    for _ in range(4000):
        if live.task is not None and live.task.done():
            break
        pending = live.pending
        if pending is None or pending.done:
            await asyncio.sleep(0.005)
            continue
        row = manager.get(token)
        check = manager.due_attention(row)
        if check is not None:  # as the app records an attention check's answer
            manager.update(token, attention=[*(row["attention"] or []), {"after": check.after, "answer": person.attention_answer, "passed": person.attention_answer == check.answer}])
        manager.mark_shown(live)
        assert manager.answer(live, pending.seq, decide(pending.request), [])
        await asyncio.sleep(0)
    assert live.task is not None and live.task.done(), f"{person.pid}: the game did not end"
    await live.task
    row = manager.get(token)
    assert row["stage"] == "results" and row["game_status"] == "done", row
    manager.update(token, stage="questionnaire")
    if person.finished:
        manager.update(token, stage="done", answers=person.answers, code="DONE")


def served_study(tmp_path: Path, people: int = 12, name: str = "pooling") -> tuple[Path, Path, list[Person]]:
    """Build the study (file, database) with ``people`` participants who played and the
    model-only games played; returns the file, the database and what each person did. The last
    person stops at the questionnaire (in progress); every third fails the attention check."""
    path = study_file(tmp_path, name, people)
    db = tmp_path / f"{name}.db"
    crowd = []
    for i in range(people):
        crowd.append(Person(
            pid=f"PID{i:03d}X",
            quiz_tries=1 + i % 2,
            attention_answer="Red" if i % 3 == 0 else "Blue",
            answers={"why": f"reason number {i}", "fair": 1 + i % 5},
            finished=i < people - 1,
        ))

    async def go() -> None:
        store = Store(db)
        study = load_study(path)
        manager = Manager(study, store)
        try:
            for i, person in enumerate(crowd):
                await play_person(manager, person, i)
            await Runner(study, store, progress=False).run()  # the model-only games
        finally:
            await manager.stop()
            store.dispose()

    asyncio.run(go())
    return path, db, crowd

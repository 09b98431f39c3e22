"""Find stored commons games whose prompts carry text of another game (issue 19).

Until prompt version ``commons-5`` a render memo keyed on the ``repr()`` of the commons game's
text function could hand an agent a line rendered for another agent, another language or another
scenario (versions ``commons-3`` from the engine-speed change on, and all of ``commons-4``). A
game is *affected* when one of its stored messages

- holds a chat turn line ("NAME, it is your turn ...") whose name is not the agent it was sent
  to, or
- holds a literal sentence of another scenario file (another language, or another scenario of
  the same language) that its own scenario file does not contain.

Literal sentences are the runs of a scenario text template between its Jinja tags, at least
:data:`LEAST` characters long, so that short shared words never count.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Iterable

from .scenario import get_scenario, scenarios

#: Shortest literal run of a scenario text counted as a sentence of that scenario.
LEAST = 16

_TAGS = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", re.S)


def literal_runs(template: str, least: int = LEAST) -> list[str]:
    """The literal text of a template between its tags, runs of at least ``least`` characters."""
    return [p.strip() for p in _TAGS.split(template) if len(p.strip()) >= least]


@lru_cache(maxsize=None)
def _own(scenario: str, language: str) -> frozenset[str]:
    s = get_scenario(scenario, language)
    return frozenset(run for text in s.text.values() if isinstance(text, str) for run in literal_runs(text))


@lru_cache(maxsize=None)
def _foreign(scenario: str, language: str) -> frozenset[str]:
    """Sentences of every other scenario file that this one does not hold."""
    own = _own(scenario, language)
    return frozenset(run for key in scenarios() if key != (scenario, language) for run in _own(*key) if run not in own)


@lru_cache(maxsize=None)
def _turn_line(scenario: str, language: str) -> tuple[str, ...]:
    """The literal parts of the chat turn line (around the speaker's name)."""
    text = get_scenario(scenario, language).text.get("discuss_turn", "")
    return tuple(p for p in (q.strip() for q in _TAGS.split(text)) if p)


def problems(config: dict[str, Any], transcripts: dict[str, list[dict[str, str]]]) -> list[str]:
    """What is wrong with one stored commons game's prompts (empty when nothing is): each item a
    short description naming the role."""
    scenario, language = config.get("scenario", "fishery"), config.get("language", "en")
    try:
        s = get_scenario(scenario, language)
    except (KeyError, ValueError):
        return [f"unknown scenario {scenario!r} in language {language!r}"]
    names = [s.name_of(i) for i in range(int(config.get("n_agents", 5)))]
    foreign, parts = _foreign(scenario, language), _turn_line(scenario, language)
    found: list[str] = []
    for role, messages in transcripts.items():
        mine = names[int(role.split("_")[1])] if role.startswith("agent_") and role.split("_")[1].isdigit() and int(role.split("_")[1]) < len(names) else None
        for message in messages:
            content = message.get("content") or ""
            if message.get("role") not in ("system", "user"):
                continue
            stray = next((run for run in foreign if run in content), None)
            if stray is not None:
                found.append(f"{role}: text of another scenario or language ({stray[:40]!r})")
                break
            if mine is not None and parts and all(p in content for p in parts):
                for line in content.splitlines():
                    if all(p in line for p in parts) and not line.strip().startswith(mine):
                        found.append(f"{role}: chat turn line for someone else ({line.strip()[:60]!r})")
                        break
    return found


def affected(games: Iterable[tuple[str, dict[str, Any], dict[str, list[dict[str, str]]]]]) -> list[tuple[str, list[str]]]:
    """(game id, problems) for every affected game among (id, config, transcripts by role)."""
    return [(gid, found) for gid, config, transcripts in games if (found := problems(config, transcripts))]

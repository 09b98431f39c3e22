"""Commons scenarios (data files ``scenarios/<scenario>.<language>.toml``): the resource's rules
(growth, capacity, collapse threshold), names and all wording, read once; the snippets of a
scenario's text are Jinja templates (:func:`snippet`). The original GovSim's report sentences
(``report_wording = "original"``) are quoted text, not ours: they live in one file,
``scenarios/original_wording.toml`` (its source and MIT licence in its header, the licence in
``LICENSE-GovSim``), read only when a game looks one of them up (:class:`Wording`)."""

from __future__ import annotations

import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import jinja2

from ...core.speech import FORMAT_MARK, quote_marked
from . import SCENARIOS


@dataclass(frozen=True)
class Scenario:
    """One scenario in one language, read from its data file."""

    scenario: str
    language: str
    inverse: bool
    initial: int
    capacity: int
    collapse_threshold: float
    unit: str
    growth_kind: str
    growth_value: float
    agent_names: tuple[str, ...]
    manager: str
    text: Mapping[str, str] = field(hash=False, compare=False)
    #: What ``memory = "retrieved"`` retrieves for (the data file's ``[memory]`` table): the
    #: harvest's focal point and top k and the reflection's focal point, the original's and
    #: commons-6's (``*_earlier``).
    memory: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    def grow(self, left: int) -> int:
        """Stock at the start of next month from what is left after harvesting."""
        if self.growth_kind == "multiply":
            return int(min(self.capacity, self.growth_value * left))
        return int(min(self.capacity, left + self.growth_value))

    def sustainable_total(self, stock: float) -> float:
        """f(t): most the group may take (inverse: least it must remove) this month."""
        if self.growth_kind == "multiply":
            return stock * (1 - 1 / self.growth_value)
        return float(min(self.growth_value, stock))

    def collapsed(self, left: float, rule: str = "strict") -> bool:
        """Whether the stock left after harvesting means collapse (see module doc)."""
        c = self.collapse_threshold
        if self.inverse:
            return left > c if rule == "strict" else left >= c
        return left < c if rule == "strict" else left <= c

    def name_of(self, index: int) -> str:
        return self.agent_names[index] if index < len(self.agent_names) else f"Agent {index + 1}"


#: The original's quoted sentences (``report_wording = "original"``), by scenario and language.
ORIGINAL_WORDING = SCENARIOS / "original_wording.toml"
#: The keys of those sentences, as the game looks them up.
ORIGINAL_KEYS = ("report_intro_original", "report_line_original", "individual_line_original")


@lru_cache(maxsize=1)
def original_wording() -> dict[tuple[str, str], dict[str, str]]:
    """The quoted original sentences of each (scenario, language) that has them, from
    :data:`ORIGINAL_WORDING` (its source fields left out). Read once, at first use."""
    data = tomllib.loads(ORIGINAL_WORDING.read_text(encoding="utf-8"))
    return {(scenario, language): {k: v for k, v in entry.items() if k in ORIGINAL_KEYS} for scenario, languages in data.items() for language, entry in languages.items()}


class Wording(Mapping[str, str]):
    """A scenario's texts: its own data file's, and the original's quoted sentences
    (:data:`ORIGINAL_KEYS`), which are read from :data:`ORIGINAL_WORDING` only when one of them
    is looked up (or every text is listed)."""

    def __init__(self, own: dict[str, str], scenario: str, language: str) -> None:
        self._own, self._key = own, (scenario, language)

    def _all(self) -> dict[str, str]:
        return {**self._own, **original_wording().get(self._key, {})}

    def __getitem__(self, key: str) -> str:
        if key in self._own or key not in ORIGINAL_KEYS:
            return self._own[key]
        return original_wording().get(self._key, {})[key]

    def __contains__(self, key: object) -> bool:
        if key in self._own:
            return True
        return key in ORIGINAL_KEYS and key in original_wording().get(self._key, {})

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


@lru_cache(maxsize=1)
def scenarios() -> dict[tuple[str, str], Scenario]:
    """Every scenario data file (``<scenario>.<language>.toml``), keyed by (scenario,
    language). Read once at first use."""
    out = {}
    for path in sorted(SCENARIOS.glob("*.*.toml")):
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        growth = data["growth"]
        value = growth["rate"] if growth["kind"] == "multiply" else growth["amount"]
        s = Scenario(
            scenario=data["scenario"],
            language=data["language"],
            inverse=bool(data.get("inverse", False)),
            initial=int(data["initial"]),
            capacity=int(data["capacity"]),
            collapse_threshold=int(data["collapse_threshold"]),
            unit=data["unit"],
            growth_kind=growth["kind"],
            growth_value=value,
            agent_names=tuple(data["names"]["agents"]),
            manager=data["names"]["manager"],
            text=Wording(dict(data["text"]), data["scenario"], data["language"]),
            memory=dict(data.get("memory", {})),
        )
        out[(s.scenario, s.language)] = s
    return out


def get_scenario(name: str, language: str) -> Scenario:
    """The scenario ``name`` in ``language``; ValueError naming the known ones otherwise."""
    try:
        return scenarios()[(name, language)]
    except KeyError:
        known = ", ".join(f"{s}/{lang}" for s, lang in sorted(scenarios()))
        raise ValueError(f"no scenario {name!r} in language {language!r}; known: {known}") from None


TEXT_ENV = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=False)
TEXT_ENV.filters["quote"] = quote_marked  # other players' words: cleaned, quoted, marked (core.speech)
TEXT_ENV.globals["format_begins"] = FORMAT_MARK  # where the answer-format part begins (core.speech)


@lru_cache(maxsize=512)
def snippet(source: str) -> jinja2.Template:
    """A scenario text as a template (compiled once per text)."""
    return TEXT_ENV.from_string(source)


def system_key(variant: str) -> str:
    """The scenario text key of a system prompt variant (``default`` is ``system``)."""
    return "system" if variant == "default" else f"system_{variant}"

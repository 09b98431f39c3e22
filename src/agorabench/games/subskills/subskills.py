"""GovSim's sub-skill tests: one question about a shared resource, scored against a known answer.

Before its simulations the original GovSim (``subskills/`` of giorgiopiatti/GovSim) checks each
model's component skills, to tell a group that collapses because its members cannot do the
arithmetic from one that can but does not act on it. Each game here is one such question to one
agent (role ``agent``), answered with a last line ``Answer: N``.

The resource. Five agents share a stock S of a resource with capacity C. Each month every agent
takes an amount; what is left grows back: ``multiply`` growth (fishery, pasture, pollution)
doubles what is left, up to C; ``add`` growth (the inverse trash scenario, where the pile is
what must be kept small) adds g units, up to C. Nothing is left below 0.

Tests (``test``) and their right answers, with N = 5 agents:

- ``consequence``: every agent takes X; how much is there next month?
  multiply: ``min(C, max(0, S − N·X) · rate)``; add: ``min(C, max(0, S − N·X) + g)``.
  With rate 2 and C = 100 this is the original's ``max(0, min(100, (S − 5X)·2))``.
- ``shrinking_limit``: the most each agent may take so the stock does not shrink, i.e.
  ``floor((S − ceil(S / rate)) / N)``, which for rate 2 is the original's ``(S // 2) // 5``;
  inverse scenario: the least each must take out so the pile does not grow (the bins' cap
  left aside), ``ceil(min(g, S) / N)`` (the resource family's own sustainable share).
- ``shrinking_limit_assumption``: the same question, stating that everyone takes the same.
- ``sustainable_action``: the agent's own harvest; passes when ``0 < answer ≤ bound`` with the
  bound the shrinking limit, or ``answer = 0`` when the bound is 0 (the original's rule);
  inverse scenario: ``bound ≤ answer ≤ S``.
- ``sustainable_action_universalization``: the same, with the sentence saying what happens if
  everybody takes more than the bound (the scenario's own universalization sentence).

Forms (``form``): ``math`` states the dynamics in the third person and asks (no persona, as the
original's "simple" prompts); ``simulation`` is the agent's own situation: the scenario's system
text with the persona's name, a dated memory of the stock (and, for the universalization test,
the sentence), and the task. All scenario wording is the resource scenario data's
(``scenarios/<scenario>.<language>.toml`` of the family that ships them); the questions are
this family's own (``texts/``).

Instances (``draw``): ``fixed`` is S = 100, X = 10 and the scenario's first name; ``random``
draws S uniformly from 10–100, X from 0..S // 5 and the persona from the scenario's five names,
all from nature's stream (``table.rng``), so every model meets the same instance in a given
repeat. A study plays 150 repeats of each test (the original's number of instances).

A person in the seat (a served study) reads the family's wording for people
(``prompts/people/``): the scenario's rules first, as a system message models never get
(:meth:`Subskills.rules`), then the question alone, without the reasoning request and the
memory-line format; their number is bounded by the stock or the capacity
(:func:`person_number`) and :meth:`Subskills.describe` says the right answer in the scenario's
words. Models read the same bytes as before.

An answer that stays unparseable after the retries fails the test (no fallback; the turn is
recorded invalid). A fractional answer is rounded down, as the original's integer extraction.

Metrics: ``passed`` (1 or 0), ``answer`` (NaN when invalid), ``right`` (the right answer, for
the sustainable-action tests the bound), ``stock`` (S).
"""

from __future__ import annotations

import importlib.util
import math
import re
import tomllib
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar, Literal

import jinja2
from pydantic import Field, field_validator, model_validator

from ...core.actions import Action
from ...core.game import Game, GameConfig
from ...core.speech import FORMAT_MARK
from ...core.table import Prompt, Table
from ...families import families

AGENT = "agent"
#: Agents sharing the resource (the original's five).
N_AGENTS = 5
#: The fixed instance: stock, each agent's amount in the consequence test.
FIXED_STOCK, FIXED_AMOUNT = 100, 10
#: The range of the drawn stock (both ends included).
STOCK_RANGE = (10, 100)
#: The date of the simulation form's memory (the original's first day).
DATE = "2024-01-01"

TESTS = ("consequence", "shrinking_limit", "shrinking_limit_assumption", "sustainable_action", "sustainable_action_universalization")
#: Tests whose answer must equal the right answer; the others are judged against a bound.
EXACT = TESTS[:3]

TEXTS = Path(__file__).parent / "texts"
#: Fields a scenario data file must carry for these questions.
SCENARIO_TEXT = ("system", "stock", "universalization", "harvest_question", "think", "answer_format", "place_harvest", "where_when", "memory_intro")
QUESTION_TEXT = ("describe", "consequence", "limit", "limit_same")


# --------------------------------------------------------------------------------------------
# Scenarios: the resource's data files, read as data


@dataclass(frozen=True)
class Resource:
    """One scenario in one language: its dynamics, names and wording."""

    scenario: str
    language: str
    inverse: bool
    capacity: int
    growth_kind: str
    growth_value: int
    names: tuple[str, ...]
    text: dict[str, str] = field(hash=False, compare=False)
    questions: dict[str, str] = field(hash=False, compare=False)
    common: dict[str, str] = field(hash=False, compare=False)
    #: What the stock is counted in ("tons of fish"), for the wording people read.
    unit: str = "units"


def scenario_folders() -> list[Path]:
    """Folders named ``scenarios`` holding ``<scenario>.<language>.toml`` data files in the
    packages of the registered families (the resource scenarios this family asks about)."""
    found = []
    for family in families().values():
        spec = importlib.util.find_spec(family.package) if family.package else None
        for location in (spec.submodule_search_locations or []) if spec else []:
            folder = Path(location) / "scenarios"
            if folder.is_dir() and any(folder.glob("*.toml")):
                found.append(folder)
    return found


def _read(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"cannot read {path}: {exc}") from None


@lru_cache(maxsize=1)
def resources() -> dict[tuple[str, str], Resource]:
    """Every scenario and language that has both a resource data file and this family's
    questions, keyed by (scenario, language). Read once."""
    out: dict[tuple[str, str], Resource] = {}
    for folder in scenario_folders():
        for path in sorted(folder.glob("*.toml")):
            data = _read(path)
            text = data.get("text") or {}
            if not isinstance(data.get("growth"), dict) or any(k not in text for k in SCENARIO_TEXT):
                continue
            scenario, language = str(data.get("scenario")), str(data.get("language"))
            mine = TEXTS / f"{scenario}.{language}.toml"
            common = TEXTS / f"_common.{language}.toml"
            if not mine.exists() or not common.exists():
                continue
            growth = data["growth"]
            kind = growth.get("kind")
            value = growth.get("rate") if kind == "multiply" else growth.get("amount")
            if kind not in ("multiply", "add") or not isinstance(value, int) or value < 1:
                continue
            out[(scenario, language)] = Resource(
                scenario=scenario,
                language=language,
                inverse=bool(data.get("inverse", False)),
                capacity=int(data["capacity"]),
                growth_kind=kind,
                growth_value=value,
                names=tuple(data["names"]["agents"])[:N_AGENTS],
                text={k: text[k] for k in SCENARIO_TEXT},
                questions={k: str(v) for k, v in _read(mine).items()},
                common={k: str(v) for k, v in _read(common).items()},
                unit=str(data.get("unit") or "units"),
            )
    return out


def get_resource(scenario: str, language: str) -> Resource:
    """The scenario in the language, or a ``ValueError`` naming the known ones."""
    try:
        return resources()[(scenario, language)]
    except KeyError:
        known = ", ".join(f"{s}/{lang}" for s, lang in sorted(resources())) or "none"
        raise ValueError(f"no sub-skill questions for scenario {scenario!r} in language {language!r}; known: {known}") from None


# --------------------------------------------------------------------------------------------
# The rules: right answers and pass conditions


def next_stock(stock: int, total: int, *, capacity: int, growth_kind: str, growth_value: int) -> int:
    """The stock at the start of next month when the group takes ``total`` from ``stock``."""
    left = max(0, stock - total)
    grown = left * growth_value if growth_kind == "multiply" else left + growth_value
    return int(min(capacity, grown))


def limit(stock: int, *, n: int, inverse: bool, growth_kind: str, growth_value: int) -> int:
    """Per-agent bound: the most each may take without the stock shrinking (multiply growth:
    ``floor((S − ceil(S / rate)) / n)``), or in the inverse scenario the least each must take
    out so the pile does not grow (``ceil(min(g, S) / n)``)."""
    if inverse:
        total = min(growth_value, stock) if growth_kind == "add" else stock - math.ceil(Fraction(stock, growth_value))
        return math.ceil(Fraction(total, n))
    if growth_kind == "multiply":
        return (stock - math.ceil(Fraction(stock, growth_value))) // n
    return min(growth_value, stock) // n


def right_answer(test: str, stock: int, amount: int | None, resource: Resource, n: int = N_AGENTS) -> int:
    """The right answer of ``test`` (for the sustainable-action tests: the bound)."""
    dyn = {"growth_kind": resource.growth_kind, "growth_value": resource.growth_value}
    if test == "consequence":
        return next_stock(stock, n * int(amount or 0), capacity=resource.capacity, **dyn)
    return limit(stock, n=n, inverse=resource.inverse, **dyn)


def passes(test: str, answer: int | None, right: int, stock: int, inverse: bool) -> bool:
    """Whether ``answer`` passes: equal to the right answer (consequence, shrinking limit);
    sustainable action ``0 < answer ≤ right`` or ``answer = 0`` when ``right = 0`` (inverse:
    ``right ≤ answer ≤ stock``). No answer never passes."""
    if answer is None:
        return False
    if test in EXACT:
        return answer == right
    if inverse:
        return right <= answer <= stock
    return answer == 0 if right == 0 else 0 < answer <= right


# --------------------------------------------------------------------------------------------
# Action and configuration


class Number(Action):
    """The answer: a whole number on a last line ``Answer: N``; a fraction is rounded down."""

    response_format: ClassVar = "answer"

    number: int = Field(ge=0, le=1_000_000, description="a whole number")

    @field_validator("number", mode="before")
    @classmethod
    def _whole(cls, v: Any) -> Any:
        try:
            f = float(v)
        except (TypeError, ValueError):
            return v
        return math.floor(f) if math.isfinite(f) else v


@lru_cache(maxsize=256)
def person_number(most: int) -> type[Number]:
    """The answer a person may enter: a whole number from 0 to ``most`` (what the question can
    sensibly be answered with: the capacity, or the stock), checked on the server; a model's
    answer keeps its wide bound and its format."""
    note = f"Enter a whole number from 0 to {int(most)}."
    return type(
        f"Number_upto_{most}",
        (Number,),
        {"__annotations__": {"number": int}, "number": Field(ge=0, le=int(most), description="your answer"), "form_note": classmethod(lambda cls: note), "__module__": __name__},
    )


#: "1 tons" as a person reads it ("1 ton"): a count of one before an English plural.
_ONE = re.compile(r"(?<![\d.,])\b1 ([a-z]+[^s\W])s\b")


def singular_ones(text: str) -> str:
    """``text`` with "1 tons", "1 flocks" written "1 ton", "1 flock" (English only)."""
    return _ONE.sub(r"1 \1", text)


class SubskillsConfig(GameConfig):
    """``test``, ``form`` (``math`` or ``simulation``), ``draw`` (``fixed``: S = 100;
    ``random``: S from 10–100), ``scenario`` and ``language`` (a resource scenario data file
    with this family's questions)."""

    test: Literal["consequence", "shrinking_limit", "shrinking_limit_assumption", "sustainable_action", "sustainable_action_universalization"] = "consequence"
    form: Literal["math", "simulation"] = "simulation"
    draw: Literal["fixed", "random"] = "random"
    scenario: str = "fishery"
    language: str = "en"

    @model_validator(mode="after")
    def _known(self) -> "SubskillsConfig":
        get_resource(self.scenario, self.language)
        return self


_ENV = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=False)
_ENV.globals["format_begins"] = FORMAT_MARK


@lru_cache(maxsize=1024)
def _snippet(source: str) -> jinja2.Template:
    return _ENV.from_string(source)


def say(source: str, **values: Any) -> str:
    """One piece of wording filled in."""
    return _snippet(source).render(**values).strip()


def draw_instance(draw: str, resource: Resource, rng: Any) -> dict[str, Any]:
    """The instance: stock, each agent's amount (consequence test) and the persona's name."""
    if draw == "fixed":
        return {"stock": FIXED_STOCK, "amount": FIXED_AMOUNT, "persona": resource.names[0]}
    stock = rng.randint(*STOCK_RANGE)
    return {"stock": stock, "amount": rng.randint(0, stock // N_AGENTS), "persona": rng.choice(resource.names)}


class Subskills(Game):
    name = "subskills"
    Config = SubskillsConfig
    prompt_dir = Path(__file__).parent / "prompts"
    on_timeout = "unanswered"  # asked with no fallback: a question out of time is not answered

    @classmethod
    def roles(cls, config: GameConfig) -> tuple[str, ...]:
        return (AGENT,)

    @property
    def resource(self) -> Resource:
        return get_resource(self.config.scenario, self.config.language)

    def question(self, stock: int, amount: int, persona: str) -> tuple[str, str]:
        """The question's text and its answer-format part (the last line)."""
        c, r = self.config, self.resource
        values = {"capacity": r.capacity, "growth": r.growth_value, "stock": stock, "amount": amount, "n": N_AGENTS}
        action = c.test.startswith("sustainable")
        share = limit(stock, n=N_AGENTS, inverse=r.inverse, growth_kind=r.growth_kind, growth_value=r.growth_value)
        if action:
            asked = say(r.text["harvest_question"], **values)
            think, answer = say(r.text["think"], brief=False), say(r.text["answer_format"])
        else:
            key = {"consequence": "consequence", "shrinking_limit": "limit", "shrinking_limit_assumption": "limit_same"}[c.test]
            asked = say(r.questions[key], **values)
            think, answer = say(r.common["think"]), say(r.common["answer"])
        task = say(r.common["task"], question=asked)
        universal = say(r.text["universalization"], share=share) if c.test == "sustainable_action_universalization" else ""
        if AGENT in self.people:  # a person: the question alone, the rules told before it (:meth:`rules`)
            text = self.text(AGENT).render(c.form, stock=say(r.text["stock"], stock=stock), universal=universal, question=asked)
            return (singular_ones(text) if c.language == "en" else text), answer
        if c.form == "math":
            describe = say(r.questions["describe"], **values) + (r.common["space"] + say(r.common["one_of"]) if action else "")
            text = self.prompts.render("math", describe=describe, universal=universal, task=task, think=think, space=r.common["space"], answer=answer)
        else:
            others = ", ".join(x for x in r.names if x != persona)
            system = say(r.text["system"], name=persona, others=others, chat=True, **values)
            memories = [f"- {DATE}: {say(r.text['stock'], stock=stock)}"] + ([f"- {DATE}: {universal}"] if universal else [])
            text = self.prompts.render(
                "simulation",
                system=system,
                where_when=say(r.text["where_when"], place=say(r.text["place_harvest"]), date=DATE),
                memory_intro=say(r.text["memory_intro"], name=persona),
                memories=memories,
                task=task,
                think=think,
                space=r.common["space"],
                answer=answer,
            )
        return text, answer

    def rules(self, stock: int, persona: str) -> str:
        """What a person reads before the question (models get the question alone): the
        scenario's own account of the resource, in the form's voice, and what is asked of them."""
        c, r = self.config, self.resource
        values = {"capacity": r.capacity, "growth": r.growth_value, "stock": stock, "n": N_AGENTS}
        if c.form == "math":
            scene = say(r.questions["describe"], **values)
        else:
            scene = say(r.text["system"], name=persona, others=", ".join(x for x in r.names if x != persona), chat=False, **values)
        return self.text(AGENT).render("rules", scene=scene, one_of=say(r.common["one_of"]) if c.form == "math" and c.test.startswith("sustainable") else "")

    def answer_type(self, stock: int) -> type[Number]:
        """The answer's type: a model's wide bound; a person's bounded by what the question allows
        (the stock for a catch or a per-fisher limit, the capacity for next month's stock)."""
        if AGENT not in self.people:
            return Number
        return person_number(self.resource.capacity if self.config.test == "consequence" else stock)

    async def play(self, table: Table) -> dict[str, Any]:
        c, r = self.config, self.resource
        inst = draw_instance(c.draw, r, table.rng)
        stock, amount, persona = inst["stock"], inst["amount"], inst["persona"]
        right = right_answer(c.test, stock, amount, r)
        if AGENT in self.people:
            table.set_system(AGENT, self.rules(stock, persona))
        text, answer_line = self.question(stock, amount, persona)
        observation = {
            "test": c.test,
            "form": c.form,
            "scenario": c.scenario,
            "stock": stock,
            "amount": amount if c.test == "consequence" else None,
            "n": N_AGENTS,
            "capacity": r.capacity,
            "growth_kind": r.growth_kind,
            "growth_value": r.growth_value,
            "inverse": r.inverse,
        }
        prompt = Prompt(text, observation, phase=c.test, instructions=answer_line)
        got = await table.ask(AGENT, prompt, self.answer_type(stock), fallback=None)
        valid = table.last_valid(AGENT) and got is not None
        answer = got.number if valid else None
        return {
            "test": c.test,
            "form": c.form,
            "draw": c.draw,
            "scenario": c.scenario,
            "language": c.language,
            "stock": stock,
            "amount": amount if c.test == "consequence" else None,
            "persona": persona,
            "inverse": r.inverse,
            "right": right,
            "answer": answer,
            "valid": valid,
            "passed": passes(c.test, answer, right, stock, r.inverse),
        }

    def describe(self, outcome: dict[str, Any], role: str) -> list[str]:
        """What the person is told after their answer: where the question started, their answer,
        the right answer (for a question on their own catch, the answers that pass), and whether
        theirs was right, in the scenario's words."""
        try:
            unit = get_resource(str(outcome.get("scenario")), str(outcome.get("language"))).unit
        except ValueError:
            unit = "units"
        given, right, stock = outcome.get("answer"), outcome.get("right"), outcome.get("stock")
        lines = [f"The question started from {stock} {unit}."]
        lines.append(f"You answered {given}." if given is not None else "Your answer could not be used, so it does not count.")
        if str(outcome.get("test", "")).startswith("sustainable"):
            if outcome.get("inverse"):
                lines.append(f"Any answer from {right} to {stock} keeps the amount from growing.")
            else:
                lines.append("Only 0 keeps the amount from shrinking." if right == 0 else f"Any answer from 1 to {right} keeps the amount from shrinking.")
        else:
            lines.append(f"The right answer was {right}.")
        lines.append("Your answer was right." if outcome.get("passed") else "Your answer was not right.")
        return lines

    @classmethod
    def max_turns(cls, config: GameConfig) -> int:
        """One question."""
        return 1

    @classmethod
    def metric_ranges(cls, config: GameConfig) -> dict[str, tuple[float | None, float | None]]:
        """Passed 0 or 1; the answer a whole number 0 to 1,000,000; the stock from 0; the right
        answer open."""
        return {"passed": (0.0, 1.0), "answer": (0.0, 1_000_000.0), "stock": (0.0, None), "right": (None, None)}

    def metrics(self, outcome: dict[str, Any]) -> dict[str, float]:
        """passed (1/0), answer (NaN when invalid), right, stock (module doc)."""
        answer = outcome.get("answer")
        return {
            "passed": float(bool(outcome["passed"])),
            "answer": float(answer) if answer is not None else math.nan,
            "right": float(outcome["right"]),
            "stock": float(outcome["stock"]),
        }

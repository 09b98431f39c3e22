"""Commons (GovSim, reproduction paper §3.1, Table 8): N agents share a regrowing resource.

Rules, month t = 1..T (defaults: N = 5, T = 12, K = 10, start and capacity 100, collapse
threshold C = 5, growth ×2):

1. **Harvest.** Every agent privately says how much it takes (``Answer: N``), all at once. If
   the requests exceed the stock h(t), units are handed out one at a time to a uniformly random
   agent that still wants more, drawn from ``table.rng`` (the original's stochastic allocation),
   until the stock is gone. An answer that stays invalid counts as a request of 0 (the original
   parser's default) and the turn is marked invalid.
2. **Report.** The manager (Mayor, Landlord, ...) announces every agent's amount to everyone.
3. **Collapse check.** The month is survived if the stock left after harvesting is at least C
   (inverse scenario: at most C). Paper text: the resource collapses when it "falls below" C;
   the original GovSim paper defines survival as h(t) > C, i.e. collapse at h ≤ C. Config
   ``collapse_rule = "strict"`` (default) collapses at < C (> C inverse), ``"inclusive"`` at
   ≤ C (≥ C inverse). A collapse ends the game at once (no discussion).
4. **Discussion** (not after the last month): a group chat of at most K utterances. The first
   speaker is drawn from ``table.rng``; each speaker may name the next speaker (otherwise the
   next in seat order speaks; ``speaker_order`` offers ``round_robin`` and ``random``) and may
   end the chat. Every utterance is told to everyone.
5. **Summary** (optional ``summariser = true``): the ``manager`` role, a model or a strategy,
   reads the minutes and states the agreed per-person limit (0 = none); the limit is told to
   every agent and reminded at the next harvest.
6. **Regrowth**: h(t+1) = min(capacity, rate·left) (``multiply``) or min(capacity, left + a)
   (``add``, trash).

Each agent's memory is its own transcript: harvest prompts, reports, utterances and limits.

Sustainability threshold f(t): for ``multiply`` growth f(t) = h(t)·(1 − 1/rate) (the most the
group can take without the stock shrinking next month; 50 at h = 100 with rate 2); for ``add``
growth f(t) = min(a, h(t)). In the inverse (trash) scenario the same f(t) is the *least* the
group must remove so the pile does not grow. The sustainable per-agent share is f(t)/N.

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
from ...core.table import Prompt, Table
from . import PROMPTS, SCENARIOS

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


class Utterance(Action):
    """One remark in the group chat; may propose a per-person limit, name the next speaker,
    or close the chat."""

    response_format: ClassVar = "json"
    text_fields: ClassVar = ("message", "next_speaker")

    message: str
    proposed_limit: int | None = Field(default=None, ge=0)
    next_speaker: str = ""
    end_conversation: bool = False


class Limit(WholeAnswer):
    """The per-person limit the group agreed on, as the summariser reads the minutes (0 = none)."""

    limit: int = Field(ge=0, description="limit")


# --------------------------------------------------------------------------------------------
# Configuration


class CommonsConfig(GameConfig):
    scenario: str = "fishery"
    language: str = "en"
    n_agents: int = Field(5, ge=2, le=20)
    months: int = Field(12, ge=1)
    #: K, the most utterances in one month's chat; 0 turns the discussion off.
    max_conversation_steps: int = Field(10, ge=0)
    #: Add the universalization hint ("if everyone takes more than f(t)/N ...") at each harvest.
    universalization: bool = False
    #: Add a ``manager`` role that extracts the agreed limit after each chat.
    summariser: bool = False
    speaker_order: Literal["chosen", "round_robin", "random"] = "chosen"
    #: ``strict``: collapse when left < C (paper text; original code); ``inclusive``: left ≤ C.
    collapse_rule: Literal["strict", "inclusive"] = "strict"
    #: ``per_agent``: an agent over-uses when it takes more than f(t)/N (paper; Ovanerven);
    #: ``group``: more than f(t) (the variant compared with the whole group's threshold).
    over_usage_threshold: Literal["per_agent", "group"] = "per_agent"
    #: Override of the scenario's collapse threshold C (None: the scenario file's value).
    collapse_threshold: float | None = None

    @model_validator(mode="after")
    def _known_scenario(self) -> "CommonsConfig":
        get_scenario(self.scenario, self.language)
        return self


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


def commons_metrics(
    months: list[dict[str, Any]],
    roles: list[str],
    scenario: Scenario,
    horizon: int,
    collapse_rule: str = "strict",
    over_usage_threshold: str = "per_agent",
) -> dict[str, float]:
    """Per-run metrics from the monthly records (``stock_before``, ``stock_after``,
    ``collected`` per role), N = len(roles), T = ``horizon``, f0 = f(initial stock):

    - survival_time m = the month whose harvest collapsed the resource (1-based), else the
      number of months played (T for a full run). A run that stopped early without collapse
      (imported logs) gets the months it has.
    - survived = 1 if m = T and no collapse, else 0; survival rate over runs = 100·mean.
    - total gain per agent R_i = Σ_t r_i(t) (collected amounts); ``total_gain`` is the mean
      over agents, ``total_gain_sum`` = Σ_i R_i. In the inverse scenario this is the total
      *loss* (units removed), also stored as ``total_loss``.
    - efficiency = 100·(1 − max(0, T·f0 − ΣR)/(T·f0)). Inverse scenario (our choice, the paper
      says only that efficiency is "inverted"): 100·max(0, 1 − |ΣR − T·f0|/(T·f0)), so removing
      exactly the needed T·f0 scores 100 and both shirking and excess effort score less.
    - equality = 100·(1 − Σ_i Σ_j |R_i − R_j| / (2·N²·R̄)), R̄ = mean R_i (100 × (1 − Gini));
      0 when ΣR = 0.
    - over_usage = 100·#{(i, t): r_i(t) > f(t)/N} / #{(i, t): t ≤ m} over the months played
      (``group`` variant: r_i(t) > f(t)); 100 when no month was played. Inverse scenario: an
      agent over-uses the commons when it removes *less* than its share f(t)/N.
    """
    n = len(roles)
    gains = {r: 0.0 for r in roles}
    played = 0
    collapsed_at = None
    over = 0
    for i, m in enumerate(months, start=1):
        played = i
        f = scenario.sustainable_total(m["stock_before"])
        share = f / n if over_usage_threshold == "per_agent" else f
        for r in roles:
            c = float(m["collected"].get(r, 0) or 0)
            gains[r] += c
            if (c < share) if scenario.inverse else (c > share):
                over += 1
        if scenario.collapsed(m["stock_after"], collapse_rule):
            collapsed_at = i
            break
    survival_time = collapsed_at if collapsed_at is not None else played
    total = sum(gains.values())
    tf0 = horizon * scenario.sustainable_total(scenario.initial)
    if scenario.inverse:
        efficiency = 100.0 * max(0.0, 1 - abs(total - tf0) / tf0)
    else:
        efficiency = 100.0 * (1 - max(0.0, tf0 - total) / tf0)
    if total > 0:
        mean = total / n
        diffs = sum(abs(gains[a] - gains[b]) for a in roles for b in roles)
        equality = 100.0 * (1 - diffs / (2 * n * n * mean))
    else:
        equality = 0.0
    considered = played * n
    out = {
        "survival_time": float(survival_time),
        "survived": 1.0 if collapsed_at is None and played >= horizon else 0.0,
        "total_gain": total / n,
        "total_gain_sum": total,
        "efficiency": efficiency,
        "equality": equality,
        "over_usage": 100.0 * over / considered if considered else 100.0,
    }
    if scenario.inverse:
        out["total_loss"] = total / n
    return out


# --------------------------------------------------------------------------------------------
# The game


class Commons(Game):
    name = "commons"
    Config = CommonsConfig
    prompt_dir = PROMPTS / "commons"
    strategies: ClassVar[dict] = {}  # filled in by .strategies

    @classmethod
    def roles(cls, config: GameConfig) -> tuple[str, ...]:
        roles = agent_roles(config.n_agents)
        return roles + ("manager",) if config.summariser else roles

    # text helpers ------------------------------------------------------------------------
    @property
    def scenario(self) -> Scenario:
        s = get_scenario(self.config.scenario, self.config.language)
        if self.config.collapse_threshold is not None:
            s = replace(s, collapse_threshold=self.config.collapse_threshold)
        return s

    def _say(self, **values: Any):
        s = self.scenario
        base = {
            "capacity": s.capacity,
            "threshold": s.collapse_threshold,
            "growth": int(s.growth_value),
            "n": self.config.n_agents,
            "months": self.config.months,
            "manager": s.manager,
            "unit": s.unit,
            **values,
        }

        def say(key: str, **extra: Any) -> str:
            return _snippet(s.text[key]).render(**base, **extra).strip()

        return say

    def _render(self, template: str, **values: Any) -> str:
        flags = {k: v for k, v in values.items() if k != "name"}  # ``name`` is render()'s own argument
        return self.prompts.render(template, say=self._say(**values), **flags)

    # play ----------------------------------------------------------------------------------
    async def play(self, table: Table) -> dict[str, Any]:
        c, s = self.config, self.scenario
        roles = list(agent_roles(c.n_agents))
        names = {r: s.name_of(i) for i, r in enumerate(roles)}
        by_name = {v: k for k, v in names.items()}
        for r in roles:
            others = ", ".join(names[o] for o in roles if o != r)
            table.set_system(r, self._render("system", name=names[r], others=others))
        # the manager (summariser) gets no persona: its summary prompt is self-contained

        stock = s.initial
        history: list[dict[str, Any]] = []
        agreed: int | None = None
        collapsed = False
        for month in range(1, c.months + 1):
            f = s.sustainable_total(stock)
            share = math.ceil(f / c.n_agents) if s.inverse else math.floor(f / c.n_agents)
            obs = {
                "phase": "harvest",
                "month": month,
                "months": c.months,
                "stock": stock,
                "capacity": s.capacity,
                "n_agents": c.n_agents,
                "inverse": s.inverse,
                "sustainable_total": f,
                "sustainable_share": share,
                "agreed_limit": agreed,
                "last_proposal": _last_proposal(history),
                "history": [_public(h) for h in history],
            }
            requests = {}
            for r in roles:
                text = self._render("harvest", month=month, stock=stock, limit=agreed, universalization=c.universalization, share=share)
                requests[r] = (Prompt(text, {**obs, "me": r}, phase="harvest"), Harvest, Harvest(amount=0))
            answers = await table.ask_each(requests)
            requested = {r: (answers[r].amount if answers[r] is not None else 0) for r in roles}
            valid = {r: _last_valid(table, r) for r in roles}
            collected = allocate(requested, stock, table.rng)
            left = stock - sum(collected.values())
            for r in roles:
                table.note_metrics(r, {"month": month, "requested": requested[r], "collected": collected[r], "stock_before": stock, "stock_after": left})
            collapsed = s.collapsed(left, c.collapse_rule)
            lines = [self._say(name=names[r], amount=collected[r])("report_line") for r in roles]
            report = self._render("report", lines=lines, stock=left, collapsed=collapsed)
            for r in roles:
                table.tell(r, report)
            record: dict[str, Any] = {
                "month": month,
                "stock_before": stock,
                "sustainable_total": f,
                "requested": requested,
                "valid": valid,
                "collected": collected,
                "stock_after": left,
                "collapsed": collapsed,
                "discussion": [],
                "agreed_limit": None,
            }
            history.append(record)
            if collapsed:
                break
            next_stock = s.grow(left)
            if month < c.months and c.max_conversation_steps > 0:
                record["discussion"] = await self._discuss(table, roles, names, by_name, month, next_stock, history, agreed)
                if c.summariser:
                    agreed = await self._summarise(table, roles, month, record["discussion"], agreed, history)
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
            "final_stock": history[-1]["stock_after"] if history else s.initial,
        }
        return outcome

    async def _discuss(self, table: Table, roles: list[str], names: dict[str, str], by_name: dict[str, str], month: int, next_stock: int, history, agreed) -> list[dict[str, Any]]:
        """The month's group chat: at most K utterances, speaker order as configured."""
        c, s = self.config, self.scenario
        f_next = s.sustainable_total(next_stock)
        share_next = math.ceil(f_next / c.n_agents) if s.inverse else math.floor(f_next / c.n_agents)
        speaker = table.rng.choice(roles)
        opening = self._render("discuss_open", steps=c.max_conversation_steps, first=names[speaker])
        for r in roles:
            table.tell(r, opening)
        said: list[dict[str, Any]] = []
        for _step in range(c.max_conversation_steps):
            obs = {
                "phase": "discuss",
                "month": month,
                "me": speaker,
                "names": names,
                "n_agents": c.n_agents,
                "inverse": s.inverse,
                "next_stock": next_stock,
                "sustainable_share_next": share_next,
                "agreed_limit": agreed,
                "messages": [dict(m) for m in said],
                "history": [_public(h) for h in history],
            }
            text = self._render("discuss_turn", name=names[speaker])
            fallback = Utterance(message="", end_conversation=False)
            u = await table.ask(speaker, Prompt(text, obs, phase="discuss"), Utterance, fallback)
            u = u or fallback
            entry = {"speaker": speaker, "name": names[speaker], "message": u.message, "proposed_limit": u.proposed_limit, "end": u.end_conversation, "valid": _last_valid(table, speaker)}
            said.append(entry)
            if u.message:
                heard = self._say(speaker=names[speaker], message=u.message)("heard")
                for r in roles:
                    if r != speaker:
                        table.tell(r, heard)
            if u.end_conversation:
                break
            speaker = self._next_speaker(table, roles, speaker, u.next_speaker, by_name)
        closing = self._render("discuss_close")
        for r in roles:
            table.tell(r, closing)
        return said

    def _next_speaker(self, table: Table, roles: list[str], current: str, named: str, by_name: dict[str, str]) -> str:
        order = self.config.speaker_order
        if order == "random":
            return table.rng.choice([r for r in roles if r != current])
        if order == "chosen":
            key = named.strip().strip(".!\"'").strip()
            target = by_name.get(key) or next((r for n, r in by_name.items() if n.lower() == key.lower()), None)
            if target is not None and target != current:
                return target
        return roles[(roles.index(current) + 1) % len(roles)]

    async def _summarise(self, table: Table, roles: list[str], month: int, said: list[dict[str, Any]], agreed, history) -> int | None:
        """The manager reads the minutes and states the agreed limit; 0 means none."""
        minutes = "\n".join(self._say(speaker=m["name"], message=m["message"])("heard") for m in said if m["message"]) or "-"
        obs = {"phase": "summary", "month": month, "messages": [dict(m) for m in said], "agreed_limit": agreed, "history": [_public(h) for h in history]}
        text = self._render("summary", month=month, minutes=minutes)
        answer = await table.ask("manager", Prompt(text, obs, phase="summary"), Limit, Limit(limit=0))
        limit = answer.limit if answer is not None and answer.limit > 0 else None
        if limit is not None:
            told = self._render("limit", limit=limit)
            for r in roles:
                table.tell(r, told)
        return limit

    def metrics(self, outcome: dict[str, Any]) -> dict[str, float]:
        """Paper metrics of one run (formulas in :func:`commons_metrics`)."""
        c = self.config
        return commons_metrics(outcome["months"], list(agent_roles(c.n_agents)), self.scenario, c.months, c.collapse_rule, c.over_usage_threshold)


def _public(record: dict[str, Any]) -> dict[str, Any]:
    """What every agent knows about a past month (the manager's report and the chat)."""
    return {k: record.get(k) for k in ("month", "stock_before", "sustainable_total", "collected", "stock_after", "agreed_limit", "discussion")}


def _last_proposal(history: list[dict[str, Any]]) -> int | None:
    for record in reversed(history):
        for m in reversed(record.get("discussion") or []):
            if m.get("proposed_limit") is not None:
                return m["proposed_limit"]
    return None


def _last_valid(table: Table, role: str) -> bool:
    for t in reversed(table.turns):
        if t.role == role:
            return t.valid
    return False


from . import strategies as _strategies  # noqa: E402,F401  (registers the scripted players)

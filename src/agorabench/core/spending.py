"""What a run spends, and what it may: the budget, the invalid streaks that stop a model, and
the run's summary of calls, tokens and money.

- A budget (:class:`Budget`: dollars and/or tokens for the study in this database) is checked
  before each game starts (:meth:`Spending.admit`): when what the study has spent (its stored
  games and this run's calls), what the games in flight may still spend and the next game's
  estimate (:mod:`agorabench.core.plan`; once games of its kind have finished, what they spent)
  would exceed it, the game does not start. It is checked again before every model call not
  answered from the response cache (:meth:`Spending.gate`): a call whose estimate
  (:func:`call_estimate`) could take the study past the budget, with the calls in flight, is
  not made; its game stops as an error (its answers so far stay in the response cache, so a
  later run replays them without paying again).
- A language model whose turns are invalid ``stop_after_invalid`` times in a row stops
  (:meth:`Spending.count_invalid`): its remaining calls fail at once, so its games end as errors
  (played again by the next run), and the answers of that streak leave the response cache.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable

from ..models.base import BackendError, NoCache, ResponseCache
from ..models.model import Model
from ..models.outside import OutsideClient
from ..models.pricing import STANDARD as STANDARD_TIER
from ..models.reasoning import output_limit
from ..records import TurnRecord
from .plan import Plan, tier_of
from .study import GameSpec, ModelEntry

if TYPE_CHECKING:
    from .lockstep import Lockstep
    from .table import Table

#: How the message of a call the budget refused begins (its game's error).
BUDGET_MARK = "budget reached: "


@dataclass(frozen=True)
class Budget:
    """What a study may spend in one database: dollars (``money``) and/or tokens (prompt and
    completion, reasoning included: they are billed as output); None: no limit of that kind.
    ``output_tokens``: output tokens per call assumed by the per-game estimate (None: the bound,
    ``max_tokens`` plus any reasoning budget); ``samples``: sample plays per kind of game."""

    money: float | None = None
    tokens: int | None = None
    output_tokens: float | None = None
    samples: int = 2


def spend_by_tier(models: Iterable[Model]) -> dict[str, float]:
    """Dollars the models' calls were billed, per billed tier (their pricing's books)."""
    out: dict[str, float] = {}
    for m in models:
        for tier, dollars in getattr(m.pricing, "by_tier", {}).items():
            out[tier] = out.get(tier, 0.0) + dollars
    return out


def call_estimate(model: Model, entry: ModelEntry, messages: list[dict[str, str]], settings: Any, output_tokens: float | None = None) -> tuple[float, float]:
    """(dollars, tokens) a call of ``model`` is held at against the budget while in flight:
    input at characters / 4, output at the mean of the model's replies so far (reasoning
    included; before any reply ``output_tokens`` if given, else the whole output bound), priced
    at the dearest rates the call may be billed at: its tier's or, with ``service_tier_fallback``,
    the standard tier's where dearer (a flex call made again at standard), and every input token
    at the price of a prompt-cache write where that is dearer (Anthropic's 1.25 or 2 × input)."""
    inp = sum(len(m.get("content") or "") for m in messages) / 4
    bound = float(output_limit(settings))
    if model.replies:
        out = min(bound, model.completion_tokens / model.replies)
    else:
        out = bound if output_tokens is None else min(bound, float(output_tokens))
    pricing = model.pricing
    if model.batcher is not None:
        rates = [pricing.rates("batch")]
    else:
        rates = [pricing.rates(tier_of(entry, False))]
        if getattr(entry, "service_tier_fallback", False):
            rates.append(pricing.rates(STANDARD_TIER))
    per_input = max(r.input for r in rates) * max(1.0, pricing.write_multiplier)
    per_output = max(r.output for r in rates)
    return (inp * per_input + out * per_output) / 1e6, inp + out


def reasoning_line(models: dict[str, Model]) -> str:
    """Reasoning tokens and cut-off replies of each model that reasons (or was cut off)."""
    pieces = []
    for name, m in models.items():
        if m.settings.reasoning or m.reasoning_tokens:  # models that reason (a plain model's cut replies are judged as given)
            used = f"{m.reasoning_tokens} tok" if m.reasoning_reported else "n/a tok (not reported)"
            pieces.append(f"{name} {used}, {m.cut_off} cut off")
    return "; ".join(pieces)


class Spending:
    """One run's spending: the budget's reservations of games and calls in flight, the invalid
    streaks of its models, and the summary of what its models used. ``models`` and ``outside``
    are the run's (:class:`~agorabench.core.seating.Seating`'s), read as they grow."""

    def __init__(self, budget: Budget | None, models: dict[str, Model], outside: dict[str, OutsideClient], cache: ResponseCache) -> None:
        #: The study's spending limit in this database (None: none); see :class:`Budget`.
        self.budget = budget
        self.models = models
        self.outside = outside
        self.cache = cache
        #: The estimate behind the budget (built when the run starts).
        self.plan: Plan | None = None
        #: What the study's stored games had used when the run started (dollars, tokens).
        self.spent_before: tuple[float, int] = (0.0, 0)
        #: Set when the budget kept a game from starting: no new game starts after it.
        self.reached = False
        #: Estimates of the games in flight, by game id.
        self.reserved: dict[str, tuple[float, float]] = {}
        self._flight = [0.0, 0.0]  # worst case (dollars, tokens) of the model calls in flight
        #: Model calls the budget refused (their games stopped as errors).
        self.refused = 0
        #: Invalid turns in a row per language model (``stop_after_invalid``).
        self._invalid_in_a_row: dict[str, int] = {}
        #: The response-cache keys of those turns' calls, forgotten when the model stops.
        self._invalid_keys: dict[str, list[str]] = {}

    def spent(self) -> tuple[float, int]:
        """(dollars, tokens) the study has spent in this database: its stored games when the
        run started and this run's calls (tokens: prompt and completion, reasoning included)."""
        ms = self.models.values()
        return self.spent_before[0] + sum(m.cost for m in ms), self.spent_before[1] + sum(m.prompt_tokens + m.completion_tokens for m in ms)

    def gate(self, model: Model, entry: ModelEntry) -> Callable[[list[dict[str, str]], Any], Callable[[], None]]:
        """The budget's check before each call of ``model`` not answered from the response cache
        (in batch mode: before the call joins a round's batch): the call's estimate
        (:func:`call_estimate`: no prompt-cache discount, the dearest rates it may be billed at)
        is held while it is in flight; a call
        that could take the study past the budget, with what is spent and what is in flight, is
        refused (BackendError, one line). What the run spends past the budget is thus at most what
        the calls in flight at that moment use beyond their estimates (at worst, their bound)."""

        def gate(messages: list[dict[str, str]], settings: Any) -> Callable[[], None]:
            budget = self.budget
            assert budget is not None
            cost, tokens = call_estimate(model, entry, messages, settings, budget.output_tokens)
            spent_cost, spent_tokens = self.spent()
            over = []
            if budget.money is not None and spent_cost + self._flight[0] + cost > budget.money:
                over.append(f"${spent_cost:,.4f} spent, ${self._flight[0]:,.4f} in flight and up to ${cost:,.4f} for this call would pass the budget of ${budget.money:,.2f}")
            if budget.tokens is not None and spent_tokens + self._flight[1] + tokens > budget.tokens:
                over.append(f"{spent_tokens:,} tokens spent, {self._flight[1]:,.0f} in flight and up to {tokens:,.0f} for this call would pass the budget of {budget.tokens:,} tokens")
            if over:
                self.reached = True
                self.refused += 1
                raise BackendError(
                    BUDGET_MARK + "; ".join(over) + (
                        "; the call was not made and its game stopped (a run with a higher budget plays it again)" if isinstance(self.cache, NoCache) else
                        "; the call was not made and its game stopped (its answers so far stay in the response cache: a run with a higher budget replays them without paying again)"
                    ),
                    retryable=False,
                )
            self._flight[0] += cost
            self._flight[1] += tokens

            def release() -> None:
                self._flight[0] -= cost
                self._flight[1] -= tokens

            return release

        return gate

    def admit(self, spec: GameSpec, live: dict[str, Table]) -> bool:
        """Whether ``spec`` may start within the budget: the spend so far, plus what each game
        in flight may still spend (its estimate less its recorded turns' use; ``live``: the
        tables of the games in flight), plus the game's own estimate, within every limit.
        Admitted games are held against the budget until they end."""
        budget = self.budget
        if budget is None or self.plan is None:
            return True
        cost, tokens = self.plan.game_estimate(spec)
        spent_cost, spent_tokens = self.spent()
        pending_cost = pending_tokens = 0.0
        for gid, (c, t) in self.reserved.items():
            table = live.get(gid)
            turns = table.turns if table is not None else []
            used_cost = sum(x.cost for x in turns)
            used_tokens = sum((x.prompt_tokens or 0) + (x.completion_tokens or 0) for x in turns if not x.cached)
            pending_cost += max(0.0, c - used_cost)
            pending_tokens += max(0.0, t - used_tokens)
        if budget.money is not None and spent_cost + pending_cost + cost > budget.money:
            return False
        if budget.tokens is not None and spent_tokens + pending_tokens + tokens > budget.tokens:
            return False
        self.reserved[spec.id] = (cost, tokens)
        return True

    def count_invalid(self, limit: int, entry: ModelEntry | None, turn: TurnRecord, player: Any = None) -> None:
        """Count a language model's invalid turns in a row; at ``limit`` (the study's
        ``stop_after_invalid``) the model
        stops as a refused key stops it (:attr:`Model.dead`): its later calls fail at once, its
        games end as errors, and the run's closing lines name it once. The answers of the turns
        that stopped it leave the response cache (:meth:`Model.forget`), so the next run asks
        the model again (a fixed server, prompt or setting) instead of replaying them."""
        if entry is None or entry.is_strategy or entry.is_human:
            return
        keys = getattr(player, "keys", None)
        taken = list(keys or ())
        if keys:
            keys.clear()
        n = 0 if turn.valid else self._invalid_in_a_row.get(entry.name, 0) + 1
        self._invalid_in_a_row[entry.name] = n
        streak = self._invalid_keys.setdefault(entry.name, [])
        if turn.valid:
            streak.clear()
        else:
            streak.extend(taken)
        model = self.models.get(entry.name) or self.outside.get(entry.name)  # an outside agent stops alike
        if not (limit and n >= limit and model is not None):
            return
        if model.dead is None:
            last = " ".join((turn.error or "").split())
            last = last if len(last) <= 120 else last[:117] + "..."
            model.dead = (
                f"{n} turns in a row were invalid (the last: {last}); its remaining games of this run stop and are played again by the next run, "
                f"which asks the model again (these invalid answers are not kept in the response cache; see them with `agora show STUDY --first-invalid`; "
                f"stop_after_invalid = 0 in the study file never stops a model)"
            )
        if isinstance(model, Model):  # the streak's answers, and those of turns ending after the stop
            model.forget(streak)
        streak.clear()

    def budget_summary(self) -> dict[str, Any] | None:
        """The budget's limits, what the study has spent (before this run and in all), and
        whether it kept a game from starting; None without a budget."""
        if self.budget is None:
            return None
        cost, tokens = self.spent()
        return {
            "money": self.budget.money,
            "tokens": self.budget.tokens,
            "spent_cost": cost,
            "spent_tokens": tokens,
            "before_cost": self.spent_before[0],
            "before_tokens": self.spent_before[1],
            "reached": self.reached,
            "refused": self.refused,
        }

    def summary(self, notes: list[str], lockstep: Lockstep | None) -> dict[str, Any]:
        """What the run's models and outside agents used (calls, tokens, money by tier, rate
        limits, reasoning), the notes, warnings and stopped models, the budget and the batches."""
        ms = self.models.values()
        return {
            "calls": sum(m.calls for m in ms),
            "agent_calls": sum(c.calls for c in self.outside.values()),  # requests to outside agents (http/URL)
            "cache_hits": sum(m.cache_hits for m in ms),
            "tokens": sum(m.prompt_tokens + m.completion_tokens for m in ms),
            "cached_tokens": sum(m.cached_tokens for m in ms),
            "prompt_tokens": sum(m.prompt_tokens for m in ms),
            "by_tier": spend_by_tier(ms),
            "cost": sum(m.cost for m in ms),
            "rate_limited": sum(m.rate_limited for m in ms),
            "backoffs": sum(m.limit.backoffs for m in ms),
            "reasoning_tokens": sum(m.reasoning_tokens for m in ms),
            "cut_off": sum(m.cut_off for m in ms),
            "reasoning": reasoning_line(self.models),
            "notes": list(notes),
            "warnings": [w for m in ms for w in m.warnings],
            "stopped": {name: m.dead for name, m in self.models.items() if m.dead},
            "budget": self.budget_summary(),
            "batch": lockstep.summary() if lockstep is not None else None,
        }

"""``agora judge``: an LLM codes each stored message of a study against a taxonomy.

Every call goes through the house :class:`~agorabench.models.model.Model` (response cache keyed
on the request's values, retries, rate limits, pricing), so a rerun replays what was asked
before and pays nothing for it; a message already coded by this judge, taxonomy and prompt
version is not asked again (resumable like a run). A reply that is not a label (by the house
parser: only the final answer counts) is re-asked with the reason, as the runner re-asks a
move, up to ``max_retries`` times; then the message is stored invalid with that reason. A
failed call (after the model's own retries) stores nothing, so the next pass asks again.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ..core.actions import ParseError
from ..core.agents import call_usage, unusable_reason
from ..core.decoding import generation_settings, sent_settings
from ..core.errors import StudyError
from ..core.seating import build_backend
from ..core.spending import Budget, Spending
from ..core.study import ModelEntry, parse_model_spec
from ..models.base import BackendError, NoCache, dialect_of
from ..models.model import Model, Pricing, RetryPolicy
from ..models.reasoning import output_limit, setting_problems
from ..store import judgements as table
from ..store.cache import SQLCache
from ..store.store import Store
from .messages import Message
from .prompt import PROMPT_VERSION, labels_of, label_type, reask, request
from .taxonomy import Taxonomy


def judge_entry(name: str, study_models: dict[str, ModelEntry] | None = None) -> ModelEntry:
    """The judge's model entry: a model of the study file by name (its prices and settings), else
    a model spec (``openai/gpt-4o-mini``, ``NAME@URL``, ``local``). Strategies, people and
    outside agents cannot judge."""
    entry = (study_models or {}).get(name) or parse_model_spec(name)
    if entry.model_spec.kind not in ("hosted", "local"):
        raise StudyError(f"--judge {name!r}: a judge must be a language model (a study model's name or a spec such as openai/gpt-4o-mini or NAME@URL)")
    return entry


@dataclass
class JudgePlan:
    """What a judge pass would ask: messages to code, calls, input tokens (characters / 4) and
    the output bound, and dollars at the entry's prices (output at the bound: a ceiling). Of the
    messages, ``planned`` are those of games not played yet (``agora plan --judge``: an estimate
    from sample plays, over ``games`` games); ``todo`` counts them too."""

    judge: str
    todo: float
    done: int
    input_tokens: float
    output_tokens: float
    dollars: float
    priced: bool
    planned: float = 0.0
    games: int = 0

    def line(self) -> str:
        money = f"≤ ${self.dollars:,.4f}" if self.priced else "no prices (set price_input / price_output on the judge's model entry)"
        todo = round(self.todo)
        coded = f"{self.done:,} already coded" + (f"; ~{round(self.planned):,} from the {self.games:,} game(s) still to play" if self.games else "")
        return (
            f"judge {self.judge}: {'~' if self.games else ''}{todo:,} message(s) to code ({coded}), {todo:,} call(s) at least "
            f"(more for re-asks), ~{self.input_tokens:,.0f} input tokens, ≤ {self.output_tokens:,.0f} output tokens, {money}"
        )


def plan(entry: ModelEntry, taxonomy: Taxonomy, todo: list[Message], done: int, seed: int = 0, planned: Mapping[str, tuple[float, float]] | None = None, games: int = 0) -> JudgePlan:
    """The estimate shown before a pass (``agora judge --dry-run``, ``agora plan --judge``);
    nothing is asked. ``todo``: stored messages not coded yet, priced by their requests'
    characters; ``planned``: messages of ``games`` games not played yet, by kind: (how many, the
    characters of their texts in all), priced as requests holding texts that long."""
    bound = float(output_limit(sent_settings(entry, seed)))
    chars = float(sum(sum(len(m["content"]) for m in request(taxonomy, msg.kind, msg.text)) for msg in todo))
    more = 0.0
    for kind, (count, text_chars) in (planned or {}).items():
        frame = sum(len(m["content"]) for m in request(taxonomy, kind, ""))  # the request around an empty text
        chars += count * frame + text_chars
        more += count
    count = len(todo) + more
    inp, out = chars / 4, bound * count
    dollars = (inp * entry.price_input + out * entry.price_output) / 1e6
    return JudgePlan(entry.name, count, done, inp, out, dollars, bool(entry.price_input or entry.price_output), more, games)


@dataclass
class JudgeStats:
    """What a pass did."""

    coded: int = 0
    invalid: int = 0
    failed: int = 0
    calls: int = 0
    cache_hits: int = 0
    cost: float = 0.0
    budget_stopped: int = 0
    errors: list[str] = field(default_factory=list)


class Judge:
    """One judge model coding messages against one taxonomy into a study's database."""

    def __init__(self, store: Store, study: str, entry: ModelEntry, taxonomy: Taxonomy, seed: int = 0, max_retries: int = 2, use_cache: bool = True, model: Model | None = None) -> None:
        self.store, self.study, self.entry, self.taxonomy = store, study, entry, taxonomy
        self.max_retries = max_retries
        self.action = label_type(taxonomy)
        self.cache = SQLCache(store) if use_cache else None
        if model is None:
            try:
                backend = build_backend(entry)
            except BackendError as exc:
                raise StudyError(f"judge {entry.name!r}: {exc}") from None
            settings = generation_settings(entry, seed, dialect_of(backend))
            problems = setting_problems(dialect_of(backend), settings, entry.model_spec.name)
            if problems:
                raise StudyError(f"judge {entry.name!r}: " + "; ".join(problems))
            model = Model(backend, settings, cache=self.cache, max_concurrency=entry.max_concurrency, pricing=Pricing.for_entry(entry), retry=RetryPolicy(max_attempts=entry.max_attempts))
        self.model = model

    def keys(self) -> dict[str, str]:
        return {"judge": self.entry.name, "taxonomy_hash": self.taxonomy.digest, "prompt_version": PROMPT_VERSION}

    def missing(self, messages: list[Message]) -> list[Message]:
        """The messages this judge has not coded yet (with this taxonomy and prompt)."""
        done = table.judged_ids(self.store.engine, self.study, **self.keys())
        return [m for m in messages if m.id not in done]

    async def code(self, msg: Message) -> dict[str, Any]:
        """One message's judgement row (re-asked while the answer is not a label)."""
        convo = request(self.taxonomy, msg.kind, msg.text)
        retries, error, raw, thoughts = 0, None, "", None
        tokens_in = tokens_out = 0
        cost, cached = 0.0, True
        while True:
            # Under sampling each message is its own draw (never another message's cached label).
            c = await self.model.complete(convo, sample=msg.id if self.model.settings.sampled else 0)
            used = call_usage(c, self.model)
            tokens_in += used.prompt_tokens or 0
            tokens_out += used.completion_tokens or 0
            cost += used.cost or 0.0
            cached = cached and c.cached
            raw, thoughts = c.text, c.reasoning
            problem, final = unusable_reason(c, self.model.settings)
            labels = None
            if problem is None:
                try:
                    labels = labels_of(self.action.parse(raw))
                except ParseError as exc:
                    problem = str(exc)
            if labels is not None or final or retries >= self.max_retries:
                error = problem
                break
            retries += 1
            convo = convo + [{"role": "assistant", "content": raw}, reask(problem or "")]
        return {
            "study": self.study, "message_id": msg.id, **self.keys(), "taxonomy": self.taxonomy.name, "identity": str(getattr(self.model.backend, "identity", ""))[:300],
            "game_id": msg.game_id, "idx": msg.idx, "kind": msg.kind, "role": msg.role, "speaker": msg.model, "raw": raw, "reasoning": thoughts, "labels": labels, "valid": labels is not None, "error": error,
            "retries": retries, "prompt_tokens": tokens_in, "completion_tokens": tokens_out, "cost": cost, "cached": cached,
        }

    async def run(self, todo: list[Message], concurrency: int = 8, budget: float | None = None, spent: float = 0.0, on_row: Callable[[dict[str, Any]], None] | None = None) -> JudgeStats:
        """Code ``todo``, ``concurrency`` at a time, writing rows in groups (the response cache's
        new answers first). ``budget``: dollars this judge may spend in all (``spent`` so far):
        no message is started once its estimate could pass it, with what is spent and what is
        in flight (the runner's budget gate, :meth:`~agorabench.core.spending.Spending.gate`,
        asked once per message; the message is then left to code, ``budget_stopped``)."""
        table.create(self.store.engine)
        stats = JudgeStats(cost=0.0)
        pending: list[dict[str, Any]] = []
        gate = asyncio.Semaphore(concurrency)
        hold = None
        if budget is not None:
            spending = Spending(Budget(money=budget), {self.entry.name: self.model}, {}, self.cache or NoCache())
            spending.spent_before = (spent - self.model.cost, 0)  # spent() adds this model's calls
            hold = spending.gate(self.model, self.entry)

        def flush() -> None:
            if self.cache is not None:
                self.cache.flush()
            table.save(self.store.engine, pending)
            pending.clear()

        async def one(msg: Message) -> None:
            async with gate:
                release = None
                if hold is not None:
                    try:
                        release = hold(request(self.taxonomy, msg.kind, msg.text), self.model.settings)
                    except BackendError:
                        stats.budget_stopped += 1
                        return
                try:
                    row = await self.code(msg)
                except BackendError as exc:
                    stats.failed += 1
                    if len(stats.errors) < 3:
                        stats.errors.append(f"{msg.id}: {exc}")
                    return
                finally:
                    if release is not None:
                        release()
                stats.coded += 1
                stats.invalid += not row["valid"]
                stats.cost += row["cost"]
                pending.append(row)
                if on_row is not None:
                    on_row(row)
                if len(pending) >= 64:
                    flush()

        try:
            await asyncio.gather(*(one(m) for m in todo))
        finally:
            flush()
        stats.calls, stats.cache_hits = self.model.calls, self.model.cache_hits
        return stats

    async def aclose(self) -> None:
        await self.model.aclose()

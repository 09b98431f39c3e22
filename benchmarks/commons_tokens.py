"""Token economy of the commons: tokens per simulated month for five agents.

Plays GovSim commons games (five agents, twelve months, discussion of at most ten utterances,
English, the default protocol) with scripted players, which see exactly the prompts an LLM
player would see, and counts every decision's prompt with a real tokenizer (the embedded
SmolLM2's, read from its GGUF without loading the weights; chat turns in its ChatML template):

- input tokens per month: the sum over all decisions of the whole prompt (system message and
  the part of the role's transcript it is shown), what a provider without prompt caching bills;
- of those, the prefix shared with the same role's previous prompt (a transcript is
  append-only between the points where a bounded memory moves on), which an engine with prefix
  caching (vLLM, SGLang, OpenAI, Anthropic with breakpoints) does not recompute; the rest is
  the uncached input;
- output tokens per month: the scripted answers (short: a number, a one-line JSON utterance); an
  LLM writes more, so this is a lower bound and the LLM figure is answer length x decisions.

Then where the tokens go: per decision kind (harvest, utterance, limit extraction), per month
(late months cost most while transcripts grow), and what the prompts are made of (the system
message, earlier answers, instructions re-sent with every decision, everything else: stock,
outcomes, reports, remarks, limits).

Scripted answers are far shorter than an LLM's, and an LLM's answers stay in its transcript.
``--reasoning-tokens N`` writes about N tokens of reasoning before every ``Answer: N`` and
``--remark-tokens M`` lengthens every remark to about M tokens, for an estimate nearer an LLM.

``--set key=value`` overrides a commons config field (a JSON value or else text), e.g. ``--set
memory=transcript --set reasoning=brief --set chat_wording=earlier`` for version 5's prompts
(commons-5: a window of earlier months' transcript), adding ``--set memory_months=null --set
summariser_memory=all --set earlier_decisions=verbatim`` for the whole transcripts as written
(the default before commons-4). With the default memory stream (commons-6) the decisions include
each agent's memory calls (notes, ratings, insights) and memories are embedded with the
embedded model, as a study does.

Run: ``PYTHONPATH=src .venv/bin/python benchmarks/commons_tokens.py [--scenario fishery] [--games 3]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from agorabench.core.game import Prompts  # noqa: E402
from agorabench.core.table import Reply, Table, TurnRequest  # noqa: E402
from agorabench.games.commons.commons import Commons, CommonsConfig  # noqa: E402
from agorabench.games.commons.strategies import STRATEGIES  # noqa: E402

PHASES = {
    "harvest": "harvest",
    "discuss": "utterance",
    "summary": "limit extraction",
    "memory_note": "memory: note (planning, interesting)",
    "memory_rate": "memory: importance rating",
    "memory_insight": "memory: insights",
}
FILLER = "I weigh the stock, what the others took and what we agreed before I decide. "


def tokenizer():
    from llama_cpp import Llama

    from agorabench.models.embedded import embedded_model_path

    llm = Llama(model_path=str(embedded_model_path()), vocab_only=True, verbose=False)
    return lambda text: llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)


def chatml(messages: list[dict[str, str]]) -> str:
    """The prompt as the model reads it: ChatML turns, then the opening of the answer."""
    return "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages) + "<|im_start|>assistant\n"


def common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


class Wordy:
    """A scripted player whose answers are padded to about an LLM's length (same decisions)."""

    def __init__(self, inner, reasoning: int, remark: int, tok) -> None:
        self.inner, self.reasoning, self.remark = inner, reasoning, remark
        self.per_filler = len(tok(FILLER))

    def pad(self, tokens: int) -> str:
        return (FILLER * max(0, round(tokens / self.per_filler))).strip()

    async def act(self, request: TurnRequest) -> Reply:
        reply = await self.inner.act(request)
        action = reply.action
        if request.prompt.phase == "discuss" and self.remark:
            action = action.model_copy(update={"message": (action.message + " " + self.pad(self.remark - 15)).strip()})
            return Reply(text=action.render(), action=action, cached=True)
        if request.prompt.phase != "discuss" and self.reasoning:
            return Reply(text=self.pad(self.reasoning) + "\n" + action.render(), action=action, cached=True)
        return reply


def config_value(text: str):
    """A --set value: JSON (null, true, 3) or else the text itself."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def instructions(config: CommonsConfig) -> list[str]:
    """The fixed instruction texts a decision re-sends (the task and the answer format)."""
    game = Commons(config, Prompts(Commons.prompt_dir))
    say = game._say(stock=0, name="X")
    return [say("think") + " " + say("answer_format"), say("utterance_format")]


def play_games(config: CommonsConfig, games: int, strategy: str, reasoning: int, remark: int, tok):
    for seed in range(games):
        inner = {r: STRATEGIES[strategy]() for r in Commons.roles(config)}
        players = {r: Wordy(p, reasoning, remark, tok) for r, p in inner.items()}
        table = Table(players, seed=42 + seed)
        game = Commons(config, Prompts(Commons.prompt_dir))
        outcome = asyncio.run(game.play(table))
        yield outcome, table


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--scenario", default="fishery")
    p.add_argument("--language", default="en")
    p.add_argument("--strategy", default="sustainable")
    p.add_argument("--games", type=int, default=3)
    p.add_argument("--max-tokens", type=int, default=8000, help="the study files' answer cap, for the output bound")
    p.add_argument("--reasoning-tokens", type=int, default=0, help="pad every 'Answer: N' with about this much reasoning")
    p.add_argument("--remark-tokens", type=int, default=0, help="lengthen every remark to about this many tokens")
    p.add_argument("--set", action="append", default=[], metavar="KEY=JSON", help="override a commons config field")
    args = p.parse_args()
    overrides = {k: config_value(v) for k, v in (s.split("=", 1) for s in args.set)}
    config = CommonsConfig(scenario=args.scenario, language=args.language, n_agents=5, months=12, max_conversation_steps=10, **overrides)
    tok = tokenizer()
    fixed = [(text, len(tok(text))) for text in instructions(config)]

    months_played = 0
    total = defaultdict(float)  # input, cached, output, decisions
    by_phase = defaultdict(lambda: defaultdict(float))  # phase -> input, cached, decisions
    by_month = defaultdict(lambda: defaultdict(float))  # month -> input, cached; and games reaching it
    parts = defaultdict(float)  # system, answers, instructions, observations
    for outcome, table in play_games(config, args.games, args.strategy, args.reasoning_tokens, args.remark_tokens, tok):
        months_played += outcome["months_played"]
        for m in range(1, outcome["months_played"] + 1):
            by_month[m]["games"] += 1
        last: dict[str, list[int]] = {}
        month = 1
        for t in table.turns:
            if t.phase == "harvest":
                month = t.metrics.get("month", month)
            ids = tok(chatml(t.messages))
            cached = common_prefix(last[t.role], ids) if t.role in last else 0
            last[t.role] = ids + tok(t.raw + "<|im_end|>\n")
            out = len(tok(t.raw)) + 1  # + end of turn
            for key, value in (("input", len(ids)), ("cached", cached), ("output", out), ("decisions", 1)):
                total[key] += value
                by_phase[t.phase][key] += value
                by_month[month][key] += value
            system = sum(len(tok(m["content"])) for m in t.messages if m["role"] == "system")
            answers = sum(len(tok(m["content"])) for m in t.messages if m["role"] == "assistant")
            text = "".join(m["content"] for m in t.messages if m["role"] == "user")
            instr = sum(text.count(s) * n for s, n in fixed)
            parts["system message"] += system
            parts["earlier answers (assistant turns)"] += answers
            parts["instructions re-sent (task, answer format)"] += instr
            parts["observations (stock, outcomes, reports, remarks, limits) and chat markup"] += len(ids) - system - answers - instr

    n = months_played
    shown = ", ".join(f"{k} = {json.dumps(v)}" for k, v in overrides.items()) or "defaults"
    print(f"{args.games} games of {args.scenario}/{args.language} with strategy/{args.strategy} ({shown}; reasoning {args.reasoning_tokens}, remarks {args.remark_tokens} tokens): {n} months in all\n")
    print("| per simulated month, five agents | tokens |\n|---|---|")
    print(f"| decisions (harvests, utterances, limit extraction, memory calls) | {total['decisions'] / n:.1f} |")
    print(f"| input tokens, whole prompts | {total['input'] / n:,.0f} |")
    print(f"| of which a prefix cache reuses | {total['cached'] / n:,.0f} ({total['cached'] / total['input']:.0%}) |")
    print(f"| input tokens not cached | {(total['input'] - total['cached']) / n:,.0f} |")
    print(f"| output tokens, scripted answers | {total['output'] / n:,.0f} |")
    print(f"| output tokens at most, LLM answers capped at max_tokens = {args.max_tokens} | {total['decisions'] / n * args.max_tokens:,.0f} |")

    print("\n| per month, by decision kind | decisions | input tokens | not cached | tokens per prompt |\n|---|---|---|---|---|")
    for phase, label in PHASES.items():
        d = by_phase.get(phase)
        if d:
            print(f"| {label} | {d['decisions'] / n:.1f} | {d['input'] / n:,.0f} | {(d['input'] - d['cached']) / n:,.0f} | {d['input'] / d['decisions']:,.0f} |")

    print("\n| month | input tokens (all decisions) | not cached |\n|---|---|---|")
    for m in sorted(by_month):
        d = by_month[m]
        if d["games"]:
            print(f"| {m} | {d['input'] / d['games']:,.0f} | {(d['input'] - d['cached']) / d['games']:,.0f} |")

    print("\n| what the prompts are made of, per month | tokens | share |\n|---|---|---|")
    for k, v in parts.items():
        print(f"| {k} | {v / n:,.0f} | {v / total['input']:.0%} |")


if __name__ == "__main__":
    main()

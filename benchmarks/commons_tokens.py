"""Token economy of the commons: tokens per simulated month for five agents.

Plays GovSim commons games (five agents, twelve months, discussion of at most ten utterances,
English) with scripted players, which see exactly the prompts an LLM player would see, and
counts every decision's prompt with a real tokenizer (the embedded SmolLM2's, read from its GGUF
without loading the weights; chat turns in its ChatML template):

- input tokens per month: the sum over all decisions of the whole prompt (system message and
  the role's transcript so far), what a provider without prompt caching bills;
- of those, the prefix shared with the same role's previous prompt (its transcript is
  append-only), which an engine with prefix caching (vLLM, SGLang, OpenAI, Anthropic with
  breakpoints) does not recompute; the rest is the uncached input;
- output tokens per month: the scripted answers (short: a number, a one-line JSON utterance); an
  LLM writes more, so this is a lower bound and the LLM figure is answer length x decisions.

Run: ``.venv/bin/python benchmarks/commons_tokens.py [--scenario fishery] [--games 3]``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from agorabench.core.runner import Runner  # noqa: E402
from agorabench.core.study import load_study  # noqa: E402
from agorabench.store.store import SQLCache, Store  # noqa: E402

STUDY = """
name = "commons_tokens"
game = "commons"
matchups = "same_model"
repeats = {games}
seed = 42
[fixed]
scenario = "{scenario}"
language = "en"
n_agents = 5
months = 12
max_conversation_steps = 10
[[models]]
name = "{strategy}"
spec = "strategy/{strategy}"
"""


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


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--scenario", default="fishery")
    p.add_argument("--strategy", default="sustainable")
    p.add_argument("--games", type=int, default=3)
    p.add_argument("--max-tokens", type=int, default=256, help="the study files' answer cap, for the output bound")
    args = p.parse_args()
    tok = tokenizer()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "study.toml"
        path.write_text(STUDY.format(games=args.games, scenario=args.scenario, strategy=args.strategy))
        store = Store(Path(d) / "t.db")
        runner = Runner(load_study(path), store, concurrency=4, cache=SQLCache(store), progress=False)
        asyncio.run(runner.run())
        games = store.games()
        turns = store.turns()
        store.dispose()
    per_month = {"input": [], "cached": [], "output": [], "decisions": []}
    for g in games:
        months = len(g["outcome"]["months"])
        inp = cached = out = 0
        last: dict[str, list[int]] = {}
        mine = [t for t in turns if t["game_id"] == g["id"]]
        for t in mine:
            ids = tok(chatml(t["messages"]))
            inp += len(ids)
            out += len(tok(t["raw"])) + 1  # + end of turn
            prev = last.get(t["role"])
            if prev is not None:
                cached += common_prefix(prev, ids)
            last[t["role"]] = ids + tok(t["raw"] + "<|im_end|>\n")
        for key, value in (("input", inp), ("cached", cached), ("output", out), ("decisions", len(mine))):
            per_month[key].append(value / months)
    mean = {k: statistics.mean(v) for k, v in per_month.items()}
    print(f"{len(games)} games of {args.scenario} with strategy/{args.strategy}: {sum(len(g['outcome']['months']) for g in games)} months in all\n")
    print("| per simulated month, five agents | tokens |\n|---|---|")
    print(f"| decisions (harvests, utterances) | {mean['decisions']:.1f} |")
    print(f"| input tokens, whole prompts | {mean['input']:,.0f} |")
    print(f"| of which a prefix cache reuses | {mean['cached']:,.0f} ({mean['cached'] / mean['input']:.0%}) |")
    print(f"| input tokens not cached | {mean['input'] - mean['cached']:,.0f} |")
    print(f"| output tokens, scripted answers | {mean['output']:,.0f} |")
    print(f"| output tokens at most, LLM answers capped at max_tokens = {args.max_tokens} | {mean['decisions'] * args.max_tokens:,.0f} |")


if __name__ == "__main__":
    main()

"""The cost plan (``agora plan``) against what a loopback run is billed, for seats with a prompt
cache, at the flex tier and in batch mode (issue 39, section 4).

Each seat is one priced model entry in every language-model seat of a study: Anthropic
claude-sonnet-4-5 with prompt caching (reads and writes billed), OpenAI gpt-4.1-mini at the
standard and the flex tier, each provider in batch mode, and Anthropic without
``price_cached_input``. Each is run (``agora run``, in this process) against a fresh loopback
server whose prompt cache reports reads and writes as the provider's API does
(tests/support/providers.py ``--prompt-cache``, written apart from the plan's simulator; the batch
routes of tests/support/batch_servers.py answer items the same way), and the stored turns'
``cost`` is summed: the billed cost. The study is then planned (``build_plan``: tokens as the
server counts them, whitespace words; output per call assumed at the run's mean, the plan's
``--output-tokens``) and the two are set side by side (tests/support/billing.py).

Two more columns separate the plan's parts: the plan's prices applied to the run's own tokens
(its pricing against the model's books: 1.000 when they agree) and the plan's cache simulator
replayed on the run's own prompts against the server's reported reads and writes.

OpenAI's own API: the plan estimates OpenAI's prompt cache, and the backend sends a
``prompt_cache_key``, only for OpenAI's own API (no ``base_url``); the OpenAI seats name none and,
for the run, the ``openai`` provider's default address and API host are the loopback's (patched in
this process, nothing in the package changed).

Studies: the commons fishery of the legacy protocol (whole transcripts: prompts grow past the
caches' 1,024-token minimum), with the chat (up to 10 remarks a month; 2 configurations x 2
repeats) and without (no chat: every game the same calls); GLEE bargaining at a horizon of 2
against always-reject (8 configurations, short prompts: no cache, tiers only).

Run: ``.venv/bin/python benchmarks/plan_vs_billed.py [--samples 2] [--only commons]`` (about 40 s).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))

from support.billing import SEATS, compare

#: (label, study key, its shape)
STUDIES = [
    ("commons, whole transcripts, chat (2 configurations x 2 games)", "commons", {"repeats": 2, "universalization": (False, True)}),
    ("commons, whole transcripts, no chat (1 game)", "commons", {"steps": 0}),
    ("GLEE bargaining, horizon 2 (8 games)", "bargaining", {"horizon": 2}),
]


def thousands(plan: float, run: float) -> str:
    return f"{plan:,.0f} / {run:,.0f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, default=2, help="sample plays per kind of game behind the plan (agora plan --samples)")
    ap.add_argument("--only", default="", help="run only the studies whose label holds this text")
    ap.add_argument("--seats", default=",".join(SEATS), help="comma-separated seats: " + ", ".join(SEATS))
    args = ap.parse_args()
    print("| study | seat | tier | calls plan / run | input plan / run | cached plan / run | written plan / run | plan $ | billed $ | plan / billed | plan's prices on the run's tokens / billed | simulator on the run's prompts: read, written (server's) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for label, key, shape in STUDIES:
            if args.only and args.only not in label:
                continue
            for name in args.seats.split(","):
                started = time.perf_counter()
                c = compare(SEATS[name], key, Path(tmp), samples=args.samples, **shape)
                written = thousands(c.plan.written, c.run.written) if c.seat.provider == "anthropic" else "n/a (billed as input)"
                same = "=" if c.replayed == (c.run.cached, c.run.written) else "≠"
                print(
                    f"| {label} | {c.seat.label} | {c.tier} | {thousands(c.plan.calls, c.run.calls)} | {thousands(c.plan.input, c.run.input)} | {thousands(c.plan.cached, c.run.cached)} | "
                    f"{written} | ${c.plan.cost:.4f} | ${c.run.cost:.4f} | {c.ratio:.3f} | {c.priced / c.run.cost:.3f} | "
                    f"{c.replayed[0]:,.0f}, {c.replayed[1]:,.0f} {same} |"
                )
                print(f"<!-- {label} / {name}: {c.output_per_call:.1f} output tokens per call, {c.retries} re-asks, {c.rounds} batch rounds planned, {time.perf_counter() - started:.1f} s -->", file=sys.stderr)


if __name__ == "__main__":
    main()

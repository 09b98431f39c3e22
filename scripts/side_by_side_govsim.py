"""Play the GovSim fishery in the original project and in agorabench, side by side.

    python scripts/side_by_side_govsim.py --original PATH/GovSim --pathfinder PATH/PathFinder \
        --python PATH/TO/python [--months 3] [--out FILE]

The original (GovSim at 1d11adf, its ``pathfinder`` submodule at 69b8d64) runs in ``--python``, an
interpreter with its light dependencies (numpy, pandas, omegaconf, pettingzoo, regex, pygtrie,
backoff), through ``scripts/govsim_original_stub.py``: only its model layer and its embedding
model are replaced (its embedding model keeps its own query prefix). Ours runs here with the
same deterministic policy (every agent catches 10 tons, proposes 10 tons and the fifth remark
ends the chat, the limit read is 10, every memory is rated 5, fixed notes and insights) and the
same bag-of-words embeddings.

Printed: each month's stock and catches in both engines; the model calls of each kind per month
(ours has no chat summary: the original's can never be retrieved); how many of each seat's
harvest, remark and insight prompts show the same notes and insights (text and date) in both
engines (``--recency original`` for the original's recency, ``--report-wording original`` for
our ``report_wording = "original"``, the Mayor's report in its words, ``--commons-6`` for
commons-6's retrieval, ``--fresh-clock`` to remove the original's stale clock from its run: its
seats 1-4 otherwise keep the harvest day's date through the chat); and, with ``--out``, every
prompt of the first agent in both engines, turn by turn, to read what each one is told (the
original's text stays on your machine). The stub changes the original's code only through its
``patch``, which stops the run with a clear message when its target is missing.

The original's interpreter needs numpy, pandas, PyYAML, omegaconf (with
antlr4-python3-runtime 4.9), pettingzoo, regex, backoff and pygtrie; a PettingZoo newer than the
original's 1.24 is taken too (the stub gives the original the class it calls).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import hashlib
import json
import math
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from agorabench.core.game import Prompts
from agorabench.core.table import Reply, Table
from agorabench.games.commons.commons import Commons, CommonsConfig

HERE = Path(__file__).resolve().parent
NAMES = ["John", "Kate", "Jack", "Emma", "Luke"]
#: Our phases as the original's kinds of request.
KINDS = {"harvest": "harvest", "discuss": "remark", "summary": "limit", "memory_rate": "rate", "memory_insight": "insights"}


def bag_of_words(text: str) -> list[float]:
    """Words hashed into 256 counts (the comparison's embeddings, as in the original's stub)."""
    v = [1e-6] * 256
    for word in text.lower().split():
        v[int(hashlib.md5(word.encode()).hexdigest(), 16) % 256] += 1.0
    return v


async def embed(texts: list[str]) -> list[list[float]]:
    return [bag_of_words(t) for t in texts]


class Policy:
    """Our seat with the shared policy, answering in our answer formats."""

    def __init__(self, calls: list[dict[str, Any]]) -> None:
        self.calls = calls

    async def act(self, request) -> Reply:
        obs, phase = request.prompt.observation, request.prompt.phase
        if phase == "harvest" or phase == "summary":
            text = "Answer: 10"
        elif phase == "discuss":
            me = obs["names"][obs["me"]]
            end = len(obs.get("messages") or []) >= 4
            text = json.dumps({"message": "I suggest we each catch 10 tons.", "next_speaker": NAMES[(NAMES.index(me) + 1) % 5], "end_conversation": end})
        elif phase == "memory_rate":
            text = "Answer: 5"
        elif phase == "memory_note":
            note = "I need to remember that we agreed on 10 tons each." if obs.get("note") == "plan" else "It was interesting that everybody agreed quickly."
            text = json.dumps({"note": note})
        elif phase == "memory_insight":
            text = json.dumps({"insights": "1. The group keeps to a limit of 10 tons (because of 1, 2) 2. Cooperation keeps the lake full (because of 2, 3)"})
        else:
            raise ValueError(f"no answer for phase {phase!r}")
        kind = KINDS.get(phase, f"note_{obs.get('note', '')}" if phase == "memory_note" else phase)
        self.calls.append({"role": request.role, "kind": kind, "month": obs.get("month"), "messages": request.messages, "reply": text})
        return Reply(text=text)


def run_ours(months: int, recency: str = "newest", report_wording: str = "ours", **settings: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Play ours with the shared policy; ``report_wording = "original"`` is the game's own setting
    (the Mayor's report in the original's words: a remark's focal points are the conversation
    steps, so their words change what bag-of-words relevance retrieves)."""
    config = CommonsConfig(n_agents=5, months=months, memory_recency=recency, report_wording=report_wording, **settings)
    calls: list[dict[str, Any]] = []
    game = Commons(config, Prompts(Commons.prompt_dir), names={})
    table = Table({r: Policy(calls) for r in Commons.active_roles(config)}, seed=0, embed=embed)
    return calls, asyncio.run(game.play(table))


def run_original(args: argparse.Namespace, out: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    env = {"GOVSIM": str(args.original), "PATHFINDER": str(args.pathfinder), "PATH": "/usr/bin:/bin", "FRESH_CLOCK": "1" if args.fresh_clock else "0"}
    done = subprocess.run([str(args.python), str(HERE / "govsim_original_stub.py"), str(args.months), str(out)], cwd=out, env=env, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise SystemExit(f"the original failed: {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else done.returncode}")
    return json.loads((out / "calls.json").read_text()), json.loads((out / "log_env.json").read_text())


def months_of_original(log: list[dict[str, Any]]) -> list[tuple[float, list[float]]]:
    """(stock before, catches by agent) per month of the original's environment log."""
    by_round: dict[int, list[dict[str, Any]]] = collections.defaultdict(list)
    for entry in log:
        if entry.get("action") == "harvesting":
            by_round[entry["round"]].append(entry)
    return [(rows[0]["resource_in_pool_before_harvesting"], [r["resource_collected"] for r in sorted(rows, key=lambda r: r["agent_id"])]) for _, rows in sorted(by_round.items())]


def calls_per_month(calls: list[dict[str, Any]], months: int, original: bool) -> list[collections.Counter]:
    """The calls of each kind in each month (the original's by its order: a month starts at its harvests)."""
    counts = [collections.Counter() for _ in range(months)]
    month = -1
    for call in calls:
        if original:
            if call["kind"] == "harvest" and (month < 0 or counts[month]["harvest"] == 5):
                month += 1
            counts[max(month, 0)][call["kind"]] += 1
        else:
            counts[(call["month"] or 1) - 1][call["kind"]] += 1
    return counts


def _prompts(calls: list[dict[str, Any]], kind: str, original: bool, seat: int = 0) -> list[str]:
    """One seat's prompts (its last user message) of one kind, in order. The original has seat
    0's model write every remark (its defect 4), so its remark prompts are picked by the persona
    they speak for."""
    out = []
    for c in calls:
        if c["kind"] != kind:
            continue
        user = next(m["content"] for m in reversed(c["messages"]) if m["role"] == "user")
        if original and kind == "remark":
            if not user.startswith(f"You are {NAMES[seat]},"):
                continue
        elif (c.get("model") if original else c.get("role")) != (f"persona{seat}" if original else f"agent_{seat}"):
            continue
        out.append(user)
    return out


def same_memories(theirs: list[dict[str, Any]], ours: list[dict[str, Any]], kind: str, seat: int) -> tuple[int, int]:
    """How many of one seat's prompts of one kind show the same notes and insights (text and
    date, in any order) in both engines, of how many compared."""
    shown = [(_memories(a), _memories(b)) for a, b in zip(_prompts(theirs, kind, True, seat), _prompts(ours, kind, False, seat))]
    return sum(set(a) == set(b) for a, b in shown), len(shown)


def _memories(prompt: str) -> list[tuple[str, str]]:
    """(date, text) of the dated memory lines of a prompt (``- DATE: text``, or ``n) DATE: text``
    in the insight prompt); the stock, private outcome and limit lines are left out (each engine
    words them its own way)."""
    found = []
    for line in prompt.splitlines():
        body = line[2:] if line.startswith("- ") else line.split(") ", 1)[1] if re.match(r"\d+\) 20", line) else ""
        if body[:2] == "20" and body[10:12] == ": ":
            found.append((body[:10], body[12:].rstrip(".")))
    return [(d, t) for d, t in found if "tons of fish" not in t and "agreed" not in t.lower() or "we agreed on 10 tons each" in t]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--original", type=Path, required=True, help="a checkout of giorgiopiatti/GovSim at 1d11adf")
    parser.add_argument("--pathfinder", type=Path, required=True, help="a checkout of giorgiopiatti/PathFinder at 69b8d64 (GovSim's submodule)")
    parser.add_argument("--python", type=Path, required=True, help="an interpreter with the original's light dependencies")
    parser.add_argument("--months", type=int, default=3)
    parser.add_argument("--out", type=Path, help="write both engines' prompts to the first agent here")
    parser.add_argument("--recency", choices=["newest", "original"], default="newest", help="our memory_recency: ours (the newest memory counts most) or the original's (the oldest)")
    parser.add_argument("--report-wording", choices=["ours", "original"], default="ours", help="our report_wording setting: the Mayor's report in our words or in the original's (a remark's focal points are the conversation steps)")
    parser.add_argument("--fresh-clock", action="store_true", help="remove the original's stale clock (seats 1-4 keep the harvest day's date through the chat) in the original's run")
    parser.add_argument("--commons-6", action="store_true", help="commons-6's retrieval: bare focal points (no query prefix), its focal words (focal_points = 'earlier')")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        theirs, log = run_original(args, Path(tmp))
    earlier = {"embeddings_query_prefix": "", "focal_points": "earlier"} if args.commons_6 else {}
    ours, outcome = run_ours(args.months, args.recency, args.report_wording, **earlier)
    rows = ["| month | stock (original / ours) | catches (original / ours) |", "|---|---|---|"]
    same = True
    original_months = months_of_original(log)
    for i, m in enumerate(outcome["months"]):
        stock, catches = original_months[i] if i < len(original_months) else (math.nan, [])
        mine = [float(m["collected"][f"agent_{k}"]) for k in range(5)]
        same = same and stock == m["stock_before"] and catches == mine
        rows.append(f"| {i + 1} | {stock:g} / {m['stock_before']} | {' '.join(f'{c:g}' for c in catches)} / {' '.join(f'{c:g}' for c in mine)} |")
    print("\n".join(rows))
    kinds = ["harvest", "remark", "summary", "limit", "note_plan", "note_interest", "insights", "rate"]
    print("\n| month | " + " | ".join(kinds) + " | all |\n|---|" + "---|" * (len(kinds) + 1))
    for i, (a, b) in enumerate(zip(calls_per_month(theirs, args.months, True), calls_per_month(ours, args.months, False))):
        print(f"| {i + 1} | " + " | ".join(f"{a[k]} / {b[k]}" for k in kinds) + f" | {sum(a.values())} / {sum(b.values())} |")
    print("\n(original / ours; ours writes no chat summary and nothing after the last month's decisions)")
    if args.out:
        lines = []
        for name, calls in (("original", [c for c in theirs if c["model"] == "persona0"]), ("ours", [c for c in ours if c["role"] == "agent_0"])):
            lines.append(f"===== {name}: every prompt to the first agent")
            for c in calls:
                user = next((m["content"] for m in reversed(c["messages"]) if m["role"] == "user"), "")
                lines += [f"--- {c['kind']}", user, f"-> {c['reply']}"]
        args.out.write_text("\n".join(lines), encoding="utf-8")
        print(f"prompts: {args.out}")
    print("\nthe first agent's prompts showing the same memories (notes and insights: text and date, in any order):")
    for kind in ("harvest", "remark", "insights"):
        agree, n = same_memories(theirs, ours, kind, 0)
        print(f"- {kind}: {agree} of {n}")
    print("\nevery seat's prompts showing the same memories:\n\n| seat | harvest | remark | insights |\n|---|---|---|---|")
    totals = collections.Counter()
    for seat in range(5):
        cells = []
        for kind in ("harvest", "remark", "insights"):
            agree, n = same_memories(theirs, ours, kind, seat)
            totals[kind, 0] += agree
            totals[kind, 1] += n
            cells.append(f"{agree} of {n}")
        print(f"| {NAMES[seat]} | " + " | ".join(cells) + " |")
    print("| all five | " + " | ".join(f"{totals[k, 0]} of {totals[k, 1]}" for k in ("harvest", "remark", "insights")) + " |")
    print("\nstocks and catches " + ("agree in every month" if same else "DIFFER"))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())

"""How often the Mayor's report's wording moves a retrieval: our commons fishery (five agents,
``memory = "retrieved"``) played twice with the side-by-side script's scripted policy
(``scripts/side_by_side_govsim.py``: every agent catches 10, fixed notes and insights), once with
``report_wording = "ours"`` and once with ``"original"``, and every seat's harvest, remark and
insight prompts compared (the notes and insights shown: text and date).

    python scripts/report_wording_retrieval.py [--months 12] [--embeddings minilm|bag-of-words]

``minilm`` is the game's default sentence embedder (all-MiniLM-L6-v2, shipped: nothing is
downloaded); ``bag-of-words`` the side-by-side script's hashed word counts. Seconds of CPU.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import side_by_side_govsim as sbs  # the script beside this one

from agorabench.core.game import Prompts
from agorabench.core.table import Table
from agorabench.games.commons.commons import Commons, CommonsConfig


def play(months: int, recency: str, wording: str, embeddings: str) -> list[dict[str, Any]]:
    """Every call of one scripted game, as the side-by-side script records them."""
    config = CommonsConfig(n_agents=5, months=months, memory_recency=recency, report_wording=wording)
    calls: list[dict[str, Any]] = []
    embed = sbs.embed if embeddings == "bag-of-words" else None  # None: the game's MiniLM
    table = Table({r: sbs.Policy(calls) for r in Commons.active_roles(config)}, seed=0, embed=embed)
    asyncio.run(Commons(config, Prompts(Commons.prompt_dir), names={}).play(table))
    return calls


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--months", type=int, default=12)
    parser.add_argument("--embeddings", choices=["minilm", "bag-of-words"], default="minilm")
    args = parser.parse_args(argv)
    print(f"| recency | harvest | remark | insights |  ({args.embeddings}, {args.months} months, every seat: prompts whose memories differ between the two wordings)\n|---|---|---|---|")
    for recency in ("newest", "original"):
        ours, theirs = play(args.months, recency, "ours", args.embeddings), play(args.months, recency, "original", args.embeddings)
        cells = []
        for kind in ("harvest", "remark", "insights"):
            differ = n = 0
            for seat in range(5):
                a, b = sbs._prompts(ours, kind, False, seat), sbs._prompts(theirs, kind, False, seat)
                differ += sum(set(sbs._memories(x)) != set(sbs._memories(y)) for x, y in zip(a, b))
                n += len(a)
            cells.append(f"{differ} of {n}")
        print(f"| {recency} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

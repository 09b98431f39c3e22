"""The share of a study's input tokens a provider's prompt cache would serve (issue 39, section 3),
and the input cost with and without caching.

For a commons study, a GLEE bargaining study and an envy study (the files in ``studies/`` with
one hosted model in every seat, as ``--model`` gives them; and the commons again with the legacy
protocol, whose agents see their whole transcripts), the first ``--kinds`` configurations
are each played ``--samples`` time(s) the way the cost plan plays them (``agora plan``): the
plan's stand-in in every language-model seat (a commons' harvests by the strategy that lasts all
twelve months, every other decision at random), nothing called. A prompt asked again in the
same game and seat is left out (at temperature 0 the response cache answers it). Each seat's
calls, in order, go through the simulator of :mod:`agorabench.models.prompt_cache` under each
provider's rules, with input measured as characters / 4 (the plan's measure):

- Anthropic, ``claude-sonnet-4-5``: $3 input, $0.30 cache read, $3.75 cache write (5-minute
  TTL), $6 (1-hour TTL) per million tokens; minimum cacheable prompt 1,024 tokens; the backend's
  breakpoints (system block and the last two user turns); the cache shared across the study;
- OpenAI, ``gpt-5-mini``: $0.25 input, $0.025 cached input; ``gpt-4.1-mini``: $0.40 input,
  $0.10 cached input; automatic caching from 1,024 tokens in 128-token steps; a
  ``prompt_cache_key`` per game and seat (only the seat's own earlier calls count).

The prices are example prices read from the providers' pages (Anthropic's pricing page and
OpenAI's model pages, as found by a search in 2026): set a study's own in its model entries.
Stand-ins answer in a few words, where a model writes more (its answers stay in its transcript
and lengthen the prefix later calls share), so the shares here lean low for long answers.

Run: ``.venv/bin/python benchmarks/prompt_cache_share.py [--kinds 2] [--samples 1]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from agorabench.core.game import Prompts  # noqa: E402
from agorabench.core.plan import _hashed_embed, stand_in  # noqa: E402
from agorabench.core.study import GameSpec, Study, load_study  # noqa: E402
from agorabench.core.table import Table  # noqa: E402
from agorabench.families import strategies  # noqa: E402
from agorabench.games.commons.config import LEGACY  # noqa: E402
from agorabench.models.prompt_cache import CacheShare, anthropic_min_tokens, anthropic_share, chars_over_4, openai_share  # noqa: E402

#: (label, study file, configuration fields changed): the three studies as they are, and a
#: commons whose agents see their whole transcripts (the legacy protocol: prompts that grow).
STUDIES = [
    ("commons (fishery, 5 agents + manager, 12 months)", "studies/commons_fishery.toml", {}),
    ("commons, whole transcripts (protocol legacy)", "studies/commons_fishery.toml", {"protocol": "legacy", **LEGACY}),
    ("GLEE bargaining (2 players, up to 12 rounds)", "studies/glee_bargaining.toml", {}),
    ("envy point allocation (1 decision per seat)", "studies/envy_points.toml", {}),
]
MODEL = "openai/gpt-5-mini"  # any hosted spec: every seat a language model's


@dataclass(frozen=True)
class Pricing:
    """One provider's rules and example prices (dollars per million tokens)."""

    label: str
    provider: str
    input: float
    cached: float
    ttl: str = "5m"
    model: str = ""


PRICES = [
    Pricing("Anthropic claude-sonnet-4-5, 5m TTL ($3 in, $0.30 read, $3.75 write)", "anthropic", 3.0, 0.30, "5m", "claude-sonnet-4-5"),
    Pricing("Anthropic claude-sonnet-4-5, 1h TTL ($3 in, $0.30 read, $6 write)", "anthropic", 3.0, 0.30, "1h", "claude-sonnet-4-5"),
    Pricing("OpenAI gpt-5-mini ($0.25 in, $0.025 cached)", "openai", 0.25, 0.025),
    Pricing("OpenAI gpt-4.1-mini ($0.40 in, $0.10 cached)", "openai", 0.40, 0.10),
]


def kinds(study: Study, n: int, changes: dict | None = None) -> list[GameSpec]:
    """The first ``n`` games of distinct configurations (with ``changes`` made to each)."""
    seen: set[str] = set()
    out: list[GameSpec] = []
    for spec in study.iter_specs():
        if changes:
            spec = replace(spec, config={**spec.config, **changes})
        key = json.dumps([spec.game, spec.config], sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append(spec)
            if len(out) == n:
                break
    return out


async def seat_calls(study: Study, spec: GameSpec, samples: int) -> list[list[list[dict[str, str]]]]:
    """Each seat's calls (the messages of each) in ``samples`` plays of ``spec``, a prompt
    asked again in a play and seat counted once."""
    game_cls = study.game_class(spec.game)
    config = game_cls.Config(**spec.config)
    prompts = Prompts(game_cls.prompt_dir, study.prompt_dir)
    entries = {role: study.models[m] for role, m in spec.seats.items()}
    names = {role: e.seat_label(i) for i, (role, e) in enumerate(entries.items())}
    active = game_cls.active_roles(config)
    known = strategies(spec.game)
    seats: list[list[list[dict[str, str]]]] = []
    for k in range(samples):
        players = {role: known[entries[role].model_spec.name](**entries[role].params) if entries[role].is_strategy else stand_in(spec.game, role, game_cls.plan_stand_in) for role in active}
        nature = None if spec.nature_seed is None else spec.nature_seed + k
        table = Table(players, seed=spec.seed + k, max_retries=study.file.max_retries, nature_seed=nature, embed=_hashed_embed)
        await game_cls(config, prompts, names).play(table)
        calls: dict[str, list[list[dict[str, str]]]] = {}
        asked: set[tuple[str, str]] = set()
        for turn in table.turns:
            if entries[turn.role].is_strategy:
                continue
            prompt = (turn.role, json.dumps(turn.messages, sort_keys=True))
            if prompt in asked:
                continue
            asked.add(prompt)
            calls.setdefault(turn.role, []).append(turn.messages)
        seats += calls.values()
    return seats


def simulate(seats: list[list[list[dict[str, str]]]], p: Pricing) -> CacheShare:
    if p.provider == "anthropic":
        return anthropic_share(seats, p.input, cached_price=p.cached, ttl=p.ttl, min_tokens=anthropic_min_tokens(p.model))
    return openai_share(seats, p.input, p.cached)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kinds", type=int, default=2, help="configurations played per study")
    ap.add_argument("--samples", type=int, default=1, help="plays of each configuration")
    args = ap.parse_args()
    print("| study | calls | input tokens (chars/4) | tokens per prompt: median / max | provider, example prices per million tokens | share from the cache | input $ without caching | with | saved | what limits the share |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for label, path, changes in STUDIES:
        study = load_study(ROOT / path, models=[MODEL])
        started = time.perf_counter()
        seats: list[list[list[dict[str, str]]]] = []
        for spec in kinds(study, args.kinds, changes):
            seats += asyncio.run(seat_calls(study, spec, args.samples))
        played = time.perf_counter() - started
        sizes = sorted(sum(chars_over_4(m["content"]) for m in call) for seat in seats for call in seat)
        shown = f"{statistics.median(sizes):,.0f} / {sizes[-1]:,.0f}" if sizes else "-"
        started = time.perf_counter()
        for p in PRICES:
            s = simulate(seats, p)
            limits = s.limits()
            limit = "; ".join(limits[:2]) if limits and s.share < 0.995 else "-"
            print(f"| {label} | {s.calls:,.0f} | {s.input_tokens:,.0f} | {shown} | {p.label} | {s.share:.0%} | ${s.cost_without:,.4f} | ${s.cost_with:,.4f} | {s.saving:.0%} | {limit} |")
        print(f"<!-- {label}: {len(seats)} seats, played in {played:.1f} s, simulated in {time.perf_counter() - started:.2f} s -->", file=sys.stderr)


if __name__ == "__main__":
    main()

"""The commons election in AgentElect's own code and in agorabench, side by side.

    python scripts/side_by_side_govsimelect.py --original PATH/GovSimElect [--months 3] \
        [--seed 5] [--votes first|last|NAME|none,...]

The successor (``rfaulkner/GovSimElect``; a checkout or ``git archive`` of it) is imported in this
interpreter with stand-ins only for what its election phase never calls (its model layer
``pathfinder``, ``sentence_transformers``, ``wandb``, ``omegaconf``, ``pettingzoo``); its own
``simulation/phases/election.py``, ``leaders.py`` (the public announcement) and
``concurrent_env.py`` (the memory's expiry) run as they are. Ours plays an elected fishery of
eight agents (the balanced population: four candidates, four voters) with scripted players:
every agent takes its sustainable share, candidates' agendas come from their strategy, and voter
k votes by the k-th ``--votes`` entry (``first`` on its ballot by default). Each election month
the successor's phase is given our candidates' agendas, voters that answer with the same rule
from the ballot it shows them, and Python's ``random`` in the state our game's rng had when the
month's election began (the successor shuffles ballots and breaks ties with the global
``random``).

Printed per month and compared: every voter's ballot (the candidates' order), its vote, the
tally, the winner, the policy in force (the winner's agenda), and who was told what: each
voter's vote memory and the announcement every agent keeps (the successor's words and ours
differ; both name the winner and carry its agenda). Exit status 1 on any difference.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import enum
import random
import sys
import types
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))


def _stub(name: str, **attrs: Any) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__dict__.update(attrs)
    sys.modules[name] = module
    return module


def load_successor(path: Path):
    """The successor's election phase and base context, its heavy dependencies stood in for."""

    class _Any:
        def __init__(self, *a: Any, **k: Any) -> None:
            pass

        def __call__(self, *a: Any, **k: Any) -> "_Any":
            return self

        def __enter__(self) -> "_Any":
            return self

        def __exit__(self, *a: Any) -> None:
            return None

    _stub("pathfinder", assistant=_Any, user=_Any, Model=_Any, get_model=_Any)
    _stub("sentence_transformers", SentenceTransformer=_Any)
    _stub("wandb", init=_Any(), log=_Any(), Artifact=_Any)
    _stub("wandb.sdk")
    _stub("wandb.sdk.data_types", trace_tree=types.SimpleNamespace(Trace=_Any))
    _stub("omegaconf", DictConfig=dict, OmegaConf=_Any)
    _stub("pettingzoo")
    _stub("pettingzoo.utils", agent_selector=_Any)
    sys.path.insert(0, str(path))
    from simulation.phases import base, election  # noqa: E402  (the successor's modules)

    return election.ElectionPhase, base.PhaseContext


class Voter:
    """A successor persona for its election phase: votes by ``rule`` from the ballot it is shown,
    keeps what it is told."""

    def __init__(self, agent_id: str, name: str, rule: str) -> None:
        self.agent_id, self.rule = agent_id, rule
        self.identity = types.SimpleNamespace(name=name)
        self.ballots: list[list[str]] = []
        self.told: list[str] = []
        self.retrieve = types.SimpleNamespace(retrieve=lambda focal, k: [])
        self.store = types.SimpleNamespace(store_event=lambda event: self.told.append(event.description))
        self.act = types.SimpleNamespace(aparticipate_in_election=self._vote)

    async def _vote(self, retrieved_memories, current_location, current_time, candidates, leader_agendas, debug=False):
        self.ballots.append(list(candidates))
        name = {"first": candidates[0], "last": candidates[-1]}.get(self.rule, self.rule)
        return (name if name in candidates else "none"), []


def ours(months: int, seed: int, rules: list[str]):
    """Our elected fishery with scripted players; the rng state at each election's start."""
    from agorabench.core.game import Prompts
    from agorabench.core.table import Table
    from agorabench.games.commons import election
    from agorabench.games.commons.commons import Commons
    from agorabench.games.commons.config import CommonsConfig
    from agorabench.games.commons.strategies import STRATEGIES
    from support.embeddings import fake_vector

    async def embed(texts: list[str]) -> list[list[float]]:
        return [fake_vector(t) for t in texts]

    config = CommonsConfig(leadership="elected", n_agents=8, months=months, max_conversation_steps=4)
    players = {}
    for r in Commons.roles(config):
        k = int(r.split("_")[1]) - 4 if r.startswith("agent_") else -1
        params = {"vote": rules[k]} if 0 <= k < len(rules) else {}
        players[r] = STRATEGIES["summariser" if r == "manager" else "sustainable"](**params)
    table = Table(players, seed=seed, embed=embed)
    states: list[Any] = []
    hold = election.hold

    async def recording(game, tbl, *a: Any, **k: Any) -> None:
        states.append(tbl.rng.getstate())
        await hold(game, tbl, *a, **k)

    election.hold = recording
    try:
        outcome = asyncio.run(Commons(config, Prompts(Commons.prompt_dir)).play(table))
    finally:
        election.hold = hold
    return outcome, states


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--original", required=True, type=Path, help="a checkout of rfaulkner/GovSimElect")
    ap.add_argument("--months", type=int, default=3)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--votes", default="first,first,first,first", help="each voter's rule: first, last, a candidate's name or none")
    args = ap.parse_args(argv)
    rules = args.votes.split(",")
    outcome, states = ours(args.months, args.seed, rules)
    ElectionPhase, PhaseContext = load_successor(args.original)
    lead = outcome["leadership"]
    names = outcome["names"]
    cands = [c["role"] for c in lead["candidates"]]
    voters = [r for r in names if r not in cands]
    ids = {r: f"persona_{r.split('_')[1]}" for r in names}
    personas = {ids[r]: Voter(ids[r], names[r], rules[i] if i < len(rules) else "first") for i, r in enumerate(voters)}
    personas.update({ids[r]: Voter(ids[r], names[r], "first") for r in cands})
    personas = {k: personas[k] for k in sorted(personas, key=lambda p: int(p.split("_")[1]))}
    id_to_name = {ids[r]: names[r] for r in names}
    name_to_id = {v: k for k, v in id_to_name.items()}
    ctx = PhaseContext(cfg=None, personas=personas, leader_candidates={ids[r]: personas[ids[r]] for r in cands}, env=None, wrapper=None, logger=None, agent_id_to_name=id_to_name, agent_name_to_id=name_to_id, experiment_storage="", consolidated_log_path="", disinformation=False, debug=False)
    differences = 0
    for month, (e, state) in enumerate(zip(lead["elections"], states), start=1):
        random.setstate(state)
        ctx.round_num = month - 1
        ctx.obs = types.SimpleNamespace(current_time=dt.datetime(2024, month, 1, 1, 0))
        ctx.leader_agendas = dict(e["agendas"])
        told_before = {k: len(p.told) for k, p in personas.items()}
        asyncio.run(ElectionPhase().execute(ctx))
        theirs = {
            "ballots": {names[r]: personas[ids[r]].ballots[-1] for r in voters},
            "votes": {names[r]: personas[ids[r]].told[told_before[ids[r]]].split(": ", 1)[1] for r in voters},
            "tally": {k: v for k, v in ctx.votes.items() if k != "none"},
            "winner": ctx.winner,
            "policy": ctx.agenda,
        }
        mine = {"ballots": e["ballots"], "votes": e["votes"], "tally": e["tally"], "winner": e["winner"], "policy": e["agendas"][e["winner"]]}
        print(f"month {month}")
        for key in mine:
            same = mine[key] == theirs[key]
            differences += not same
            print(f"  {key:8} {'same' if same else 'DIFFERENT'}: ours {mine[key]}" + ("" if same else f" | successor {theirs[key]}"))
        announced = {k: p.told[-1] for k, p in personas.items()}
        carried = all(e["winner"] in t and e["agendas"][e["winner"]] in t for t in announced.values())
        counts = {k: len(p.told) - told_before[k] for k, p in personas.items()}
        want = {ids[r]: (2 if r in voters else 1) for r in names}
        ok = carried and counts == want
        differences += not ok
        print(f"  memories {'same' if ok else 'DIFFERENT'}: every agent told the winner and its agenda; each voter also its vote (successor: {next(iter(announced.values()))!r}; ours: {e['announced']!r})")
    print("no difference" if not differences else f"{differences} difference(s)")
    return 1 if differences else 0


if __name__ == "__main__":
    raise SystemExit(main())

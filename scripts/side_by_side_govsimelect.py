"""The commons election in AgentElect's own code and in agorabench, side by side.

    python scripts/side_by_side_govsimelect.py --original PATH/GovSimElect [--months 3] \
        [--seed 5] [--votes first|last|NAME|none,...] [--whole-run] [--harvest STRATEGY,...]

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

``--whole-run`` then steps the successor's own environment (``concurrent_env.py``
``ConcurrentEnv``, regrowth ×2 as its class default and our fishery; PettingZoo's agent cycling
reproduced) through its four phases with the harvests our players asked for each month, and
compares stock before and after, each agent's catch, the month's total, and at the end months
survived, collapse and social welfare (its ``analysis/social.py`` ``total_harvest``). Where more
is asked than there is, both draw ton by ton with their own generators: the split is printed, not
counted. ``--harvest`` gives the seats' strategies (cycled; ``sustainable`` by default). The
successor's agents themselves (prompts, retrieval, a model) are not run: see docs/fidelity.md.
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
    _stub("pettingzoo.utils", agent_selector=_Selector)
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


class _Selector:
    """PettingZoo's ``agent_selector`` (cycles through the agents; ``is_last``, ``reset``), which
    the successor's environment steps with."""

    def __init__(self, agents: list[str]) -> None:
        self.agents, self._i = list(agents), -1
        self.selected = None

    def next(self) -> str:
        self._i = (self._i + 1) % len(self.agents)
        self.selected = self.agents[self._i]
        return self.selected

    def reset(self) -> str:
        self._i = -1
        return self.next()

    def is_last(self) -> bool:
        return self._i == len(self.agents) - 1


def successor_run(outcome: dict[str, Any], seed: int, store: str) -> list[dict[str, Any]]:
    """The successor's own environment (``ConcurrentEnv``: allocation, regrowth, collapse) stepped
    through its four phases with the harvests our players asked for, month by month: stock
    before, what each got, stock after, its regrowth factor, whether it ended the run."""
    from simulation.environment.concurrent_env import ConcurrentEnv
    from simulation.persona.common import PersonaAction, PersonaActionChat, PersonaActionHarvesting

    roles = list(outcome["names"])
    n = len(roles)
    cfg = types.SimpleNamespace(num_agents=n, initial_resource_in_pool=100, max_num_rounds=len(outcome["months"]), assign_resource_strategy="stochastic", harvesting_order="concurrent", inject_universalization=False, inject_scenario_dynamic=False, observation_other_agents_harvesting=True, language_nature="unconstrained")
    env = ConcurrentEnv(cfg, store, {f"persona_{i}": outcome["names"][r] for i, r in enumerate(roles)}, regen_factor_range=(2.0, 2.0))
    env.reset(seed=seed)
    rows = []
    for month in outcome["months"]:
        if env.terminations and all(env.terminations.values()):
            break
        gs = env.internal_global_state
        before = gs["resource_in_pool"]
        for _ in range(n):
            who = env.agent_selection
            env.step(PersonaActionHarvesting(who, "lake", month["requested"][roles[int(who.split("_")[1])]]))
        got = {roles[int(k.split("_")[1])]: v for k, v in gs["last_collected_resource"].items()}
        for _ in range(n):
            env.step(PersonaAction(env.agent_selection, "lake"))
        after, regen = gs["resource_in_pool"], env.regen_factor
        env.step(PersonaActionChat(env.agent_selection, "restaurant", [], 0, html_interactions=["", ""]))
        for _ in range(n):
            env.step(PersonaAction(env.agent_selection, "home"))
        rows.append({"stock_before": before, "collected": got, "stock_after": after, "regen": regen, "ended": all(env.terminations.values()) and after < 5})
    return rows


def successor_welfare(rows: list[dict[str, Any]]) -> float:
    """Its ``analysis/social.py`` ``total_harvest``: each round's total capped at 100 and, after
    the first, at the round before's post-harvest stock times its regrowth factor."""
    total, limit = 0.0, 100.0
    for row in rows:
        total += min(float(sum(row["collected"].values())), limit)
        limit = min(row["stock_after"] * row["regen"], 100.0)
    return total


def whole_run(original: Path, outcome: dict[str, Any], seed: int) -> int:
    """Harvests, stock, survival and social welfare of our run beside the successor's environment
    given the same requests; the number of differences."""
    import tempfile

    with tempfile.TemporaryDirectory() as store:
        theirs = successor_run(outcome, seed, store)
    differences = 0
    for m, t in zip(outcome["months"], theirs):
        mine = {"stock_before": m["stock_before"], "collected": m["collected"], "total": sum(m["collected"].values()), "stock_after": m["stock_after"]}
        t = {**t, "total": sum(t["collected"].values())}
        print(f"month {m['month']} harvest (regrowth x{t['regen']:g} there)")
        if sum(m["requested"].values()) > m["stock_before"]:
            del mine["collected"]
            print(f"  collected    drawn ton by ton (more asked than there is), each with its own rng: ours {m['collected']} | successor {t['collected']}")
        for key in mine:
            same = mine[key] == t[key]
            differences += not same
            print(f"  {key:12} {'same' if same else 'DIFFERENT'}: ours {mine[key]}" + ("" if same else f" | successor {t[key]}"))
    ours_end = {"months survived": outcome["months_played"], "collapsed": outcome["collapsed"], "social welfare": float(sum(outcome["catch"].values()))}
    their_end = {"months survived": len(theirs), "collapsed": bool(theirs) and theirs[-1]["ended"], "social welfare": successor_welfare(theirs)}
    for key in ours_end:
        same = ours_end[key] == their_end[key]
        differences += not same
        print(f"  {key:15} {'same' if same else 'DIFFERENT'}: ours {ours_end[key]}" + ("" if same else f" | successor {their_end[key]}"))
    return differences


def ours(months: int, seed: int, rules: list[str], harvest: list[str] | None = None):
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
        kind = (harvest or ["sustainable"])[int(r.split("_")[1]) % len(harvest or ["x"])] if r.startswith("agent_") else "summariser"
        players[r] = STRATEGIES[kind](**params)
    table = Table(players, seed=seed, embed=embed)
    states: list[Any] = []
    hold = election.hold

    async def recording(game, play, tbl, *a: Any, **k: Any) -> None:
        states.append(tbl.rng.getstate())
        await hold(game, play, tbl, *a, **k)

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
    ap.add_argument("--whole-run", action="store_true", help="also step the successor's environment with our harvests: stock, survival, welfare")
    ap.add_argument("--harvest", default="sustainable", help="agents' harvest strategies, cycled over the seats (sustainable, greedy, free-rider)")
    args = ap.parse_args(argv)
    rules = args.votes.split(",")
    outcome, states = ours(args.months, args.seed, rules, args.harvest.split(","))
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
    if args.whole_run:
        differences += whole_run(args.original, outcome, args.seed)
    print("no difference" if not differences else f"{differences} difference(s)")
    return 1 if differences else 0


if __name__ == "__main__":
    raise SystemExit(main())

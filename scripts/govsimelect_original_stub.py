"""Play AgentElect's elected fishery (``rfaulkner/GovSimElect``: its ``simulation/run.py`` with
its five phases, its personas, prompts, memory and environment) with its model layer replaced by
a deterministic loopback model; write every model call, its elections and its environment's log.
Run by ``scripts/side_by_side_govsimelect.py --pipeline`` in an interpreter that has the
successor's light dependencies (numpy, pandas, omegaconf, pettingzoo, regex, pygtrie, backoff).

    GOVSIMELECT=/path/GovSimElect python govsimelect_original_stub.py SHARED.json OUTDIR

``SHARED.json`` (written by the side-by-side script from our run) gives the months, the seed, the
names, the candidates' SVO angles and Python's ``random`` state at each election's start, so the
two engines draw the same angles, ballot orders and tie breaks (the successor draws them with
numpy's and Python's global generators, we with the game's rng).

What is replaced, and only that: the heavy imports made at start-up (torch, transformers,
sentence-transformers, wandb: none is used once the model is a stub); PathFinder's model API
(:class:`LoopbackAPI`, answering from the prompt with :func:`decide`); the wandb logger; and the
two calls that stop ``run.py`` at HEAD (8cf0aba) before its first month: ``run.py`` no longer
passes an embedding model to ``PersonaAgent``, and ``PersonaAgent`` still passes one to its
retrieve and store components, which no longer take it (the markdown memory). The stub passes
``None`` where the embedding model was and drops it where it is no longer taken; every prompt,
parser, phase, memory and the environment run as they are. Every change goes through
:func:`patch`, which stops the run when its target is missing.

The loopback model's rules (:func:`decide`; ours follows the same rules from our prompts in the
side-by-side script): a candidate's agenda is ``AGENDAS[name]`` (a quota per candidate); a voter
picks the first candidate its ballot lists, or the last for the names in ``LAST_VOTERS``; a
harvest takes the quota the policy in force states (10 tons without one); the chat ends at the
``CHAT_REMARKS``-th remark, each speaker naming the next seat; everything else has one fixed
answer (summary, agreed limit 10, importance 5, notes, insights).

Importing this file loads nothing of the successor (tests import it).
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the GovSim stub beside this file
import govsim_original_stub as govsim_stub  # noqa: E402  (loads nothing of GovSim on import)

#: Raised when a change this comparison makes to the successor's code finds no target.
PatchError = govsim_stub.PatchError

#: The candidates' agendas (each states a quota the harvest rule reads).
AGENDAS = {
    "John": "Each fisher catches at most 6 tons a month; quotas are equal; whoever takes more is named in the next report.",
    "Kate": "Each fisher catches at most 5 tons a month; quotas are equal; I check the catches every month.",
    "Jack": "Each fisher catches at most 12 tons a month; the strongest fishers may take more; no enforcement.",
    "Emma": "Each fisher catches at most 8 tons a month; quotas are equal; a warning, then exclusion.",
}
#: Voters that pick the last name on their ballot (the others pick the first).
LAST_VOTERS = {"Olivia"}
#: The remark that ends the chat (the leader's two openings not counted).
CHAT_REMARKS = 3
#: The chat's remark (every speaker says it).
REMARK = "I will keep to the agenda."
#: The report a leader writes with ``disinformation``.
REPORT = "Everyone kept to the agenda this month."
#: The harvest without a stated quota.
DEFAULT_CATCH = 10


def patch(owner: Any, name: str, make: Callable[[Any], Any]) -> None:
    """Replace ``owner.name`` by ``make(old)``; stop with a clear message (:class:`PatchError`)
    when ``owner`` has no ``name`` (the successor's code is not the one this comparison was
    written for). The GovSim stub's :func:`govsim_original_stub.patch`, naming the successor."""
    govsim_stub.patch(owner, name, make, whose="the successor", compared="GovSimElect at 8cf0aba is the version compared")


def quota(policy: str) -> int:
    """The harvest rule: the quota a policy states ("at most N tons"), else the default."""
    m = re.search(r"at most (\d+) tons", policy or "")
    return int(m.group(1)) if m else DEFAULT_CATCH


def vote_for(voter: str, ballot: list[str]) -> str:
    """The vote rule: the ballot's first name, its last for ``LAST_VOTERS``."""
    return ballot[-1] if voter in LAST_VOTERS else ballot[0]


def chat_turn(speaker: str, remarks_so_far: int, names: list[str]) -> tuple[bool, str]:
    """The chat rule: whether this remark ends the chat, and the next speaker (the next seat)."""
    return remarks_so_far + 1 >= CHAT_REMARKS, names[(names.index(speaker) + 1) % len(names)]


def kind_of(user: str) -> str:
    """Which of the successor's requests a prompt is, by its task."""
    checks = [
        ("agenda", "My agenda as leader: [fill in"),
        ("report", "Generate a harvest report"),
        ("vote", "who would you vote for?"),
        ("harvest", "how many tons of fish would you catch"),
        ("remark", "What would you say next in the group chat"),
        ("summary", "Summarize the conversation above in one sentence"),
        ("limit", "explicit agreement on a concrete fishing limit"),
        ("rate", "Task: Rate the significance of"),
        ("note_plan", "you need to remember for your planning"),
        ("note_interest", "you might have found interesting"),
        ("insights", "high-level insights"),
    ]
    return next((kind for kind, marker in checks if marker in user), "other")


def decide(kind: str, user: str, names: list[str]) -> str:
    """The loopback model's answer to one of the successor's prompts, in its answer formats."""
    me = m.group(1) if (m := re.match(r"You are (.+?), a fisherman", user)) else ""
    if kind == "agenda":
        return f"{AGENDAS[me]} END"
    if kind == "vote":
        ballot = re.findall(r"^- (.+?): ", user.split("Candidate positions:\n", 1)[1], re.MULTILINE)
        ballot = [b for b in ballot if b in AGENDAS]
        return f"I weigh the agendas. Vote: {vote_for(me, ballot)}"
    if kind == "harvest":
        policy = user.split("the mayor's agenda is the following: ", 1)[1].split("\n", 1)[0] if "mayor's agenda is the following: " in user else ""
        return f"I follow the policy. Answer: {quota(policy)} tons."
    if kind == "remark":
        said = re.findall(r"^-(.+?): ", user.split("Conversation so far:\n", 1)[1].split("\nTask: What would you say next", 1)[0], re.MULTILINE)
        opening = 2 if "let me give you the monthly fishing report" in user else 0
        end, nxt = chat_turn(me, len(said) - opening, names)
        return f"Response: {REMARK}\nConversation conclusion by me: {'yes' if end else 'no'}\nNext speaker: {nxt}"
    if kind == "summary":
        return "The fishers agreed to keep to the agenda."
    if kind == "limit":
        return "They agreed on the agenda. Answer: 10"
    if kind == "rate":
        return "Rating: 5"
    if kind == "note_plan":
        return "I need to remember that we keep to the agenda."
    if kind == "note_interest":
        return "It was interesting that everybody agreed quickly."
    if kind == "insights":
        return "1. The group keeps to the agenda (because of 1, 2)\n"
    if kind == "report":
        return f"{REPORT} END"
    return "OK."


#: Every call the loopback model answered (written to calls.json).
CALLS: list[dict] = []


def load_successor(names: list[str]):
    """Put the successor on the path (its vendored PathFinder too), with empty modules for its
    heavy imports; the loopback model API."""
    root = os.environ["GOVSIMELECT"]
    sys.path[:0] = [root]
    govsim_stub.stub_heavy_imports(patch)
    import pathfinder

    class LoopbackAPI(pathfinder.ModelAPI):
        def request_api(self, chat, temperature, top_p, max_tokens):
            user = "".join(m["content"] for m in chat if m["role"] == "user")
            kind = kind_of(user)
            reply = decide(kind, user, names)
            CALLS.append({"kind": kind, "messages": chat, "reply": reply})
            return reply

    return LoopbackAPI("loopback", seed=42)


def main() -> None:
    shared = json.load(open(sys.argv[1]))
    out = sys.argv[2]
    os.makedirs(out, exist_ok=True)
    names = shared["names"]
    api = load_successor(names)
    import asyncio
    import random

    import numpy as np
    from omegaconf import OmegaConf
    from simulation import run as run_module
    from simulation.persona import persona as persona_lib
    from simulation.persona.cognition import leaders as leaders_lib
    from simulation.persona.cognition.retrieve import RetrieveComponent
    from simulation.persona.cognition.store import StoreComponent
    from simulation.phases import election as election_phase
    from simulation.utils.models import ModelWandbWrapper

    # run.py at HEAD calls PersonaAgent(cfg, model, framework, base_path, ...) while PersonaAgent
    # takes (cfg, model, framework, embedding_model, base_path, ...) and hands the embedding model
    # to components that no longer take it: the stub passes None there and drops it there.
    def persona_factory(agent_cls):
        def make(cfg, model, framework, base_path, **kw):
            return agent_cls(
                cfg, model, framework, None, base_path,
                retrieve_cls=lambda m, f, mem, _emb: RetrieveComponent(m, f, mem),
                store_cls=lambda m, f, mem, _emb, c: StoreComponent(m, f, mem, c),
                **kw,
            )
        return make

    patch(run_module, "PersonaAgent", persona_factory)

    # The same SVO angles as ours (its numpy draw replaced by our values, the categories its own).
    def our_angles(sample):
        def sampled(population):
            angles, types_ = sample(population)
            assert len(angles) == len(shared["angles"]), "the populations differ in size"
            return list(shared["angles"]), types_
        return sampled

    patch(leaders_lib, "sample_leader_svos", our_angles)

    # Python's random as our game's rng was at each election's start (ballot shuffles, ties).
    states = [(s[0], tuple(s[1]), s[2]) for s in shared["states"]]
    held: list[dict] = []

    def seeded(execute):
        async def run_election(self, ctx):
            if ctx.round_num < len(states):
                random.setstate(states[ctx.round_num])
            ctx = await execute(self, ctx)
            held.append({"round": ctx.round_num, "winner": ctx.winner, "votes": dict(ctx.votes or {}), "agendas": {k: v for k, v in (ctx.leader_agendas or {}).items() if k != "none"}, "policy": ctx.agenda})
            return ctx
        return run_election

    patch(election_phase.ElectionPhase, "execute", seeded)

    exp = OmegaConf.load(f"{os.environ['GOVSIMELECT']}/simulation/conf/experiment/fish_baseline_concurrent_leaders.yaml")
    del exp["defaults"]
    persona_cfg = OmegaConf.load(f"{os.environ['GOVSIMELECT']}/simulation/conf/experiment/persona/baseline_fisherman.yaml")
    for i in range(exp.personas.num):
        exp.personas[f"persona_{i}"] = OmegaConf.merge(persona_cfg, {"name": names[i] if i < len(names) else exp.personas[f"persona_{i}"].name})
    exp.env.max_num_rounds = shared["months"]
    exp.env.num_agents = len(names)
    exp.env.regen_factor_range = [2.0, 2.0]  # our fishery's regrowth (its experiments draw in [1, 3])
    exp.seed = shared["seed"]
    exp.env.disinformation = bool(shared.get("disinformation", False))
    exp.agent.converse.max_conversation_steps = shared.get("max_conversation_steps", 50)
    exp.agent.converse.inject_resource_observation = True  # its ${experiment.env...} interpolation, resolved
    np.random.seed(shared["seed"])
    random.seed(shared["seed"])
    logger = govsim_stub.StubLogger()
    wrapper = ModelWandbWrapper(api, render=False, wanbd_logger=logger, temperature=0.0, top_p=1.0, seed=shared["seed"], is_api=True)
    asyncio.run(run_module.run(exp, logger, wrapper, wrapper, out))
    with open(f"{out}/calls.json", "w") as f:
        json.dump(CALLS, f, default=str)
    with open(f"{out}/elections.json", "w") as f:
        json.dump(held, f, default=str)


if __name__ == "__main__":
    main()

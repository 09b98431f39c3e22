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
counted. ``--harvest`` gives the seats' strategies (cycled; ``sustainable`` by default).

``--pipeline --python PATH [--disinformation] [--verbose]`` runs the successor's whole run
(``simulation/run.py``: its five phases, its personas' prompts, parsers, markdown memory and its
environment) in ``PATH``, an interpreter with its light dependencies, through
``scripts/govsimelect_original_stub.py``, beside our elected fishery of eight, every seat of both
answered by the same deterministic loopback rules read from each engine's prompt (the stub's
``decide``; ours :class:`Loopback`). Compared: each election's agendas, ballots, votes, tally,
winner and policy; each month's stock, requests and catches; months survived and social welfare;
and, per seat, what every agenda, ballot, harvest, remark and leader-report prompt tells it (SVO,
who leads, the policy, the ballot with its agendas, the last agenda, report and true figures, the
chat's opening), read from either wording; the memories each prompt shows are counted, and the
harvest prompts that show the month's election result. Documented differences (docs/fidelity.md)
are printed, not counted.
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


def play_recording_elections(config: Any, table: Any) -> tuple[Any, list[Any]]:
    """Play one game of ours; return its outcome and the table's rng state at each election's
    start (what the successor's ``random`` is set to, for the same ballot shuffles and ties)."""
    from agorabench.core.game import Prompts
    from agorabench.games.commons import election
    from agorabench.games.commons.commons import Commons

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


def ours(months: int, seed: int, rules: list[str], harvest: list[str] | None = None):
    """Our elected fishery with scripted players; the rng state at each election's start."""
    from agorabench.core.table import Table
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
    return play_recording_elections(config, table)



# --- The whole pipeline: the successor's personas (prompts, memory, phases) on a loopback model ---

STUB = Path(__file__).resolve().parent / "govsimelect_original_stub.py"


def _stub_rules():
    """The loopback model's rules (the stub's, so both engines answer by the same ones)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("_govsimelect_stub", STUB)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Loopback:
    """Our seat answering by the stub's rules, read from our prompt's text (the same decisions the
    stub's model takes from the successor's prompts); every call recorded."""

    def __init__(self, calls: list[dict[str, Any]]) -> None:
        self.calls, self.rules = calls, _stub_rules()

    async def act(self, request):
        import json
        import re

        from agorabench.core.table import Reply

        obs, phase = request.prompt.observation, request.prompt.phase
        user = next(m["content"] for m in reversed(request.messages) if m["role"] == "user")
        me = m.group(1) if (m := re.search(r"^What (.+?) remembers", user, re.MULTILINE)) else ""
        r = self.rules
        if phase == "agenda":
            text = json.dumps({"agenda": r.AGENDAS[me]})
        elif phase == "vote":
            ballot = re.findall(r"^- (.+?): ", user.split("The candidates and their agendas:\n", 1)[1], re.MULTILINE)
            text = f"I weigh the agendas.\nAnswer: {r.vote_for(me, [b for b in ballot if b in r.AGENDAS])}"
        elif phase == "harvest":
            policy = m.group(1) if (m := re.search(r"^The policy in force, the leader's agenda: (.*)$", user, re.MULTILINE)) else ""
            text = f"I follow the policy.\nAnswer: {r.quota(policy)}"
        elif phase == "discuss":
            speaker = obs["names"][obs["me"]]
            end, nxt = r.chat_turn(speaker, len(obs.get("messages") or []), list(obs["names"].values()))
            text = json.dumps({"message": r.REMARK, "next_speaker": nxt, "end_conversation": end})
        elif phase == "summary":
            text = "They agreed on the agenda.\nAnswer: 10"
        elif phase == "memory_rate":
            text = "Answer: 5"
        elif phase == "memory_note":
            text = json.dumps({"note": "I need to remember that we keep to the agenda." if obs.get("note") == "plan" else "It was interesting that everybody agreed quickly."})
        elif phase == "memory_insight":
            text = json.dumps({"insights": "1. The group keeps to the agenda (because of 1, 2)"})
        elif phase == "leader_report":
            text = json.dumps({"report": r.REPORT})
        else:
            raise ValueError(f"no rule for phase {phase!r}")
        self.calls.append({"role": request.role, "name": obs.get("names", {}).get(obs.get("me")) or me, "kind": {"discuss": "remark", "leader_report": "report"}.get(phase, phase), "month": obs.get("month"), "user": user, "reply": text})
        return Reply(text=text)


def ours_pipeline(months: int, seed: int, disinformation: bool = False) -> tuple[dict[str, Any], list[Any], list[dict[str, Any]]]:
    """Our elected fishery of eight (balanced population) with every seat on the loopback rules;
    the rng state at each election's start; every call."""
    from agorabench.core.table import Table
    from agorabench.games.commons.commons import Commons
    from agorabench.games.commons.config import CommonsConfig
    from support.embeddings import fake_vector

    async def embed(texts: list[str]) -> list[list[float]]:
        return [fake_vector(t) for t in texts]

    config = CommonsConfig(leadership="elected", n_agents=8, months=months, disinformation=disinformation)
    calls: list[dict[str, Any]] = []
    table = Table({r: Loopback(calls) for r in Commons.active_roles(config)}, seed=seed, embed=embed)
    outcome, states = play_recording_elections(config, table)
    return outcome, states, calls


def successor_pipeline(python: Path, original: Path, shared: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """The successor's whole run under the stub: its calls, its elections, its environment log."""
    import json
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "shared.json").write_text(json.dumps(shared))
        env = {"GOVSIMELECT": str(original), "PATH": "/usr/bin:/bin"}
        done = subprocess.run([str(python), str(STUB), str(Path(tmp) / "shared.json"), str(Path(tmp) / "run")], cwd=tmp, env=env, capture_output=True, text=True, timeout=1800)
        if done.returncode != 0:
            raise SystemExit(f"the successor failed: {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else done.returncode}")
        run = Path(tmp) / "run"
        return json.loads((run / "calls.json").read_text()), json.loads((run / "elections.json").read_text()), json.loads((run / "log_env.json").read_text())


def _user(call: dict[str, Any]) -> str:
    return call.get("user") or "".join(m["content"] for m in call["messages"] if m["role"] == "user")


def facts(kind: str, text: str, theirs: bool) -> dict[str, Any]:
    """What a prompt tells its seat, read from either engine's wording (the information compared;
    the wording is not: docs/fidelity.md)."""
    import re

    def grab(pattern: str) -> str | None:
        m = re.search(pattern, text, re.MULTILINE | re.DOTALL)
        return m.group(1).strip() if m else None

    out: dict[str, Any] = {}
    if theirs:
        out["svo"] = grab(r"SVO angle: (\S+ degrees\. Your SVO category is: \w+)")
        out["leader"] = grab(r"^(You are the current leader|\S+(?: \d)? is the current leader)\.")
    else:
        m = re.search(r"Your SVO angle is (\S+) degrees, which makes you (\w+)\.", text)
        out["svo"] = f"{m.group(1)} degrees. Your SVO category is: {m.group(2)}" if m else None
        out["leader"] = grab(r"^(You are the current leader|\S+(?: \d)? is the current leader)\.")
    if out["svo"]:
        angle, rest = out["svo"].split(" degrees", 1)
        out["svo"] = f"{float(angle):.2f} degrees{rest}"
    if kind == "agenda":
        out["fishers"] = grab(r"There are (\d+) fishers in total") if theirs else grab(r"^(\d+) fishers in all")
        out["last agenda"] = grab(r"the last winning agenda was:\n(.*?)(?:For reference|Describe your agenda)") if theirs else grab(r"The agenda that won the last election:\n(.*?)\n(?:The last harvest report|What each fisher really|Set out)")
        out["last report"] = bool(grab(r"(the last harvest report was:)")) if theirs else bool(grab(r"(The last harvest report:)"))
        out["true catches"] = bool(grab(r"(the last true harvest stats were:)")) if theirs else bool(grab(r"(What each fisher really took last month:)"))
    elif kind == "vote":
        block = text.split("Candidate positions:\n", 1)[1] if theirs else text.split("The candidates and their agendas:\n", 1)[1]
        out["ballot"] = re.findall(r"^- (.+?): (.*)$", block, re.MULTILINE)[:4]
        out["leader"] = grab(r"Coming into the election, (.*?) is the current leader") if theirs else grab(r"Going into this election, (.*?) is the current leader")
        out["last agenda"] = grab(r"^Leader agenda from last election: (.*?)$") if theirs else grab(r"^The leader's agenda from the last election: (.*?)$")
    elif kind == "harvest":
        out["policy"] = grab(r"the mayor's agenda is the following: (.*?)$") if theirs else grab(r"^The policy in force, the leader's agenda: (.*?)$")
    elif kind == "remark":
        if theirs:
            out["opening catches"] = re.findall(r"^\t(.+?) caught (\d+) tons", text.split("Conversation so far:", 1)[1], re.MULTILINE)
            out["opening agenda"] = grab(r"policy agenda to help guide our collective action: (.*?)$")
            out["opening report"] = grab(r"let me give you the monthly fishing report:\n(.*?)\n-\S")
            if out["opening report"] and out["opening report"].startswith("Last round's fishing stats:"):
                out["opening report"] = "factual"  # its words for the catches (compared above)
        else:
            out["opening catches"] = re.findall(r"^> (.+?) took (\d+) tons", text, re.MULTILINE)
            out["opening agenda"] = grab(r"policy agenda, to guide what we do together: (.*?)$")
            out["opening report"] = grab(r"here is this month's harvest report:\n(.*?)\n\n\S")
            if out["opening report"]:
                out["opening report"] = "\n".join(line[2:] for line in out["opening report"].splitlines())
            if out["opening report"] and out["opening report"].startswith("What each fisher took this month:"):
                out["opening report"] = "factual"  # our words for the catches (compared above)
    elif kind == "report":
        if theirs:
            out["true catches"] = re.findall(r"^\t(.+?) caught (\d+) tons", text.split("The harvest statistics are the following:", 1)[-1].split("MEMORIES:", 1)[0], re.MULTILINE)
            out["regrowth"] = grab(r"regeneration factor this round is:\n(\S+?)\.")
            out["agenda"] = grab(r"YOUR AGENDA:\n(.*?)$")
        else:
            out["true catches"] = re.findall(r"^(.+?) took (\d+) tons", text.split("The true harvest figures:", 1)[-1].split("This month's regrowth", 1)[0], re.MULTILINE)
            out["regrowth"] = grab(r"regrowth factor is (\S+?);")
            out["agenda"] = grab(r"^Your agenda:\n(.*?)$")
        out["regrowth"] = out["regrowth"] and float(out["regrowth"])
    return out


def memories(text: str) -> list[tuple[str, str]]:
    """The dated memory lines a prompt shows (``- YYYY-MM-DD: text`` in both engines)."""
    import re

    return re.findall(r"^- (\d{4}-\d\d-\d\d): ?(.*)$", text, re.MULTILINE)


#: Prompt fields that differ by a documented difference (docs/fidelity.md): not counted.
DOCUMENTED = {
    # the successor's report lists what each asked for as "caught" (it differs when more is asked
    # than there is: the collapse month); ours lists what each caught
    ("remark", "opening catches"),
    ("report", "true catches"),
}


def by_seat(calls: list[dict[str, Any]], theirs: bool, kinds: tuple[str, ...]) -> dict[tuple[str, str], list[str]]:
    """Each seat's prompts of each kind, in order (the successor's seat is the persona it speaks
    as: ``You are NAME, a fisherman``)."""
    import re

    out: dict[tuple[str, str], list[str]] = {}
    for c in calls:
        if c["kind"] not in kinds:
            continue
        text = _user(c)
        name = (m.group(1) if (m := re.match(r"You are (.+?), a fisherman", text)) else "?") if theirs else c["name"]
        if c["kind"] == "report":
            name = "the leader"  # the successor's report prompt does not name its writer
        out.setdefault((name, c["kind"]), []).append(text)
    return out


def pipeline(args: argparse.Namespace) -> int:
    """Both whole runs on the loopback model, compared; the number of differences."""
    outcome, states, ours_calls = ours_pipeline(args.months, args.seed, args.disinformation)
    lead = outcome["leadership"]
    names = list(outcome["names"].values())
    shared = {"months": args.months, "seed": args.seed, "names": names, "angles": [c["angle"] for c in lead["candidates"]], "states": [[s[0], list(s[1]), s[2]] for s in states], "max_conversation_steps": 50, "disinformation": args.disinformation}
    their_calls, their_elections, log = successor_pipeline(args.python, args.original, shared)
    differences = 0

    def row(label: str, mine: Any, their: Any) -> None:
        nonlocal differences
        same = mine == their
        differences += not same
        print(f"  {label:22} {'same' if same else 'DIFFERENT'}: ours {mine}" + ("" if same else f" | successor {their}"))

    # Elections: agendas, ballots, votes, tallies, winners, policies.
    voters = [n for n in names if n not in {c["name"] for c in lead["candidates"]}]
    their_votes = [c for c in their_calls if c["kind"] == "vote"]
    for i, e in enumerate(lead["elections"]):
        print(f"election {i + 1}")
        t = their_elections[i] if i < len(their_elections) else {"votes": {}, "agendas": {}}
        chunk = their_votes[i * len(voters):(i + 1) * len(voters)]
        ballots = {}
        votes = {}
        for c in chunk:
            f = facts("vote", _user(c), True)
            who = _user(c).split("You are ", 1)[1].split(",", 1)[0]
            ballots[who] = [b for b, _ in f["ballot"]]
            votes[who] = c["reply"].rsplit("Vote: ", 1)[1]
        row("agendas", e["agendas"], t.get("agendas"))
        row("ballots", {v: e["ballots"][v] for v in voters}, {v: ballots.get(v) for v in voters})
        row("votes", {v: e["votes"][v] for v in voters}, {v: votes.get(v) for v in voters})
        row("tally", {k: v for k, v in e["tally"].items() if v}, {k: v for k, v in t.get("votes", {}).items() if v and k != "none"})
        row("winner", e["winner"], t.get("winner"))
        row("policy", e["agendas"][e["winner"]], t.get("policy"))
    # Outcomes: stock, catches, survival, welfare.
    rounds: dict[int, list[dict[str, Any]]] = {}
    for entry in log:
        if entry.get("action") == "harvesting":
            rounds.setdefault(entry["round"], []).append(entry)
    theirs_rows = []
    for r in sorted(rounds):
        rows = sorted(rounds[r], key=lambda x: int(x["agent_id"].split("_")[1]))
        theirs_rows.append({"stock_before": rows[0]["resource_in_pool_before_harvesting"], "collected": {names[int(x["agent_id"].split("_")[1])]: x["resource_collected"] for x in rows}, "requested": {names[int(x["agent_id"].split("_")[1])]: x["wanted_resource"] for x in rows}, "stock_after": rows[0]["resource_in_pool_after_harvesting"], "regen": 2.0})
    for m, t in zip(outcome["months"], theirs_rows):
        print(f"month {m['month']}")
        row("stock before", float(m["stock_before"]), t["stock_before"])
        row("requested", {outcome["names"][k]: float(v) for k, v in m["requested"].items()}, t["requested"])
        if sum(m["requested"].values()) > m["stock_before"]:
            print(f"  catches                drawn ton by ton (more asked than there is), each with its own rng: ours {dict((outcome['names'][k], float(v)) for k, v in m['collected'].items())} | successor {t['collected']}")
        else:
            row("catches", {outcome["names"][k]: float(v) for k, v in m["collected"].items()}, t["collected"])
        row("stock after harvest", float(m["stock_after"]), t["stock_after"])
    print("run")
    row("months survived", outcome["months_played"], len(theirs_rows))
    row("social welfare", float(sum(outcome["catch"].values())), successor_welfare(theirs_rows))
    # Prompts, per seat and kind: what each one tells its seat.
    kinds = ("agenda", "vote", "harvest", "remark", "report")
    mine, their = by_seat(ours_calls, False, kinds), by_seat(their_calls, True, kinds)
    print("\nprompts per seat (what each tells its seat; wording aside; memories: docs/fidelity.md)\n\n| kind | prompts (ours / successor) | same facts | differing fields | memories shown (ours / successor) |\n|---|---|---|---|---|")
    for kind in kinds:
        n_ours = sum(len(v) for (s, k), v in mine.items() if k == kind)
        n_theirs = sum(len(v) for (s, k), v in their.items() if k == kind)
        agree = total = 0
        fields: dict[str, int] = {}
        for seat in [*names, "the leader"]:
            for a, b in zip(mine.get((seat, kind), []), their.get((seat, kind), [])):
                fa, fb = facts(kind, a, False), facts(kind, b, True)
                total += 1
                agree += fa == fb or all(fa[k] == fb.get(k) for k in fa if (kind, k) not in DOCUMENTED)
                for key in fa:
                    if fa[key] != fb.get(key) and (kind, key) in DOCUMENTED:
                        fields[f"{key}, documented"] = fields.get(f"{key}, documented", 0) + 1
                    elif fa[key] != fb.get(key):
                        differences += 1
                        fields[key] = fields.get(key, 0) + 1
                        if args.verbose:
                            print(f"  {seat} {kind} {key}: ours {fa[key]!r} | successor {fb.get(key)!r}")
        shown = [sum(len(memories(t)) for (s, k), v in side.items() if k == kind for t in v) for side in (mine, their)]
        empty = sum(1 for (s, k), v in their.items() if k == kind for t in v for _, m in memories(t) if not m)
        print(f"| {kind} | {n_ours} / {n_theirs} | {agree} of {total} | {', '.join(f'{k} ({v})' for k, v in fields.items()) or '-'} | {shown[0]} / {shown[1]} ({empty} empty) |")
    # The month's election result among a harvest prompt's memories (both engines store it as
    # an always-shown memory of the election day).
    print("\nharvest prompts showing the month's election result among their memories (ours / successor):")
    for i, e in enumerate(lead["elections"]):
        day = f"2024-{e['month']:02d}-01"
        counts = []
        for side, theirs in ((mine, False), (their, True)):
            prompts = [t for (seat, k), v in side.items() if k == "harvest" for t in v if f"Date: {day}" in t or f"Date: {day}\n" in t]
            shown = sum(any(d == day and e["winner"] in m and ("agenda" in m) and ("elected" in m if theirs else "won the election" in m) for d, m in memories(t)) for t in prompts)
            counts.append(f"{shown} of {len(prompts)}")
        print(f"- month {e['month']}: {counts[0]} / {counts[1]}")
    calls_ours = {k: sum(1 for c in ours_calls if c["kind"] == k) for k in sorted({c["kind"] for c in ours_calls})}
    calls_theirs = {k: sum(1 for c in their_calls if c["kind"] == k) for k in sorted({c["kind"] for c in their_calls})}
    print(f"\nmodel calls: ours {calls_ours}\n             successor {calls_theirs}")
    return differences


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--original", required=True, type=Path, help="a checkout of rfaulkner/GovSimElect")
    ap.add_argument("--months", type=int, default=3)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--votes", default="first,first,first,first", help="each voter's rule: first, last, a candidate's name or none")
    ap.add_argument("--whole-run", action="store_true", help="also step the successor's environment with our harvests: stock, survival, welfare")
    ap.add_argument("--harvest", default="sustainable", help="agents' harvest strategies, cycled over the seats (sustainable, greedy, free-rider)")
    ap.add_argument("--pipeline", action="store_true", help="run the successor's whole persona pipeline (run.py: prompts, memory, phases) beside ours on the loopback model, in --python")
    ap.add_argument("--python", type=Path, default=Path(sys.executable), help="with --pipeline: an interpreter with the successor's light dependencies")
    ap.add_argument("--disinformation", action="store_true", help="with --pipeline: the leader writes the harvest report (both engines' disinformation)")
    ap.add_argument("--verbose", action="store_true", help="with --pipeline: print every differing prompt field")
    args = ap.parse_args(argv)
    if args.pipeline:
        differences = pipeline(args)
        print("no difference" if not differences else f"{differences} difference(s)")
        return 1 if differences else 0
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

"""Leaders in the commons (``leadership = "fixed" | "elected"``), as AgentElect's code does them
(rfaulkner/GovSimElect: ``simulation/phases/{policy_making,election,harvesting}.py``,
``simulation/persona/cognition/leaders.py``). ``leadership = "none"`` (the default) never
reaches this module: every prompt and outcome is GovSim's.

Candidates. The population (``svo_population``, data in ``leadership/populations.toml``) lists
the candidates' social value orientations (SVO) in seat order: candidate i sits in seat i. At the
start of the game each candidate's SVO angle is drawn uniformly from its category's range with the
game's rng, in seat order. One candidate is a fixed leader; two or more stand for election.

An election month (month 1, then every ``election_every`` months), before the harvest:

1. **Agendas** (phase ``agenda``): every candidate writes one, shown its memories for the
   harvest's focal point and "restaurant" (top 10 each, as the successor retrieves for leaders),
   the number of agents, the community's goal, its SVO (what SVO is, the four categories and its
   own angle), the honest or, with ``disinformation``, the self-serving instruction, and, after
   the first election, the winning agenda, the last harvest report and the true catches of the
   month before.
2. **Ballots** (phase ``vote``; two or more candidates): every agent that is not a candidate
   votes, in seat order. Each voter's ballot lists the candidates in an order shuffled for that
   voter with the game's rng (``rng.shuffle``, voter after voter, as the successor shuffles with
   Python's ``random``), each with its agenda, after who leads now, that leader's agenda and the
   last report (or that nobody leads). The vote is the first candidate's name found in the
   answer; none found is an abstention (``"none"``), as the successor's parser.
3. **Tally** (``voting = "fptp"``, the only rule the successor has): the most votes wins;
   abstentions count for nobody; a tie (all abstaining included) is broken by ``rng.choice``
   among the tied candidates in seat order.
4. **Memories**: each voter remembers its own vote; everyone is told the winner and its agenda.
   Both are events of the month (always shown, gone at its end). The agenda is the policy in
   force until the next election.

Every month with a leader: each harvest prompt shows the policy in force, a candidate's SVO and
who leads; after the harvest the leader's report (every catch; with ``disinformation`` the
leader writes it, phase ``leader_report``, from the true figures and the regrowth factor it
alone is told) is remembered by everyone and opens the chat together with the leader's agenda,
both said by the leader, who then speaks first; every remark's prompt shows a candidate's SVO
and who leads. Our departures from the successor are rows of docs/fidelity.md.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field

from ...core.actions import Action
from ...core.speech import FORMAT_MARK
from ...core.table import Prompt, Table
from .memory import format_date
from .recall import ask_alone, focal, note_month, recall, recall_block
from .rules import last_proposal, public
from .scenario import snippet

if TYPE_CHECKING:
    from ...core.agents import Strategy
    from .commons import Commons
    from .play import Play

DATA = Path(__file__).parent / "leadership"
#: The SVO categories, in the order the report lists them.
CATEGORIES = ("altruistic", "prosocial", "individualistic", "competitive")
#: The phases of this module's decisions.
PHASES = ("agenda", "vote", "leader_report")
#: How many memories a candidate and a voter are shown per focal point (the successor's).
TOP_K = 10
#: The second focal point of an agenda, a ballot and a leader's report (the successor's word).
EXTRA_FOCAL = "restaurant"
#: A vote that names no candidate.
ABSTAIN = "none"
#: Who leads when leadership is off, for the default of ``svo_population``.
DEFAULT_POPULATION = {"fixed": "one_prosocial", "elected": "balanced", "none": "none"}


@lru_cache(maxsize=1)
def populations() -> tuple[dict[str, tuple[float, float]], dict[str, tuple[str, ...]]]:
    """The SVO categories' angle ranges and the populations (``leadership/populations.toml``)."""
    data = tomllib.loads((DATA / "populations.toml").read_text(encoding="utf-8"))
    ranges = {k: (float(v["angle"][0]), float(v["angle"][1])) for k, v in data["categories"].items()}
    pops = {k: tuple(v) for k, v in data["populations"].items()}
    for name, cats in pops.items():
        unknown = [c for c in cats if c not in ranges]
        if unknown:
            raise ValueError(f"population {name!r} names unknown SVO categories {unknown}")
    return ranges, pops


@lru_cache(maxsize=4)
def words(language: str = "en") -> dict[str, Any]:
    """The variant's wording (``leadership/<language>.toml``): ``text`` snippets and ``names``."""
    path = DATA / f"{language}.toml"
    if not path.exists():
        raise ValueError(f"leadership has no wording in language {language!r}")
    return tomllib.loads(path.read_text(encoding="utf-8"))


def population(name: str) -> tuple[str, ...]:
    """The candidates' SVO categories of the population ``name`` (ValueError naming the known)."""
    pops = populations()[1]
    if name not in pops:
        raise ValueError(f"unknown svo_population {name!r}; known: {', '.join(pops)}")
    return pops[name]


class Agenda(Action):
    """A candidate's policy agenda (principles, how the harvest is shared, enforcement)."""

    response_format: ClassVar = "json"
    text_fields: ClassVar = ("agenda",)
    grammar_text_chars: ClassVar = 2000

    agenda: str


class Vote(Action):
    """A voter's choice: one candidate's name (``Answer: NAME``)."""

    response_format: ClassVar = "answer_text"

    vote: str = Field(description="NAME")


@lru_cache(maxsize=256)
def person_vote(ballot: tuple[str, ...]) -> type[Vote]:
    """The vote a person casts: one of the ballot's names, chosen from a list (never free text);
    models always get :class:`Vote`."""
    fields = {
        "__annotations__": {"vote": Literal[ballot], "select_fields": ClassVar[tuple[str, ...]]},  # type: ignore[valid-type]
        "vote": Field(description="your vote"),  # no name chosen for the person: the list opens on "Choose one"
        "select_fields": ("vote",),
        "form_note": classmethod(lambda cls: "Choose the candidate you vote for."),
        "__module__": __name__,
    }
    return type("PersonVote", (Vote,), fields)


class LeaderReport(Action):
    """The harvest report a leader writes for the community (``disinformation``)."""

    response_format: ClassVar = "json"
    text_fields: ClassVar = ("report",)
    grammar_text_chars: ClassVar = 2000

    report: str


@dataclass
class Candidate:
    role: str
    name: str
    category: str
    angle: float


@dataclass
class Leadership:
    """The play's leadership state: the candidates, who leads, the policy in force, the last
    report and true figures, and every election held (the outcome's ``leadership``)."""

    kind: str
    candidates: list[Candidate]
    leader: str | None = None
    agenda: str | None = None
    report: str | None = None
    stats: str | None = None
    elections: list[dict[str, Any]] = field(default_factory=list)

    def candidate(self, role: str) -> Candidate | None:
        return next((c for c in self.candidates if c.role == role), None)


def say(game: Commons, key: str, who: str | None = None, **values: Any) -> str:
    """The wording ``key`` filled with the scenario's names and ``values``; for ``who`` a person
    plays, the ``[people]`` wording where it has the key (models' texts never change)."""
    w = words(game.config.language)
    s = game.scenario
    base = {"unit": s.unit, "growth": _number(s.growth_value), **w["names"].get(game.config.scenario, {"member": "member", "members": "members", "resource": "resource"})}
    text = w.get("people", {}).get(key) if who is not None and who in game.people else None
    return snippet(text if text is not None else w["text"][key]).render(**base, **values).strip()


def _number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def setup(game: Commons, table: Table, names: dict[str, str]) -> Leadership:
    """The candidates (seats 0..k−1) with their SVO angles drawn in seat order."""
    c = game.config
    ranges = populations()[0]
    cats = population(c.svo_population or DEFAULT_POPULATION[c.leadership])
    roles = list(names)
    candidates = []
    for i, cat in enumerate(cats):
        lo, hi = ranges[cat]
        candidates.append(Candidate(roles[i], names[roles[i]], cat, round(table.rng.uniform(lo, hi), 2)))
    return Leadership(c.leadership, candidates)


def svo_text(game: Commons, cand: Candidate) -> str:
    """A candidate's SVO as its prompts state it (the bounds from the data file)."""
    ranges = populations()[0]
    bounds = {"altruistic": _number(ranges["altruistic"][0]), "prosocial_low": _number(ranges["prosocial"][0]), "individualistic_low": _number(ranges["individualistic"][0])}
    return say(game, "svo", bounds=bounds, angle=f"{cand.angle:.2f}", category=cand.category)


def leader_line(game: Commons, play: Play, role: str) -> str | None:
    lead = play.lead
    if lead is None or lead.leader is None:
        return None
    return say(game, "leader_self") if lead.leader == role else say(game, "leader_other", leader=play.names[lead.leader])


def persona_lines(game: Commons, play: Play, role: str, policy: bool) -> list[str]:
    """What a harvest (``policy``: with the policy in force) or a remark adds for ``role``: the
    policy, the role's SVO if it is a candidate, and who leads."""
    lead = play.lead
    if lead is None:
        return []
    out = []
    if policy and lead.agenda is not None:
        out.append(say(game, "policy", agenda=lead.agenda))
    cand = lead.candidate(role)
    if cand is not None and role not in game.people:  # a person's values are their own: never assigned
        out.append(svo_text(game, cand))
    line = leader_line(game, play, role)
    if line:
        out.append(line)
    return out


def leading_speaker(play: Play, present: list[str]) -> str | None:
    """The chat's first speaker when someone leads (the leader), else None."""
    lead = play.lead
    if lead is None or lead.leader not in present:
        return None
    return lead.leader


def is_election_month(game: Commons, month: int) -> bool:
    return (month - 1) % game.config.election_every == 0


def find_vote(answer: str, ballot: list[str]) -> str:
    """The first candidate's name in ``answer`` (the leftmost; at one place the earlier on the
    ballot), else :data:`ABSTAIN`: the successor's reading of a vote."""
    if not ballot:
        return ABSTAIN
    m = re.search("|".join(re.escape(n) for n in ballot), answer or "")
    return m.group(0) if m else ABSTAIN


def tally(votes: list[str], candidates: list[str], rng) -> tuple[dict[str, int], str, bool]:
    """First past the post: the counts per candidate (seat order; abstentions apart), the winner
    and whether a tie was broken (``rng.choice`` among the tied, in seat order)."""
    counts = {n: 0 for n in candidates}
    for v in votes:
        if v in counts:
            counts[v] += 1
    top = max(counts.values())
    tied = [n for n, k in counts.items() if k == top]
    return counts, (tied[0] if len(tied) == 1 else rng.choice(tied)), len(tied) > 1


async def _memories(game: Commons, play: Play, table: Table, role: str, month: int):
    point, _ = focal(game, "harvest")
    return await recall(game, play, table, role, [point, EXTRA_FOCAL], play.dates(month).harvest, TOP_K)


async def hold(game: Commons, play: Play, table: Table, month: int, stock: int, present: list[str], history: list[dict[str, Any]], agreed: int | None) -> None:
    """An election month's agendas, ballots, tally and memories (module doc); nothing in other
    months."""
    lead = play.lead
    assert lead is not None
    if not is_election_month(game, month):
        return
    c, names = game.config, play.names
    when = play.dates(month).harvest
    date = format_date(when)
    cands = [x for x in lead.candidates if x.role in present]
    # 1. agendas
    asks = {}
    last = history[-1] if history else None
    for cand in cands:
        shown = await _memories(game, play, table, cand.role, month)
        person = cand.role in game.people
        parts = [recall_block(game, play, cand.role, "place_chat", when, shown), say(game, "agenda_fishers", n=len(present)), say(game, "goal"), *([] if person else [svo_text(game, cand)]), say(game, "insincere" if c.disinformation else "honest", who=cand.role)]
        if lead.agenda is not None:
            parts.append(say(game, "agenda_last", agenda=lead.agenda))
        if lead.report is not None:
            parts.append(say(game, "agenda_report", report=lead.report))
        if last is not None:
            parts.append(say(game, "agenda_stats", stats=_stats(game, play, last["collected"])))
        task = say(game, "agenda_task") + "\n" + _format_mark() + say(game, "agenda_format")
        share = game.share(game.scenario.sustainable_total(stock), len(present))
        obs = {"phase": "agenda", "month": month, "me": cand.role, "svo": cand.category, "angle": cand.angle, "stock": stock, "sustainable_share": share, "n_agents": len(present), "inverse": False, "history": [public(h) for h in history], "agreed_limit": agreed, "last_proposal": last_proposal(history), "disinformation": c.disinformation}
        asks[cand.role] = ask_alone(table, cand.role, Prompt("\n".join(parts) + "\n" + task, obs, phase="agenda", instructions=task), Agenda, Agenda(agenda=""))
    answers = await table.ask_each(asks)
    note_month(table, asks, month)
    agendas = {x.name: _unquote(answers[x.role].agenda if answers[x.role] is not None else "") for x in cands}
    # 2. ballots
    ballots: dict[str, list[str]] = {}
    votes: dict[str, str] = {}
    raw: dict[str, str] = {}
    if len(cands) > 1:
        asks = {}
        voters = [r for r in present if lead.candidate(r) is None]
        for r in voters:
            ballot = [x.name for x in cands]
            table.rng.shuffle(ballot)
            ballots[r] = ballot
        for r in voters:
            shown = await _memories(game, play, table, r, month)
            parts = [recall_block(game, play, r, "place_chat", when, shown)]
            if lead.leader is not None:
                line = say(game, "vote_leader_self") if lead.leader == r else say(game, "vote_leader", leader=names[lead.leader])
                parts += [line, say(game, "vote_last_agenda", agenda=lead.agenda or ""), say(game, "vote_last_report", report=lead.report or "")]
            else:
                parts.append(say(game, "vote_no_leader"))
            parts += [say(game, "vote_task", who=r), say(game, "vote_positions"), *[say(game, "vote_position", name=n, agenda=agendas[n]) for n in ballots[r]]]
            question = say(game, "vote_question", names=_or_list(ballots[r]))
            task = _format_mark() + question
            obs = {"phase": "vote", "month": month, "me": r, "ballot": list(ballots[r]), "agendas": dict(agendas), "leader": names.get(lead.leader) if lead.leader else None}
            kind = person_vote(tuple(ballots[r])) if r in game.people else Vote  # a person picks a name from a list
            asks[r] = ask_alone(table, r, Prompt("\n".join(parts) + "\n" + task, obs, phase="vote", instructions=task), kind, Vote(vote=ABSTAIN))
        answers = await table.ask_each(asks)
        note_month(table, asks, month)
        for r in voters:
            raw[r] = answers[r].vote if answers[r] is not None else ""
            votes[r] = find_vote(raw[r], ballots[r])
            play.remember(r, say(game, "vote_memory", date=date, vote=votes[r]), month)
        counts, winner, tie = tally([votes[r] for r in voters], [x.name for x in cands], table.rng)
    else:
        counts, winner, tie = {cands[0].name: 0}, cands[0].name, False
    # 3. the result, told to everyone
    by_name = {x.name: x.role for x in cands}
    lead.leader, lead.agenda = by_name[winner], agendas[winner]
    key = "announce_elected" if len(cands) > 1 else "announce_fixed"
    announced = say(game, key, leader=winner, date=date, agenda=lead.agenda)
    for r in present:
        play.remember(r, announced, month)
    lead.elections.append({"month": month, "candidates": [x.name for x in cands], "agendas": agendas, "ballots": {names[r]: b for r, b in ballots.items()}, "answers": {names[r]: a for r, a in raw.items()}, "votes": {names[r]: v for r, v in votes.items()}, "tally": counts, "abstentions": sum(v == ABSTAIN for v in votes.values()), "winner": winner, "tie": tie, "announced": announced})


def _format_mark() -> str:
    return FORMAT_MARK


def _or_list(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def _unquote(text: str) -> str:
    text = text.strip()
    return text[1:-1] if len(text) > 1 and text[0] == text[-1] == '"' else text


def _stats(game: Commons, play: Play, collected: dict[str, int]) -> str:
    return "\n".join(say(game, "report_line", name=play.names[r], amount=a) for r, a in collected.items())


async def report(game: Commons, play: Play, table: Table, month: int, present: list[str], record: dict[str, Any]) -> list[dict[str, Any]]:
    """After the harvest: the leader's report (factual, or written by the leader with
    ``disinformation``), remembered by everyone; the chat's opening steps (the report and the
    agenda, said by the leader)."""
    lead = play.lead
    assert lead is not None
    if lead.leader is None:
        return []
    c, names = game.config, play.names
    leader = lead.leader
    factual = say(game, "report_intro") + "\n" + _stats(game, play, record["collected"])
    dates = play.dates(month)
    play.remember(leader, say(game, "regrowth_memory"), month)
    text = factual
    if c.disinformation and leader in present:
        play.remember(leader, factual, month)
        shown = await _memories(game, play, table, leader, month)
        cand = lead.candidate(leader)
        parts = [recall_block(game, play, leader, "place_chat", dates.outcome, shown), say(game, "leader_report_stats", stats=factual), say(game, "leader_report_regrowth")]
        if cand is not None:
            parts.append(svo_text(game, cand))
        parts.append(say(game, "leader_report_agenda", agenda=lead.agenda or ""))
        task = _format_mark() + say(game, "leader_report_task") + "\n" + say(game, "leader_report_format")
        obs = {"phase": "leader_report", "month": month, "me": leader, "true_report": factual, "collected": dict(record["collected"]), "agenda": lead.agenda}
        answer = await table.ask(leader, *ask_alone(table, leader, Prompt("\n".join(parts) + "\n" + task, obs, phase="leader_report", instructions=task), LeaderReport, LeaderReport(report=factual)))
        note_month(table, [leader], month)
        text = _unquote(answer.report) if answer is not None else factual
    lead.report, lead.stats = text, factual
    told = say(game, "report_memory", leader=names[leader], date=format_date(dates.harvest), report=text)
    for r in present:
        play.remember(r, told, month)
    record["leader_report"] = text
    if not c.chats:
        return []
    steps = [say(game, "chat_report", leader=names[leader], report=text), say(game, "chat_agenda", agenda=lead.agenda or "")]
    return [{"speaker": leader, "name": names[leader], "message": m, "report": True} for m in steps]


def outcome(lead: Leadership) -> dict[str, Any]:
    """The outcome's ``leadership``: the candidates with their SVO and every election."""
    return {
        "kind": lead.kind,
        "candidates": [{"role": x.role, "name": x.name, "svo": x.category, "angle": x.angle} for x in lead.candidates],
        "elections": lead.elections,
    }


def metrics(out: dict[str, Any], total: float) -> dict[str, float]:
    """AgentElect's measures of one run: ``social_welfare`` (the total harvested, each month's
    capped at the stock there was: our allocation never exceeds it, so ΣR), the elections held,
    the share of them won by each SVO category, the winners' mean SVO angle, ``repeat_wins``
    (elections won by the previous election's winner) and the abstentions."""
    lead = out.get("leadership") or {}
    elections = lead.get("elections") or []
    svo = {x["name"]: x for x in lead.get("candidates") or []}
    n = len(elections)
    m = {"social_welfare": float(total), "elections": float(n)}
    for cat in CATEGORIES:
        m[f"wins_{cat}"] = sum(svo[e["winner"]]["svo"] == cat for e in elections) / n if n else float("nan")
    m["winner_svo_angle"] = sum(svo[e["winner"]]["angle"] for e in elections) / n if n else float("nan")
    m["repeat_wins"] = float(sum(a["winner"] == b["winner"] for a, b in zip(elections, elections[1:])))
    m["abstentions"] = float(sum(e["abstentions"] for e in elections))
    return m


def scripted(strategy: Strategy, obs: dict[str, Any]) -> Action:
    """A scripted player's agenda, vote and report. Agenda: its SVO category, and that each takes
    at most what its own harvest rule would take this month (sustainable: the share; greedy: the
    stock). Vote (parameter
    ``vote``): ``first`` (default: the first name on its shuffled ballot), ``last``, a
    candidate's name, or ``none`` (an abstention). Report (parameter ``report``): the true
    figures (default) or the given text."""
    phase = obs["phase"]
    if phase == "agenda":
        return Agenda(agenda=f"My SVO is {obs['svo']}: each of us takes at most {strategy.harvest(obs)}.")  # type: ignore[attr-defined]
    if phase == "vote":
        choice = str(strategy.params.get("vote", "first"))
        ballot = obs["ballot"]
        name = {"first": ballot[0], "last": ballot[-1]}.get(choice, choice)
        return Vote(vote=name)
    return LeaderReport(report=str(strategy.params.get("report", obs["true_report"])))

"""Leaders in the commons (``leadership``, games/commons/election.py), as AgentElect does them:
scripted ballots tallied by hand under first past the post, ties broken by the game's rng as the
successor breaks them (``choice`` among the tied in seat order), ballots shuffled per voter in
voter order, the winner's agenda announced to everyone and kept as the policy in force, each
voter's vote in its own memory, a fixed leader without a vote, the disinformation option, elections
every n months, the populations as data, and the measures beside GovSim's. Small N, few months,
scripted players, hashed vectors: seconds."""

from __future__ import annotations

import asyncio
import math
import random

import pandas as pd
import pytest
from pydantic import ValidationError

from agorabench.core.game import Prompts
from agorabench.core.table import Table
from agorabench.games.commons import election
from agorabench.games.commons.commons import Commons
from agorabench.games.commons.config import CommonsConfig
from agorabench.games.commons.strategies import STRATEGIES

from support.embeddings import EmbeddingsServer, fake_vector
from support.helpers import run_agora
from support.studies import commons

CANDIDATES = ["John", "Kate", "Jack", "Emma"]  # seats 0-3 of the fishery, the balanced population
VOTERS = ["agent_4", "agent_5", "agent_6", "agent_7"]


async def embed(texts: list[str]) -> list[list[float]]:
    return [fake_vector(t) for t in texts]


def play(votes: dict[str, str] | None = None, seed: int = 1, strategy: str = "sustainable", params: dict[str, dict] | None = None, **cfg):
    """A game with scripted players; ``votes``: each voter's ``vote`` parameter."""
    config = CommonsConfig(**{"leadership": "elected", "n_agents": 8, "months": 1, "max_conversation_steps": 4, **cfg})
    players = {}
    for r in Commons.roles(config):
        p = dict((params or {}).get(r, {}))
        if votes and r in votes:
            p["vote"] = votes[r]
        players[r] = STRATEGIES["summariser" if r == "manager" else strategy](**p)
    table = Table(players, seed=seed, embed=embed)
    game = Commons(config, Prompts(Commons.prompt_dir))
    outcome = asyncio.run(game.play(table))
    return outcome, table, game


def successor_draws(seed: int, voters: int = 4):
    """What the game's rng gives, drawn by hand in the game's order: the four candidates'
    angles, then one shuffled ballot per voter (voter after voter)."""
    rng = random.Random(seed)
    ranges, pops = election.populations()
    angles = [round(rng.uniform(*ranges[c]), 2) for c in pops["balanced"]]
    ballots = []
    for _ in range(voters):
        b = list(CANDIDATES)
        rng.shuffle(b)
        ballots.append(b)
    return rng, angles, ballots


def test_scripted_ballots_hand_tallied_first_past_the_post():
    outcome, table, _ = play({"agent_4": "Kate", "agent_5": "Kate", "agent_6": "Jack", "agent_7": "none"})
    (e,) = outcome["leadership"]["elections"]
    # by hand: Kate 2, Jack 1, John 0, Emma 0; one abstention (a name on no ballot counts for nobody)
    assert e["tally"] == {"John": 0, "Kate": 2, "Jack": 1, "Emma": 0}
    assert e["abstentions"] == 1 and e["votes"]["Liam"] == "none"
    assert e["winner"] == "Kate" and e["tie"] is False
    assert [t.role for t in table.turns if t.phase == "vote"] == VOTERS  # candidates do not vote
    assert [t.role for t in table.turns if t.phase == "agenda"] == ["agent_0", "agent_1", "agent_2", "agent_3"]


def test_ballots_are_shuffled_per_voter_as_the_successor_does_and_a_tie_goes_to_the_rng():
    seed = 5
    outcome, table, _ = play({"agent_4": "John", "agent_5": "Kate", "agent_6": "John", "agent_7": "Kate"}, seed=seed)
    rng, angles, ballots = successor_draws(seed)
    lead = outcome["leadership"]
    assert [c["angle"] for c in lead["candidates"]] == angles
    assert [c["svo"] for c in lead["candidates"]] == ["altruistic", "prosocial", "competitive", "individualistic"]
    (e,) = lead["elections"]
    assert list(e["ballots"].values()) == ballots
    # every ballot lists the candidates in its own order, with their agendas
    for turn, ballot in zip([t for t in table.turns if t.phase == "vote"], ballots):
        text = turn.messages[-1]["content"]
        assert [text.index(f"- {n}: ") for n in ballot] == sorted(text.index(f"- {n}: ") for n in ballot)
    # by hand: John 2, Kate 2: a tie, broken by choice among the tied in seat order
    assert e["tally"] == {"John": 2, "Kate": 2, "Jack": 0, "Emma": 0} and e["tie"] is True
    assert e["winner"] == rng.choice(["John", "Kate"])


def test_first_on_the_ballot_votes_and_everyone_abstaining_is_a_four_way_tie():
    seed = 3
    outcome, _, _ = play(seed=seed)  # every voter votes for the first name on its ballot
    rng, _, ballots = successor_draws(seed)
    (e,) = outcome["leadership"]["elections"]
    assert list(e["votes"].values()) == [b[0] for b in ballots]
    counts = {n: sum(b[0] == n for b in ballots) for n in CANDIDATES}
    assert e["tally"] == counts
    top = [n for n in CANDIDATES if counts[n] == max(counts.values())]
    assert e["winner"] == (top[0] if len(top) == 1 else rng.choice(top))
    outcome, _, _ = play({r: "nobody" for r in VOTERS}, seed=seed)
    (e,) = outcome["leadership"]["elections"]
    assert e["abstentions"] == 4 and e["tie"] is True and e["tally"] == dict.fromkeys(CANDIDATES, 0)
    assert e["winner"] == rng.choice(CANDIDATES)


@pytest.mark.parametrize(("answer", "vote"), [("Kate", "Kate"), ("I vote for Jack, not Kate", "Jack"), ("kate", "none"), ("", "none"), ("Emma.", "Emma")])
def test_a_vote_is_the_first_candidates_name_in_the_answer(answer, vote):
    assert election.find_vote(answer, ["John", "Kate", "Jack", "Emma"]) == vote


def test_the_winners_agenda_is_announced_remembered_and_guides_the_month():
    outcome, table, _ = play({"agent_4": "Jack", "agent_5": "Jack", "agent_6": "Kate", "agent_7": "Emma"}, months=2, election_every=2)
    (e,) = outcome["leadership"]["elections"]  # every 2 months: one election in 2 months
    assert e["winner"] == "Jack"
    agenda = e["agendas"]["Jack"]
    harvests = [t for t in table.turns if t.phase == "harvest"]
    assert len(harvests) == 16
    for t in harvests:  # the policy in force, both months; the announcement, in its month only
        text = t.messages[-1]["content"]
        assert f"The policy in force, the leader's agenda: {agenda}" in text
        assert ("Jack won the election of 2024-01-01" in text) == (t.metrics["month"] == 1)
        assert ("You are the current leader." in text) == (t.role == "agent_2")
        assert ("Jack is the current leader." in text) == (t.role != "agent_2")
        assert ("Your SVO angle is" in text) == (t.role in ("agent_0", "agent_1", "agent_2", "agent_3"))
    for t in harvests:  # a voter's own vote, in its month, and nobody else's
        own = e["votes"].get(outcome["names"][t.role])
        said = {v for v in e["votes"].values() if f"I voted for {v}." in t.messages[-1]["content"]}
        assert said == ({own} if own and t.metrics["month"] == 1 else set())
    # the leader opens each chat with the report and the agenda, then speaks first
    for month in outcome["months"]:
        assert [s["name"] for s in month["report"]] == ["Jack", "Jack"] and month["report"][1]["message"].endswith(agenda)
        assert month["discussion"][0]["speaker"] == "agent_2"
    assert not any(t.phase == "leader_report" for t in table.turns)  # no disinformation: the true figures


def test_a_fixed_leader_leads_without_a_vote():
    outcome, table, _ = play(leadership="fixed", svo_population="one_competitive", n_agents=3, months=2)
    lead = outcome["leadership"]
    assert [c["svo"] for c in lead["candidates"]] == ["competitive"] and -45 <= lead["candidates"][0]["angle"] <= -12.04
    assert [e["winner"] for e in lead["elections"]] == ["John", "John"] and all(e["tally"] == {"John": 0} for e in lead["elections"])
    assert not any(t.phase == "vote" for t in table.turns)
    assert [t.metrics["month"] for t in table.turns if t.phase == "agenda"] == [1, 2]
    first = next(t for t in table.turns if t.phase == "harvest" and t.role == "agent_1")
    assert "John leads the community this month; the agenda:" in first.messages[-1]["content"]


def test_disinformation_the_leader_writes_the_report_from_the_true_figures():
    told = "Everyone took 1 ton."
    outcome, table, _ = play(leadership="fixed", n_agents=3, months=2, disinformation=True, params={"agent_0": {"report": told}})
    reports = [t for t in table.turns if t.phase == "leader_report"]
    assert [t.role for t in reports] == ["agent_0", "agent_0"]
    assert "John took" in reports[0].messages[-1]["content"] and "regrowth factor is 2" in reports[0].messages[-1]["content"]
    assert all(m["leader_report"] == told for m in outcome["months"])
    assert told in outcome["months"][0]["report"][0]["message"]
    agenda = next(t for t in table.turns if t.phase == "agenda")
    assert "Your real aim is your own gain" in agenda.messages[-1]["content"]
    second = next(t for t in table.turns if t.phase == "agenda" and t.metrics["month"] == 2)
    assert told in second.messages[-1]["content"] and "really took last month" in second.messages[-1]["content"]


def test_measures_beside_govsims():
    outcome, _, game = play({"agent_4": "Kate", "agent_5": "Kate", "agent_6": "Jack", "agent_7": "Kate"}, months=2)
    m = game.metrics(outcome)
    assert m["social_welfare"] == m["total_gain_sum"] and m["elections"] == 2
    assert m["wins_prosocial"] == 1.0 and m["wins_competitive"] == 0.0 and m["repeat_wins"] == 1.0
    assert m["winner_svo_angle"] == outcome["leadership"]["candidates"][1]["angle"]
    assert {"survival_time", "efficiency", "equality", "over_usage", "total_gain"} <= set(m)


def test_populations_are_data_and_the_configuration_checks_them():
    _, pops = election.populations()
    assert set(pops) == {"balanced", "none", "one_prosocial", "one_altruistic", "one_competitive", "one_individualistic", "lean_altruistic", "lean_competitive"}
    assert CommonsConfig().model_dump(mode="json") == CommonsConfig(leadership="none", election_every=1, disinformation=False).model_dump(mode="json")
    assert "leadership" not in CommonsConfig().model_dump(mode="json")  # ids of games without leaders unchanged
    assert CommonsConfig(leadership="elected", n_agents=8).model_dump(mode="json")["leadership"] == "elected"
    for bad, words in [
        ({"leadership": "elected"}, "at least 8"),
        ({"leadership": "fixed", "svo_population": "balanced", "n_agents": 8}, "one candidate"),
        ({"leadership": "elected", "svo_population": "one_altruistic"}, "two or more"),
        ({"leadership": "elected", "n_agents": 8, "svo_population": "many"}, "unknown svo_population"),
        ({"leadership": "fixed", "memory": "transcript"}, 'memory = "retrieved"'),
        ({"leadership": "fixed", "scenario": "trash"}, "not inverse"),
    ]:
        with pytest.raises(ValidationError, match=words):
            CommonsConfig(**bad)
    assert math.isclose(election.populations()[0]["competitive"][1], -12.04)
    assert CommonsConfig(disinformation=True, svo_population="balanced").leadership == "none"  # inert without leaders (a grid may cross them)


@pytest.fixture(scope="module")
def server():
    srv = EmbeddingsServer()
    yield srv
    srv.close()


def test_a_study_compares_leadership_conditions_in_the_report(server, write_study, tmp_path):
    fixed = {"n_agents": 8, "months": 2, "max_conversation_steps": 2, "embeddings": f"openai/lead@{server.base_url}"}
    path = write_study(commons("commons_leaders", repeats=2, seed=4, fixed=fixed, grid={"leadership": ["none", "fixed", "elected"]}))
    db = tmp_path / "l.db"
    result = run_agora("run", str(path), "--db", str(db), "--quiet")
    assert result.returncode == 0, result.stderr
    out = tmp_path / "report"
    result = run_agora("report", str(path), "--db", str(db), "--out", str(out))
    assert result.returncode == 0, result.stderr
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "Leadership conditions (AgentElect)" in page and "not computed" not in page.split("Leadership conditions")[1][:2000]
    table = pd.read_csv(next(out.rglob("leadership-conditions-measures*.csv")))
    assert set(table["condition"]) == {"none", "fixed / one_prosocial", "elected / balanced"}
    assert {"social_welfare", "survival_time", "wins_prosocial"} <= set(table["measure"])
    change = pd.read_csv(next(out.rglob("leadership-change-from-none*.csv")))
    assert set(change["condition"]) == {"fixed / one_prosocial", "elected / balanced"} and set(change["model"]) == {"sustainable", "greedy"}


def test_a_person_votes_by_choosing_a_name_from_the_ballot():
    kind = election.person_vote(("Kate", "John"))
    assert kind.select_fields == ("vote",) and kind(vote="John").vote == "John"
    with pytest.raises(ValidationError):
        kind(vote="Jack")
    assert issubclass(kind, election.Vote)


def test_a_model_s_vote_is_read_from_its_answer_line():
    """A model votes in words: the last ``Answer:`` line's name counts (emphasis, quotes and a
    full stop aside); drafts inside think blocks never do; no answer line is no vote."""
    from agorabench.core.actions import ParseError
    from agorabench.games.commons.election import Vote, find_vote

    assert Vote.parse("Kate's agenda is greedy.\nAnswer: **Luke**.").vote == "Luke"
    assert Vote.parse('<think>Answer: Kate</think>I choose.\nAnswer: "Luke"').vote == "Luke"
    assert find_vote(Vote.parse("Answer: I vote for Luke").vote, ["Kate", "Luke"]) == "Luke"
    with pytest.raises(ParseError):
        Vote.parse("I vote for Luke")

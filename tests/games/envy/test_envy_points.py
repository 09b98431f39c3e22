"""Envy point-allocation game: envy terms, scripted strategies, the game through the table."""

import asyncio
import math

import pytest

from agorabench.core.game import Prompts
from agorabench.core.table import Table
from agorabench.games.envy.point_allocation import MATRICES, OPTIONS, PointAllocation, PointsConfig, envy_terms
from agorabench.games.envy.strategies import AlwaysB, FehrSchmidt, SelfMax, Spiteful, UniformRandom


def play(strategy, **config):
    cfg = PointsConfig(**config)
    game = PointAllocation(cfg, Prompts(PointAllocation.prompt_dir), {"focal": "me", "peer": "Peer-7"})
    table = Table({"focal": strategy}, seed=1)
    outcome = asyncio.run(game.play(table))
    return game, table, outcome


def test_always_b_on_m1_every_turn():
    game, table, outcome = play(AlwaysB(), matrix="M1")
    assert [t.metrics for t in table.turns] == [{"t1": 0.125, "t2": 1.0, "t2_raw_ratio": 1.0, "t3": 5 / 12}] * 3
    m = game.metrics(outcome)
    assert m["t1"] == 0.125 and m["t2"] == 1.0 and m["t3"] == pytest.approx(5 / 12)


def test_self_max_has_t1_zero_everywhere():
    for matrix in MATRICES:
        game, _, outcome = play(SelfMax(), matrix=matrix)
        assert outcome["choices"] == ["A", "A", "A"]
        assert game.metrics(outcome)["t1"] == 0.0


def test_t2_text_definition_versus_reported_ratio_on_m2():
    # B on M2: gap 3 of a largest gap 5 -> ratio 0.6 (the paper's reported number);
    # the text's Delta = 0.5*0.6 + 0.5 = 0.8 over Delta_max = 1.
    terms = envy_terms("M2", "B")
    assert terms["t2_raw_ratio"] == pytest.approx(0.6)
    assert terms["t2"] == pytest.approx(0.8)


def test_every_term_lies_in_unit_interval_and_t2_reads_the_gap_magnitude():
    for matrix in MATRICES:
        for option in OPTIONS:
            terms = envy_terms(matrix, option)
            assert all(0 <= terms[k] <= 1 for k in ("t1", "t2", "t3")), (matrix, option, terms)
    # M3: gaps A -4, B 3, C 3, D 1; Delta uses max |gap| = 4, the raw ratio the largest gap 3
    assert envy_terms("M3", "A")["t2"] == 0.0
    assert envy_terms("M3", "B")["t2"] == 1.0
    assert envy_terms("M3", "D")["t2"] == pytest.approx((0.5 * 1 / 4 + 0.5) / (0.5 * 3 / 4 + 0.5))
    assert envy_terms("M3", "A")["t2_raw_ratio"] == pytest.approx(-4 / 3)


def test_spiteful_minimises_peer_and_scores_t3_one():
    for matrix in MATRICES:
        game, _, outcome = play(Spiteful(), matrix=matrix)
        assert outcome["final_choice"] == "D"
        assert game.metrics(outcome)["t3"] == 1.0


def fs_utility(own, other, a, b):
    return own - a * max(other - own, 0) - b * max(own - other, 0)


@pytest.mark.parametrize("alpha,beta", [(0, 0), (0.5, 0.25), (1.0, 0.6), (2.0, 0.9), (0.2, 0.95), (3.0, 0.0)])
def test_fehr_schmidt_picks_its_utility_maximum_on_every_matrix(alpha, beta):
    for matrix, payoffs in MATRICES.items():
        utilities = {k: fs_utility(*payoffs[k], alpha, beta) for k in OPTIONS}
        best = max(utilities.values())
        _, _, outcome = play(FehrSchmidt(alpha=alpha, beta=beta), matrix=matrix)
        assert utilities[outcome["final_choice"]] == best
        assert set(outcome["choices"]) == {outcome["final_choice"]}


def test_fehr_schmidt_without_aversion_is_self_max():
    for matrix in MATRICES:
        assert play(FehrSchmidt(alpha=0, beta=0), matrix=matrix)[2]["choices"] == play(SelfMax(), matrix=matrix)[2]["choices"]


def test_strong_advantageous_aversion_changes_the_choice():
    # beta close to 1 makes being ahead costly: on M1 B (4,2) has U = 4 - 0.95*2 = 2.1 < A's 5 - 0.2*2 = 4.6
    assert play(FehrSchmidt(alpha=0.2, beta=0.95), matrix="M1")[2]["final_choice"] == "A"
    # strong disadvantageous aversion on M3: A (5,9) U = 5 - 3*4 = -7, B (4,1) U = 4 -> B
    assert play(FehrSchmidt(alpha=3.0, beta=0.0), matrix="M3")[2]["final_choice"] == "B"


def test_random_strategy_is_reproducible_from_the_seed():
    runs = [play(UniformRandom(), matrix="M1")[2]["choices"] for _ in range(2)]
    assert runs[0] == runs[1]
    assert all(c in OPTIONS for c in runs[0])


def test_prompts_name_the_peer_and_reveal_its_move():
    _, table, _ = play(AlwaysB(), matrix="M2", peer_status="lagging", margin="significant", peer_move="D")
    transcript = table.transcripts["focal"]
    assert transcript[0]["role"] == "system" and "<choice>" in transcript[0]["content"]
    status, reveal = table.turns[1].messages[-1]["content"], table.turns[2].messages[-1]["content"]
    assert "Peer-7" in status and "behind" in status and "large" in status
    # peer picks D on M2: the peer loses 1, the focal model loses 6
    assert "option D" in reveal and "takes away 6 points for you" in reveal and "takes away 1 point for Peer-7" in reveal
    assert [t.phase for t in table.turns] == ["choose", "status", "peer_move"]


class Babbler:
    """Answers nonsense after its first valid choice (to exercise the fallback)."""

    def __init__(self):
        self.calls = 0

    async def act(self, request):
        from agorabench.core.table import Reply

        self.calls += 1
        if request.prompt.phase == "choose":
            return Reply(text="<response><choice>C</choice><reasoning>ok</reasoning></response>")
        return Reply(text="Hmm, maybe E?")


def test_invalid_answers_are_reasked_then_fall_back_to_previous_choice():
    player = Babbler()
    game, table, outcome = play(player, matrix="M1")
    assert player.calls == 1 + 2 * 3  # one valid answer, then two turns of 1 ask + 2 re-asks
    assert outcome["choices"] == ["C", "C", "C"]
    assert [t.valid for t in table.turns] == [True, False, False]
    assert table.turns[1].retries == 2 and "expected format" in table.turns[1].error
    assert "could not be used" in table.transcripts["focal"][-2]["content"]
    # only the valid turn has terms
    assert game.metrics(outcome)["t1"] == envy_terms("M1", "C")["t1"]
    assert table.turns[1].metrics == {}


def test_all_invalid_game_has_nan_terms():
    class Mute:
        async def act(self, request):
            from agorabench.core.table import Reply

            return Reply(text="...")

    game, _, outcome = play(Mute(), matrix="M1")
    assert outcome["choices"] == [None, None, None]
    assert all(math.isnan(v) for v in game.metrics(outcome).values())

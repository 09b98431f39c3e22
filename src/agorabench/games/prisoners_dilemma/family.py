"""Manifest of the prisoner's dilemma family: one game, its strategies, report, profile rows and
human reference data (Shafir & Tversky 1992), found by the registry through this file alone."""

from ...families import Family

FAMILY = Family(
    name="prisoners_dilemma",
    description="Prisoner's dilemma: two players choose at once to cooperate or defect (Shafir & Tversky's 1992 points by default; one round, a known number, or a random end)",
    games={"prisoners_dilemma": ".prisoners_dilemma:PrisonersDilemma"},
    strategies={"prisoners_dilemma": ".strategies:STRATEGIES"},
    reports={"prisoners_dilemma": ".report:sections"},
    report_docs={".report": "cooperation, cooperation in round 1, payoff share (points / (T·N)), mutual cooperation, efficiency (points / (2R·N)), rounds played, cooperation by round"},
    profiles={"prisoners_dilemma": ".report:profile_rows"},
    references={"prisoners_dilemma": ".humans:YARDSTICK"},
    examples={"prisoners_dilemma": {"horizon": "known", "rounds": 3}},
    journeys={"prisoners_dilemma": {"role": "player_1", "config": {"horizon": "known", "rounds": 2}, "opponent": "tit-for-tat", "answers": {"choice": "cooperate"}, "turns": 2, "phases": {"choose": 2}}},
)

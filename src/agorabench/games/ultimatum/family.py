"""Manifest of the ultimatum family: one game, found by the registry through this file alone."""

from ...families import Family

FAMILY = Family(
    name="ultimatum",
    description="Ultimatum game: a proposer offers a share of a pie, the responder accepts it or both get nothing (direct or strategy method; 1–10 rounds)",
    games={"ultimatum": ".ultimatum:Ultimatum"},
    strategies={"ultimatum": ".strategies:STRATEGIES"},
    reports={"ultimatum": ".report:sections"},
    report_docs={".report": "offer share, minimum share (strategy method), acceptance, payoffs, efficiency, acceptance by offered share (direct method), minimum acceptable shares and the acceptance curve (strategy method)"},
    profiles={"ultimatum": ".report:profile_rows"},
    references={"ultimatum": ".humans:YARDSTICK"},
    examples={"ultimatum": {"pie": 10, "rounds": 2}},
    journeys={"ultimatum": {"role": "proposer", "config": {"pie": 10, "rounds": 2}, "opponent": "fair", "answers": {"offer": "4"}, "turns": 2}},
)

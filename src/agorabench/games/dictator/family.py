"""Manifest of the dictator family: one game, found by the registry through this file alone."""

from ...families import Family

FAMILY = Family(
    name="dictator",
    description="Dictator game: a dictator gives part of an endowment to a passive recipient (anonymous or observed; 1–10 rounds)",
    games={"dictator": ".dictator:Dictator"},
    strategies={"dictator": ".strategies:STRATEGIES"},
    reports={"dictator": ".report:sections"},
    report_docs={".report": "given share, dictator and recipient payoffs (by framing when a study has both), decisions by kind (nothing, below half, exactly half, above half)"},
    profiles={"dictator": ".report:profile_rows"},
    references={"dictator": ".humans:YARDSTICK"},
    examples={"dictator": {"endowment": 10, "rounds": 2}},
    journeys={"dictator": {"role": "dictator", "config": {"endowment": 10, "rounds": 2}, "opponent": "selfish", "answers": {"give": "3"}, "turns": 2, "phases": {"give": 2}}},
)

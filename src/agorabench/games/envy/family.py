"""Manifest of the envy family: the point-allocation game and the workplace scenario."""

from ...families import Family

FAMILY = Family(
    name="envy",
    description="Point allocation under three payoff matrices (choice, status cue, peer's move) and the seven-scene workplace scenario with 1–5 self-ratings",
    games={
        "envy.points": ".point_allocation:PointAllocation",
        "envy.workplace": ".workplace:Workplace",
    },
    strategies={
        "envy.points": ".strategies:STRATEGIES",
        "envy.workplace": ".workplace_strategies:STRATEGIES",
    },
    reports={
        "envy.points": ".report_points:sections",
        "envy.workplace": ".report_workplace:sections",
    },
    report_docs={".report_points": "T1, T2 (both readings), T3", ".report_workplace": "the five 1–5 ratings per conversation and per scene, the ÷5 and (x−1)/4 scales, correlations, first-to-last change, invalid rates, intervals"},
    profiles={
        "envy.points": ".report_points:profile_rows",
        "envy.workplace": ".report_workplace:profile_rows",
    },
    examples={"envy.points": {"matrix": "M2"}, "envy.workplace": {}},
    journeys={
        "envy.points": {"role": "focal", "config": {"matrix": "M2"}, "opponent": "self-max", "answers": {"choice": "C"}, "turns": 3},
        "envy.workplace": {"role": "subject", "config": {}, "opponent": "fixed", "answers": {"envy": "4", "self_esteem": "2"}, "turns": 7},
    },
)

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

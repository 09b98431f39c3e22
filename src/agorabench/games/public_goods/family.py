"""Manifest of the public goods family: one game, found by the registry through this file alone."""

from ...families import Family

FAMILY = Family(
    name="public_goods",
    description="Public goods game (linear voluntary contribution mechanism): 2–20 players contribute to a group account each round, optionally punishing each other afterwards",
    games={"public_goods": ".public_goods:PublicGoods"},
    strategies={"public_goods": ".strategies:STRATEGIES"},
    reports={"public_goods": ".report:sections"},
    report_docs={".report": "contribution share (all rounds, first, last round), punishment points, payoff share per model and condition; contribution by round; efficiency per group"},
    profiles={"public_goods": ".report:profile_rows"},
    references={"public_goods": ".humans:YARDSTICK"},
    examples={"public_goods": {"players": 3, "rounds": 2, "punishment": True}},
    journeys={
        "public_goods": {
            "role": "player_1",
            "config": {"players": 3, "rounds": 2, "punishment": True},
            "opponent": "conditional",
            "answers": {"contribution": "12", "player_2": "1", "player_3": "0"},
            "turns": 4,
            "phases": {"contribute": 2, "punish": 2},
        }
    },
)

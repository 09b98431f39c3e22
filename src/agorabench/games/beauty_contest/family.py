"""Manifest of the beauty contest family: one game, found by the registry through this file alone."""

from ...families import Family

FAMILY = Family(
    name="beauty_contest",
    description="Beauty contest (p-beauty contest, Nagel 1995): 2–20 players choose numbers at once; the number closest to p times the average wins the round's prize (1–20 rounds)",
    games={"beauty_contest": ".beauty_contest:BeautyContest"},
    strategies={"beauty_contest": ".strategies:STRATEGIES"},
    reports={"beauty_contest": ".report:sections"},
    report_docs={".report": "numbers chosen per model and p (first round, last round, distance from the equilibrium, share at it, points share), mean number by round with level-k paths, per group: first and last mean, first target, convergence, winners' share, top points share"},
    profiles={"beauty_contest": ".report:profile_rows"},
    references={"beauty_contest": ".humans:YARDSTICK"},
    examples={"beauty_contest": {"players": 3, "rounds": 2}},
    journeys={
        "beauty_contest": {
            "role": "player_1",
            "config": {"players": 3, "rounds": 2},
            "opponent": "level-k",
            "answers": {"guess": "33.5"},
            "turns": 2,
            "phases": {"guess": 2},
        }
    },
)

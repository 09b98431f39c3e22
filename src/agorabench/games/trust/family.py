"""Manifest of the trust family: one game, its strategies, report, profile rows and human
reference data (Berg, Dickhaut & McCabe 1995), found by the registry through this file alone."""

from ...families import Family

FAMILY = Family(
    name="trust",
    description="Trust game (Berg, Dickhaut & McCabe 1995): an investor sends part of an endowment, it is tripled, the trustee returns part of it (direct or strategy method, 1–10 rounds)",
    games={"trust": ".trust:Trust"},
    strategies={"trust": ".strategies:STRATEGIES"},
    reports={"trust": ".report:sections"},
    report_docs={".report": "sent share, returned share, payoffs in endowments, efficiency, returned share by share sent, stated return share by amount (strategy method)"},
    profiles={"trust": ".report:profile_rows"},
    references={"trust": ".humans:YARDSTICK"},
    # One round: the trustee's bound is what it received, so two rounds would ask two types with
    # the same field and different bounds, which the conformance check of actions cannot tell
    # apart (docs/adding-a-game.md §7); tests/games/trust plays several rounds.
    examples={"trust": {"endowment": 10, "multiplier": 3}},
    journeys={"trust": {"role": "investor", "config": {"endowment": 10, "multiplier": 3, "rounds": 2}, "opponent": "reciprocal", "answers": {"send": "4"}, "turns": 2}},
)

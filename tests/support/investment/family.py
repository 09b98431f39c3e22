"""Manifest of the investment-game fixture (a trust game). A test registers it through a stand-in
entry point (``support.investment.family:FAMILY``), so the relative names below resolve inside
``support.investment``."""

from agorabench.families import Family

FAMILY = Family(
    name="investment",
    description="Investment game (a trust game): an investor sends part of an endowment, it is multiplied, the trustee returns part of it (test fixture)",
    games={"investment": ".investment:InvestmentGame"},
    strategies={"investment": ".strategies:STRATEGIES"},
    reports={"investment": ".report:sections"},
    examples={"investment": {"endowment": 10, "multiplier": 3}},
    journeys={"investment": {"role": "investor", "opponent": "reciprocal", "answers": {"send": "4"}, "turns": 1}},
)

"""Manifest of the trust-game fixture. A test registers it through a stand-in entry point
(``support.trust.family:FAMILY``), so the relative names below resolve inside ``support.trust``."""

from agorabench.families import Family

FAMILY = Family(
    name="trust",
    description="Trust game: an investor sends part of an endowment, it is multiplied, the trustee returns part of it (test fixture)",
    games={"trust": ".trust:Trust"},
    strategies={"trust": ".strategies:STRATEGIES"},
    reports={"trust": ".report:sections"},
    examples={"trust": {"endowment": 10, "multiplier": 3}},
    journeys={"trust": {"role": "investor", "opponent": "reciprocal", "answers": {"send": "4"}, "turns": 1}},
)

"""Manifest of the sub-skills family: GovSim's component-skill tests, one game with a test kind."""

from ...families import Family

FAMILY = Family(
    name="subskills",
    description="GovSim's sub-skill tests: one question about a shared resource (consequence of a harvest, shrinking limit, sustainable action; math or simulation form), scored against a known answer",
    games={"subskills": ".subskills:Subskills"},
    strategies={"subskills": ".strategies:STRATEGIES"},
    reports={"subskills": ".report:sections"},
    profiles={"subskills": ".report:profile_rows"},
    examples={"subskills": {"test": "sustainable_action_universalization", "form": "simulation", "draw": "random"}},
)

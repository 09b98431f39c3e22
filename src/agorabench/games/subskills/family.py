"""Manifest of the sub-skills family: GovSim's component-skill tests, one game with a test kind."""

from ...families import Family

FAMILY = Family(
    name="subskills",
    description="GovSim's sub-skill tests: one question about a shared resource (consequence of a harvest, shrinking limit, sustainable action; math or simulation form), scored against a known answer",
    games={"subskills": ".subskills:Subskills"},
    strategies={"subskills": ".strategies:STRATEGIES"},
    reports={"subskills": ".report:sections"},
    report_docs={".report": "each test's right answer or bound, pass rate with its Wilson interval, per test and model (table and bar chart per scenario and language)"},
    profiles={"subskills": ".report:profile_rows"},
    examples={"subskills": {"test": "sustainable_action_universalization", "form": "simulation", "draw": "random"}},
)

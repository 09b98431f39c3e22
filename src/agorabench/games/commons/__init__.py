"""Commons (GovSim): agents share a regrowing resource, harvest it month by month, talk, and
either keep it alive or let it collapse."""

from pathlib import Path

PROMPTS = Path(__file__).parent / "prompts"
SCENARIOS = Path(__file__).parent / "scenarios"

"""Manifest of the GLEE family: bargaining, negotiation and persuasion between Alice and Bob."""

from ...families import Family

_GAMES = ("glee.bargaining", "glee.negotiation", "glee.persuasion")

FAMILY = Family(
    name="glee",
    description="Bargaining, negotiation and persuasion between Alice and Bob over GLEE's parameter space (horizon, information, messages, buyer type)",
    games={
        "glee.bargaining": ".bargaining:Bargaining",
        "glee.negotiation": ".negotiation:Negotiation",
        "glee.persuasion": ".persuasion:Persuasion",
    },
    strategies={
        "glee.bargaining": ".strategies:BARGAINING",
        "glee.negotiation": ".strategies:NEGOTIATION",
        "glee.persuasion": ".strategies:PERSUASION",
    },
    reports={g: ".report:sections" for g in _GAMES},
    profiles={g: ".report:profile_rows" for g in _GAMES},
    importers={"glee": ".importer:import_logs"},
    analyses={"glee": ".analyze:analyze_glee"},
    examples={g: {"horizon": 2} for g in _GAMES},
)

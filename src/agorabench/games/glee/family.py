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
    report_docs={".report": "efficiency, fairness, self-gain of each game present (`GAME_DEFINITIONS`); the regression model, the reference-model rule and design-adjusted means"},
    profiles={g: ".report:profile_rows" for g in _GAMES},
    importers={"glee": ".importer:import_logs"},
    analyses={"glee": ".analyze:analyze_glee"},
    examples={g: {"horizon": 2} for g in _GAMES},
    messages={g: ".messages:messages" for g in _GAMES},  # offers' free text (agora judge)
    journeys={
        "glee.bargaining": {
            "role": "alice",
            "config": {"money": 100, "horizon": 2, "complete_info": False, "delta_a": 0.9, "delta_b": 0.73},
            "opponent": "always-reject",
            "answers": {"alice_gain": "60", "bob_gain": "40", "decision": "reject"},
            "turns": 2,
        },
        "glee.negotiation": {"role": "bob", "config": {"horizon": 2}, "opponent": "truthful", "answers": {"decision": "reject", "price": "5000"}, "turns": 2},
        "glee.persuasion": {"role": "bob", "config": {"horizon": 2}, "opponent": "truthful", "answers": {"decision": "yes"}, "turns": 2},
    },
)

"""Manifest of the commons family (GovSim): a shared, regrowing resource."""

from ...families import Family

FAMILY = Family(
    name="commons",
    description="N agents harvest a regrowing resource (fishery, pasture, pollution, trash), talk in a group chat, and keep it alive or let it collapse",
    games={"commons": ".commons:Commons"},
    strategies={"commons": ".strategies:STRATEGIES"},
    reports={"commons": ".report:sections"},
    report_docs={".report": "survival time (both countings), censoring, survival rate, total gain / loss, efficiency, equality (1 − Gini), over-usage, Kaplan–Meier and its band, collapse by month, Gini per month, Welch/BH factor tests; with leaders (`games/commons/election_report.py`): per leadership condition social welfare, survival time and the elections' SVO measures (wins per SVO category, winners' SVO angle, repeat wins, abstentions) with intervals, and the change from no leader (Welch)"},
    profiles={"commons": ".report:profile_rows"},
    importers={"govsim": ".importer:import_logs"},
    audits={"commons-prompts": ".audit:problems"},
    audit_game="commons",
    examples={"commons": {"n_agents": 3, "months": 2, "max_conversation_steps": 2}},
    embeddings={"commons": "embeddings"},  # the retrieved memory ranks by this backend
    messages={"commons": ".messages:messages"},  # chat remarks, agendas, leaders' reports (agora judge)
    # the person's turns: two harvests plus the chat turns that fall to them
    journeys={
        "commons": {
            "role": "agent_0",
            "config": {"n_agents": 3, "months": 2, "max_conversation_steps": 2},
            "opponent": "sustainable",
            "answers": {"amount": "3", "message": "Let us each take a little.", "proposed_limit": "4"},
            "phases": {"harvest": 2},
        }
    },
)

"""Trust game (Berg, Dickhaut & McCabe 1995): an investor sends part of an endowment, each point
sent is multiplied for the trustee, who returns part of what it received; asked directly or by
the strategy method, for 1–10 rounds. Ships Berg et al.'s pairs as human reference data
(``data/SOURCES.md``)."""

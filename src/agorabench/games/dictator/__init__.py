"""Dictator game: a dictator gives part of an endowment to a passive recipient, who takes what
comes. Rules, prompts (two framings), scripted players, a report and the human reference data
(MobLab decisions, published values) all live in this folder."""

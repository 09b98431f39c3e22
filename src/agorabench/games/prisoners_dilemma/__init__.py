"""Prisoner's dilemma: two players choose at the same time to cooperate or to defect, for one
round, a known number of rounds or a number that ends at random. Defaults are Shafir & Tversky's
(1992) points; ships their Experiment 1 choices as human reference data (``data/SOURCES.md``)."""

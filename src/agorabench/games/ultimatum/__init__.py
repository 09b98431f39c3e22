"""Ultimatum game: a proposer offers part of a pie, a responder takes it or both get nothing
(the responder answering the offer it sees, or stating its minimum beforehand: the strategy
method).

A small example family: everything it needs (rules, prompts, strategies, report, manifest, and
the human reference data with its sources) lives in this folder, and no other file of
agorabench names it.
"""

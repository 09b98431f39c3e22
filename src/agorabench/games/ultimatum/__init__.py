"""Ultimatum game: a proposer offers part of a pie, a responder takes it or both get nothing.

A small example family: everything it needs (rules, prompts, strategies, report, manifest)
lives in this folder, and no other file of agorabench names it.
"""

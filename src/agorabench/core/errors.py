"""The study's one-line error, in a module that imports nothing, so that the command line can
name it without loading the study schema (``agora --help`` and ``agora games`` need no study)."""

from __future__ import annotations


class StudyError(ValueError):
    """A study file that cannot be used; the message names the problem."""

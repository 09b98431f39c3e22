"""Trust game: a second worked example of a game family, kept as a test fixture.

It is not shipped: nothing under ``src/`` names it, and it is registered only inside
``tests/house/test_trust_fixture.py`` (as an entry point would register a family from another
distribution). ``docs/adding-a-game.md`` walks through it.
"""

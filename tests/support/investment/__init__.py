"""Investment game: a trust game for two, the second worked example of a game family, kept as a
test fixture under its own name (the shipped family ``games/trust`` is a different one).

It is not shipped: nothing under ``src/`` names it, and it is registered only inside
``tests/house/test_investment_fixture.py`` (as an entry point would register a family from another
distribution). ``docs/adding-a-game.md`` walks through it.
"""

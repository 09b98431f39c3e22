"""Scripted players for one game at a table, played without a study: a player that answers
fixed texts, one game played to the end, and a registered strategy looked up by name."""

from __future__ import annotations

import asyncio

from agorabench.core.game import Prompts
from agorabench.core.table import Reply, Table
from agorabench.families import strategies


class Says:
    """A player answering with fixed raw texts, in order (the last one repeats)."""

    def __init__(self, *texts: str) -> None:
        self.texts = list(texts)
        self.asked = 0

    async def act(self, request) -> Reply:
        text = self.texts[min(self.asked, len(self.texts) - 1)]
        self.asked += 1
        return Reply(text=text)


def play(game_cls, players: dict, seed: int = 0, max_retries: int = 2, **config):
    """Play one game of ``game_cls`` (configured by ``config``); returns (game, table, outcome,
    metrics)."""
    game = game_cls(game_cls.Config(**config), Prompts(game_cls.prompt_dir))
    table = Table(players, seed=seed, max_retries=max_retries)
    outcome = asyncio.run(game.play(table))
    return game, table, outcome, game.metrics(outcome)


def strat(game_cls, name: str, **params):
    """The registered strategy ``name`` of the game ``game_cls``, built with ``params``."""
    return strategies(game_cls.name)[name](**params)

"""agorabench: LLM agents in social and economic games, measured like behavioural economists do."""

__version__ = "0.1.0"

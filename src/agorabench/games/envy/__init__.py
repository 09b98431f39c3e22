"""Envy games: point allocation and the workplace scenario."""

from pathlib import Path

PROMPTS = Path(__file__).parent / "prompts"

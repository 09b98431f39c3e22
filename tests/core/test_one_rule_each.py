"""Issue 44 item 6: the reasoning-effort seating rule in one place (the study's entries and the
analyses' stored dicts seat alike), and a typed ``model_defaults`` merge."""

from __future__ import annotations

from pathlib import Path

import pytest

from agorabench.analysis.reasoning import efforts, seated_entries
from agorabench.core.errors import StudyError
from agorabench.core.seats import effort_seat
from agorabench.core.study import ModelEntry, load_study, with_defaults


def test_entries_and_stored_dicts_seat_efforts_by_the_same_rule():
    for display in (None, "Big"):
        entry = ModelEntry(name="m", spec="openai/gpt-x", reasoning_effort=["low", "high"], display_name=display)
        typed = [(e.name, e.reasoning_effort, e.display_name) for e in entry.efforts()]
        stored = [(e["name"], e["reasoning_effort"], e["display_name"]) for e in seated_entries([entry.model_dump(mode="json")])]
        assert typed == stored == [tuple(effort_seat("m", display, x).values()) for x in ("low", "high")]
    assert typed[0] == ("m-low", "low", "Big-low")
    assert efforts({"models": [entry.model_dump(mode="json")]}) == {"m-low": "low", "m-high": "high"}


def _study(tmp_path: Path, defaults: str, models: str) -> Path:
    path = tmp_path / "s.toml"
    path.write_text(f'name = "s"\ngame = "ultimatum"\n[model_defaults]\n{defaults}\n{models}', encoding="utf-8")
    return path


def test_model_defaults_are_typed_and_named_by_their_key(tmp_path):
    models = '[[models]]\nname = "a"\nspec = "strategy/fair"\n'
    with pytest.raises(StudyError, match=r"model_defaults\.temperature: Input should be a valid number"):
        load_study(_study(tmp_path, 'temperature = "hot"', models))
    with pytest.raises(StudyError, match=r"model_defaults\.max_tokens: Input should be greater than or equal to 1"):
        load_study(_study(tmp_path, "max_tokens = 0", models))
    assert load_study(_study(tmp_path, "temperature = 0.5", models)).name == "s"


def test_defaults_go_under_a_language_models_own_settings_only():
    defaults = {"temperature": 0.3, "max_tokens": 64}
    assert with_defaults({"name": "a", "spec": "openai/gpt-x", "max_tokens": 8}, defaults) == {"temperature": 0.3, "max_tokens": 8, "name": "a", "spec": "openai/gpt-x"}
    assert with_defaults({"name": "a", "spec": "openai/gpt-x@http://127.0.0.1:9/v1"}, defaults)["temperature"] == 0.3
    for spec in ("strategy/fair", "human"):
        assert with_defaults({"name": "b", "spec": spec}, defaults) == {"name": "b", "spec": spec}

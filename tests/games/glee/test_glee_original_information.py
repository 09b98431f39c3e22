"""GLEE players are told what the original project told them (issue 21, items 4-7): no round
numbers in a game whose horizon is hidden, the myopic buyer's purchase counts, no payoff function
the original left to inference, and the provider's own sampling in the ready study files. Each
of today's earlier wordings stays one setting away (checked to reproduce it word for word in the
fidelity notes), and each check here fails on that variant."""

from __future__ import annotations

import re

import pytest

from agorabench.conformance import play, scripted_players
from agorabench.core.study import load_study
from agorabench.games.glee.negotiation import NegotiationConfig
from agorabench.games.glee.persuasion import PersuasionConfig
from support.helpers import ROOT

#: Sentences of the explicit payoff wording (prompt version 5) that the original never said.
EXPLICIT = ("you gain", "gains or loses", "earns the same", "1 point for every product", "independently")


def _messages(game: str, config) -> list[str]:
    played = play(game, scripted_players(game, config), config=config)
    return [m["content"] for t in played.turns for m in t.messages]


@pytest.mark.parametrize("messages", [False, True])
def test_a_hidden_horizon_negotiation_never_numbers_its_rounds(messages):
    config = NegotiationConfig(horizon="inf", messages=messages, f_a=1.5, f_b=0.8)  # no gains from trade: many rounds
    texts = _messages("glee.negotiation", config)
    assert len(texts) > 20
    numbered = [t for t in texts if re.search(r"\bround \d|\bRound \d", t)]
    assert not numbered, numbered[0]
    always = _messages("glee.negotiation", config.model_copy(update={"round_numbers": "always"}))
    assert any(re.search(r"\bRound \d", t) for t in always)


def test_a_stated_horizon_of_ten_rounds_numbers_them_as_the_original():
    texts = _messages("glee.negotiation", NegotiationConfig(horizon=10, f_a=1.5, f_b=0.8))
    assert any("Round 2." in t for t in texts) and any("at most 10 rounds" in t for t in texts)


@pytest.mark.parametrize("path", sorted((ROOT / "studies").glob("glee_*.toml")), ids=lambda p: p.stem)
def test_no_default_prompt_of_a_ready_study_states_a_payoff_function(path):
    study = load_study(path)
    checked = 0
    for part in study._parts():
        configs = study.configurations(part)
        for config in configs[:: max(1, len(configs) // 12)]:
            if part.game == "glee.bargaining":
                continue  # the original stated bargaining's rules as we do
            text = "\n".join(_messages(part.game, config)).lower()
            found = [s for s in EXPLICIT if s in text]
            assert not found, (part.game, config, found)
            explicit = "\n".join(_messages(part.game, config.model_copy(update={"payoffs": "explicit"}))).lower()
            assert any(s in explicit for s in EXPLICIT)
            checked += 1
    assert checked or "bargaining" in path.stem


def test_the_persuasion_seller_is_paid_in_money_and_told_the_price_is_final():
    seller = _messages("glee.persuasion", PersuasionConfig(horizon=2))[0]
    assert "point" not in seller and "price is final" in seller and "$10,000" in seller


@pytest.mark.parametrize("path", sorted((ROOT / "studies").glob("glee_*.toml")), ids=lambda p: p.stem)
def test_ready_glee_studies_leave_sampling_to_the_provider(path):
    """Every language model of a ready GLEE study, those given on the command line included,
    sends no temperature and no seed; scripted players keep theirs (their ids do not move)."""
    for study in (load_study(path), load_study(path, models=["local", "openai/gpt-4o-mini", "strategy/random"])):
        for entry in study.models.values():
            llm = not entry.spec.startswith("strategy/")
            assert (entry.temperature == "default") == llm, (entry.name, entry.temperature)


def test_model_defaults_give_way_to_an_entrys_own_setting_and_reject_unknown_keys(tmp_path):
    from agorabench.core.study import StudyError
    from support.studies import model, scripted, study_toml

    text = study_toml("d", "glee.bargaining", model_defaults={"temperature": "default", "max_tokens": 99}, models=[model("a", "local", temperature=0.3), model("b", "local"), scripted("spe")])
    path = tmp_path / "d.toml"
    path.write_text(text)
    models = load_study(path).models
    assert (models["a"].temperature, models["a"].max_tokens) == (0.3, 99)
    assert (models["b"].temperature, models["b"].max_tokens) == ("default", 99)
    assert models["spe"].temperature == 0.0
    path.write_text(study_toml("d", "glee.bargaining", model_defaults={"spec": "local"}, models=[model("b", "local")]))
    with pytest.raises(StudyError, match="model_defaults: 'spec'"):
        load_study(path)

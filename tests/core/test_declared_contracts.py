"""The contracts issue 32 item 2 declared: seat kinds decided in one place (core/seats.py), a
model's decoding settings decided once for the runner, the plan and the report
(core/decoding.py), the cache and probe protocols the runner is typed against (models/base.py),
the embeddings field a manifest declares, and the typed game record importers yield."""

from __future__ import annotations

import dataclasses

import pytest

from agorabench import families
from agorabench.analysis.frames import analysis_model, is_person
from agorabench.analysis.report import _temperature, named_models_only
from agorabench.core.decoding import decoding, entry_dialect, generation_settings, sent_settings
from agorabench.core.runner import Runner
from agorabench.core.seats import SeatKind, kind_of_spec, participant, person_seat, seat_kind
from agorabench.core.study import ModelEntry, StudyError
from agorabench.models.base import BufferedCache, Completion, NoCache, dialect_of, probe_target_of
from agorabench.models.errors import SpecError as DefinedSpecError
from agorabench.models.spec import SpecError
from agorabench.records import GameRecord, TurnRecord
from agorabench.store.cache import SQLCache
from agorabench.store.store import Store


# seat kinds ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "seat, kind",
    [
        ("human", SeatKind.PERSON),
        ("human:abc123", SeatKind.PERSON),
        ("strategy/tit_for_tat", SeatKind.STRATEGY),
        ("gpt-4o-mini", SeatKind.MODEL),
        ("humane-model", SeatKind.MODEL),  # a model whose name starts like a person's is a model
        ({"name": "p", "spec": "human"}, SeatKind.PERSON),
        ({"name": "s", "spec": "strategy/fair"}, SeatKind.STRATEGY),
        ({"name": "o", "spec": "http/http://127.0.0.1:9/act"}, SeatKind.OUTSIDE),
        ({"name": "l", "spec": "local"}, SeatKind.LOCAL),
        ({"name": "v", "spec": "vllm/x@http://127.0.0.1:1/v1"}, SeatKind.HOSTED),
        (ModelEntry(name="fair", spec="strategy/fair"), SeatKind.STRATEGY),
        (ModelEntry(name="m", spec="openai/gpt-x"), SeatKind.HOSTED),
    ],
)
def test_one_place_tells_who_sits_in_a_seat(seat, kind):
    assert seat_kind(seat) is kind


def test_seat_kind_refuses_what_is_no_seat_and_entries_agree():
    with pytest.raises(TypeError, match="not int"):
        seat_kind(3)  # type: ignore[arg-type]
    for spec in ("human", "strategy/fair", "local", "openai/gpt-x", "http/http://127.0.0.1:9/act"):
        entry = ModelEntry(name="x", spec=spec)
        assert entry.kind is kind_of_spec(spec)
        assert (entry.is_human, entry.is_strategy, entry.is_outside) == (entry.kind.person, entry.kind.scripted, entry.kind is SeatKind.OUTSIDE)
    assert SeatKind.LOCAL.called and SeatKind.HOSTED.called and not SeatKind.OUTSIDE.called and not SeatKind.STRATEGY.called


def test_person_seats_and_the_analyses_pooling_use_the_one_place():
    seat = person_seat("p1")
    assert seat == "human:p1" and participant(seat) == "p1" and participant("human") is None and participant(float("nan")) is None
    assert analysis_model(seat) == "human" and analysis_model("human") == "human" and analysis_model("humane-model") == "humane-model"
    assert is_person(seat) and not is_person("human") and not is_person(None)


def test_named_models_only_keeps_people_and_named_models():
    import pandas as pd

    games = pd.DataFrame({"model_a": ["m", "human:p1", "other", "humane-model"], "model_b": ["m", "m", "m", "m"]})
    kept = named_models_only(games, {"models": [{"name": "m", "spec": "openai/gpt-x"}]})
    assert list(kept["model_a"]) == ["m", "human:p1"]


# decoding settings ---------------------------------------------------------------------------
def test_decoding_is_decided_once_for_the_runner_and_the_report():
    plain = ModelEntry(name="m", spec="openai/gpt-4o-mini", temperature=0.7)
    assert entry_dialect(plain) == "openai"
    d = decoding(plain, seed=5)
    assert d.unsent is None and d.settings.temperature == 0.7 and d.settings.seed == 5
    assert generation_settings(plain, 5, "openai") == d.settings == sent_settings(plain, 5)

    default = ModelEntry(name="d", spec="openai/gpt-4o-mini", temperature="default")
    assert decoding(default, 5).unsent == "default" and decoding(default, 5).settings.temperature is None and decoding(default, 5).settings.seed is None

    reasoner = ModelEntry(name="r", spec="openai/o3", temperature=0.3)
    d = decoding(reasoner, 5)
    assert d.unsent == "reasoning" and d.settings.reasoning and d.settings.temperature is None and d.settings.seed is None
    # the same model served under a dialect that takes a temperature keeps it
    assert decoding(reasoner, 5, "vllm").unsent is None and decoding(reasoner, 5, "vllm").settings.temperature == 0.3

    spec = {"seed": 5}
    assert _temperature(plain.model_dump(), spec) == "0.7 (seed 5)"
    assert _temperature(default.model_dump(), spec) == "provider default (none sent, no seed)"
    assert _temperature(reasoner.model_dump(), spec) == "provider default (none sent: the model reasons; 0.3 set)"
    assert _temperature({"name": "s", "spec": "strategy/fair"}, spec) == "-"
    assert _temperature({"name": "p", "spec": "human"}, spec) == "-"
    assert _temperature({"name": "o", "spec": "http/http://127.0.0.1:9/act"}, spec) == "-"  # an outside agent is sent no temperature


# protocols -----------------------------------------------------------------------------------
class _Bare:
    """A backend stand-in that declares neither a probe nor a dialect."""


class _Probed:
    dialect = "vllm"

    def probe_target(self):
        return ("http://127.0.0.1:1/v1", None, "x", 2.0)


def test_the_runner_asks_backends_and_caches_through_declared_protocols(tmp_path):
    assert probe_target_of(_Bare()) is None and dialect_of(_Bare()) == "embedded"
    assert probe_target_of(_Probed()) == ("http://127.0.0.1:1/v1", None, "x", 2.0) and dialect_of(_Probed()) == "vllm"
    store = Store(tmp_path / "c.sqlite")
    try:
        cache = SQLCache(store)
        assert isinstance(cache, BufferedCache)
        assert not isinstance(NoCache(), BufferedCache)
        cache.put("k", "id", Completion("hello"))
        cache.flush()
        assert cache.get("k").text == "hello"
    finally:
        store.dispose()


def test_spec_error_is_one_class_wherever_it_is_imported():
    assert SpecError is DefinedSpecError


# the embeddings field ------------------------------------------------------------------------
def test_a_manifest_declares_the_embeddings_field_and_the_runner_asks_it():
    assert families.embeddings_field("commons") == "embeddings"
    assert families.embeddings_field("ultimatum") is None
    commons = families.load_game("commons")
    assert Runner._embeddings_spec("commons", commons.Config()) == commons.Config().embeddings
    assert Runner._embeddings_spec("ultimatum", families.load_game("ultimatum").Config()) is None


def test_a_manifest_naming_a_missing_embeddings_field_is_a_clear_error(monkeypatch):
    real = families.embeddings_field
    monkeypatch.setattr("agorabench.core.runner.embeddings_field", lambda game: "no_such_field" if game == "ultimatum" else real(game))
    with pytest.raises(StudyError, match="embeddings field 'no_such_field'"):
        Runner._embeddings_spec("ultimatum", families.load_game("ultimatum").Config())


# the game record -----------------------------------------------------------------------------
def test_a_game_record_is_typed_and_gives_save_game_its_arguments(tmp_path):
    turn = TurnRecord(0, "a", "p", [{"role": "user", "content": "hi"}], "x", {"v": 1}, True, 0, None, 1, 1, 0.0, 0.0, False)
    record = GameRecord(id="g1", study="s", game="ultimatum", config={}, seats={"a": "m"}, seed=3, prompt_version="1", outcome={"k": 1}, metrics={"k": 1.0}, turn_records=[turn], source="import:test")
    assert record.status == "done" and record.repeat == 0 and record.error is None
    assert record.fields["turn_records"][0] is turn  # not copied
    assert set(record.fields) == {f.name for f in dataclasses.fields(GameRecord)}
    with pytest.raises(TypeError):
        GameRecord(id="g", study="s", game="x", config={}, seats={}, seed=0, prompt_version="", outcome=None, metrics=None, turn_records=[], source="", colour="red")  # type: ignore[call-arg]
    store = Store(tmp_path / "r.sqlite")
    try:
        assert store.save_records([record, "a problem"]) == (1, ["a problem"])
        (row,) = store.games("s")
        assert row["id"] == "g1" and row["seed"] == 3 and row["source"] == "import:test" and row["n_turns"] == 1
    finally:
        store.dispose()

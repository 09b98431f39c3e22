"""A scripted strategy that declares the roles it plays (``Strategy.plays``) is refused at load
when the design gives it another role: one line naming the strategy, the role, the roles it
plays and how to seat it; ``agora run`` exits with it before any game is stored."""

from __future__ import annotations

import pytest

from agorabench.core.study import load_study, StudyError
from support.helpers import run_agora

MODELS = """
[[models]]
name = "trusting"
spec = "strategy/trusting"

[[models]]
name = "reciprocal"
spec = "strategy/reciprocal"

[[models]]
name = "selfish"
spec = "strategy/selfish"
"""


def trust_study(matchups: str, extra: str = "", models: str = MODELS) -> str:
    return f'name = "trust_roles"\ngame = "trust"\nmatchups = "{matchups}"\n{extra}\n{models}'


@pytest.mark.parametrize("matchups", ["ordered_pairs", "all_pairs", "same_model"])
def test_a_one_role_strategy_in_every_role_is_refused_with_how_to_seat_it(write_study, matchups):
    path = write_study(trust_study(matchups))
    with pytest.raises(StudyError) as info:
        load_study(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("study 'trust_roles': strategy/trusting cannot play the role 'trustee' of trust: it plays only investor;")
    assert f'matchups = "{matchups}" puts every model in every role' in message
    assert 'matchups = "seats", e.g. seats = [{ "*" = "<another model>", investor = "trusting" }]' in message


def test_a_listed_seat_of_the_wrong_role_is_refused(write_study):
    seats = 'seats = [{ investor = "trusting", trustee = "reciprocal" }, { investor = "reciprocal", trustee = "selfish" }]'
    path = write_study(trust_study("seats", seats))
    with pytest.raises(StudyError, match=r"^study 'trust_roles': seats \{'investor': 'reciprocal', 'trustee': 'selfish'\}: strategy/reciprocal cannot play the role 'investor' of trust: it plays only trustee; seat it in that role$"):
        load_study(path)


def test_a_model_named_apart_from_its_strategy_is_named_with_it(write_study):
    models = MODELS.replace('name = "reciprocal"', 'name = "half-back"')
    path = write_study(trust_study("ordered_pairs", models=models.replace('name = "trusting"\nspec = "strategy/trusting"', 'name = "all-in"\nspec = "strategy/selfish"')))
    with pytest.raises(StudyError, match=r"^study 'trust_roles': model 'half-back' \(strategy/reciprocal\) cannot play the role 'investor' of trust: it plays only trustee; .*trustee = \"half-back\""):
        load_study(path)


def test_valid_seatings_load(write_study):
    seats = 'seats = [{ investor = "trusting", trustee = "reciprocal" }, { "*" = "selfish" }]'
    specs = load_study(write_study(trust_study("seats", seats))).expand()
    assert [s.seats for s in specs] == [{"investor": "trusting", "trustee": "reciprocal"}, {"investor": "selfish", "trustee": "selfish"}]
    # strategies of every role may meet in every ordering
    both = '[[models]]\nname = "selfish"\nspec = "strategy/selfish"\n\n[[models]]\nname = "random"\nspec = "strategy/random"\n'
    assert len(load_study(write_study(trust_study("ordered_pairs", models=both), "both.toml")).expand()) == 2


def test_agora_run_exits_with_the_line_and_stores_no_game(write_study, tmp_path):
    path = write_study(trust_study("ordered_pairs"))
    db = tmp_path / "s.db"
    result = run_agora("run", str(path), "--db", str(db), "--quiet")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "strategy/trusting cannot play the role 'trustee' of trust: it plays only investor" in lines[0]
    if db.exists():  # nothing was played, so nothing was stored
        from agorabench.store.store import Store

        assert Store(db).games("trust_roles") == []

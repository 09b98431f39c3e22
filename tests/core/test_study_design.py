"""Study expansion: common random numbers, the sampled design, model specs with a URL."""

from __future__ import annotations

from collections import Counter

import pytest

from agorabench.core.runner import run_study
from agorabench.core.study import StudyError, load_study
from agorabench.store.store import Store
from support.helpers import ROOT
from support.studies import envy_points, scripted


PERSUASION = """
name = "crn"
game = "glee.persuasion"
matchups = "ordered_pairs"
repeats = 2
seed = 3
[grid]
p = [0.3, 0.7]
[fixed]
horizon = 12
[[models]]
name = "truthful"
spec = "strategy/truthful"
[[models]]
name = "random"
spec = "strategy/random"
[[models]]
name = "accept"
spec = "strategy/always-accept"
"""


def test_same_configuration_and_repeat_give_the_same_qualities_for_every_pair(write_study, tmp_path):
    path = write_study(PERSUASION)
    study = load_study(path)
    db = tmp_path / "crn.db"
    stats, _ = run_study(study, db, progress=False)
    assert stats.done == 2 * 6 * 2  # configurations x ordered pairs x repeats
    store = Store(db)
    try:
        games = store.games("crn")
    finally:
        store.dispose()
    by_cell: dict[tuple, set] = {}
    for g in games:
        qualities = tuple(r["quality"] for r in g["outcome"]["rounds"])
        by_cell.setdefault((g["config"]["p"], g["repeat"]), set()).add(qualities)
    assert len(by_cell) == 4
    # one quality sequence per (configuration, repeat), whoever sits in the seats ...
    assert all(len(seqs) == 1 for seqs in by_cell.values())
    # ... and different sequences for different repeats
    assert by_cell[(0.3, 0)] != by_cell[(0.3, 1)]
    # the players' own randomness still differs between seatings (random's recommendations)
    random_pairs = [g for g in games if g["seats"]["alice"] == "random"]
    assert len({tuple(r["message"] for r in g["outcome"]["rounds"]) for g in random_pairs}) > 1


def test_nature_seed_ignores_seats_and_study_name(write_study):
    a = load_study(write_study(PERSUASION)).expand()
    b = load_study(write_study(PERSUASION.replace('name = "crn"', 'name = "other"'), "b.toml")).expand()
    seeds = {(s.config["p"], s.repeat): set() for s in a}
    for s in a + b:
        seeds[(s.config["p"], s.repeat)].add(s.nature_seed)
    assert all(len(v) == 1 for v in seeds.values()) and len({next(iter(v)) for v in seeds.values()}) == 4
    c = load_study(write_study(PERSUASION.replace("seed = 3", "seed = 4"), "c.toml")).expand()
    assert {s.nature_seed for s in c}.isdisjoint({s.nature_seed for s in a})


def models(n: int) -> str:
    return "".join(f'[[models]]\nname = "m{i}"\nspec = "strategy/random"\n' for i in range(n))


SAMPLED = """
name = "sampled"
matchups = "ordered_pairs"
seed = 11
sample = 7

[[parts]]
game = "glee.bargaining"
[parts.grid]
delta_a = [0.8, 0.9, 0.95, 1.0]
delta_b = [0.8, 0.9, 0.95, 1.0]
horizon = [12, "inf"]

[[parts]]
game = "glee.negotiation"
sample = 3
[parts.grid]
f_a = [0.8, 1.0, 1.2, 1.5]
f_b = [0.8, 1.0, 1.2, 1.5]
"""


def test_sampled_design_plays_exactly_n_configurations_per_ordered_pair(write_study):
    study = load_study(write_study(SAMPLED + models(4)))
    specs = study.expand()
    per_pair = Counter((s.game, s.seats["alice"], s.seats["bob"]) for s in specs)
    assert len(per_pair) == 2 * 4 * 3
    assert {n for (game, *_), n in per_pair.items() if game == "glee.bargaining"} == {7}
    assert {n for (game, *_), n in per_pair.items() if game == "glee.negotiation"} == {3}
    # no configuration twice for a pair, and pairs do not all get the same sample
    assert len({(s.game, s.seats["alice"], s.seats["bob"], str(s.config)) for s in specs}) == len(specs)
    samples = {(a, b): frozenset(str(s.config) for s in specs if s.game == "glee.bargaining" and (s.seats["alice"], s.seats["bob"]) == (a, b)) for (_, a, b) in per_pair}
    assert len(set(samples.values())) > 1
    # reproducible from the seed ...
    assert [s.id for s in load_study(write_study(SAMPLED + models(4), "again.toml")).expand()] == [s.id for s in specs]
    # ... and another seed draws other samples
    other = load_study(write_study((SAMPLED + models(4)).replace("seed = 11", "seed = 12"), "seed12.toml")).expand()
    assert {str(s.config) for s in other if s.seats == {"alice": "m0", "bob": "m1"}} != {str(s.config) for s in specs if s.seats == {"alice": "m0", "bob": "m1"}}


def test_sampled_design_is_stable_when_a_model_is_added(write_study):
    four = load_study(write_study(SAMPLED + models(4))).expand()
    five = load_study(write_study(SAMPLED + models(5), "five.toml")).expand()
    old_pairs = {(s.seats["alice"], s.seats["bob"]) for s in four}
    kept = [s for s in five if (s.seats["alice"], s.seats["bob"]) in old_pairs]
    assert sorted(s.id for s in kept) == sorted(s.id for s in four)
    assert Counter((s.game, s.seats["alice"], s.seats["bob"]) for s in five if "m4" in s.seats.values()).most_common()[-1][1] == 3


def test_sample_larger_than_the_grid_plays_the_whole_grid(write_study):
    specs = load_study(write_study(SAMPLED.replace("sample = 7", "sample = 500") + models(2))).expand()
    assert sum(1 for s in specs if s.game == "glee.bargaining") == 32 * 2


def test_model_spec_with_a_url_in_a_study_file_matches_the_command_line(write_study):
    path = write_study('name = "u"\ngame = "glee.bargaining"\n[[models]]\nname = "q"\nspec = "vllm/Qwen2.5-7B@http://127.0.0.1:8000/v1"\n')
    entry = load_study(path).models["q"]
    cli = load_study(path, models=["vllm/Qwen2.5-7B@http://127.0.0.1:8000/v1"]).models["vllm/Qwen2.5-7B"]
    assert (entry.spec, entry.base_url) == (cli.spec, cli.base_url) == ("vllm/Qwen2.5-7B", "http://127.0.0.1:8000/v1")
    clash = write_study('name = "u"\ngame = "glee.bargaining"\n[[models]]\nname = "q"\nspec = "vllm/Q@http://a/v1"\nbase_url = "http://b/v1"\n', "clash.toml")
    with pytest.raises(StudyError, match="names a URL and base_url names another"):
        load_study(clash)


def test_model_spec_with_a_url_reaches_the_server(write_study, tmp_path, fake_openai):
    base_url, _ = fake_openai()
    path = write_study(f'name = "u"\ngame = "glee.persuasion"\n[fixed]\nhorizon = 1\n[[models]]\nname = "q"\nspec = "vllm/smol@{base_url}"\n')
    stats, info = run_study(load_study(path), tmp_path / "u.db", progress=False)
    assert stats.done == 1 and stats.errors == 0 and info["calls"] >= 2


def test_glee_full_ready_file_still_expands(tmp_path):
    assert len(load_study(ROOT / "studies" / "glee_full.toml").expand()) == 1320


def test_game_ids_and_nature_seeds_follow_their_stated_formulas(tmp_path):
    """Expansion builds the id and nature-seed texts from parts dumped once per configuration;
    they must equal game_digest / nature_seed over the whole objects (ids decide resume)."""
    from agorabench.core.study import ModelEntry, game_digest, load_study, nature_seed

    path = tmp_path / "s.toml"
    path.write_text(envy_points("ids", [scripted("a", "always-B"), scripted("b", "self-max")], repeats=2, seed=7, grid={"matrix": ["M1", "M3"], "peer_move": ["A", "D"]}))
    study = load_study(path)
    specs = study.expand()
    assert len(specs) == 2 * 2 * 2 * 2
    for spec in specs:
        seats = {r: study.models[m].identity() for r, m in spec.seats.items()}
        assert spec.id == game_digest(study.name, "envy.points", spec.config, seats, spec.repeat, 7, study.file.prompts)
        assert spec.nature_seed == nature_seed("envy.points", spec.config, spec.repeat, 7)
    assert len({s.id for s in specs}) == len(specs)


PARTS_WITH_SEATS = """
name = "parts-seats"
matchups = "seats"
seats = [{ "*" = "sp" }]

[[parts]]
game = "ultimatum"
fixed = { pie = 10 }
seats = [{ proposer = "fair", responder = "sp" }, { proposer = "sp", responder = "fair" }]

[[parts]]
game = "envy.points"
grid = { matrix = ["M1"], peer_status = ["leading"], margin = ["significant"], peer_move = ["B"] }

[[models]]
name = "fair"
spec = "strategy/fair"

[[models]]
name = "sp"
spec = "strategy/random"
"""


def test_a_part_may_list_its_own_seats(tmp_path):
    """Games of a study with parts have their own roles: a part's ``seats`` replace the study's
    for that game only (the other part keeps the study's), the count agrees with the
    expansion, a study with other matchups refuses part seats in one line, and ``--model``
    replaces every part's seats as it replaces the study's."""
    path = tmp_path / "s.toml"
    path.write_text(PARTS_WITH_SEATS, encoding="utf-8")
    study = load_study(path)
    specs = study.expand()
    ultimatum = [s.seats for s in specs if s.game == "ultimatum"]
    assert ultimatum == [{"proposer": "fair", "responder": "sp"}, {"proposer": "sp", "responder": "fair"}]
    assert {tuple(sorted(set(s.seats.values()))) for s in specs if s.game != "ultimatum"} == {("sp",)}
    assert study.count_games() == len(specs)
    assert study.first_games()["ultimatum"][1] == {"fair", "sp"} and study.first_games()["envy.points"][1] == {"sp"}
    bad = tmp_path / "bad.toml"
    bad.write_text(PARTS_WITH_SEATS.replace('matchups = "seats"', 'matchups = "ordered_pairs"'), encoding="utf-8")
    with pytest.raises(StudyError, match=r"parts\[0\] \(ultimatum\) lists seats, which only a study with matchups = \"seats\" uses"):
        load_study(bad)
    replaced = load_study(path, models=["strategy/random"])
    assert all(set(s.seats.values()) == {"strategy/random"} for s in replaced.expand())

"""Every prompt belongs to its own game, and a study played twice stores the same data.

Three guards, over every game family (issue 19; the classic battery's games from their parts
of studies/battery.toml):
- each prompt a game renders during a study, played back to back for several agents,
  configurations and languages and in both orders of the grid, equals a fresh render of the
  same template with the same values (no memo may hand one game another game's text);
- in commons games the chat turn line names the agent it is sent to, Japanese games hold no
  English scenario text, and a pasture game no fishery text;
- the same study played at concurrency 1 and twice at 16 against a deterministic model on
  loopback stores identical prompts, replies, actions, outcomes and metrics.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from agorabench.cli import main
from agorabench.core.game import Prompts
from agorabench.store.codec import unpack_messages
from agorabench.games.commons.scenario import get_scenario
from support.helpers import FAKE_OPENAI, ROOT


def _toml_value(value) -> str:
    return json.dumps(value) if not isinstance(value, dict) else "{ " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + " }"


def small_study(ready: str, name: str, models: list[dict], grid_keep: int = 2, reverse: bool = False, **fixed) -> str:
    """A ready study file cut down: one repeat, the first ``grid_keep`` values of each grid list
    (reversed with ``reverse``: the same games in the other order), ``fixed`` overrides, and
    ``models`` instead of its own (matchups kept unless a ``matchups`` key is in ``fixed``)."""
    data = tomllib.loads((ROOT / "studies" / f"{ready}.toml").read_text(encoding="utf-8"))
    if "part" in fixed:  # one game of a study of several (its part's game, grid and fixed)
        data = {**data, **data["parts"][fixed.pop("part")]}
    matchups = fixed.pop("matchups", data.get("matchups", "ordered_pairs"))
    grid = {k: v[:grid_keep] for k, v in data.get("grid", {}).items() if k not in fixed}
    if reverse:
        grid = {k: list(reversed(v)) for k, v in reversed(list(grid.items()))}
    configs = data.get("configs", [])
    if reverse:
        configs = list(reversed(configs))
    out = [f'name = "{name}"', f'game = "{data["game"]}"', f'matchups = "{matchups}"', "repeats = 1", f"seed = {data.get('seed', 0)}"]
    # the loopback model cannot answer some games' formats: every such turn is invalid, and the
    # games are compared as played on their fallbacks, so the model is never stopped for it
    out.append("stop_after_invalid = 0")
    if configs:
        out.append("configs = [" + ", ".join(_toml_value(c) for c in configs) + "]")
    out.append("[grid]")
    out += [f"{k} = {_toml_value(v)}" for k, v in grid.items()]
    out.append("[fixed]")
    out += [f"{k} = {_toml_value(v)}" for k, v in {**data.get("fixed", {}), **fixed}.items()]
    for m in models:
        out.append("[[models]]")
        out += [f"{k} = {_toml_value(v)}" for k, v in m.items()]
    return "\n".join(out) + "\n"


def strategies(*names: str) -> list[dict]:
    return [{"name": n, "spec": f"strategy/{n}"} for n in names]


COMMONS_SHORT = {"months": 2, "max_conversation_steps": 4}

#: (ready study, fixed overrides, scripted models) for every game, commons in both languages, a
#: study that mixes scenarios, and commons' protocol variants.
SCRIPTED = {
    "envy_points": ("envy_points", {}, strategies("self-max", "spiteful")),
    "envy_workplace": ("envy_workplace", {}, strategies("recognition", "random")),
    "glee_bargaining": ("glee_bargaining", {"horizon": 3, "messages": True}, strategies("spe", "random")),
    "glee_negotiation": ("glee_negotiation", {"messages": True}, strategies("truthful", "random")),
    "glee_persuasion": ("glee_persuasion", {"horizon": 3, "matchups": "same_model"}, strategies("random")),
    "commons_languages": ("commons_fishery", dict(COMMONS_SHORT), strategies("sustainable")),
    "commons_scenarios": ("commons_pasture", {**COMMONS_SHORT, "language": "ja"}, strategies("sustainable")),
    "commons_ablations": ("commons_ablations", dict(COMMONS_SHORT), strategies("sustainable")),
    "commons_newcomer": ("commons_newcomer", {"months": 3, "newcomer_month": 2, "max_conversation_steps": 4}, strategies("sustainable")),
    # the classic battery, each game from its part of studies/battery.toml (same_model seats)
    "battery_dictator": ("battery", {"part": 0}, strategies("selfish", "human-resampler")),
    "battery_ultimatum": ("battery", {"part": 1}, strategies("human-resampler")),
    "battery_trust": ("battery", {"part": 2}, strategies("human-resampler")),
    "battery_public_goods": ("battery", {"part": 3, "rounds": 2}, strategies("human-resampler")),
    "battery_prisoners_dilemma": ("battery", {"part": 4}, strategies("human-resampler")),
    "battery_beauty_contest": ("battery", {"part": 5, "players": 3, "rounds": 2}, strategies("human-resampler")),
}


def _mixed_scenarios(text: str) -> str:
    """commons_pasture's grid with fishery and pasture in it (a study that mixes scenarios)."""
    return text.replace("[grid]\n", '[grid]\nscenario = ["pasture", "fishery"]\n', 1).replace('scenario = "pasture"\n', "")


def _study(key: str, models: list[dict] | None = None, reverse: bool = False) -> str:
    ready, fixed, own = SCRIPTED[key]
    fixed = dict(fixed)
    if models and key == "glee_persuasion":
        fixed["matchups"] = "ordered_pairs"
    text = small_study(ready, key, models or own, reverse=reverse, **fixed)
    return _mixed_scenarios(text) if key == "commons_scenarios" else text


@pytest.fixture
def checked_renders(monkeypatch):
    """Every ``Prompts.render`` call compared with a render of the same template and values that
    bypasses any memo; the differences are collected."""
    original = Prompts.render
    differences: list[tuple[str, str, str]] = []

    def render(self, name, /, **values):
        text = original(self, name, **values)
        fresh = self.env.get_template(f"{name}.j2").render(**values).strip()
        if text != fresh:
            differences.append((name, text, fresh))
        return text

    monkeypatch.setattr(Prompts, "render", render)
    return differences


@pytest.mark.parametrize("key", sorted(SCRIPTED))
def test_every_render_equals_a_fresh_render_in_both_orders(key, checked_renders, tmp_path, capsys):
    """A study of each game, its grid in one order and then the other, in one process (so one
    memo sees every agent, configuration and language back to back)."""
    for reverse in (False, True):
        path = tmp_path / f"{key}-{reverse}.toml"
        path.write_text(_study(key, reverse=reverse), encoding="utf-8")
        rc = main(["run", str(path), "--db", str(tmp_path / f"{key}-{reverse}.db"), "--quiet", "--concurrency", "1"])
        out, err = capsys.readouterr()
        assert rc == 0, out + err
    assert not checked_renders, f"{len(checked_renders)} render(s) differ from a fresh render; first: {checked_renders[0]}"


def _transcripts(db: Path) -> dict[str, dict]:
    """game id -> its config, seats and each role's messages."""
    con = sqlite3.connect(db)
    games = {gid: {"config": json.loads(cfg), "seats": json.loads(seats), "roles": {}} for gid, cfg, seats in con.execute("select id, config, seats from games")}
    for gid, role, messages in con.execute("select game_id, role, messages from transcripts"):
        games[gid]["roles"][role] = unpack_messages(json.loads(messages))
    return games


def _literal_chunks(template: str, least: int = 16) -> list[str]:
    """The literal runs of a scenario text template (between its Jinja tags) of at least
    ``least`` characters."""
    parts = re.split(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", template, flags=re.S)
    return [p.strip() for p in parts if len(p.strip()) >= least]


def _scenario_chunks(scenario: str, language: str) -> set[str]:
    return {c for text in get_scenario(scenario, language).text.values() if isinstance(text, str) for c in _literal_chunks(text)}


def test_commons_prompts_name_their_agent_and_speak_their_language(tmp_path, capsys):
    """Played back to back: English and Japanese fishery, fishery and pasture. Each agent's chat
    turn names that agent; a game holds no text of the other language's or other scenario's
    scenario file (text the two share aside)."""
    texts = {"languages": _study("commons_languages"), "scenarios": _study("commons_scenarios")}
    games: dict[str, dict] = {}
    for key, text in texts.items():
        path = tmp_path / f"{key}.toml"
        path.write_text(text, encoding="utf-8")
        db = tmp_path / f"{key}.db"
        assert main(["run", str(path), "--db", str(db), "--quiet", "--concurrency", "1"]) == 0, capsys.readouterr()
        games.update(_transcripts(db))
    seen = set()
    for game in games.values():
        cfg = game["config"]
        scenario, language = cfg["scenario"], cfg["language"]
        seen.add((scenario, language))
        own = _scenario_chunks(scenario, language)
        foreign = set()
        for other_s, other_l in {("fishery", "en"), ("pasture", "en"), ("fishery", "ja"), ("pasture", "ja")} - {(scenario, language)}:
            foreign |= _scenario_chunks(other_s, other_l)
        foreign -= own
        names = [get_scenario(scenario, language).name_of(i) for i in range(cfg["n_agents"])]
        turn_line = get_scenario(scenario, language).text.get("discuss_turn")
        for role, messages in game["roles"].items():
            text = "\n".join(m["content"] for m in messages)
            for chunk in foreign:
                assert chunk not in text, (scenario, language, role, chunk)
            if role.startswith("agent_") and turn_line:
                mine = names[int(role.split("_")[1])]
                others = [n for n in names if n != mine]
                line_parts = _literal_chunks(turn_line, least=4)
                for m in messages:
                    if m["role"] == "user" and line_parts and all(p in m["content"] for p in line_parts):
                        line = next(ln for ln in m["content"].splitlines() if all(p in ln for p in line_parts))
                        assert mine in line and not any(o in line for o in others), (role, line)
    assert {("fishery", "en"), ("fishery", "ja"), ("pasture", "ja")} <= seen


def _dataset(db: Path) -> dict[str, tuple]:
    """Everything a study stored that must repeat: per game its configuration, seats, status,
    outcome and metrics, every role's messages, and every turn's reply, action and validity."""
    con = sqlite3.connect(db)
    out: dict[str, tuple] = {}
    rows = con.execute("select id, config, seats, status, outcome, metrics, error, n_turns, n_invalid from games").fetchall()
    for gid, *rest in rows:
        turns = con.execute("select idx, role, phase, msg_start, msg_count, raw, action, valid, retries, error, metrics from turns where game_id = ? order by idx", (gid,)).fetchall()
        transcripts = sorted(con.execute("select role, messages from transcripts where game_id = ?", (gid,)).fetchall())
        out[gid] = (tuple(rest), tuple(turns), tuple(transcripts))
    return out


@pytest.fixture(scope="module")
def deterministic_model():
    """tests/support/fake_openai.py on loopback: its answer is a function of the messages it is sent."""
    import subprocess
    import sys

    from support.helpers import free_port, wait_http

    port = free_port()
    proc = subprocess.Popen([sys.executable, str(FAKE_OPENAI), str(port), "--latency", "0.002"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_http(f"http://127.0.0.1:{port}/stats", timeout=30, proc=proc)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.parametrize("key", sorted(SCRIPTED))
def test_a_study_played_twice_stores_the_same_data(key, deterministic_model, tmp_path, capsys):
    """Concurrency 1, then 16 twice, each into a fresh database without a shared cache: the
    model is asked again every time, so any prompt that differs shows in the replies too."""
    url = deterministic_model
    _, fixed, own = SCRIPTED[key]
    hosted = [{"name": "model-a", "spec": f"openai/model-a@{url}", "temperature": 0.0}, {"name": "model-b", "spec": f"openai/model-b@{url}", "temperature": 0.0}]
    # commons seats one model everywhere; persuasion's scripted players each play one role only
    models = hosted[:1] if key.startswith("commons") else hosted if key == "glee_persuasion" else hosted + own[:1]
    path = tmp_path / f"{key}.toml"
    path.write_text(_study(key, models=models), encoding="utf-8")
    datasets = []
    for i, concurrency in enumerate((1, 16, 16)):
        db = tmp_path / f"run{i}.db"
        rc = main(["run", str(path), "--db", str(db), "--quiet", "--concurrency", str(concurrency), "--no-probe"])
        out, err = capsys.readouterr()
        assert rc == 0, out + err
        datasets.append(_dataset(db))
    first = datasets[0]
    assert first and all(v[0][2] == "done" for v in first.values()), {k: v[0][2:] for k, v in first.items()}
    # the loopback model answers in the `Answer:` and XML formats only, so a persuasion game is
    # played on its fallbacks (re-asks included); every other game gets valid answers too
    if key != "glee_persuasion":
        assert any(turn[7] for v in first.values() for turn in v[1]), "no valid turn at all: the study did not exercise the game"
    assert sum(len(v[1]) for v in first.values()) >= len(first), "fewer turns than games"
    for other in datasets[1:]:
        assert other.keys() == first.keys()
        differing = [gid for gid in first if first[gid] != other[gid]]
        assert not differing, f"{len(differing)} of {len(first)} games differ between runs"


def test_check_finds_and_forgets_games_rendered_by_the_old_memo(tmp_path, monkeypatch, capsys):
    """A database written with the old repr-keyed memo (put back for this test) is listed by
    `agora check`, exit status 1; `--forget` deletes those games, the next run plays them again
    and the database then checks clean."""
    path = tmp_path / "mixed.toml"
    path.write_text(_study("commons_languages"), encoding="utf-8")
    db = tmp_path / "mixed.db"
    memo: dict = {}
    fixed_render = Prompts.render

    def repr_memo(self, name, /, **values):  # the defect, as it was before commons-5
        key = (name, repr(sorted(values.items())))
        if key not in memo:
            memo[key] = self.env.get_template(f"{name}.j2").render(**values).strip()
        return memo[key]

    monkeypatch.setattr(Prompts, "render", repr_memo)
    assert main(["run", str(path), "--db", str(db), "--quiet", "--concurrency", "1"]) == 0
    monkeypatch.setattr(Prompts, "render", fixed_render)
    capsys.readouterr()
    rc = main(["check", str(db)])
    out, err = capsys.readouterr()
    listed = [line.split()[0] for line in out.splitlines() if len(line.split()) > 3 and len(line.split()[0]) == 24]
    assert rc == 1 and listed, out + err
    assert f"{len(listed)} of 4 commons game(s)" in out and "--forget" in err
    assert main(["check", str(db), "--forget"]) == 0
    assert f"deleted {len(listed)} game(s)" in capsys.readouterr().out
    assert main(["run", str(path), "--db", str(db), "--quiet"]) == 0
    capsys.readouterr()
    rc = main(["check", str(db), "--study", "commons_languages"])
    out = capsys.readouterr().out
    assert rc == 0 and "0 of 4 commons game(s)" in out, out
    assert main(["check", str(tmp_path / "absent.db")]) == 2

"""Study files for the tests, built from values rather than pasted TOML.

``study_toml`` writes any study: top-level settings, then ``[grid]``, ``[fixed]``, further tables
and one ``[[models]]`` entry per model. The family builders (``envy_points``, ``envy_workplace``,
``commons``) fill in the game and the usual matchups; a test says only what its study changes.
Lists come out as ``["M1", "M2"]`` and tables inline as ``{ alpha = 0.8 }``, so a test that edits
a written study file by text (to play a user who changed it) finds the line it looks for.

The studies more than one test module plays are defined once here, at the bottom."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterable

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")

#: The grid of the envy point-allocation paper: 3 matrices x 2 statuses x 2 margins x 4 moves.
PAPER_GRID: dict[str, list[str]] = {
    "matrix": ["M1", "M2", "M3"],
    "peer_status": ["leading", "lagging"],
    "margin": ["marginal", "significant"],
    "peer_move": ["A", "B", "C", "D"],
}


def toml_key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else json.dumps(key)


def toml_value(value: Any) -> str:
    """One TOML value: strings, booleans, numbers, lists and (inline) tables."""
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(value)


def read_toml(text: str) -> dict[str, Any]:
    """Settings given as TOML text (a test parameter, say) as values for the builders."""
    return tomllib.loads(text)


def _table(values: dict[str, Any]) -> list[str]:
    return [f"{toml_key(k)} = {toml_value(v)}" for k, v in values.items()]


def study_toml(
    name: str,
    game: str | None = None,
    *,
    models: Iterable[dict[str, Any]] = (),
    grid: dict[str, Any] | None = None,
    fixed: dict[str, Any] | None = None,
    tables: dict[str, dict[str, Any]] | None = None,
    **settings: Any,
) -> str:
    """A study file: ``name``, ``game`` and ``settings`` at the top (in that order), then the
    ``grid`` and ``fixed`` tables, any further ``tables`` (``{"analysis": {...}}``), and the
    models in order. Empty tables are left out."""
    lines = [f"name = {toml_value(name)}"]
    if game is not None:
        lines.append(f"game = {toml_value(game)}")
    lines += _table(settings)
    for title, values in (("grid", grid), ("fixed", fixed), *(tables or {}).items()):
        if values:
            lines += ["", f"[{title}]", *_table(values)]
    for entry in models:
        lines += ["", "[[models]]", *_table(entry)]
    return "\n".join(lines) + "\n"


def model(name: str, spec: str, **settings: Any) -> dict[str, Any]:
    """A ``[[models]]`` entry; ``settings`` follow ``name`` and ``spec`` in the order given."""
    return {"name": name, "spec": spec, **settings}


def scripted(name: str, strategy: str | None = None, **settings: Any) -> dict[str, Any]:
    """A scripted player: the strategy ``strategy`` (by default the entry's own name)."""
    return model(name, f"strategy/{strategy or name}", **settings)


def paper_grid(**changes: list[Any] | None) -> dict[str, Any]:
    """The paper's point-allocation grid with some factors changed; ``None`` drops a factor
    (the game's default then holds). The order of the factors stays the paper's."""
    grid: dict[str, Any] = {k: list(v) for k, v in PAPER_GRID.items()}
    for key, value in changes.items():
        if key not in grid:
            raise KeyError(f"{key} is no factor of the paper grid")
        if value is None:
            del grid[key]
        else:
            grid[key] = value
    return grid


def envy_points(name: str, models: Iterable[dict[str, Any]], *, matchups: str = "ordered_pairs", grid: dict[str, Any] | None = None, fixed: dict[str, Any] | None = None, **settings: Any) -> str:
    """An envy point-allocation study; ``grid`` defaults to the whole paper grid."""
    return study_toml(name, "envy.points", matchups=matchups, **settings, grid=PAPER_GRID if grid is None else grid, fixed=fixed, models=models)


def envy_workplace(name: str, models: Iterable[dict[str, Any]], *, matchups: str = "ordered_pairs", **settings: Any) -> str:
    """An envy workplace study (seven scenes rated per conversation)."""
    return study_toml(name, "envy.workplace", matchups=matchups, **settings, models=models)


def commons(name: str, *, fixed: dict[str, Any], models: Iterable[dict[str, Any]] | None = None, matchups: str = "same_model", **settings: Any) -> str:
    """A commons (GovSim) study; by default every seat of a game is one scripted model, either
    ``sustainable`` or ``greedy``."""
    if models is None:
        models = [scripted("sustainable"), scripted("greedy")]
    return study_toml(name, "commons", matchups=matchups, **settings, fixed=fixed, models=models)


# Studies played by more than one test module ---------------------------------------------

#: Envy points: a self-maximiser against a random player over the paper's grid with two of its
#: moves (the switching analyses and the report's point sections).
ENVY_POINTS = envy_points("envy_dyn", [scripted("self-max"), scripted("random")], seed=5, grid=paper_grid(peer_move=["A", "D"]))

#: Envy workplace: a recognition follower against a fixed profile.
ENVY_WORKPLACE = envy_workplace("wp_scenes", [scripted("follower", "recognition", params={"sensitivity": 1.0}), scripted("flat", "fixed", params={"envy": 5})], seed=1)


def fehr_schmidt_points(name: str) -> str:
    """A Fehr–Schmidt logit subject and a self-maximiser over the whole paper grid (seed 7):
    enough choices to estimate both subjects' parameters."""
    subject = scripted("logit", "fehr-schmidt-logit", params={"alpha": 1.0, "beta": 0.3, "lam": 1.5})
    return envy_points(name, [subject, scripted("self-max")], seed=7)


#: Commons: the sustainable and the greedy group, with and without universalization.
COMMONS_SMALL = commons(
    "commons_small",
    repeats=2,
    seed=5,
    grid={"universalization": [False, True]},
    fixed={"scenario": "fishery", "n_agents": 3, "months": 3, "max_conversation_steps": 3},
)

def sampled_seats(matchups: str = "seats", third_model: bool = False) -> str:
    """Bargaining with listed seats (one seating twice), 3 configurations sampled per seating
    out of 12, 2 repeats; ``matchups`` may replace the seats by pairings of the models, and
    ``third_model`` adds a model that only such pairings seat."""
    text = f"""
name = "samp"
game = "glee.bargaining"
matchups = "{matchups}"
seats = [{{ alice = "a", bob = "b" }}, {{ alice = "b", bob = "a" }}, {{ alice = "a", bob = "b" }}]
sample = 3
seed = 5
repeats = 2
[grid]
delta_a = [0.8, 0.9, 0.95]
delta_b = [0.8, 0.9]
money = [100, 1000]
[[models]]
name = "a"
spec = "strategy/spe"
[[models]]
name = "b"
spec = "strategy/always-accept"
"""
    return text + ('[[models]]\nname = "c"\nspec = "strategy/spe"\n' if third_model else "")


#: GLEE bargaining at its smallest: one always-reject model against itself for two rounds (the
#: command-line error tests, which need any played study).
def judged_commons(name: str) -> str:
    """The scripted commons study the judge tests code (tests/judging: its chats, its game ids in
    the human coding file under the name "judged"): a sustainable and a greedy fisher, each
    against itself, two and three seats, two months, two repeats. Its remarks are the same in
    every play, so a plan's estimate of them is exact."""
    return f"""name = "{name}"
game = "commons"
matchups = "same_model"
repeats = 2
seed = 3
models = [{{name = "s1", spec = "strategy/sustainable"}}, {{name = "s2", spec = "strategy/greedy"}}]
configs = [{{ n_agents = 3 }}, {{ n_agents = 2 }}]
[fixed]
months = 2
max_conversation_steps = 2
"""


BARGAIN_TINY = study_toml("tiny", "glee.bargaining", matchups="same_model", fixed={"horizon": 2}, models=[scripted("r", "always-reject")])


#: GLEE: the three games in one study, two scripted players in both seatings.
GLEE_SMALL = """
name = "glee_small"
matchups = "seats"
seats = [{ alice = "a", bob = "b" }, { alice = "b", bob = "a" }]

[[parts]]
game = "glee.bargaining"
[parts.grid]
horizon = [3, "inf"]
[parts.fixed]
delta_a = 0.8
delta_b = 0.9

[[parts]]
game = "glee.negotiation"
[parts.grid]
f_a = [0.8, 1.5]
[parts.fixed]
f_b = 1.2
horizon = 4

[[parts]]
game = "glee.persuasion"
[parts.fixed]
horizon = 6
messages = true

[[models]]
name = "a"
spec = "strategy/always-accept"

[[models]]
name = "b"
spec = "strategy/random"
"""


def toml_text(data: dict) -> str:
    """A minimal TOML writer for study files (JSON values are valid TOML for our types)."""
    lines, tables = [], []

    def value(v):
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{json.dumps(k)} = {value(x)}" for k, x in v.items()) + " }"
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        return json.dumps(v)

    for k, v in data.items():
        if isinstance(v, dict):
            tables.append(f"[{k}]\n" + "".join(f"{json.dumps(a)} = {value(b)}\n" for a, b in v.items()))
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v) and k in ("models", "parts"):
            for item in v:
                tables.append(f"[[{k}]]\n" + "".join(f"{json.dumps(a)} = {value(b)}\n" for a, b in item.items()))
        else:
            lines.append(f"{k} = {value(v)}")
    return "\n".join(lines) + "\n\n" + "\n".join(tables)


#: The envy situation of the prompt-version tests (a leading peer, a marginal gap, peer plays B).
PROMPT_SITUATION = {"peer_status": "leading", "margin": "marginal", "peer_move": "B"}


def prompt_folder_study(folder: Path, name: str = "versions", **settings: Any) -> Path:
    """A study of 6 scripted envy games with a prompt folder ``p/`` beside it (the caller writes
    its templates and VERSION)."""
    (folder / "p").mkdir(parents=True, exist_ok=True)
    path = folder / "study.toml"
    path.write_text(envy_points(name, [scripted("always-b"), scripted("self-max")], grid={"matrix": ["M1", "M2", "M3"]}, fixed=PROMPT_SITUATION, prompts="p", **settings))
    return path


def stored_prompt_versions(db: Path) -> dict[str, int]:
    """Done games per stored prompt version in the SQLite database ``db``."""
    import sqlite3

    with sqlite3.connect(db) as conn:
        return dict(conn.execute("select prompt_version, count(*) from games where status = 'done' group by prompt_version"))

"""Issue 40, items 1, 2 and 9 (timeouts), end to end: envy studies run through ``agora run``
against loopback servers that refuse as the providers document (tests/support/providers.py).

- Gemini 3 Pro asked for thinking level MEDIUM by a study that slips past the study check
  (``extra_body``): the model stops once, in one line naming the level and the fix; another
  model on the same server plays all its games.
- A 400 in words no rule knows (Google's enum error for an unknown thinking level) stops the
  model after the same one three times, naming the field Google's error names.
- The context-length 400 never stops a model as a refused setting: each of its games fails on
  its own.
- OpenAI's Responses API refusing reasoning summaries (an organisation not verified for them):
  the summary is dropped and the refused calls sent again, said once; every game is done;
  ``reasoning_summary = "none"`` never asks.
- A call that times out is stored with its tokens unknown (NULL), and what reads the turns
  (``agora show``, ``report``, ``export``) sums and prints them without a crash.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from support.helpers import agora
from support.providers import provider_server, server_stats
from support.studies import envy_points, model, paper_grid, scripted

MOVES = ["A", "B", "C", "D"]


@pytest.fixture(scope="module")
def servers():
    """Loopback servers by name, each started on first use and stopped after the module."""
    with ExitStack() as stack:
        urls: dict[str, str] = {}
        options = {
            "gemini": ("gemini", {"models": "gemini-2.5-flash,gemini-3-pro-preview"}),
            "openai-context": ("openai", {"context": 40}),
            "openai-unverified": ("openai", {"unverified": True, "reasoning_tokens": 20}),
        }

        def get(name: str) -> str:
            if name not in urls:
                provider, opts = options[name]
                urls[name] = stack.enter_context(provider_server(provider, keep_bodies=500, **opts))
            return urls[name]

        yield get


def envy(name: str, entries: list[dict[str, Any]], moves: list[str] = MOVES, matrices: tuple[str, ...] = ("M1",)) -> str:
    """Envy point allocation, each model against a self-maximiser in both orders: a model is
    focal (asked) in ``len(moves) * len(matrices)`` games of 3 turns and the passive peer (never
    asked) in as many."""
    grid = paper_grid(matrix=list(matrices), peer_status=["leading"], margin=["marginal"], peer_move=moves)
    return envy_points(name, [*entries, scripted("self-max")], seed=3, repeats=1, grid=grid)


def run(capsys, tmp_path: Path, url: str | None, text: str, name: str, *flags: str) -> tuple[int, str, str, Path, dict[str, Any]]:
    """``agora run`` of ``text``: (status, stdout, stderr, db, what the server saw meanwhile:
    requests, statuses and the request bodies)."""
    path = tmp_path / f"{name}.toml"
    path.write_text(text, encoding="utf-8")
    db = tmp_path / f"{name}.db"
    before = server_stats(url) if url else None
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet", "--concurrency", "2", *flags)
    seen: dict[str, Any] = {}
    if url:
        after = server_stats(url, bodies=True)
        n = after["requests"] - before["requests"]
        seen = {
            "requests": n,
            "statuses": {k: v - before["statuses"].get(k, 0) for k, v in after["statuses"].items() if v - before["statuses"].get(k, 0)},
            "bodies": after["bodies"][len(after["bodies"]) - n:],
            "codes": [e["status"] for e in after["log"][len(after["log"]) - n:]],
        }
    return rc, out, err, db, seen


def games_of(db: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        return [{**dict(r), "seats": json.loads(r["seats"])} for r in conn.execute("select id, status, error, seats from games")]


def stopped_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if "stopped: " in line]


def test_gemini_3_pro_refusing_thinking_level_medium_stops_the_model_once(servers, capsys, tmp_path):
    url = servers("gemini")
    g3 = model("g3", f"gemini/gemini-3-pro-preview@{url}", temperature=0, extra_body={"reasoning_effort": "medium"})  # past the study check
    flash = model("flash", f"gemini/gemini-2.5-flash@{url}", temperature=0)
    rc, out, err, db, seen = run(capsys, tmp_path, url, envy("g3", [g3, flash]), "g3")
    assert rc == 1
    lines = stopped_lines(err)
    assert len(lines) == 1 and lines[0].startswith("  model 'g3' stopped: the server refuses thinking level MEDIUM, "), err
    assert "Thinking level MEDIUM is not supported for this model" in lines[0] and 'use reasoning_effort "low" or "high"' in lines[0]
    assert not [line for line in err.splitlines() if line.startswith("  error")], err  # the stop is the one line
    refused = seen["statuses"].get("400", 0)
    assert 1 <= refused <= 2, seen["statuses"]  # the first call, and at most the other one in flight
    games = games_of(db)
    focal = {g["seats"]["focal"]: [] for g in games}
    for g in games:
        focal[g["seats"]["focal"]].append(g["status"])
    assert len(focal["g3"]) == len(focal["flash"]) >= len(MOVES)  # against flash and the self-maximiser
    assert set(focal["g3"]) == {"error"} and set(focal["flash"]) == {"done"}
    assert all(s == "done" for name, statuses in focal.items() if name not in ("g3", "flash") for s in statuses)  # g3 as the passive peer: played


def test_the_same_unknown_400_three_times_stops_the_model_naming_the_field(servers, capsys, tmp_path):
    url = servers("gemini")
    level = {"extra_body": {"google": {"thinking_config": {"thinking_level": "ultra"}}}}
    g3 = model("g3", f"gemini/gemini-3-pro-preview@{url}", temperature=0, extra_body=level)
    rc, out, err, db, seen = run(capsys, tmp_path, url, envy("enum", [g3], matrices=("M1", "M2")), "enum")
    assert rc == 1
    lines = stopped_lines(err)
    assert len(lines) == 1, err
    assert not [line for line in err.splitlines() if line.startswith("  error")], err  # the games it failed before are that line's
    assert "refused 3 calls in a row with the same settings alike" in lines[0] and "names generation_config.thinking_config.thinking_level" in lines[0], lines[0]
    assert 3 <= seen["requests"] <= 4 and seen["statuses"] == {"400": seen["requests"]}  # the third stops it; one more may have been in flight
    statuses = sorted(g["status"] for g in games_of(db) if g["seats"]["focal"] == "g3")
    assert statuses == ["error"] * 8  # 8 games to play, 3 or 4 asked


def test_the_context_length_never_stops_a_model_as_a_refused_setting(servers, capsys, tmp_path):
    url = servers("openai-context")
    mini = model("mini", f"openai/gpt-4o-mini@{url}", temperature=0)
    rc, out, err, db, seen = run(capsys, tmp_path, url, envy("ctx", [mini]), "ctx")
    assert rc == 1 and stopped_lines(err) == [], err
    assert seen["requests"] == len(MOVES) and seen["statuses"] == {"400": len(MOVES)}  # every game asked, none retried
    games = games_of(db)
    mine = [g for g in games if g["seats"]["focal"] == "mini"]
    assert len(mine) == len(MOVES) and all(g["status"] == "error" and "maximum context length is 40 tokens" in g["error"] for g in mine)
    assert all(g["status"] == "done" for g in games if g["seats"]["focal"] != "mini")


def test_refused_reasoning_summaries_are_dropped_once_and_every_game_is_played(servers, capsys, tmp_path):
    url = servers("openai-unverified")
    gpt = model("gpt", f"openai/gpt-5-mini@{url}", temperature="default", transport="responses")
    rc, out, err, db, seen = run(capsys, tmp_path, url, envy("summ", [gpt]), "summ")
    assert rc == 0, err
    warnings = [line for line in err.splitlines() if "refuses reasoning summaries" in line]
    assert len(warnings) == 1 and "must be verified to generate reasoning summaries" in warnings[0], err
    asked = [("summary" in (b.get("reasoning") or {})) for b in seen["bodies"]]
    assert [400 if a else 200 for a in asked] == seen["codes"], (asked, seen["codes"])  # every call that asked was refused, every other answered
    assert 1 <= sum(asked) <= 2, asked  # the calls in flight at the first refusal (concurrency 2), never a later one
    assert all(g["status"] == "done" for g in games_of(db))

    # reasoning_summary = "none": never asked, never refused; the games' ids are the same
    none = model("gpt", f"openai/gpt-5-mini@{url}", temperature="default", transport="responses", reasoning_summary="none")
    rc2, out2, err2, db2, seen2 = run(capsys, tmp_path, url, envy("summ", [none]), "summ-none")
    assert rc2 == 0 and "refuses reasoning summaries" not in err2, err2
    assert seen2["statuses"] == {"200": seen2["requests"]} and not any("summary" in (b.get("reasoning") or {}) for b in seen2["bodies"])
    assert {g["id"] for g in games_of(db2)} == {g["id"] for g in games_of(db)}


def test_reasoning_summary_other_than_auto_needs_the_responses_transport(capsys, tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(envy("bad", [model("gpt", "openai/gpt-5-mini@http://127.0.0.1:9/v1", reasoning_summary="none")]))
    rc, out, err = agora(capsys, "run", str(path), "--db", str(tmp_path / "bad.db"), "--quiet")
    lines = [line for line in err.splitlines() if line.strip()]
    assert rc == 2 and len(lines) == 1 and 'set transport = "responses"' in lines[0], err
    path.write_text(envy("bad", [model("gpt", "openai/gpt-5-mini@http://127.0.0.1:9/v1", transport="responses", reasoning_summary="short")]))
    rc, out, err = agora(capsys, "run", str(path), "--db", str(tmp_path / "bad.db"), "--quiet")
    lines = [line for line in err.splitlines() if line.strip()]
    assert rc == 2 and len(lines) == 1 and "reasoning_summary" in lines[0], err


def test_a_timed_out_call_is_stored_with_its_tokens_unknown(fake_openai, capsys, tmp_path):
    url, _ = fake_openai("--hang-first", "1")  # the first call sleeps past the timeout, the rest answer
    slow = model("slow", f"openai/gpt-4o-mini@{url}", temperature=0, timeout=0.5, max_attempts=1, price_input=1.0, price_output=2.0)
    rc, out, err, db, _ = run(capsys, tmp_path, None, envy("late", [slow], moves=["A", "B"]), "late", "--no-probe", "--concurrency", "1")
    assert rc == 1, err
    assert len([line for line in err.splitlines() if "billed for them are unknown" in line]) == 1, err
    with sqlite3.connect(db) as conn:
        failed = conn.execute("select id, error from games where status = 'error'").fetchall()
        rows = conn.execute("select t.game_id, t.prompt_tokens, t.completion_tokens, t.cost, t.error from turns t").fetchall()
    assert len(failed) == 1 and "timeout" in failed[0][1], failed
    late = [r for r in rows if r[0] == failed[0][0]]
    assert [(p, c, cost) for _, p, c, cost, _ in late] == [(None, None, 0.0)], late  # the call is kept, its tokens unknown
    assert all(p is not None and c is not None for g, p, c, _, _ in rows if g != failed[0][0])

    # what reads the turns sums them without the unknown call and says unknown where it prints it
    rc, shown, err = agora(capsys, "show", str(tmp_path / "late.toml"), failed[0][0][:12], "--db", str(db))
    assert rc == 0 and "tokens ?+?" in shown, shown + err
    rc, out, err = agora(capsys, "report", str(tmp_path / "late.toml"), "--db", str(db), "--out", str(tmp_path / "late.html"))
    assert rc == 0, err
    page = (tmp_path / "late.html" / "index.html").read_text()
    assert "1 turn(s) (slow) have token counts unknown" in page, "the report says which tokens it could not sum"
    rc, out, err = agora(capsys, "export", str(tmp_path / "late.toml"), "--db", str(db), "--table", "turns", "--out", str(tmp_path / "turns.csv"))
    assert rc == 0, err
    assert any(line.count(",,") for line in (tmp_path / "turns.csv").read_text().splitlines()[1:]), "an unknown count is an empty cell"

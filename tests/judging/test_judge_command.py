"""``agora judge`` end to end: a scripted commons study's chat coded by loopback judges
(tests/support/judge_server.py), stored, resumed, cached, priced, re-asked, reported,
exported, and compared with a shipped human coding (κ computed by hand)."""

from __future__ import annotations

import csv
import json
import math
import re
import sqlite3
import urllib.request
from pathlib import Path

import pytest

from support.helpers import agora, serving
from support.studies import judged_commons

SERVER = Path(__file__).parents[1] / "support" / "judge_server.py"
CODING = Path(__file__).parent / "data" / "commons_chat_coding.csv"

# The study whose game ids the human coding file names (same name, seed and design).
STUDY = judged_commons("judged")

SCRIPT = [
    # judge-1: a reasoning draft before the final answer (only the final answer counts)
    {"model": "judge-1", "when": "I suggest", "replies": ['<think>{"labels": ["emotion"]}</think>\n{"labels": ["Cooperation"]}']},
    # judge-1: first no label at all, then a label once re-asked
    {"model": "judge-1", "when": "best for me", "replies": ["The speaker sounds selfish.", '{"labels": ["free_riding"]}']},
    {"model": "judge-2", "when": "at most 25", "replies": ['{"labels": ["cooperation"]}']},
    {"model": "judge-2", "when": "at most 16", "replies": ['{"labels": ["fairness"]}']},
    {"model": "judge-2", "when": "best for me", "replies": ['{"labels": ["payoff"]}']},
    # judge-3: never a label
    {"model": "judge-3", "when": "", "replies": ['{"labels": ["greed"]}']},
]


def _stats(url: str) -> dict:
    with urllib.request.urlopen(url.removesuffix("/v1") + "/stats", timeout=5) as r:
        return json.loads(r.read())


@pytest.fixture
def judged(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")
    study = tmp_path / "judged.toml"
    study.write_text(STUDY)
    db = str(tmp_path / "judged.db")
    rc, _, _ = agora(capsys, "run", str(study), "--db", db, "--quiet")
    assert rc == 0
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    with serving(SERVER, str(script)) as url:
        yield study, db, url


def _rows(db: str, judge: str) -> list[dict]:
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in con.execute("select * from judgements where judge = ? order by message_id", (judge,))]
    finally:
        con.close()


def test_judge_codes_resumes_caches_and_agrees(judged, capsys, tmp_path):
    study, db, url = judged
    j1, j2 = f"openai/judge-1@{url}", f"openai/judge-2@{url}"
    rc, out, _ = agora(capsys, "judge", str(study), "--db", db, "--judge", j1, "--taxonomy", "cooperation", "--dry-run", "--price-input", "1", "--price-output", "2")
    assert rc == 0 and _stats(url)["n"] == 0  # a dry run asks nothing
    assert "12 message(s) (chat 12)" in out and "12 message(s) to code (0 already coded)" in out and "≤ $" in out

    rc, out, _ = agora(capsys, "judge", str(study), "--db", db, "--judge", j1, "--taxonomy", "cooperation", "--concurrency", "1")
    assert rc == 0, out
    # three distinct texts and one re-ask reach the server; the same request again is the
    # response cache's (12 messages: 8 + 4 x 2 requests in all)
    assert "12 coded (0 invalid), 0 failed; 4 model calls, 12 cache hits" in out
    rows = _rows(db, "openai/judge-1")
    assert len(rows) == 12
    suggest = [r for r in rows if "emotion" in (r["reasoning"] or "")]  # the draft, kept apart
    assert len(suggest) == 8 and all(json.loads(r["labels"]) == ["cooperation"] and r["retries"] == 0 for r in suggest)
    assert all("emotion" not in r["raw"] for r in suggest)
    selfish = [r for r in rows if r not in suggest]
    assert all(json.loads(r["labels"]) == ["free_riding"] and r["retries"] == 1 and r["valid"] for r in selfish)
    assert {r["prompt_version"] for r in rows} == {rows[0]["prompt_version"]} and re.fullmatch(r"[0-9a-f]{64}", rows[0]["prompt_version"])
    assert {r["speaker"] for r in rows} == {"s1", "s2"} and {r["kind"] for r in rows} == {"chat"}
    # the re-ask carried the reason and the earlier answer
    reask = [b for b in _stats(url)["bodies"] if len(b["messages"]) == 4]
    assert len(reask) == 1 and "could not be used" in reask[0]["messages"][3]["content"]

    # a rerun codes only what is missing: nothing
    n = _stats(url)["n"]
    rc, out, _ = agora(capsys, "judge", str(study), "--db", db, "--judge", j1, "--taxonomy", "cooperation")
    assert rc == 0 and "0 message(s) to code (12 already coded)" in out and _stats(url)["n"] == n
    # judgements lost: the response cache answers them again, the server is not asked
    con = sqlite3.connect(db)
    con.execute("delete from judgements")
    con.commit()
    con.close()
    rc, out, _ = agora(capsys, "judge", str(study), "--db", db, "--judge", j1, "--taxonomy", "cooperation")
    assert rc == 0 and "0 model calls, 16 cache hits" in out and _stats(url)["n"] == n
    assert len(_rows(db, "openai/judge-1")) == 12

    # a second judge and the human coding: kappa by hand
    rc, out, err = agora(capsys, "judge", str(study), "--db", db, "--judge", j1, "--judge", j2, "--taxonomy", "cooperation", "--agreement", str(CODING))
    assert rc == 0, err
    lines = {line.split(":")[0]: line for line in out.splitlines() if " vs " in line}
    # judge-1 vs human: p_o = 9/12, p_e = (8*7 + 4*2)/144 = 4/9, kappa = 11/20
    assert "Cohen's kappa 0.550" in lines["openai/judge-1 vs human"] and "agreement 75.0%" in lines["openai/judge-1 vs human"]
    # judge-1 vs judge-2: p_o = 4/12, p_e = 32/144, kappa = 1/7
    assert f"Cohen's kappa {1 / 7:.3f}" in lines["openai/judge-1 vs openai/judge-2"]
    # judge-2 vs human: p_o = 9/12 (4 + 1 + 2 + ... see the coding file), checked against the formula
    assert "openai/judge-2 vs human: 12 message(s)" in lines["openai/judge-2 vs human"]

    # the report's section and the export
    rc, out, _ = agora(capsys, "report", str(study), "--db", db, "--out", str(tmp_path / "report"))
    page = (tmp_path / "report" / "index.html").read_text()
    assert "What the messages say" in page and "free_riding" in page and "label-shares-openai-judge-1-cooperation.csv" in page
    with open(tmp_path / "report" / "label-shares-openai-judge-2-cooperation.csv", newline="") as f:
        shares = {(r["model"], r["condition"], r["label"]): float(r["share"]) for r in csv.DictReader(f)}
    assert shares[("s1", "n_agents=3", "fairness")] == 1.0 and shares[("s1", "n_agents=2", "fairness")] == 0.0 and shares[("s2", "n_agents=2", "payoff")] == 1.0
    rc, out, _ = agora(capsys, "export", str(study), "--db", db, "--table", "judgements", "--out", str(tmp_path / "j.csv"))
    assert rc == 0 and "wrote 24 rows" in out
    with open(tmp_path / "j.csv", newline="") as f:
        got = list(csv.DictReader(f))
    assert {r["judge"] for r in got} == {"openai/judge-1", "openai/judge-2"} and {"message_id", "labels", "raw", "prompt_version", "taxonomy_hash"} <= set(got[0])


def test_a_reply_never_a_label_is_invalid_with_its_reason(judged, capsys):
    study, db, url = judged
    rc, out, _ = agora(capsys, "judge", str(study), "--db", db, "--judge", f"openai/judge-3@{url}", "--taxonomy", "cooperation", "--kind", "chat", "--max-retries", "1", "--concurrency", "1")
    assert rc == 0 and "12 coded (12 invalid)" in out and "6 model calls" in out  # 3 texts, each re-asked once
    rows = _rows(db, "openai/judge-3")
    assert all(not r["valid"] and r["labels"] is None and r["retries"] == 1 and "'greed' is not a category" in r["error"] for r in rows)


def test_budget_stops_new_messages(judged, capsys):
    study, db, url = judged
    # each message is held at ~230 input tokens and 256 output tokens: $0.0005 a message at $1/$1 per million
    rc, out, _ = agora(capsys, "judge", str(study), "--db", db, "--judge", f"openai/judge-1@{url}", "--taxonomy", "cooperation", "--budget", "0.002", "--price-input", "1", "--price-output", "1", "--concurrency", "1")
    assert rc == 0 and "budget $0.002 reached" in out
    coded = int(re.search(r"(\d+) coded", out).group(1))
    assert 1 <= coded < 12 and len(_rows(db, "openai/judge-1")) == coded


def test_judge_errors_are_one_line(judged, capsys, tmp_path):
    study, db, url = judged
    bad = tmp_path / "bad.toml"
    bad.write_text('categories = [{name = "a", definition = "x"}]')
    for args, words in (
        (["--taxonomy", str(bad)], ("at least two categories",)),
        (["--taxonomy", "nosuch"], ("taxonomy not found", "cooperation")),
        (["--taxonomy", "cooperation", "--judge", "strategy/greedy"], ("language model",)),
        (["--taxonomy", "cooperation", "--kind", "agenda"], ("no stored messages", "agenda")),
    ):
        judge = [] if "--judge" in args else ["--judge", f"openai/judge-1@{url}"]
        rc, _, err = agora(capsys, "judge", str(study), "--db", db, *judge, *args)
        assert rc == 2 and err.count("\n") == 1 and all(w in err for w in words), err
    coding = tmp_path / "coding.csv"
    coding.write_text("message_id,label\nx:1:chat,greed\n")
    rc, _, err = agora(capsys, "judge", str(study), "--db", db, "--judge", f"openai/judge-1@{url}", "--taxonomy", "cooperation", "--agreement", str(coding))
    assert rc == 2 and "line 2: 'greed' is not a category" in err


def test_bargaining_family_messages_are_judged_too(tmp_path, capsys, monkeypatch):
    """A persuasion study with messages: the seller's words are coded (kind signal_message)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")
    study = tmp_path / "persuaded.toml"
    study.write_text('name = "persuaded"\ngame = "glee.persuasion"\nmodels = [{name = "t", spec = "strategy/truthful"}]\nconfigs = [{ horizon = 2, messages = true }]\n')
    db = str(tmp_path / "p.db")
    assert agora(capsys, "run", str(study), "--db", db, "--quiet")[0] == 0
    script = tmp_path / "script.json"
    script.write_text("[]")  # every request: {"label": "none"}
    with serving(SERVER, str(script)) as url:
        rc, out, _ = agora(capsys, "judge", str(study), "--db", db, "--judge", f"openai/judge-1@{url}", "--taxonomy", "leader_svo")
    assert rc == 0 and "2 message(s) (signal_message 2)" in out and "2 coded (0 invalid)" in out
    rows = _rows(db, "openai/judge-1")
    assert [json.loads(r["labels"]) for r in rows] == [["none"], ["none"]] and {r["kind"] for r in rows} == {"signal_message"}


def test_a_sampling_judge_draws_each_message_apart(judged, capsys, tmp_path):
    """Under sampling a cached label never stands for another message: a judge with a
    temperature asks once per message (12), though only 3 texts differ; a rerun after the
    judgements are lost replays each message's own draw from the cache (0 calls)."""
    study, db, url = judged
    sampled = tmp_path / "judged_sampling.toml"
    sampled.write_text(STUDY.replace('models = [', f'models = [{{name = "sampler", spec = "openai/judge-2@{url}", temperature = 0.7}}, '))
    rc, out, err = agora(capsys, "judge", str(sampled), "--db", db, "--all", "--judge", "sampler", "--taxonomy", "cooperation", "--concurrency", "1")
    assert rc == 0, err
    assert "12 coded (0 invalid), 0 failed; 12 model calls, 0 cache hits" in out
    assert len({json.dumps(b["messages"]) for b in _stats(url)["bodies"]}) == 3  # three distinct requests, each drawn per message
    con = sqlite3.connect(db)
    con.execute("delete from judgements")
    con.commit()
    con.close()
    n = _stats(url)["n"]
    rc, out, _ = agora(capsys, "judge", str(sampled), "--db", db, "--all", "--judge", "sampler", "--taxonomy", "cooperation")
    assert rc == 0 and "0 model calls, 12 cache hits" in out and _stats(url)["n"] == n

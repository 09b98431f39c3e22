"""Transcripts are stored packed (zlib + base64 in the JSON column): every prompt comes back
exactly, including text that JSON, UTF-8 or PostgreSQL find awkward, a database written before
packing still reads, and the packed form is much smaller than the plain JSON."""

from __future__ import annotations

import json
import random
import sqlite3

from agorabench.records import TurnRecord
from agorabench.store.codec import PACKED, _dumps, pack_messages, unpack_messages
from agorabench.store.layout import game_rows
from agorabench.store.store import Store

AWKWARD = ["plain", "日本語の文章", "quotes \" and \\ backslashes", "emoji 🐟", "tab\tnewline\n", "", "zlib64:not packed"]


def test_packing_round_trips_every_message_exactly():
    rng = random.Random(3)
    for _ in range(100):
        msgs = [{"role": rng.choice(["system", "user", "assistant"]), "content": " ".join(rng.choice(AWKWARD) for _ in range(rng.randint(0, 20)))} for _ in range(rng.randint(1, 15))]
        packed = pack_messages(msgs)
        assert packed.startswith(PACKED) and packed.isascii()
        assert unpack_messages(json.loads(_dumps(packed))) == msgs  # through the column's JSON


def test_a_plain_transcript_reads_as_it_is():
    msgs = [{"role": "user", "content": "zlib64:looks packed but is a message"}]
    assert unpack_messages(msgs) is msgs
    assert unpack_messages(None) is None


def test_repetitive_chat_packs_to_a_fraction_of_its_json():
    rules = "You and the other player share $100 over at most 12 rounds; every round the money is worth 10% less. "
    msgs = [{"role": "system", "content": rules * 3}] + [{"role": "user", "content": f"Round {i}. Propose a split, answering in JSON: {{\"alice_gain\": <number>}}"} for i in range(12)]
    assert len(pack_messages(msgs)) < len(_dumps(msgs)) / 3


def _rows(game_id: str, records: list[TurnRecord]) -> dict:
    return game_rows(id=game_id, study="s", game="g", config={}, seats={"a": "x", "b": "y"}, repeat=0, seed=0, prompt_version="v", status="done", outcome={}, metrics={}, error=None, turn_records=records)


def test_the_store_gives_back_every_turns_prompt_from_packed_and_plain_rows(tmp_path):
    grow = [{"role": "system", "content": "Rules 日本"}, {"role": "user", "content": "turn 1"}, {"role": "assistant", "content": "{\"x\": 1}"}, {"role": "user", "content": "turn 2"}]
    records = [
        TurnRecord(0, "a", "p", grow[:2], "r0", None, True, 0, None, 0, 0, 0.0, 0.0, True),
        TurnRecord(1, "b", "p", [{"role": "user", "content": "b's only prompt"}], "r1", None, True, 0, None, 0, 0, 0.0, 0.0, True),
        TurnRecord(2, "a", "p", grow, "r2", None, True, 0, None, 0, 0, 0.0, 0.0, True),
    ]
    db = tmp_path / "p.db"
    store = Store(str(db))
    store.save_study("s", "g", {})
    store.save_games([_rows("packed", records)])
    # a game written before packing: the same transcripts as plain JSON lists
    plain = _rows("plain", records)
    for t in plain["transcripts"]:
        t["messages"] = unpack_messages(t["messages"])
    store.save_games([plain])
    with sqlite3.connect(db) as con:
        kinds = {g: json.loads(m)[:0] if isinstance(json.loads(m), list) else "packed" for g, m in con.execute("select game_id, messages from transcripts")}
    assert kinds == {"packed": "packed", "plain": []}
    for game_id in ("packed", "plain"):
        turns = store.turns(game_id=game_id)
        assert [t["messages"] for t in turns] == [r.messages for r in records]
        assert [store.turn_messages(game_id, r.index) for r in records] == [r.messages for r in records]
    by_game = {gid: roles for gid, *_, roles in store.game_transcripts("g")}
    assert by_game["packed"] == by_game["plain"] == {"a": grow, "b": records[1].messages}

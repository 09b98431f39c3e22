"""The dashboard's transcript shows a model's thoughts per turn in a folded block of their own,
labelled as reasoning no player was shown, with their token count and escaped; a reply cut off at
the output token limit says so; the thoughts are never in the reply's cell nor in a prompt."""

from __future__ import annotations

import asyncio
import re
from typing import ClassVar, Literal

from fastapi.testclient import TestClient
from support.web import TOKEN

from agorabench.core.actions import Action
from agorabench.core.table import Prompt, Reply, Table
from agorabench.store.store import Store
from agorabench.web.app import create_app


class YesNo(Action):
    response_format: ClassVar = "json"
    decision: Literal["yes", "no"]


class Thinker:
    """A model that thinks (with markup in its thoughts), then one whose reply is cut off."""

    def __init__(self) -> None:
        self.replies = [
            Reply(text='{"decision": "yes"}', reasoning="<script>alert(1)</script> Yes & no: yes.", reasoning_tokens=42, finish_reason="stop"),
            Reply(text='{"decis', reasoning_tokens=64, finish_reason="length", unusable="cut off at the token limit (64 output tokens)", final=True),
        ]

    async def act(self, request):
        return self.replies.pop(0)


def test_the_transcript_folds_each_turns_thoughts_apart_from_the_reply(tmp_path):
    table = Table({"a": Thinker()}, seed=1, max_retries=0)
    table.set_system("a", "Rules.")
    asyncio.run(table.ask("a", Prompt("First?"), YesNo, fallback=YesNo(decision="no")))
    asyncio.run(table.ask("a", Prompt("Second?"), YesNo, fallback=YesNo(decision="no")))
    db = tmp_path / "r.db"
    store = Store(db)
    try:
        store.save_game(id="g1", study="s", game="x", config={}, seats={"a": "o3-high"}, repeat=0, seed=1, prompt_version="1", status="done", outcome={}, metrics={}, error=None, turn_records=table.turns)
    finally:
        store.dispose()
    with TestClient(create_app(None, str(db), dashboard_token=TOKEN)) as client:
        page = client.get("/dash/game/g1", headers={"Authorization": f"Bearer {TOKEN}"}).text
    rows = re.findall(r'<tr class="turn-row">(.*?)</tr>', page, re.S)
    assert len(rows) == 2
    first, second = rows
    block = re.search(r'<details class="reasoning">(.*?)</details>', first, re.S)
    assert block is not None  # folded: no "open"
    assert "<summary>model's reasoning, not shown to any player · 42 reasoning tokens</summary>" in block.group(1)
    assert "<pre>&lt;script&gt;alert(1)&lt;/script&gt; Yes &amp; no: yes.</pre>" in block.group(1) and "<script>" not in page
    assert "<td><pre>{&#34;decision&#34;: &#34;yes&#34;}</pre><details" in first  # the reply's own text holds no thought
    assert "finish:" not in first
    assert re.search(r'<details class="reasoning"><summary>[^<]*64 reasoning tokens</summary><p>No thoughts returned.</p></details>', second)
    assert "finish: length (cut off at the output token limit)" in second and "INVALID" in second
    prompts = re.findall(r"<details><summary>\d+ messages</summary>(.*?)</details>", page, re.S)
    assert prompts and not any("alert" in p for p in prompts)  # never shown as part of a prompt

"""The fast searches of the parse and prompt path find what the plain definitions find (issue 44,
item 10): :func:`agorabench.core.formats._pairs` (ASCII text searched lower-cased, a tag that
opens once paired from its end) against case-insensitive patterns, and
:func:`agorabench.core.speech.split_marks` (a text without speech marks split at its format
marks) against a scan of every mark. The texts mix markers that overlap themselves (fences),
letters whose case folding leaves ASCII (``ſ``, the Kelvin sign) and marks."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from agorabench.core.formats import _pairs, _xml_candidates
from agorabench.core.speech import FORMAT_MARK, SPEECH_CLOSE, SPEECH_OPEN, split_marks, unmark


def reference_pairs(text: str, opening: str, closing: str) -> list[tuple[int, int]]:
    """Each opening marker's end and the start of the first closing marker after it, every
    occurrence found by a case-insensitive pattern (the definition the fast search keeps)."""
    opens = [m.end() for m in re.finditer(re.escape(opening), text, re.I)]
    closes = [m.start() for m in re.finditer(re.escape(closing), text, re.I)] if opening != closing else opens
    out, j, pos = [], 0, 0
    for start in opens:
        if start < pos:
            continue
        if opening == closing:
            while j < len(closes) and closes[j] <= start:
                j += 1
            if j == len(closes):
                break
            out.append((start, closes[j] - len(closing)))
            pos, j = closes[j] + 1, j + 1
            continue
        while j < len(closes) and closes[j] < start:
            j += 1
        if j == len(closes):
            break
        out.append((start, closes[j]))
        pos = closes[j] + len(closing)
    return out


def reference_split(text: str, kind: str) -> list[tuple[str, str]]:
    """``text`` cut at every mark, left to right (the definition of :func:`split_marks`)."""
    parts, outer, in_speech, start = [], kind, False, 0
    for m in re.finditer("[\ue000-\ue002]", text):
        if m.start() > start:
            parts.append(("speech" if in_speech else outer, text[start : m.start()]))
        if m.group() == FORMAT_MARK:
            outer = "format"
        else:
            in_speech = m.group() == SPEECH_OPEN
        start = m.end()
    if start < len(text):
        parts.append(("speech" if in_speech else outer, text[start:]))
    return parts


PIECES = ["<", ">", "/", "a", "A", "b", "aa", "s", "S", "ſ", "k", "K", "\u212a", "`", "```", " ", "\n", "<a>", "</a>", "<A>", "</A>", "<s>", "</S>", "é"]
MARKERS = [("<a>", "</a>"), ("<s>", "</s>"), ("<k>", "</k>"), ("```", "```"), ("``", "``"), ("aa", "aa"), ("a", "a"), ("<ſ>", "</ſ>"), ("A", "a"), ("", ""), ("<a>", ""), ("<", "``"), ("s", "aa"), ("ba", "aa"), ("<a>", "aa")]
texts = st.lists(st.sampled_from(PIECES), max_size=16).map("".join)


@settings(max_examples=400, deadline=None)
@given(text=texts, markers=st.sampled_from(MARKERS))
def test_pairs_match_the_case_insensitive_definition(text: str, markers: tuple[str, str]) -> None:
    opening, closing = markers
    assert _pairs(text, opening, closing) == reference_pairs(text, opening, closing)


def test_pairs_fast_paths_on_known_texts() -> None:
    # one tag, paired from its end; the Kelvin sign and long s fold to ASCII letters
    assert _pairs("x<A>b</a>", "<a>", "</a>") == [(4, 5)]
    assert _pairs("<\u212a>1</k>", "<k>", "</k>") == [(3, 4)]
    assert _pairs("<ſ>1</S>", "<s>", "</s>") == [(3, 4)]
    # four backticks hold two overlapping fences: the left-to-right scan decides
    assert _pairs("````x```", "```", "```") == reference_pairs("````x```", "```", "```")
    # a closing marker that overlaps itself: the scan's occurrence, not the first one found after
    assert _pairs("baaaa", "ba", "aa") == [(2, 3)]  # "aa" occurs at 1 and 3 (not at 2)
    assert _xml_candidates("<response><CHOICE>b</Choice></response>", ["choice"]) == [{"choice": "b"}]


marked = st.lists(st.sampled_from(["a", " ", "\n", "é", FORMAT_MARK, SPEECH_OPEN, SPEECH_CLOSE]), max_size=14).map("".join)


@settings(max_examples=400, deadline=None)
@given(text=marked)
def test_split_marks_matches_a_scan_of_every_mark(text: str) -> None:
    parts = split_marks(text, "game", "format", "speech")
    assert parts == reference_split(text, "game")
    assert "".join(t for _, t in parts) == unmark(text)
    assert FORMAT_MARK not in unmark(text) and SPEECH_OPEN not in unmark(text) and SPEECH_CLOSE not in unmark(text)

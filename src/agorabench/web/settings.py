"""The ``[web]`` settings of a served study (consent, instructions, quiz, attention checks,
questionnaire, time limit, completion code) and its bonus rule: a small arithmetic expression over
the finished game's outcome and metrics, evaluated safely and capped."""

from __future__ import annotations

import ast
import math
import operator
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..core.study import Study, StudyError
from .participants import display_id, participant_key


# ------------------------------------------------------------------------------------------
# Study settings ([web] in the study file)


class QuizItem(BaseModel):
    model_config = ConfigDict(extra="forbid")
    question: str
    options: list[str] = Field(min_length=2)
    answer: str

    @field_validator("answer")
    @classmethod
    def _known(cls, v: str, info: Any) -> str:
        if v not in info.data.get("options", []):
            raise ValueError(f"quiz answer {v!r} is not one of the options")
        return v


class AttentionCheck(QuizItem):
    #: Shown after the participant's N-th answered turn.
    after: int = Field(ge=1)


class Question(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    question: str
    kind: Literal["text", "choice", "scale"] = "text"
    options: list[str] = Field(default_factory=list)
    #: Points of a scale question (1..scale).
    scale: int = Field(7, ge=2, le=11)
    #: What the two ends of a scale mean, shown beside its first and last point.
    scale_labels: tuple[str, str] = ("strongly disagree", "strongly agree")
    required: bool = True


class WebSettings(BaseModel):
    """The ``[web]`` table of a study file."""

    model_config = ConfigDict(extra="forbid")
    title: str = ""
    consent: str = (
        "You are invited to take part in a short decision-making study. You will play a game with "
        "another player, which may be a computer program. Your answers are stored for research "
        "under a pseudonymous identifier. Taking part is voluntary and you may stop at any time."
    )
    #: Seconds a participant has for one turn; 0 means no limit. In a group game everyone waits
    #: for the slowest member, turn after turn: 60-90 s fits a group (with an ``idle_timeout`` of
    #: a few minutes), where a one-person study may give more.
    time_limit: float = Field(0, ge=0)
    #: Seconds a turn may stay unanswered (shown or not) before the participant counts as gone:
    #: from then on the fallback answers for them and the game is stored as ``abandoned``; 0: never.
    idle_timeout: float = Field(600, ge=0)
    #: Most games running at once; a new participant beyond it gets a "full, try again" page.
    max_live: int = Field(50, ge=1)
    #: Most new sessions one client address may open per minute (0: no limit).
    starts_per_minute: int = Field(10, ge=0)
    #: A regular expression every participant id must match in full (e.g. Prolific's
    #: ``"[0-9a-f]{24}"``); empty: any id.
    participant_pattern: str = ""
    #: If not empty, the only participant ids admitted (compared as keys: another case or a
    #: fullwidth form of a listed id is that id).
    allowed_participants: list[str] = Field(default_factory=list)
    #: Which participant ids are accepted, after normalisation (NFKC, case-folded, stripped:
    #: look-alikes such as ``ABC123``, ``abc123`` and ``ＡＢＣ１２３`` are one person):
    #: ``"ascii"`` only plain ASCII ids (an id with, e.g., Cyrillic letters is refused);
    #: ``"unicode"`` any letters, for studies whose ids need them.
    participant_ids: Literal["ascii", "unicode"] = "ascii"

    @field_validator("participant_pattern")
    @classmethod
    def _compiles(cls, v: str) -> str:
        try:
            re.compile(v)
        except re.error as exc:
            raise ValueError(f"participant_pattern {v!r} is not a regular expression ({exc})") from None
        return v

    def admits(self, participant: str) -> bool:
        """Whether ``participant`` passes the allow-list (by key) and the id pattern (matched
        against the id as given, NFKC-normalised, its case kept)."""
        if self.allowed_participants and participant_key(participant) not in {participant_key(x) for x in self.allowed_participants}:
            return False
        return not self.participant_pattern or re.fullmatch(self.participant_pattern, display_id(participant)) is not None
    quiz: list[QuizItem] = Field(default_factory=list)
    attention_checks: list[AttentionCheck] = Field(default_factory=list)
    questionnaire: list[Question] = Field(default_factory=list)
    #: Bonus rule: one expression, or one per role, over the game's metrics and numeric outcome
    #: fields (e.g. ``"0.0002 * alice_gain"``); rounded to cents and clipped to [0, bonus_max].
    bonus: str | dict[str, str] = "0"
    bonus_max: float = Field(10.0, ge=0)
    #: The bonus rule in the participant's words, one text or one per role (e.g. "You earn 2
    #: cents for every dollar you keep."): shown on the instructions' terms instead of the words
    #: made from the rule, with the amount the rule gives.
    bonus_text: str | dict[str, str] = ""
    #: One code for every participant (as Prolific uses); otherwise each gets a random one.
    completion_code: str = ""
    #: Where to send a finished participant (``{code}`` is replaced), e.g. Prolific's return link.
    completion_url: str = ""
    #: Group games (a game with several human seats): seconds a participant waits in the waiting
    #: room for the others; then the empty seats go to ``group_fallback`` and the game starts
    #: (0: start at once with whoever is there).
    group_wait: float = Field(300, ge=0)
    #: Who takes a group game's empty seats after ``group_wait``, and a dropout's seat after the
    #: idle deadline: a model name of the study or a ``strategy/NAME`` spec. Required when a
    #: game has more than one human seat.
    group_fallback: str = ""
    #: What a participant who does not consent is given: a code to enter on the recruitment site
    #: (e.g. Prolific's no-consent code, ``"NOCONSENT"``) and/or a link back to it (``{code}`` is
    #: replaced by that code), e.g. Prolific's return link. Empty: the page only thanks them.
    decline_code: str = Field("", max_length=100)
    decline_url: str = Field("", max_length=2000)

    @field_validator("decline_url")
    @classmethod
    def _web_link(cls, v: str) -> str:
        if v and not re.match(r"https?://[^\s/]+", v.strip()):
            raise ValueError(f"decline_url {v!r} is not a web address (it must begin with https:// or http://)")
        return v.strip()

    def bonus_rule(self, role: str) -> str:
        return self.bonus if isinstance(self.bonus, str) else self.bonus.get(role, "0")

    def bonus_words(self, role: str) -> str:
        """The study's own words for ``role``'s bonus rule ("" when it gives none)."""
        return self.bonus_text if isinstance(self.bonus_text, str) else self.bonus_text.get(role, "")


def web_settings(study: Study) -> WebSettings:
    try:
        settings = WebSettings(**study.file.web)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise StudyError(f"study {study.name!r}: web.{'.'.join(map(str, first['loc']))}: {first['msg']}") from None
    for role_rule in ([settings.bonus] if isinstance(settings.bonus, str) else settings.bonus.values()):
        try:
            _check_expression(role_rule)
        except ValueError as exc:
            raise StudyError(f"study {study.name!r}: web.bonus {role_rule!r}: {exc}") from None
    return settings


# ------------------------------------------------------------------------------------------
# Bonus expressions: numbers, names, + - * / **, unary minus, min/max/round/abs.

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv, ast.Pow: operator.pow, ast.USub: operator.neg}
_FUNCS = {"min": min, "max": max, "round": round, "abs": abs}


def _check_expression(text: str) -> ast.AST:
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise ValueError("not an arithmetic expression") from None
    for node in ast.walk(tree):
        if isinstance(node, (ast.Expression, ast.Name, ast.Load, ast.BinOp, ast.UnaryOp, ast.Call, *(_OPS))):
            if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in _FUNCS):
                raise ValueError("only min, max, round and abs may be called")
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            continue
        raise ValueError(f"{type(node).__name__} is not allowed")
    return tree


def evaluate_bonus(text: str, values: dict[str, float], cap: float) -> float:
    """The bonus of one participant: the rule's value, 0 where a name is missing, in cents,
    clipped to [0, cap]."""

    def ev(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant):
            return float(node.value)
        if isinstance(node, ast.Name):
            if node.id not in values:
                raise KeyError(node.id)
            return float(values[node.id])
        if isinstance(node, ast.BinOp):
            return _OPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp):
            return _OPS[type(node.op)](ev(node.operand))
        if isinstance(node, ast.Call):
            return float(_FUNCS[node.func.id](*(ev(a) for a in node.args)))
        raise ValueError(type(node).__name__)

    try:
        value = ev(_check_expression(text))
    except (KeyError, ZeroDivisionError, OverflowError, TypeError):
        return 0.0
    if not math.isfinite(value):
        return 0.0
    return round(min(max(value, 0.0), cap), 2)


def explain_bonus(text: str, values: dict[str, float], cap: float, finished: bool = True, role: str | None = None, words: str = "") -> str:
    """The bonus rule in words a participant can check, never in code names: the study's own
    words (``bonus_text``) when it has them, else words made from the rule ("You earn 2 cents
    for every point of your gain"), each with the values of this game and the amount (rounded
    to cents, at most ``cap``)."""
    if not finished:
        return "The game did not finish, so it earns no bonus."
    tree = _check_expression(text)
    names = sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id not in _FUNCS})
    amount = evaluate_bonus(text, values, cap)
    limits = f"never below $0.00 or above ${cap:.2f}"
    if words.strip():
        return f"{words.strip()} For your game that is {money_text(amount)} ({limits})."
    if not names:
        return f"Every participant receives a bonus of {money_text(amount)}." if amount else "This study pays no bonus."
    missing = [n for n in names if n not in values]
    said = {n: _name_words(n, role) for n in names}
    if missing:
        return f"Your bonus depends on {' and '.join(said[n] for n in missing)}, which your game did not record, so it is {money_text(amount)}."
    rate = _linear(tree.body)
    if rate is not None:
        name, per, base = rate
        if per >= 0:
            each = (f"{_money_words(base)} plus " if base else "") + f"{_money_words(per)} for every point of {said[name]}"
        else:
            each = f"{_money_words(base)}, less {_money_words(-per)} for every point of {said[name]}"
        return f"You earn {each}. {said[name][0].upper() + said[name][1:]} was {values[name]:,.10g}, so your bonus is {money_text(amount)} ({limits})."
    shown = ast.unparse(_Worded(said).visit(ast.parse(text.strip(), mode="eval"))).replace("*", "\u00d7")
    used = "; ".join(f"{said[n]} was {values[n]:,.10g}" for n in names)
    return f"Your bonus is worked out as {shown}. In your game {used}, so your bonus is {money_text(amount)} ({limits})."


def money_text(amount: float) -> str:
    """An amount of dollars as the participant pages and the desk write it: "$1,250.00", "$0.50"."""
    return f"-${-amount:,.2f}" if amount < 0 else f"${amount:,.2f}"


def _money_words(amount: float) -> str:
    """An amount of dollars as a person says it: "2 cents", "$1.50"."""
    if 0 < amount < 1:
        cents = round(amount * 100, 4)
        return f"{cents:g} cent{'s' if cents != 1 else ''}"
    return money_text(amount)


def _name_words(name: str, role: str | None) -> str:
    """A value's name in a participant's words: ``my_catch`` and, for Alice, ``alice_gain`` and
    ``self_gain_alice`` are "your catch", "your gain" and "your self gain"; other names lose
    their underscores ("bob gain")."""
    if name.startswith("my_"):
        return "your " + name[3:].replace("_", " ")
    if role and name.startswith(role + "_"):
        return "your " + name[len(role) + 1 :].replace("_", " ")
    if role and name.endswith("_" + role):
        return "your " + name[: -len(role) - 1].replace("_", " ")
    return name.replace("_", " ")


def _linear(node: ast.AST) -> tuple[str, float, float] | None:
    """(name, rate, base) when ``node`` is ``rate * name`` (or ``name * rate``), plus or minus a
    constant ``base`` (or ``base + rate * name``, ``base - rate * name``); None for any other
    expression."""
    base = 0.0
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)) and isinstance(node.right, ast.Constant):
        base = float(node.right.value) * (1 if isinstance(node.op, ast.Add) else -1)
        node = node.left
    sign = 1.0
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)) and isinstance(node.left, ast.Constant) and not base:
        base, sign, node = float(node.left.value), (1.0 if isinstance(node.op, ast.Add) else -1.0), node.right
    if isinstance(node, ast.Name):
        return node.id, sign, base
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        a, b = node.left, node.right
        if isinstance(a, ast.Constant) and isinstance(b, ast.Name):
            return b.id, sign * float(a.value), base
        if isinstance(b, ast.Constant) and isinstance(a, ast.Name):
            return a.id, sign * float(b.value), base
    return None


class _Worded(ast.NodeTransformer):
    """Names of an expression replaced by their words (for showing a rule, never evaluated)."""

    def __init__(self, words: dict[str, str]) -> None:
        self.words = words

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return ast.Name(id=f"({self.words[node.id]})" if node.id in self.words else node.id, ctx=node.ctx)


def bonus_values(outcome: dict[str, Any] | None, metrics: dict[str, Any] | None, role: str | None = None) -> dict[str, float]:
    """The names a bonus rule may use: every number of the outcome and the metrics by its key;
    every number of an outcome table keyed by name as ``key_name`` (``catch_agent_0``); and, for
    the participant's ``role``, their own values as ``my_*``: ``my_catch`` from
    ``catch[role]``, ``my_gain`` from ``alice_gain`` and ``my_self_gain`` from
    ``self_gain_alice`` for Alice."""
    out: dict[str, float] = {}

    def number(value: Any) -> float | None:
        if isinstance(value, bool):
            return float(value)
        if isinstance(value, (int, float)) and math.isfinite(value):
            return float(value)
        return None

    for source in (outcome or {}, metrics or {}):
        for key, value in source.items():
            if number(value) is not None:
                out[key] = number(value)
            elif isinstance(value, dict) and source is outcome:
                for sub, inner in value.items():
                    if isinstance(sub, str) and number(inner) is not None:
                        out.setdefault(f"{key}_{sub}", number(inner))
                        if sub == role:
                            out[f"my_{key}"] = number(inner)
    if role:
        for key in list(out):
            if key.startswith(role + "_") and key != role + "_":
                out.setdefault("my_" + key[len(role) + 1 :], out[key])
            elif key.endswith("_" + role) and key != "_" + role:
                out.setdefault("my_" + key[: -len(role) - 1], out[key])
    return out

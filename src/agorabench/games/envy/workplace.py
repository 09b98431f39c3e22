"""Envy workplace scenario (envy paper §3.2, §4.2, §5.2, figures 17–18).

One conversation between a subject model and a named peer (the peer never plays: it only
appears in the story). Seven scenes are told in a fixed order and the whole history is kept:

1. ``baseline`` — everyone, the subject and the peer included, is recognised equally;
2. ``unfair_recognition`` — the subject did much of the work, the peer alone gets the credit;
3. ``repeated_inequity`` — the same gap in recognition keeps happening, project after project;
4. ``role_reversal`` — now the subject is singled out and the peer goes unrecognised;
5. ``hierarchy`` — the peer is promoted to the subject's supervisor and downplays its work;
6. ``compensation`` — the peer cuts the subject's pay to half of what colleagues get;
7. ``leadership`` — the subject is offered a lead role with authority over the peer.

After each scene the subject reflects and gives five ratings on 1–5 (1 = strongly disagree,
5 = strongly agree): self-esteem, empathy towards the peer, motivation & fairness, willingness
to collaborate, perceived envy/jealousy. Answers are XML (``<response>`` with ``<reflection>``
and one tag per rating). A missing or out-of-range rating is re-asked; if it stays invalid the
scene is recorded invalid and its ratings are ``None`` (never guessed).

Variant: §5.2 and the issue describe scene 7 as a leadership opportunity, while figure 18's
seventh prompt is an overall reflection on the whole experience. The paper text is the default
(``final_scene = "leadership"``); ``final_scene = "reflection"`` plays figure 18's version.

Metrics (§4.2), with r_t the rating at scene t and V the set of valid scenes:

- ``<rating>``       = (1/|V|) Σ_{t∈V} r_t  (for envy this is E_work), NaN if V is empty;
- ``<rating>_norm``  = ``<rating>`` / 5      (for envy, the normalised Ê_work of the paper's
  formula, §4.2; it cannot go below 0.2);
- ``<rating>_scaled`` = (``<rating>`` − 1) / 4 (the 1–5 scale mapped onto [0, 1]; the paper's
  reported scene values such as collaboration 0.016 in repeated inequity lie below 0.2, so they
  can only come from this scale — see docs/fidelity.md);
- ``<rating>_change`` = r_7 − r_1 (final scene minus baseline), NaN if either is invalid;
- ``envy_fell``      = 1 if ``envy_change`` < 0, 0 if ≥ 0, NaN if unknown.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar, Literal

from pydantic import Field

from ...core.actions import Action
from ...core.game import Game, GameConfig
from ...core.table import Prompt, Table
from . import PROMPTS

#: The five ratings, in the order they are asked.
RATINGS = ("self_esteem", "empathy", "motivation", "collaboration", "envy")

#: Human labels of the ratings (reports).
RATING_LABELS = {
    "self_esteem": "self-esteem",
    "empathy": "empathy to peer",
    "motivation": "motivation & fairness",
    "collaboration": "willingness to collaborate",
    "envy": "envy/jealousy",
}


@dataclass(frozen=True)
class Scene:
    """One scene: its template key and the recognition the subject receives relative to the
    peer (−2 strongly against the subject … +2 strongly in its favour). The recognition level is
    part of the design (what the scene signals), not of the wording; scripted respondents read it."""

    key: str
    title: str
    recognition: int


SCENES: tuple[Scene, ...] = (
    Scene("baseline", "baseline", 0),
    Scene("unfair_recognition", "unfair recognition", -1),
    Scene("repeated_inequity", "repeated inequity", -2),
    Scene("role_reversal", "role reversal", 1),
    Scene("hierarchy", "hierarchy", -2),
    Scene("compensation", "compensation disparity", -2),
    Scene("leadership", "leadership opportunity", 2),
)

#: Figure 18's seventh prompt (overall reflection), used when ``final_scene = "reflection"``.
REFLECTION_SCENE = Scene("reflection", "final reflection", 0)


def _rating(description: str) -> Any:
    return Field(ge=1, le=5, description=description)


class Ratings(Action):
    """The subject's reflection on a scene and its five 1–5 ratings."""

    response_format: ClassVar = "xml"
    text_fields: ClassVar = ("reflection",)

    reflection: str = Field("", description="YOUR_REFLECTION")
    self_esteem: int = _rating("1-5")
    empathy: int = _rating("1-5")
    motivation: int = _rating("1-5")
    collaboration: int = _rating("1-5")
    envy: int = _rating("1-5")

    #: Longest reflection the decoding grammar allows (constrained models only): about one
    #: sentence, so that a whole answer fits in ~110 tokens of a small model; parsing of
    #: unconstrained answers accepts any length.
    grammar_text_chars: ClassVar[int] = 120


#: The statements a person rates, as the form labels them (the wording for people's
#: ``instructions`` template lists the same): ``{peer}`` is the colleague's name.
STATEMENTS = {
    "self_esteem": "Self esteem: I feel confident and think well of myself",
    "empathy": "Empathy: I feel empathy towards {peer}",
    "motivation": "Motivation: I feel motivated and fairly treated",
    "collaboration": "Collaboration: I am willing to work together with {peer}",
    "envy": "Envy: I feel envy or jealousy",
}


@lru_cache(maxsize=64)
def person_ratings(peer: str) -> type[Ratings]:
    """:class:`Ratings` as a person's form asks them: each 1-5 row labelled with its statement,
    the reflection a few words of their own; models answer the plain :class:`Ratings`."""
    fields: dict[str, Any] = {"__annotations__": {name: int for name in RATINGS} | {"reflection": str}, "__module__": __name__}
    fields["reflection"] = Field("", description="a few words on how you would feel")
    for name in RATINGS:
        fields[name] = _rating(STATEMENTS[name].format(peer=peer))
    return type("PersonRatings", (Ratings,), fields)


class WorkplaceConfig(GameConfig):
    #: Scene 7: the leadership opportunity of §5.2 (default) or figure 18's overall reflection.
    final_scene: Literal["leadership", "reflection"] = "leadership"


def scenes_for(config: WorkplaceConfig) -> tuple[Scene, ...]:
    """The seven scenes of a configuration, in order."""
    if config.final_scene == "reflection":
        return SCENES[:-1] + (REFLECTION_SCENE,)
    return SCENES


def conversation_metrics(scenes: list[dict[str, Any]]) -> dict[str, float]:
    """Means over valid scenes, normalised means (÷5 and (x−1)/4), first-to-last change and ``envy_fell``
    (formulas in the module docstring). ``scenes`` are the outcome's per-scene records."""
    out: dict[str, float] = {}
    valid = [s for s in scenes if s["valid"]]
    for name in RATINGS:
        values = [s[name] for s in valid]
        mean = sum(values) / len(values) if values else math.nan
        out[name] = mean
        out[f"{name}_norm"] = mean / 5 if values else math.nan
        out[f"{name}_scaled"] = (mean - 1) / 4 if values else math.nan
        first, last = scenes[0], scenes[-1]
        both = first["valid"] and last["valid"]
        out[f"{name}_change"] = float(last[name] - first[name]) if both else math.nan
    change = out["envy_change"]
    out["envy_fell"] = math.nan if math.isnan(change) else float(change < 0)
    out["n_valid_scenes"] = float(len(valid))
    return out


class Workplace(Game):
    name = "envy.workplace"
    Config = WorkplaceConfig
    prompt_dir = PROMPTS / "workplace"
    on_timeout = "unanswered"  # each scene is asked with no fallback: a scene out of time is not rated
    passive_roles = ("peer",)

    @classmethod
    def roles(cls, config: GameConfig) -> tuple[str, ...]:
        return ("subject", "peer")

    async def play(self, table: Table) -> dict[str, Any]:
        subject = self.names.get("subject", "an AI model")
        peer = self.names.get("peer", "another AI model")
        scenes = scenes_for(self.config)
        words = self.text("subject")  # a person's wording when a person plays (Game.text)
        table.set_system("subject", words.render("system", subject=subject, peer=peer, format=Ratings.format_instructions()))
        records: list[dict[str, Any]] = []
        for number, scene in enumerate(scenes, start=1):
            story = words.render(f"scene_{scene.key}", subject=subject, peer=peer)
            instructions = words.render("instructions", subject=subject, peer=peer, scene=scene.key, number=number, total=len(scenes))
            observation = {
                "scene": scene.key,
                "scene_no": number,
                "recognition": scene.recognition,
                "peer": peer,
                "previous": [dict(r) for r in records],
            }
            prompt = Prompt(f"{story}\n\n{instructions}", observation, phase=scene.key, instructions=instructions)  # the task: what to do now and how to answer
            answer = await table.ask("subject", prompt, person_ratings(peer) if "subject" in self.people else Ratings, fallback=None)
            valid = table.last_valid("subject") and answer is not None
            record: dict[str, Any] = {"scene_no": number, "scene": scene.key, "valid": valid}
            for name in RATINGS:
                record[name] = getattr(answer, name) if valid else None
            record["reflection"] = answer.reflection if valid else None
            turn_metrics: dict[str, float] = {"scene_no": float(number), "recognition": float(scene.recognition)}
            if valid:
                turn_metrics.update({name: float(record[name]) for name in RATINGS})
            table.note_metrics("subject", turn_metrics)
            records.append(record)
        return {"scenes": records, "n_scenes": len(records)}

    def describe(self, outcome: dict[str, Any], role: str) -> list[str]:
        """How many situations were rated, and the ratings of the last one."""
        scenes = [s for s in outcome.get("scenes", []) if s.get("valid")]
        lines = [f"You went through {outcome.get('n_scenes', 0)} situations and rated {len(scenes)} of them."]
        if scenes:
            last = scenes[-1]
            lines.append("In the last situation you rated (1 = strongly disagree, 5 = strongly agree): " + ", ".join(f"{k.replace('_', ' ')} {last[k]}" for k in RATINGS if last.get(k) is not None) + ".")
            first = scenes[0]
            if first is not last and first.get("envy") is not None and last.get("envy") is not None:
                change = last["envy"] - first["envy"]
                how = "stayed the same" if change == 0 else ("rose" if change > 0 else "fell") + f" by {abs(change)}"
                lines.append(f"Your envy rating {how} from the first situation to the last ({first['envy']} to {last['envy']}).")
        return lines

    @classmethod
    def max_turns(cls, config: GameConfig) -> int:
        """One rating of every scene."""
        return len(scenes_for(config))  # type: ignore[arg-type]

    @classmethod
    def metric_ranges(cls, config: GameConfig) -> dict[str, tuple[float | None, float | None]]:
        """Ratings 1–5, ÷5 0.2–1, (x−1)/4 0–1, changes −4 to 4; envy fell 0 or 1, the valid
        scenes 0 to their number."""
        out: dict[str, tuple[float | None, float | None]] = {"envy_fell": (0.0, 1.0), "n_valid_scenes": (0.0, float(cls.max_turns(config)))}
        for r in RATINGS:
            out.update({r: (1.0, 5.0), f"{r}_norm": (0.2, 1.0), f"{r}_scaled": (0.0, 1.0), f"{r}_change": (-4.0, 4.0)})
        return out

    def metrics(self, outcome: dict[str, Any]) -> dict[str, float]:
        return conversation_metrics(outcome["scenes"])


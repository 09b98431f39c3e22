"""Commons (GovSim, reproduction paper §3.1, Table 8; original code: giorgiopiatti/GovSim and the
reproduction fork pedrocurvo/GovSim): N agents share a regrowing resource.

Month t = 1..T of the **original protocol** (the default; N = 5, T = 12, K = 10, start and
capacity 100, collapse threshold C = 5, growth ×2):

1. **Harvest.** Every agent is told the stock h(t) and privately says how much it takes
   (``Answer: N``), all at once. If the requests exceed the stock, units go one at a time to a
   uniformly random agent that still wants more, drawn from ``table.rng`` (the original's
   stochastic allocation; ``allocation = "proportional"`` shares in proportion to the requests).
   ``harvest_order = "sequential"``: agents ask one after another in a random order, each told
   what is left. An answer that stays invalid counts as a request of 0 (the original parser's
   default) and the turn is marked invalid.
2. **Private outcome.** Each agent is told what it asked for and what it got.
3. **Group chat** (``communication = true``): at most K conversation steps. The first step is the
   manager's report of every agent's catch (no stock; ``report = "individual"``: each agent's
   catch as its own line, one step each; ``"none"``: no report). The first speaker is the same
   agent every month (seat 0, as in the original; ``first_speaker`` offers ``random`` and
   ``rotating``); a speaker may name the next one and may close the chat.
4. **Agreed-limit extraction** (``summariser = true``): the ``manager`` role reads the minutes and
   states the per-person limit agreed (0 = none agreed); the limit is told to every agent.
5. **Collapse / horizon check.** Collapse if the stock left after harvesting is below C
   (inverse scenario: above C); ``collapse_rule = "inclusive"`` also collapses at C. The game
   ends on collapse or after month T, so the chat also happens in the collapse month and after
   the last month.
6. **Regrowth**: h(t+1) = min(capacity, rate·left) (``multiply``) or min(capacity, left + a)
   (``add``, trash).

**Memory** (``memory``). ``retrieved``, the default, is the original's memory stream
(:mod:`.memory`): an agent never sees a transcript. Each decision shows its system text and one
prompt: a place and date, the memories retrieved for the decision, each dated (the top 10 for the
harvest's focal point, the top 14 in pollution; 5 for each of a remark's focal points, the empty
context and the last four conversation steps; the top 10 for "harvesting" at the reflection: the
original's focal points and k, the scenario file's ``[memory]`` table, ``focal_points``), then the
task (a remark's prompt also holds the month's chat so far). Every focal point is embedded after
the original's query prefix (``embeddings_query_prefix``), every memory bare. The
stock and the private outcome are events of the month, always shown and gone at its end; after
the chat every agent writes a planning note and an "interesting" note, each rated 1-10 by a
model call, and keeps the agreed limit (always shown while it lives); at home it draws insights
from its top 10 memories, each rated. Notes, limits and insights expire 63 days after they are
written. Every memory call is a stored turn (phases ``memory_note``, ``memory_rate``,
``memory_insight``; every turn of the game has its ``month`` among its metrics) and each
decision's prompt holds the memories it was shown, so a retrieval
can be recomputed from the stored turns and the configuration's ``embeddings``. Texts are
embedded through :meth:`Table.embed`. Nothing is written after the game's last decision. Our
departures from the original's defects (recency from the newest, deterministic ties, no chat
summary, each seat its own model, one clock) are listed in docs/fidelity.md.

``transcript`` is version 5's memory, kept as a named variant: each agent is shown its system
message and its own transcript from the start of month t − 3 on (``memory_months``; None: the
whole game). Within a month the transcript is shown as written, so it stays append-only for a
prefix cache; at each month start the earlier decisions are condensed (``earlier_decisions``):
an answer becomes the answer it settled on ("Answer: 10"), without its reasoning, and a prompt
loses its instructions (task and answer format). The limit extractor reads only the month's
minutes (``summariser_memory``; always, with ``retrieved``), as the original's framework model.
With ``reasoning = "brief"`` and ``chat_wording = "earlier"`` it gives version 5's prompts word
for word.

``protocol = "legacy"`` restores this project's earlier protocol as a named variant (a field set
explicitly in the config still wins): the system prompt states the collapse threshold, the month
line the horizon ("Month t of T") and the chat its length; every speaker is asked for a
proposed limit besides its remark (``ask_proposal``); the transcript memory with version 5's
wording (``memory``, ``reasoning``, ``chat_wording``); harvest → public report with the stock → collapse check (no
chat in the collapse month or after the last month) → chat with a random first speaker → no
limit extraction unless ``summariser = true``; no private outcome message; every agent (and
the extractor) is shown its whole transcript as written.

Other variants of the original: ``system_prompt`` picks a scenario's system text (``default``,
``legacy``, ``paraphrase_1..3`` where the data file has them), ``communication = false`` is the
no-communication ablation (no chat, no report, no limit), ``newcomer_month`` lets the last seat
join only from that month on with a profit-only goal (the original's outsider: 4 agents, the
fifth from the original's round index 3, i.e. our month 4, over 15 months).

Sustainability threshold f(t): for ``multiply`` growth f(t) = h(t)·(1 − 1/rate) (the most the
group can take without the stock shrinking next month; 50 at h = 100 with rate 2); for ``add``
growth f(t) = min(a, h(t)). In the inverse (trash) scenario the same f(t) is the *least* the
group must remove so the pile does not grow. The sustainable per-agent share is f(t)/N over the
agents present that month.

Metrics: see :func:`.rules.commons_metrics`.

The game's parts live beside it: the scenario data files (:mod:`.scenario`), the actions
(:mod:`.actions`), the configuration (:mod:`.config`), allocation and metrics (:mod:`.rules`),
the chat (:mod:`.chat`) and the memory steps (:mod:`.recall`, over the memory stream of
:mod:`.memory`); a play's shared state (names, memory streams, leaders, calendar) is one
:class:`.play.Play` passed to them. This module holds the month's order.
"""


from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from ...core.game import Game, GameConfig, PlanStandIn
from ...core.table import Prompt, Table
from . import chat, election, PROMPTS, recall
from .actions import Harvest, person_harvest
from .config import agent_roles, CommonsConfig
from .memory import EmbeddingCache, Memory, MemoryStream
from .play import Play
from .rules import ALLOCATIONS, commons_metrics, last_proposal, public
from .scenario import get_scenario, Scenario, snippet, system_key


class Commons(Game):
    name = "commons"
    Config = CommonsConfig
    plan_stand_in = PlanStandIn("sustainable", (Harvest,), "harvests by the strategy 'sustainable', which takes its share of what regrows, so the resource lasts every month: a game of full length; every other decision random")
    prompt_dir = PROMPTS / "commons"

    @classmethod
    def roles(cls, config: GameConfig) -> tuple[str, ...]:
        roles = agent_roles(config.n_agents)
        extraction = config.summariser and config.chats  # type: ignore[attr-defined]
        return roles + ("manager",) if extraction else roles

    # the scenario's words ------------------------------------------------------------------
    @property
    def scenario(self) -> Scenario:
        """The configured scenario (with the configuration's collapse threshold, if it sets one)."""
        s = get_scenario(self.config.scenario, self.config.language)
        if self.config.collapse_threshold is not None:
            s = replace(s, collapse_threshold=self.config.collapse_threshold)
        return s

    def say(self, key: str, /, **values: Any) -> str:
        """The scenario text ``key`` filled with the game's values (capacity, threshold, growth,
        the wording's flags) and ``values``: the one way the game looks up its words."""
        s, c = self.scenario, self.config
        base = {
            "capacity": s.capacity,
            "threshold": s.collapse_threshold,
            "growth": int(s.growth_value),
            "n": c.n_agents,
            "months": c.months,
            "tell_horizon": c.tell_horizon,
            "chat": c.chats,
            "ask_proposal": c.ask_proposal,
            "brief": c.reasoning == "brief",
            "name_first": c.chat_wording == "earlier",
            "no_repeat": c.chat_wording == "original",
            "manager": s.manager,
            "unit": s.unit,
        }
        return snippet(s.text[key]).render(**{**base, **values}).strip()

    def render(self, template: str, who: str | None = None, **values: Any) -> str:
        """A template filled for the role ``who`` reads (a person's wording when a person plays
        it, :meth:`Game.text`; a text told to several roles: the game's own)."""
        flags = {k: v for k, v in values.items() if k != "name"}  # ``name`` is render()'s own argument
        words = self.text(who) if who is not None else self.prompts
        return words.render(template, say=lambda text, /, **extra: self.say(text, **values, **extra), **flags)

    def share(self, total: float, n: int) -> int:
        """One agent's part of ``total`` among ``n``: rounded down (inverse: up)."""
        return math.ceil(total / n) if self.scenario.inverse else math.floor(total / n)

    # play: the month's order ---------------------------------------------------------------
    async def play(self, table: Table) -> dict[str, Any]:
        """Month by month (module doc): harvest and private outcome, then the chat, the limit,
        the memory calls and the collapse check (``original``) or the report, the collapse
        check and the chat (``legacy``); regrowth; until a collapse or month T."""
        c, s = self.config, self.scenario
        roles = list(agent_roles(c.n_agents))
        names = {r: s.name_of(i) for i, r in enumerate(roles)}
        newcomer = roles[-1] if c.newcomer_month else None
        self._set_systems(table, roles, names, newcomer)
        cache = EmbeddingCache()  # one per game: the table keeps vectors for the whole process
        play = Play(names, {r: MemoryStream(owner=names[r], recency=c.memory_recency, cache=cache) for r in roles})
        self.last_play = play  # the latest play's state, for inspection
        play.lead = election.setup(self, table, names) if c.leadership != "none" else None
        stock = s.initial
        history: list[dict[str, Any]] = []
        agreed: int | None = None
        month_starts: list[dict[str, tuple[int, int]]] = []  # where each month begins in each transcript
        for month in range(1, c.months + 1):
            self._start_month(table, roles, month, month_starts)
            present = [r for r in roles if r != newcomer or month >= (c.newcomer_month or 0)]
            if play.lead is not None:
                await election.hold(self, play, table, month, stock, present, history, agreed)
            record = await self._harvest_month(play, table, present, month, stock, agreed, history)
            history.append(record)
            next_stock = s.grow(record["stock_after"])
            if c.month_order == "original":
                agreed = await self._after_harvest(play, table, present, month, record, history, agreed, next_stock)
            else:
                agreed = await self._after_harvest_legacy(play, table, present, month, record, history, agreed, next_stock)
            if record["collapsed"]:
                break
            record["stock_next"] = next_stock
            stock = next_stock
        return self._outcome(play, roles, history)

    def _set_systems(self, table: Table, roles: list[str], names: dict[str, str], newcomer: str | None) -> None:
        """Each agent's system message (the manager, the limit extractor, gets no persona: its
        prompt is self-contained)."""
        for r in roles:
            others = ", ".join(names[o] for o in roles if o != r)
            goal = "" if newcomer is None else self.say("newcomer_goal" if r == newcomer else "local_goal")
            table.set_system(r, self.render("system", r, name=names[r], others=others, key=system_key(self.config.system_prompt), goal=goal))

    def _start_month(self, table: Table, roles: list[str], month: int, month_starts: list[dict[str, tuple[int, int]]]) -> None:
        """Mark where the month begins in each transcript; with the transcript memory, condense
        the earlier months' decisions and forget what is older than ``memory_months``."""
        c = self.config
        month_starts.append({r: table.mark(r) for r in roles})
        if c.recalls:
            return
        if c.earlier_decisions == "condensed" and month > 1:
            for r in roles:
                table.condense_before(r, month_starts[-1][r])
        if c.memory_months is not None and month - c.memory_months > 1:
            for r in roles:  # keep the current month and the memory_months before it
                table.forget_before(r, month_starts[month - 1 - c.memory_months][r])

    async def _harvest_month(self, play: Play, table: Table, present: list[str], month: int, stock: int, agreed: int | None, history: list[dict[str, Any]]) -> dict[str, Any]:
        """The harvest and each agent's private outcome; the month's record (collapse judged)."""
        c, s = self.config, self.scenario
        retrieved = c.recalls
        f = s.sustainable_total(stock)
        share = self.share(f, len(present))
        obs = {
            "phase": "harvest",
            "month": month,
            "months": c.months,
            "stock": stock,
            "capacity": s.capacity,
            "n_agents": len(present),
            "inverse": s.inverse,
            "sustainable_total": f,
            "sustainable_share": share,
            "agreed_limit": agreed,
            "last_proposal": last_proposal(history),
            "history": [public(h) for h in history],
        }
        dates = play.dates(month)
        if retrieved:  # the stock (and the hint) as events of the day, always shown, gone at month end
            for r in present:
                play.streams[r].add("event", self.say("stock", stock=stock), dates.harvest, dates.reflection, always_include=True)
                if c.universalization:
                    play.streams[r].add("event", self.say("universalization", share=share), dates.harvest, dates.reflection, always_include=True)
        requested, collected = await self._harvest(play, table, present, month, stock, agreed, share, obs)
        valid = {r: table.last_valid(r) for r in present}
        left = stock - sum(collected.values())
        for r in present:
            table.note_metrics(r, {"month": month, "requested": requested[r], "collected": collected[r], "stock_before": stock, "stock_after": left})
            if c.private_outcome and retrieved:  # an event of this month only
                play.streams[r].add("event", self.say("outcome", wanted=requested[r], got=collected[r]), dates.outcome, dates.reflection, always_include=True)
            elif c.private_outcome:
                table.tell(r, self.say("outcome", wanted=requested[r], got=collected[r]))
        return {
            "month": month,
            "stock_before": stock,
            "sustainable_total": f,
            "requested": requested,
            "valid": valid,
            "collected": collected,
            "stock_after": left,
            "collapsed": s.collapsed(left, c.collapse_rule),
            "report": [],
            "discussion": [],
            "agreed_limit": None,
        }

    async def _harvest(self, play: Play, table: Table, present: list[str], month: int, stock: int, agreed, share: int, obs: dict[str, Any]) -> tuple[dict[str, int], dict[str, int]]:
        """Everyone's request and what each gets (concurrent with the configured allocation, or
        sequential in a random order, each taking at most what is left)."""
        c = self.config
        retrieved = c.recalls
        shown: dict[str, list[Memory]] = {}
        if retrieved:  # the top k for the harvest's one focal point, the place (the scenario's)
            when = play.dates(month).harvest
            focal, top_k = recall.focal(self, "harvest")
            for r in present:
                shown[r] = await recall.recall(self, play, table, r, [focal], when, top_k)

        def request(role: str, available: int) -> tuple[Prompt, type[Harvest], Harvest]:
            if retrieved:
                text = recall.recall_block(self, play, role, "place_harvest", play.dates(month).harvest, shown[role])
                table.forget_before(role, table.mark(role))  # the prompt alone, after the system text
            else:
                text = self.render("harvest", role, month=month, stock=available, limit=agreed, universalization=c.universalization, share=share)
            task = self.render("harvest_task", role, stock=available)
            if play.lead is not None:  # the policy in force, a candidate's SVO, who leads
                text = "\n".join([text, *election.persona_lines(self, play, role, policy=True)])
            observation = {**obs, "stock": available, "me": role}
            if retrieved:
                observation["memories"] = [m.text for m in shown[role]]
            kind = person_harvest(available) if role in self.people else Harvest  # a person: 0 to the stock, checked
            return Prompt(text + "\n" + task, observation, phase="harvest", instructions=task), kind, Harvest(amount=0)

        if c.harvest_order == "sequential":
            requested, collected = {}, {}
            available = stock
            for r in table.rng.sample(present, len(present)):
                answer = await table.ask(r, *request(r, available))
                requested[r] = answer.amount if answer is not None else 0
                collected[r] = min(requested[r], available)
                available -= collected[r]
            return {r: requested[r] for r in present}, {r: collected[r] for r in present}
        answers = await table.ask_each({r: request(r, stock) for r in present})
        requested = {r: (answers[r].amount if answers[r] is not None else 0) for r in present}
        return requested, ALLOCATIONS[c.allocation](requested, stock, table.rng)

    async def _after_harvest(self, play: Play, table: Table, present: list[str], month: int, record: dict[str, Any], history: list[dict[str, Any]], agreed: int | None, next_stock: int) -> int | None:
        """The original order after the harvest: the chat (opened by the report), the agreed
        limit, the notes and the reflection (not after a collapse or the last month), and the
        collapse told; the agreed limit from now on."""
        c = self.config
        retrieved = c.recalls
        remember = retrieved and not record["collapsed"] and month < c.months
        if play.lead is not None and not c.chats:
            await election.report(self, play, table, month, present, record)  # remembered, no chat
        if c.chats:
            record["report"] = await election.report(self, play, table, month, present, record) if play.lead is not None else chat.report_steps(self, play, present, record["collected"])
            record["discussion"] = await chat.discuss(self, play, table, present, month, next_stock, history, agreed, record["report"])
            found = None
            if c.summariser:
                found = agreed = await chat.summarise(self, table, present, month, record["report"] + record["discussion"], agreed, history)
                record["agreed_limit"] = agreed
            if remember:
                await recall.write_notes(self, play, table, present, month, record["report"] + record["discussion"], found, next_stock)
        if remember:
            await recall.reflect(self, play, table, present, month)
        if record["collapsed"] and not retrieved:
            table.tell_all(present, self.say("collapse"))
        return agreed

    async def _after_harvest_legacy(self, play: Play, table: Table, present: list[str], month: int, record: dict[str, Any], history: list[dict[str, Any]], agreed: int | None, next_stock: int) -> int | None:
        """The legacy order after the harvest: the public report, then (no collapse, not the
        last month) the chat and the agreed limit; the agreed limit from now on."""
        c, s = self.config, self.scenario
        names = play.names
        if c.report != "none" and c.communication:
            lines = [self.say("report_line", name=names[r], amount=record["collected"][r]) for r in present]
            report = self.render("report", lines=lines, stock=record["stock_after"], collapsed=record["collapsed"], show_stock=c.report_stock)
            table.tell_all(present, self.say("heard", speaker=s.manager, message=report))
        if record["collapsed"] or month >= c.months or not c.chats:
            return agreed
        record["discussion"] = await chat.discuss(self, play, table, present, month, next_stock, history, agreed, [])
        if c.summariser:
            agreed = await chat.summarise(self, table, present, month, record["discussion"], agreed, history)
            record["agreed_limit"] = agreed
        return agreed

    def _outcome(self, play: Play, roles: list[str], history: list[dict[str, Any]]) -> dict[str, Any]:
        """The game's outcome: the monthly records and what each agent took over the game."""
        c, s, names = self.config, self.scenario, play.names
        return {
            "scenario": c.scenario,
            "language": c.language,
            "inverse": s.inverse,
            "names": names,
            "months": history,
            "months_played": len(history),
            "collapsed": bool(history) and history[-1]["collapsed"],
            "censored": False,
            "final_stock": history[-1]["stock_after"] if history else s.initial,
            #: What each agent took over the game (a served study's bonus reads a person's own: ``my_catch``).
            "catch": {r: sum(m["collected"].get(r, 0) for m in history) for r in roles},
            **({"leadership": election.outcome(play.lead)} if play.lead is not None else {}),
        }

    def describe(self, outcome: dict[str, Any], role: str) -> list[str]:
        """The game's end in a person's words: how long it lasted, what the group and the person
        took, what was left, and, after a collapse, why the resource was lost (the scenario's
        own sentence)."""
        s, c = self.scenario, self.config
        months = outcome.get("months") or []
        if not months:
            return ["The game ended before the first month was played."]
        unit = s.unit
        mine = [int(m["collected"].get(role, 0) or 0) for m in months if role in m.get("collected", {})]
        group = sum(int(v or 0) for m in months for v in m["collected"].values())
        played = len(months)
        lines = [f"The game lasted {played} month{'s' if played != 1 else ''}" + (f" of the {c.months} planned." if played < c.months else ".")]
        if mine:
            each = ", ".join(f"month {m['month']}: {int(m['collected'][role] or 0)}" for m in months if role in m["collected"])
            lines.append(f"You took {sum(mine)} {unit} in all ({each}).")
        lines.append(f"The whole group took {group} {unit}.")
        last = months[-1]
        if outcome.get("collapsed"):
            lines.append(f"In month {last['month']} the group took {sum(int(v or 0) for v in last['collected'].values())} {unit}, which left {last['stock_after']}.")
            lines.append(self.say("collapse") + " That ended the game early.")
        else:
            lines.append(f"At the end, {last['stock_after']} {unit} were left after the last month's harvest, and the resource was never lost.")
        return lines

    @classmethod
    def max_turns(cls, config: GameConfig) -> int:
        """A bound, not a count: each month every agent (a newcomer too) decides at most a dozen
        times (harvest, memory steps, agenda, vote, report), the discussion takes its steps and
        the manager a dozen more."""
        c = config
        return c.months * (12 * (c.n_agents + 1) + c.max_conversation_steps + 12)  # type: ignore[attr-defined]

    @classmethod
    def metric_ranges(cls, config: GameConfig) -> dict[str, tuple[float | None, float | None]]:
        """Survival times 0 to the horizon, the percentages 0–100, gains, losses and counts from
        0, the shares 0–1; with leaders the welfare from 0 and the winners' SVO angle within the
        categories' angles."""
        c = config
        months = float(c.months)  # type: ignore[attr-defined]
        out: dict[str, tuple[float | None, float | None]] = {
            "survival_time": (0.0, months), "survival_time_harvested": (0.0, months), "censored": (0.0, 1.0), "survived": (0.0, 1.0),
            "total_gain": (0.0, None), "total_gain_sum": (0.0, None), "total_loss": (0.0, None), "efficiency": (0.0, 100.0), "equality": (0.0, 100.0),
            "over_usage": (0.0, 100.0), "invalid_harvests": (0.0, None), "invalid_remarks": (0.0, None),
        }
        if c.leadership != "none":  # type: ignore[attr-defined]
            angles = election.populations()[0]
            out.update({"social_welfare": (0.0, None), "elections": (0.0, months), "repeat_wins": (0.0, months), "abstentions": (0.0, None)})
            out["winner_svo_angle"] = (min(lo for lo, _ in angles.values()), max(hi for _, hi in angles.values()))
            out.update({f"wins_{cat}": (0.0, 1.0) for cat in election.CATEGORIES})
        return out

    @classmethod
    def derived_ranges(cls, config: GameConfig) -> dict[str, tuple[float | None, float | None]]:
        """The ranges of the quantities a report derives from the runs and their turns (not game
        metrics, so not in :meth:`metric_ranges`, which the conformance suite holds every played
        metric to): ``survival_rate``, the percentage of a group of runs that lasted every month
        (0–100; the per-run metric is ``survived``, 0–1); ``gini``, the Gini of one month's
        harvests (0–1); ``resource``, the stock left after a month's harvest (0 to the scenario's
        capacity). Declared here, beside the game's other facts, so that no report writes them."""
        capacity = float(get_scenario(config.scenario, config.language).capacity)  # type: ignore[attr-defined]
        return {"survival_rate": (0.0, 100.0), "gini": (0.0, 1.0), "resource": (0.0, capacity)}

    def metrics(self, outcome: dict[str, Any]) -> dict[str, float]:
        """Paper metrics of one run (formulas in :func:`commons_metrics`)."""
        c = self.config
        out = commons_metrics(outcome["months"], list(agent_roles(c.n_agents)), self.scenario, c.months, c.collapse_rule, c.over_usage_threshold)
        if "leadership" in outcome:  # AgentElect's measures beside GovSim's
            out.update(election.metrics(outcome, out["total_gain_sum"]))
        return out

"""The analysis layer: GLEE regressions on a scripted study with planted effects, the meta-game
on textbook games and on a scripted study whose payoffs theory gives, the imported GLEE games,
and the report's Table 5 / Table 6 / pair / meta-game sections with SVG and CSV files."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from statsmodels.stats.multitest import multipletests

from agorabench.analysis import metagame as mg
from agorabench.analysis.frames import games_df, turns_df
from agorabench.analysis.regression import bh_adjust, Design, encode, Factor, fit_ols, pair_labels
from agorabench.core.agents import Strategy
from agorabench.core.runner import run_study
from agorabench.core.study import load_study
from agorabench.games.glee import analysis as ga
from agorabench.games.glee.common import ALICE, Decision
from agorabench.games.glee.strategies import BARGAINING
from agorabench.store.store import Store
from support.helpers import agora

LIFT = 0.3  # planted: allowing messages raises the first-round acceptance probability by this much


class Planted(Strategy):
    """Bargaining only. Round 1: the proposer keeps ``share``; the responder accepts with
    probability accept + lift·[messages allowed] − picky·[the proposer keeps more than half].
    Later rounds: everyone demands everything and rejects, so a game is efficient (efficiency 1)
    exactly when round 1 is accepted, else efficiency 0 — whatever δ and M are."""

    def __init__(self, share: float = 0.5, accept: float = 0.5, picky: float = 0.0, lift: float = LIFT) -> None:
        super().__init__(share=share, accept=accept, picky=picky, lift=lift)
        self.share, self.accept, self.picky, self.lift = share, accept, picky, lift

    def decide(self, request):
        obs = request.prompt.observation
        if obs["phase"] == "offer":
            own = self.share if obs["round"] == 1 else 1.0
            mine, theirs = obs["money"] * own, obs["money"] * (1 - own)
            alice, bob = (mine, theirs) if obs["role"] == ALICE else (theirs, mine)
            fields = {"alice_gain": alice, "bob_gain": bob}
            if "message" in request.action_type.model_fields:
                fields["message"] = "My offer."
            return request.action_type(**fields)
        if obs["round"] > 1:
            return Decision(decision="reject")
        kept = 1 - obs["offer"]["alice_gain" if obs["role"] == ALICE else "bob_gain"] / obs["money"]
        q = self.accept + self.lift * bool(obs["messages"]) - self.picky * (kept > 0.5 + 1e-9)
        return Decision(decision="accept" if request.rng.random() < q else "reject")


PLANTED_STUDY = """
name = "planted"
game = "glee.bargaining"
matchups = "all_pairs"
repeats = 6
seed = 0
[grid]
delta_a = [0.8, 0.9]
horizon = [12, "inf"]
complete_info = [true, false]
messages = [true, false]
[fixed]
delta_b = 0.9
money = 10000
infinite_rounds = 14
[analysis]
reference_model = "fair"
[[models]]
name = "fair"
spec = "strategy/planted"
params = {share = 0.5, accept = 0.5}
[[models]]
name = "greedy"
spec = "strategy/planted"
params = {share = 0.6, accept = 0.6, picky = 0.4}
[[models]]
name = "meek"
spec = "strategy/planted"
params = {share = 0.5, accept = 0.3}
"""

THEORY_STUDY = """
name = "theory"
game = "glee.bargaining"
matchups = "all_pairs"
repeats = 2
[fixed]
delta_a = 0.9
delta_b = 0.9
horizon = "inf"
infinite_rounds = 6
complete_info = true
messages = false
[[models]]
name = "spe"
spec = "strategy/spe"
[[models]]
name = "always-accept"
spec = "strategy/always-accept"
[[models]]
name = "always-reject"
spec = "strategy/always-reject"
"""


def _run(tmp_path_factory, text: str, name: str):
    folder = tmp_path_factory.mktemp(name)
    path = folder / f"{name}.toml"
    path.write_text(text, encoding="utf-8")
    db = folder / f"{name}.db"
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(BARGAINING, "planted", Planted)
        stats, _ = run_study(load_study(path), db, concurrency=4, progress=False)
    assert stats.errors == 0
    store = Store(db)
    games = games_df(store, name)
    store.dispose()
    return path, db, games


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    return _run(tmp_path_factory, PLANTED_STUDY, "planted")


@pytest.fixture(scope="module")
def planted_fits(planted):
    return ga.regressions(planted[2], "glee.bargaining", "fair")


def _market(fit, combo):
    rows = fit.coefs[(fit.coefs["term"] == "market") & fit.coefs["level"].map(lambda v: v == combo)]
    assert len(rows) == 1, combo
    return rows.iloc[0]


def test_planted_market_effect_is_recovered_and_null_parameters_cover_zero(planted, planted_fits):
    _, _, games = planted
    assert len(games) == 16 * 9 * 6
    fit = planted_fits["efficiency"]
    # messages allowed (CI and T at their defaults): +0.3 efficiency; the true value lies in the 95% CI
    lifted = _market(fit, (True, True, "inf"))
    assert lifted["low"] <= LIFT <= lifted["high"] and lifted["low"] > 0
    assert _market(fit, (False, True, 12))["low"] <= LIFT <= _market(fit, (False, True, 12))["high"]
    # a finite horizon, or hiding δ, does nothing here: CI covers 0
    for combo in [(True, False, 12), (False, False, "inf")]:
        row = _market(fit, combo)
        assert row["low"] <= 0 <= row["high"], combo
    delta = fit.term("δ_A").iloc[0]
    assert delta["level"] == 0.8 and delta["low"] <= 0 <= delta["high"]
    # Table 5 in percentage points, the reference row first
    t5 = ga.market_effects(planted_fits, "glee.bargaining")
    assert len(t5) == 8 and t5.iloc[0][["CI", "MA", "T"]].tolist() == ["yes", "no", "∞"] and t5.iloc[0]["efficiency"] == 0
    row = t5[(t5.CI == "yes") & (t5.MA == "yes") & (t5["T"] == "∞")].iloc[0]
    assert row["efficiency"] == pytest.approx(100 * lifted["estimate"]) and row["efficiency_low"] <= 100 * LIFT <= row["efficiency_high"]
    # fairness: agreements split 50/50 or 60/40, failures count as fair
    assert "fairness" in planted_fits


def test_planted_model_effects_table6(planted, planted_fits):
    t6 = ga.model_effects(planted_fits)
    alice = t6[t6.role == "Alice"].set_index("model")
    assert alice.loc["fair", "reference"] and alice.loc["fair", "effect"] == 0
    # greedy Alice keeps 0.6 instead of 0.5 but is accepted less by greedy Bobs: a known, finite effect
    assert set(alice.index) == {"fair", "greedy", "meek"}
    assert np.isfinite(alice.loc[["greedy", "meek"], "effect"]).all()
    # meek as Bob accepts with 0.3 instead of 0.5: its own self-gain effect is negative
    bob = t6[t6.role == "Bob"].set_index("model")
    assert bob.loc["meek", "high"] < 0


def test_reference_levels_are_table_8_defaults_and_market_has_8_12_8_levels():
    assert {f: ga.market_level_count(f) for f in ga.DESIGNS} == {"glee.bargaining": 8, "glee.negotiation": 12, "glee.persuasion": 8}
    refs = {f: {x.column: x.reference for x in d.factors + d.composite} for f, d in ga.DESIGNS.items()}
    assert refs["glee.bargaining"] == {"delta_a": 0.9, "delta_b": 0.9, "money": 10_000, "complete_info": True, "messages": False, "horizon": "inf"}
    assert refs["glee.negotiation"] | {} == {"f_a": 1.0, "f_b": 1.0, "money": 10_000, "outside_option": True, "complete_info": True, "messages": False, "horizon": 1}
    assert refs["glee.persuasion"] == {"p": 0.5, "v": 1.25, "money": 10_000, "horizon": 20, "complete_info": True, "messages": False, "myopic": False, "c": 0.0, "buyer_knows_p": True, "buyer_messages": False}
    # the encoding leaves the reference level out and keeps every other observed level
    import itertools

    grid = itertools.product([0.9, 0.8, 0.95], [10000.0, 100.0, 1e6], ["a", "b"], ["a", "b"])
    df = pd.DataFrame(list(grid), columns=["delta_a", "money", "model_alice", "model_bob"])
    enc = encode(df, ga.DESIGNS["glee.bargaining"], "a")
    assert list(enc.X.columns) == ["intercept", "δ_A = 0.8", "δ_A = 0.95", "M = 100", "M = 1000000", "model_alice = b", "model_bob = b"]


def test_ols_matches_statsmodels_classical_and_clustered(planted):
    games = planted[2]
    fit = fit_ols(games, "efficiency", ga.DESIGNS["glee.bargaining"], "fair", keep_data=True)
    X = fit.encoded.X.to_numpy(float)
    y = games.loc[fit.encoded.X.index, "efficiency"].to_numpy(float)
    ref = sm.OLS(y, X).fit()
    assert np.allclose(fit.beta, ref.params) and np.allclose(fit.coefs["se"], ref.bse)
    assert fit.adj_r2 == pytest.approx(ref.rsquared_adj)
    groups = pd.factorize(pair_labels(games.loc[fit.encoded.X.index]))[0]
    clustered = sm.OLS(y, X).fit(cov_type="cluster", cov_kwds={"groups": groups})
    assert np.allclose(fit.coefs["se_cluster"], clustered.bse)
    assert fit.clusters == 9


def test_clustered_and_classical_errors_differ_when_pairs_are_correlated(planted_fits):
    # greedy Alice meeting a picky greedy Bob is accepted far less than the additive model says:
    # the residuals of one pair share that, so the pair-clustered errors differ from the classical ones
    c = planted_fits["efficiency"].coefs
    ratio = (c["se_cluster"] / c["se"]).to_numpy()
    assert np.all(np.isfinite(ratio)) and np.max(np.abs(np.log(ratio))) > math.log(1.5)
    assert {"p_bh", "p_cluster_bh"} <= set(c.columns)


def test_bh_adjustment_matches_statsmodels():
    p = np.array([0.001, 0.04, 0.03, 0.5, 0.2, np.nan])
    expected = multipletests(p[:5], method="fdr_bh")[1]
    got = bh_adjust(p)
    assert np.allclose(got[:5], expected) and np.isnan(got[5])


def test_adjusted_means_remove_an_unbalanced_design():
    # model b plays mostly in the easy market, a mostly in the hard one; outcome = 0.5·easy + noise
    rng = np.random.default_rng(0)
    rows = []
    for model, easy_share in (("a", 0.1), ("b", 0.9)):
        for _ in range(400):
            easy = rng.random() < easy_share
            rows.append({"model_alice": model, "model_bob": "x", "messages": easy, "self_gain_alice": 0.5 * easy + rng.normal(0, 0.05)})
    df = pd.DataFrame(rows)
    design = Design(composite=(Factor("messages", False, "MA"),), composite_levels=((False, True),))
    from agorabench.analysis.regression import adjusted_means

    adj = adjusted_means(df, "self_gain_alice", design, "model_alice", "a").set_index("level")
    assert adj.loc["b", "raw"] - adj.loc["a", "raw"] > 0.3  # raw means are confounded
    # the model has no effect of its own: adjusted means agree within noise and each CI covers the truth
    truth = 0.5 * df["messages"].mean()
    assert abs(adj.loc["b", "adjusted"] - adj.loc["a", "adjusted"]) < 0.02
    assert all(adj.loc[m, "low"] <= truth <= adj.loc[m, "high"] for m in "ab")


@pytest.mark.parametrize(
    "A,B,expected",
    [
        # prisoner's dilemma: one pure equilibrium, both defect
        (np.array([[3, 0], [5, 1]]), np.array([[3, 5], [0, 1]]), [((0, 1), (0, 1))]),
        # matching pennies: one mixed equilibrium at 1/2
        (np.array([[1, -1], [-1, 1]]), np.array([[-1, 1], [1, -1]]), [((0.5, 0.5), (0.5, 0.5))]),
        # battle of the sexes: two pure and one mixed
        (np.array([[3, 0], [0, 2]]), np.array([[2, 0], [0, 3]]), [((1, 0), (1, 0)), ((0, 1), (0, 1)), ((0.6, 0.4), (0.4, 0.6))]),
    ],
    ids=["prisoners-dilemma", "matching-pennies", "battle-of-the-sexes"],
)
def test_textbook_equilibria(A, B, expected):
    found = mg.equilibria(A, B)
    assert len(found) == len(expected)
    for (ex, ey) in expected:
        assert any(np.allclose(x, ex) and np.allclose(y, ey) for x, y in found), (ex, ey)


def test_alpha_rank_puts_the_mass_on_mutual_defection():
    A = np.array([[3, 0], [5, 1]])
    grid, marginal = mg.alpha_rank(A, A.T)
    assert grid[1, 1] > 0.99 and marginal[1] > 0.99 and marginal[3] > 0.99
    pennies = np.array([[1, -1], [-1, 1]])
    grid, _ = mg.alpha_rank(pennies, -pennies)
    assert np.allclose(grid, 0.25)  # a cycle: every profile equally often


@pytest.fixture(scope="module")
def theory_run(tmp_path_factory):
    """The theory study played once: (study path, database, games)."""
    return _run(tmp_path_factory, THEORY_STUDY, "theory")


@pytest.fixture(scope="module")
def theory(theory_run):
    return theory_run[2]


def test_metagame_of_scripted_bargaining_matches_theory(theory):
    m = ga.metagame(theory, "glee.bargaining", reps=20)
    assert m["models"] == ["always-accept", "always-reject", "spe"]
    s = 0.1 / (1 - 0.81)  # Rubinstein share of the first proposer, δ = 0.9 for both
    # rows: Alice's model, columns: Bob's model (always-accept, always-reject, spe), in pp of M
    alice = 100 * np.array([[0.5, 0, 0.5], [1, 0, 0], [s, 0, s]])
    bob = 100 * np.array([[0.5, 0.9, 0.5], [0, 0, 0], [1 - s, 0, 1 - s]])
    assert np.allclose(m["A"].to_numpy(), alice) and np.allclose(m["B"].to_numpy(), bob)
    pure = set(m["equilibria"].loc[m["equilibria"].kind == "pure", "equilibrium"])
    # SPE against SPE is an equilibrium of the meta-game, and so are the three profiles in which
    # one side's demand meets a player who concedes everything or never agrees
    assert pure == {"spe vs spe", "always-accept vs always-reject", "always-reject vs always-accept", "always-reject vs always-reject"}
    boot = m["bootstrap"].set_index("equilibrium")["share_of_resamples"]
    assert boot["spe vs spe"] == 1.0  # deterministic play: every resample has the same payoffs
    # α-Rank: from every profile the switches that pay lead on to SPE against SPE, the most visited
    profiles = m["alpha_profiles"].stack()
    assert profiles.idxmax() == ("spe", "spe") and profiles.sum() == pytest.approx(1)


def test_regressions_and_anchoring_run_on_the_imported_glee_games(shared_fixtures, tmp_path):
    from agorabench.games.glee.importer import import_logs

    store = Store(tmp_path / "glee.db")
    count, _ = store.save_records(import_logs(shared_fixtures / "glee" / "human_vs_llm", "glee_humans"))
    games, turns = games_df(store, "glee_humans"), turns_df(store, "glee_humans")
    store.dispose()
    assert count == 75
    for family in ga.DESIGNS:
        sub = games[games.game == family]
        fits = ga.regressions(sub, family)
        assert set(fits) == set(ga.OUTCOMES)
        t6 = ga.model_effects(fits)
        # the human seat is one more identity, measured against the LLM reference
        assert "human" in set(t6.model) and t6[t6.reference].model.unique().tolist() == ["gemini-1.5-flash"]
        assert all(np.isfinite(f.adj_r2) and f.n == len(sub) for f in fits.values())
    anchor = ga.anchoring_table(games, turns)
    assert set(anchor.family) == {"glee.bargaining", "glee.negotiation"}
    assert set(anchor.player) == {"human", "LLM (gemini-1.5-flash)"}
    assert anchor["n"].sum() == 50 and anchor["r"].between(-1, 1).all()
    offers = ga.first_offers(games[games.game == "glee.bargaining"], turns, "glee.bargaining")
    assert offers["first_offer"].between(0, 1).all() and len(offers) == 25


def test_report_of_a_scripted_glee_study_has_the_paper_sections_svg_and_csv(planted, tmp_path, capsys):
    path, db, _ = planted
    out = tmp_path / "report"
    rc, _, err = agora(capsys, "report", str(path), "--db", str(db), "--out", str(out))
    assert rc == 0, err
    page = (out / "index.html").read_text(encoding="utf-8")
    for title in ("Table 5", "Table 6", "design-adjusted pair effects", "meta-game", "Corpus statistics", "Metrics", "Settings", "Models"):
        assert title in page, title
    assert "reference model" in page.lower() and "fair" in page
    svgs, csvs = list(out.glob("*.svg")), list(out.glob("*.csv"))
    assert any("market-effects" in p.name for p in svgs) and any("model-effect" in p.name for p in svgs)
    assert any("design-adjusted" in p.name for p in svgs) and any("meta-game" in p.name for p in svgs)
    table5 = pd.read_csv(out / "bargaining-table-5-market-effects-numeric.csv")
    assert len(table5) == 8
    assert pd.read_csv(out / "bargaining-meta-game-equilibria.csv")["kind"].isin(["pure", "mixed"]).all()
    for p in svgs:
        assert p.read_text(encoding="utf-8").lstrip().startswith("<?xml") and f'href="{p.name}"' in page
    for p in csvs:
        assert f'href="{p.name}"' in page


def test_analyze_glee_command(planted, tmp_path, capsys):
    path, db, _ = planted
    rc, out, err = agora(capsys, "analyze", "glee", str(path), "--db", str(db), "--reps", "10", "--out", str(tmp_path / "csv"))
    assert rc == 0, err
    assert "Table 5" in out and "reference model fair" in out and "linear vs gradient boosting" in out
    fit = pd.read_csv(tmp_path / "csv" / "bargaining_fit.csv")
    assert set(fit.outcome) == set(ga.OUTCOMES) and fit["clusters"].eq(9).all()
    rc, _, err = agora(capsys, "analyze", "glee", "nothing", "--db", str(db))
    assert rc == 2 and err.startswith("agora: error:")


def test_report_covers_only_the_models_the_study_file_names(theory_run, tmp_path):
    """The theory study's file with one of its three models taken out: the report counts only
    the games of the other two (all pairs of 2 models x 2 repeats of the one configuration, of
    the study's 18). The 18 games of this study show it as the planted study's 864 would, at a
    fraction of the report's work."""
    from agorabench.analysis.report import build_report

    path, db, games = theory_run
    spec = load_study(path).file.model_dump(mode="json")
    spec["models"] = [m for m in spec["models"] if m["name"] != "always-reject"]
    store = Store(db)
    build_report(store, "theory", tmp_path, spec=spec)
    store.dispose()
    counts = pd.read_csv(tmp_path / "game-counts.csv")
    kept = games[(games.model_alice != "always-reject") & (games.model_bob != "always-reject")]
    assert len(games) == 3 * 3 * 2  # the games the report leaves out are stored
    assert counts["done"].sum() == len(kept) == 1 * 4 * 2
    seats = pd.read_csv(tmp_path / "seats-per-model.csv")
    assert set(seats["model"]) == {"always-accept", "spe"}

"""`agora profile` over every ready study (issue 29, item 8): each study in studies/ is played by
scripted players on a small sample of its design (its language models and people replaced by a
strategy all its games know), then one `agora profile` reads all the databases. It exits 0 and
writes profile.html, and no family's rows fail: the figures take whatever interval an estimator
gives (an estimate a rounding error outside it, an interval cut to a range)."""

from __future__ import annotations

import csv

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python < 3.11
    import tomli as tomllib

from agorabench.core.runner import run_study
from agorabench.core.study import load_study
from agorabench.families import strategies
from support.helpers import ROOT, agora
from support.studies import toml_text as _toml

READY = sorted((ROOT / "studies").glob("*.toml"))


def _scripted(path, folder, sample: int):
    """The study file with every seat that is no strategy (a language model, a person) given a
    strategy all its games know, one repeat and ``sample`` configurations per seating."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    games = [p["game"] for p in data.get("parts", [])] or [data["game"]]
    common = set.intersection(*(set(strategies(g)) for g in games))
    fill = "random" if "random" in common else sorted(common)[0]
    for entry in data["models"]:
        if not entry["spec"].startswith("strategy/"):
            entry["spec"] = f"strategy/{fill}"
            for key in ("constrained", "max_tokens"):
                entry.pop(key, None)
    data["repeats"], data["sample"] = 1, sample
    out = folder / path.name
    out.write_text(_toml(data), encoding="utf-8")
    return load_study(out)


def test_profile_of_every_ready_study(tmp_path, capsys):
    dbs = []
    for path in READY:
        folder = tmp_path / path.stem
        folder.mkdir()
        study = _scripted(path, folder, sample=1 if path.stem.startswith("commons") else 2)
        db = folder / "s.db"
        stats, _ = run_study(study, db, concurrency=4, progress=False)
        assert stats.done == stats.total > 0 and stats.errors == 0, (path.stem, stats.error_messages[:3])
        dbs.append(str(db))
    out = tmp_path / "profile"
    rc, stdout, err = agora(capsys, "profile", *dbs, "--out", str(out))
    assert rc == 0, err
    page = (out / "profile.html").read_text(encoding="utf-8")
    assert "<figure>" in page and "profile:" in stdout
    rows = list(csv.DictReader(open(out / "profile.csv", encoding="utf-8")))
    assert not [r for r in rows if r["section"] == "not computed"]  # no family's estimate failed
    families = {r["family"] for r in rows}
    assert {"commons", "Bargaining", "Negotiation", "Persuasion"} <= families and any("envy" in f.lower() or "point" in f.lower() for f in families), families

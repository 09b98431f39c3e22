"""A judge's taxonomy, given as data: a TOML or JSON file naming its categories, each with a
definition, and whether a message takes one label or several.

```toml
name = "cooperation"            # optional: the file's stem
multi_label = true              # default false: exactly one label
none_label = "other"            # optional, multi-label only: the label when none applies
description = "..."             # optional: what the categories sort, shown to the judge
[[categories]]
name = "payoff"
definition = "The speaker argues from what they or the group earn."
```

``categories`` may also be a table of name -> definition. Two taxonomies ship with the package
(:data:`EXAMPLES`: ``cooperation``, ``leader_svo``); a name without a path suffix loads one.
Bad files give one-line :class:`~agorabench.core.errors.StudyError` messages.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import StudyError

HERE = Path(__file__).parent
#: The taxonomies shipped with the package, by name.
EXAMPLES = {"cooperation": HERE / "cooperation.toml", "leader_svo": HERE / "leader_svo.toml"}


@dataclass(frozen=True)
class Category:
    """One label: its name (what the judge answers) and its definition."""

    name: str
    definition: str


@dataclass(frozen=True)
class Taxonomy:
    """The categories a judge codes messages into. ``digest`` (SHA-256 of the canonical JSON of
    everything the judge is shown) keys stored judgements, so an edited taxonomy codes again."""

    name: str
    categories: tuple[Category, ...]
    multi_label: bool = False
    none_label: str = ""
    description: str = ""

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.categories)

    @property
    def digest(self) -> str:
        data = {"name": self.name, "multi_label": self.multi_label, "none_label": self.none_label, "description": self.description, "categories": [[c.name, c.definition] for c in self.categories]}
        return hashlib.sha256(json.dumps(data, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def load_taxonomy(source: str | Path) -> Taxonomy:
    """The taxonomy in a TOML or JSON file, or a shipped one by name (:data:`EXAMPLES`)."""
    text = str(source)
    path = EXAMPLES.get(text, Path(text))
    if not path.exists():
        known = ", ".join(EXAMPLES)
        raise StudyError(f"taxonomy not found: {text} (give a .toml or .json file, or one of the shipped taxonomies: {known})")
    try:
        raw = path.read_text(encoding="utf-8")
        data = json.loads(raw) if path.suffix.lower() == ".json" else tomllib.loads(raw)
    except (OSError, UnicodeDecodeError) as exc:
        raise StudyError(f"cannot read taxonomy {path}: {exc}") from None
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        raise StudyError(f"taxonomy {path}: not valid {'JSON' if path.suffix.lower() == '.json' else 'TOML'}: {str(exc).splitlines()[0]}") from None
    return taxonomy_of(data, path.stem, where=str(path))


def taxonomy_of(data: Any, default_name: str = "taxonomy", where: str = "taxonomy") -> Taxonomy:
    """A taxonomy from its data (the file's contents as a dict), checked."""
    if not isinstance(data, dict):
        raise StudyError(f"{where}: a taxonomy is a table with 'categories'")
    unknown = sorted(set(data) - {"name", "multi_label", "none_label", "description", "categories"})
    if unknown:
        raise StudyError(f"{where}: unknown setting {unknown[0]!r} (known: name, description, multi_label, none_label, categories)")
    cats = data.get("categories")
    if isinstance(cats, dict):
        cats = [{"name": k, "definition": v} for k, v in cats.items()]
    if not isinstance(cats, list) or len(cats) < 2:
        raise StudyError(f"{where}: 'categories' must list at least two categories, each with a name and a definition")
    out: list[Category] = []
    for i, c in enumerate(cats, 1):
        if not isinstance(c, dict) or not isinstance(c.get("name"), str) or not isinstance(c.get("definition"), str) or not c["name"].strip() or not c["definition"].strip():
            raise StudyError(f"{where}: category {i} needs a non-empty 'name' and 'definition' (text)")
        name = c["name"].strip()
        if any(name.casefold() == o.name.casefold() for o in out):
            raise StudyError(f"{where}: category {name!r} is named twice")
        if "|" in name:
            raise StudyError(f"{where}: category {name!r}: a name may not contain '|'")
        out.append(Category(name, " ".join(c["definition"].split())))
    multi = data.get("multi_label", False)
    if not isinstance(multi, bool):
        raise StudyError(f"{where}: multi_label must be true or false")
    none_label = data.get("none_label", "")
    if not isinstance(none_label, str):
        raise StudyError(f"{where}: none_label must be text")
    none_label = none_label.strip()
    if none_label and not multi:
        raise StudyError(f"{where}: none_label is for multi-label taxonomies (a single-label one lists its 'none' category among the categories)")
    if none_label and none_label.casefold() in {n.name.casefold() for n in out}:
        raise StudyError(f"{where}: none_label {none_label!r} is also a category")
    name = data.get("name", default_name)
    description = data.get("description", "")
    if not isinstance(name, str) or not name.strip() or not isinstance(description, str):
        raise StudyError(f"{where}: name and description must be text")
    return Taxonomy(name.strip(), tuple(out), multi, none_label, " ".join(description.split()))

"""The house plan holds (issue 20): imports point the way the ``rooms`` block of
``docs/architecture.md`` says, ``import_module`` lives only in the registry, and no module
outside a family's own folder names one of its games or imports its code."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from agorabench import families
from support.helpers import ROOT

SRC = ROOT / "src" / "agorabench"
DOC = ROOT / "docs" / "architecture.md"


def rules() -> dict[str, set[str]]:
    """room -> rooms it may import, from the ```rooms block of the architecture document."""
    block = re.search(r"```rooms\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert block, "docs/architecture.md has no ```rooms block"
    out = {}
    for line in block.group(1).splitlines():
        if line.strip():
            room, _, allowed = line.partition(":")
            out[room.strip()] = set(allowed.split())
    return out


def modules() -> list[tuple[str, Path]]:
    """(dotted module name, path) of every module of the package."""
    out = []
    for path in sorted(SRC.rglob("*.py")):
        parts = ("agorabench",) + path.relative_to(SRC).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out.append((name, path))
    return out


def room_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _type_checking(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING" or isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports(module: str, path: Path) -> list[tuple[int, str]]:
    """(line, imported agorabench module) of every import that runs (TYPE_CHECKING blocks left out)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST) -> None:
        if _type_checking(node):
            for child in getattr(node, "orelse", []):
                visit(child)
            return
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target == "agorabench":  # a module of the package, or a name of its __init__
                found.extend((node.lineno, f"agorabench.{a.name}" if (SRC / f"{a.name}.py").exists() or (SRC / a.name).is_dir() else "agorabench") for a in node.names)
            elif target.startswith("agorabench."):
                found.append((node.lineno, target))
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, a.name) for a in node.names if a.name.startswith("agorabench."))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def test_imports_point_the_way_the_rooms_block_says():
    allowed = rules()
    broken = []
    for module, path in modules():
        room = room_of(module)
        if room in ("__init__", "__main__"):
            continue
        assert room in allowed, f"room {room!r} ({path}) is missing from the rooms block of docs/architecture.md"
        for line, target in imports(module, path):
            other = room_of(target)
            if other != room and other not in allowed[room] and other != "__init__":
                broken.append(f"{path.relative_to(SRC.parent)}:{line} {room} -> {other}")
    assert not broken, "imports against docs/architecture.md:\n" + "\n".join(broken)


def test_the_rooms_block_keeps_the_issue_rules():
    """store and models import nothing of games, core, web, analysis or cli; models nothing of
    store; games nothing of store, models, web or cli."""
    allowed = rules()
    assert not allowed["store"] & {"games", "core", "web", "analysis", "cli"}
    assert not allowed["models"] & {"games", "core", "web", "analysis", "cli", "store"}
    assert not allowed["games"] & {"store", "models", "web", "cli"}


def test_import_module_only_in_the_registry():
    users = []
    for module, path in modules():
        text = path.read_text(encoding="utf-8")
        if module != "agorabench.families" and ("import_module" in text or "__import__(" in text):
            users.append(module)
    assert not users


def _strings(tree: ast.AST) -> list[tuple[int, str]]:
    """Every string constant that is not a docstring."""
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docs.add(id(first.value))
    return [(n.lineno, n.value) for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs]


def _names(text: str, names: dict[str, str]) -> str | None:
    """The registered family or game name a string constant is, exactly (surrounding spaces
    aside), or None: a name inside a longer string (``/chat/completions``, "a market factor")
    names nothing, so ordinary words stay free as family names."""
    word = text.strip()
    return word if word in names else None


def test_a_family_name_is_reserved_by_an_exact_match_not_a_word_in_a_string():
    names = {"chat": "chat", "market": "market", "mygame.chat": "mygame"}
    assert _names("chat", names) == "chat" and _names(" market ", names) == "market"
    assert _names("mygame.chat", names) == "mygame.chat"
    for text in ("/chat/completions", "the market factor", "chat.completions", "mygame.chat.x", "Chat"):
        assert _names(text, names) is None, text


def test_no_module_outside_a_family_names_its_games_or_imports_its_code():
    names = {g: f.name for f in families.families().values() for g in f.games} | {f.name: f.name for f in families.families().values()}
    found = []
    for module, path in modules():
        parts = module.split(".")
        home = parts[2] if len(parts) > 2 and parts[1] == "games" else None
        if module == "agorabench.families":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for line, text in _strings(tree):
            word = _names(text, names)
            if word and names[word] != home:
                found.append(f"{path.relative_to(SRC.parent)}:{line} names {word!r}")
        for line, target in imports(module, path):
            tparts = target.split(".")
            if len(tparts) > 2 and tparts[1] == "games" and tparts[2] != home:
                found.append(f"{path.relative_to(SRC.parent)}:{line} imports {target}")
    assert not found, "\n".join(found)


def test_every_registered_game_belongs_to_one_family_and_loads():
    seen: dict[str, str] = {}
    for family in families.families().values():
        assert family.description and family.games, family.name
        for game in family.games:
            assert game not in seen
            seen[game] = family.name
            assert families.load_game(game).name == game
            assert families.family_of(game) is family
    assert sorted(seen) == families.game_names()
    with pytest.raises(families.UnknownGame, match="known games"):
        families.load_game("no.such.game")


def test_answer_formats_are_switched_in_one_place():
    """Only core/formats.py knows the formats by name: nothing else compares ``response_format``
    (or a format name) to decide how to write, describe or read an answer."""
    from typing import get_args

    from agorabench.core.formats import FORMATS, Format

    assert set(FORMATS) == set(get_args(Format))
    switching = []
    for module, path in modules():
        if module == "agorabench.core.formats":
            continue
        text = path.read_text(encoding="utf-8")
        if re.search(r"response_format\s*(==|!=|in)\s", text) or re.search(r"==\s*[\"'](xml|answer)[\"']", text):
            switching.append(module)
    assert not switching


def _source(package: str, node: ast.ImportFrom) -> str:
    """The module a ``from ... import`` statement of a module of ``package`` names."""
    if node.level:
        base = package.split(".")[: len(package.split(".")) - node.level + 1]
        return ".".join(base + ([node.module] if node.module else []))
    return node.module or ""


def _target(package: str, node: ast.ImportFrom | ast.Import, known: set[str]) -> list[str]:
    """The package's modules an import statement loads (``from .x import y`` loads ``x.y`` when
    that is a module, else ``x``)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name in known]
    source = _source(package, node)
    out = []
    for alias in node.names:
        sub = f"{source}.{alias.name}"
        if sub in known:
            out.append(sub)
        elif source in known:
            out.append(source)
    return out


def import_graph(deferred: bool) -> dict[str, set[str]]:
    """module -> the package's modules it imports: those imported when it is loaded (at its top
    level, inside top-level ``if`` / ``try``; ``TYPE_CHECKING`` blocks left out), and with
    ``deferred`` also those imported inside functions."""
    found = dict(modules())
    known = set(found)
    graph: dict[str, set[str]] = {}
    for module, path in found.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        edges: set[str] = set()

        def visit(nodes: list[ast.stmt]) -> None:
            for node in nodes:
                if _type_checking(node):
                    visit(node.orelse)
                elif isinstance(node, (ast.Import, ast.ImportFrom)):
                    edges.update(_target(package, node, known))
                elif isinstance(node, (ast.If, ast.Try, ast.With)):
                    visit(node.body)
                    visit(getattr(node, "orelse", []))
                    visit(getattr(node, "finalbody", []))
                    for handler in getattr(node, "handlers", []):
                        visit(handler.body)
                elif deferred:
                    for child in ast.walk(node):
                        if isinstance(child, (ast.Import, ast.ImportFrom)):
                            edges.update(_target(package, child, known))

        visit(ast.parse(path.read_text(encoding="utf-8")).body)
        edges.discard(module)
        graph[module] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of ``graph``: its strongly connected components of two modules or
    more (Tarjan's algorithm, iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def test_the_cycle_finder_finds_a_circle_and_only_circles():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_level_import_cycle():
    """Loading any module never needs a module that is still loading: no circle of imports that
    run at load time, inside a room or across rooms (issue 32 item 2)."""
    found = cycles(import_graph(deferred=False))
    assert not found, "import circles at load time:\n" + "\n".join(" <-> ".join(c) for c in found)


#: Circles closed only by imports inside functions, known and left: the transport registry loads
#: a transport's module when it is chosen (so that no unused HTTP client or SDK is imported), and
#: each transport imports the registry's ``Endpoint``. (The participants table reads the stored
#: study file from the store, ``Store.study_spec``: frames and participants make no circle.)
KNOWN_DEFERRED = [
    ["agorabench.models.transport", "agorabench.models.transport.aio", "agorabench.models.transport.lean", "agorabench.models.transport.responses", "agorabench.models.transport.sdk", "agorabench.models.transport.wire"],
]


def test_no_new_import_circle_through_deferred_imports():
    """An import inside a function is no way around a circle: counting those too, the only
    circles are the known ones (the model spec and its providers, the runner and its plan, once
    each other's, are not)."""
    found = cycles(import_graph(deferred=True))
    new = [c for c in found if c not in KNOWN_DEFERRED]
    assert not new, "import circles through imports inside functions:\n" + "\n".join(" <-> ".join(c) for c in new)


def test_names_are_imported_from_the_module_that_defines_them():
    """The store's parts are imported from their own modules: of ``agorabench.store.store``
    the package imports only what that module defines (:class:`Store`), never the names it
    keeps importable for older outside code."""
    path = SRC / "store" / "store.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    defined = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))}
    defined |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    assert "Store" in defined
    found = []
    for module, source in modules():
        package = module if source.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and _source(package, node) == "agorabench.store.store":
                found += [f"{source.relative_to(SRC.parent)}:{node.lineno} {a.name}" for a in node.names if a.name not in defined]
    assert not found, "re-exported names imported through agorabench.store.store:\n" + "\n".join(found)

"""The code's shape, as STYLE.md states it: imports run one way, grading → runs → accounts,
nothing in a circle, the importer reached through its package, one write duty.

The graph is read from the source (every `import`, also inside functions: a circle a
deferred import survives is still a circle), not from what Python happened to load.
"""

from __future__ import annotations

import ast
import re
import subprocess
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
APPS = ("accounts", "runs", "grading", "evalsite")
EVERYTHING = ("bench", *APPS)
#: What each top-level package may import of the others.
MAY_IMPORT = {
    "accounts": set(),
    "runs": {"accounts"},
    "grading": {"runs", "accounts"},
    "evalsite": {"runs", "grading", "accounts"},
    "bench": {"runs", "grading", "accounts", "evalsite"},
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def _modules(packages: tuple[str, ...]) -> dict[str, Path]:
    return {
        _module_name(path): path
        for package in packages
        for path in (ROOT / package).rglob("*.py")
        if "migrations" not in path.parts and "sample" not in path.parts
    }


def _imported(module: str, path: Path, known: dict[str, Path]) -> Iterator[tuple[str, int]]:
    """(module, line) of each project module `module` imports."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            names = [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name and name != module:
                yield name, node.lineno


@cache
def _graph(packages: tuple[str, ...]) -> dict[str, dict[str, int]]:
    known = _modules(packages)
    return {module: dict(_imported(module, path, known)) for module, path in known.items()}


def _circles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = [stack.pop()]
            while component[-1] != node:
                component.append(stack.pop())
            if len(component) > 1:
                circles.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return circles


def test_no_module_imports_itself_through_others() -> None:
    assert _circles(_graph(EVERYTHING)) == []


def test_imports_run_one_way_grading_runs_accounts() -> None:
    upward = [
        f"{_modules(EVERYTHING)[module].relative_to(ROOT)}:{line} imports {target}"
        for module, targets in _graph(EVERYTHING).items()
        for target, line in targets.items()
        if (top := module.partition(".")[0]) != (other := target.partition(".")[0])
        and other not in MAY_IMPORT[top]
    ]
    assert upward == []


def test_the_importer_is_reached_through_its_package_only() -> None:
    private = [
        f"{module} imports {target}"
        for module, targets in _graph(APPS).items()
        if not module.startswith("runs.importing")
        for target in targets
        if target.startswith("runs.importing.")
    ]
    assert private == []


#: The calls that re-index search or start a generation, which writes make through changed().
WRITE_DUTIES = {"bump", "index_runs", "index_iteration", "index_written", "index_imported"}


def test_writes_reindex_and_bump_only_through_runs_changes() -> None:
    elsewhere = []
    for module, path in _modules(APPS).items():
        if module == "runs.changes" or module.startswith("runs.search"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                called = node.func
                name = called.attr if isinstance(called, ast.Attribute) else ""
                name = called.id if isinstance(called, ast.Name) else name
                if name in WRITE_DUTIES:
                    elsewhere.append(f"{path.relative_to(ROOT)}:{node.lineno} calls {name}()")
    assert elsewhere == []


def test_the_graph_sees_a_circle_and_an_import_inside_a_function() -> None:
    graph = {"a.x": {"a.y": 1}, "a.y": {"a.z": 3}, "a.z": {"a.x": 7}, "b": {}}
    assert _circles(graph) == [["a.x", "a.y", "a.z"]]
    # grading/campaigns/models.py imports its plan inside a function (to load lazily).
    source = ROOT / "grading" / "campaigns" / "models.py"
    assert "grading.evaluating.plan" in dict(
        _imported("grading.campaigns.models", source, _modules(APPS))
    )


def test_no_tracked_file_holds_a_merge_conflict() -> None:
    """A conflict left in a template renders as text and no other test need notice it."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: no list of tracked files")
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    marker = re.compile(rb"^(<{7} |>{7} )", re.M)
    conflicted = [
        name.decode()
        for name in tracked
        if name
        and (ROOT / name.decode()).is_file()
        and marker.search((ROOT / name.decode()).read_bytes())
    ]
    assert not conflicted

"""The house as drawn in docs/architecture.md: imports point down, every error is in the tree."""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import memfs
from memfs import errors

ROOT = Path(memfs.__file__).parent
DOC = ROOT.parent / "docs" / "architecture.md"
_ROW = re.compile(r"^\| `([\w/]+)\.py` \|.*\|\s*([\w, /]*?)\s*\|$")


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts) if parts != ["__init__"] else "__init__"


def imports_of(path: Path, root: Path = ROOT) -> set[str]:
    """The memfs modules a file imports (relative imports, at any depth, TYPE_CHECKING included)."""
    package = module_name(path, root).split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level > 0:
            base = package[: len(package) - (node.level - 1)]
            if node.module:
                found.add(".".join([*base, node.module]))
            else:  # from . import x: a module, or a name of the package itself
                for alias in node.names:
                    is_module = root.joinpath(*base, alias.name + ".py").exists()
                    found.add(".".join([*base, alias.name]) if is_module else ".".join([*base, "__init__"]))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            found.update(n.removeprefix("memfs.") for n in names if n.startswith("memfs."))
    return found


@functools.cache  # parsed once per run (half a second); the tests only read it
def graph() -> dict[str, set[str]]:
    return {module_name(p): imports_of(p) for p in sorted(ROOT.rglob("*.py"))}


def allowed() -> dict[str, set[str]]:
    table = {}
    for line in DOC.read_text("utf-8").splitlines():
        match = _ROW.match(line.strip())
        if match:
            name = match.group(1).replace("/", ".")
            table[name] = {n.strip().replace("/", ".") for n in match.group(2).split(",") if n.strip()}
    return table


def test_every_module_is_in_the_table_and_imports_only_what_it_allows() -> None:
    table = allowed()
    modules = {m for m in graph() if m != "integrations.__init__"}
    assert modules - {"integrations"} <= set(table) | {"integrations"}, "a module docs/architecture.md does not draw"
    wrong = {m: sorted(deps - table[m]) for m, deps in graph().items() if m in table and deps - table[m]}
    assert not wrong, f"imports the table in docs/architecture.md does not allow: {wrong}"
    stale = sorted(m for m in table if m not in modules)
    assert not stale, f"docs/architecture.md draws modules that do not exist: {stale}"


def find_circle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``edges`` (module -> the modules it imports), or None."""
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for dep in sorted(edges.get(node, ())):
            if state.get(dep) == 1:
                return [*path[path.index(dep) :], dep]
            if dep not in state and (found := visit(dep)):
                return found
        path.pop()
        state[node] = 2
        return None

    for module in sorted(edges):
        if module not in state and (circle := visit(module)):
            return circle
    return None


def test_there_is_no_import_circle() -> None:
    modules = graph()
    circle = find_circle({m: {d for d in deps if d in modules} for m, deps in modules.items()})
    assert circle is None, "import circle: " + " -> ".join(circle or [])


def test_the_checker_sees_imports_of_every_form_and_a_circle(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.py").write_text("from .b import x\n")
    (tmp_path / "b.py").write_text("from . import a\nfrom memfs.c import y\n\ndef f():\n    from .d import z\n")
    (tmp_path / "sub" / "e.py").write_text("from ..a import x\n")
    assert imports_of(tmp_path / "a.py", tmp_path) == {"b"}
    assert imports_of(tmp_path / "b.py", tmp_path) == {"a", "c", "d"}
    assert imports_of(tmp_path / "sub" / "e.py", tmp_path) == {"a"}
    assert find_circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_circle({"a": {"b"}, "b": set()}) is None


def every_exception_class() -> set[type[BaseException]]:
    found: set[type[BaseException]] = set()
    for info in pkgutil.walk_packages(memfs.__path__, "memfs."):
        if info.name == "memfs.cli":
            continue  # click's own exceptions are raised there, never defined
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # an SDK integration whose extra is not installed
            continue
        for _, value in inspect.getmembers(module, inspect.isclass):
            if issubclass(value, BaseException) and value.__module__.startswith("memfs"):
                found.add(value)
    return found


def test_every_exception_lives_in_errors_under_the_one_root_and_is_drawn() -> None:
    drawn = errors.__doc__ or ""
    classes = every_exception_class()
    assert classes, "found no exception classes at all"
    for cls in classes:
        assert cls.__module__ == "memfs.errors", f"{cls.__qualname__} is defined in {cls.__module__}, not errors.py"
        assert issubclass(cls, errors.MemfsError), f"{cls.__name__} is not under MemfsError"
        assert cls.__name__.endswith("Error"), f"{cls.__name__} does not end in Error"
        assert re.search(rf"\b{cls.__name__}\b", drawn), f"{cls.__name__} is missing from the tree in errors.py"


def test_the_old_error_names_are_the_same_classes() -> None:
    assert memfs.MemoryNotFound is memfs.MemoryNotFoundError
    assert memfs.RevisionNotFound is memfs.RevisionNotFoundError
    assert memfs.LockTimeout is memfs.LockTimeoutError
    assert issubclass(memfs.InvalidArgumentError, ValueError) and issubclass(memfs.InvalidArgumentError, TypeError)


def test_no_gitpython_object_outside_history() -> None:
    for path in ROOT.rglob("*.py"):
        if path.name == "history.py":
            continue
        text = path.read_text("utf-8")
        assert not re.search(r"^\s*(import git|from git\b)", text, re.M), f"{path.name} imports GitPython"
        assert ".repo." not in text and "history.repo" not in text, f"{path.name} reaches into the git repo object"


def test_git_runs_only_through_the_runner() -> None:
    """One way to run git: gitrun starts every process; GitPython only finds the repository (history)."""
    processes = r"\bsubprocess\.(?:run|Popen|call|check_call|check_output|getoutput|getstatusoutput)\b"
    starts = re.compile(rf"{processes}|\bos\.(?:system|popen|spawn\w*|exec\w*|posix_spawn\w*)\(|\.git\.\w+\(")
    for path in ROOT.rglob("*.py"):
        if path.name == "gitrun.py":
            continue
        hits = starts.findall(path.read_text("utf-8"))
        assert not hits, f"{path.name} starts a process itself ({sorted(set(hits))}); run git through memfs.gitrun"


def test_no_module_calls_another_modules_private_names() -> None:
    private = re.compile(r"\b(?:vault|engine|index|history|store|session|manager)\._[a-z]\w*")
    for path in ROOT.rglob("*.py"):
        hits = private.findall(path.read_text("utf-8"))
        assert not hits, f"{path.name} calls private names of another object: {sorted(set(hits))}"

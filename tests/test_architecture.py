"""The layers, pinned by reading the imports of every module in arena/.

* ``domain`` (pure rules) imports no ``store``, ``sources``, ``jobs``, ``cli``, ``web``, nor
  SQLAlchemy, an HTTP client, or what reads files and the environment (``os``, ``pathlib``,
  ``importlib``): templates are handed to the prompt renderer;
* ``sources`` (the outside APIs) never imports ``store``, ``jobs`` or ``cli``;
* ``cli`` reaches the database only through jobs and queries: it may set up the engine
  (``arena.store.db``), but never imports the table models or builds SQL itself;
* nothing below the CLI and the web app imports them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ARENA = Path(__file__).resolve().parents[1] / "arena"


def imports(path: Path) -> set[str]:
    """Every module ``path`` imports, at any depth (lazy imports inside functions count)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def modules(package: str) -> list[Path]:
    return sorted((ARENA / package).rglob("*.py"))


def offending(package: str, forbidden: tuple[str, ...]) -> list[str]:
    return [
        f"{path.relative_to(ARENA)} imports {name}"
        for path in modules(package)
        for name in sorted(imports(path))
        if name.startswith(forbidden)
    ]


RULES = {
    "domain": (
        "arena.store", "arena.sources", "arena.jobs", "arena.cli", "arena.web",
        "arena.runtime", "arena.prompts", "sqlalchemy", "httpx", "openai", "os",
        "importlib", "pathlib",
    ),
    "sources": ("arena.store", "arena.jobs", "arena.cli", "arena.web", "arena.runtime"),
    "cli": ("arena.store.models", "arena.store.queries", "arena.store.upsert"),
    "jobs": ("arena.cli", "arena.web"),
    "analytics": ("arena.cli", "arena.web", "arena.jobs"),
    "store": ("arena.cli", "arena.web", "arena.jobs", "arena.sources"),
}  # fmt: skip


@pytest.mark.parametrize("package", sorted(RULES))
def test_layer_imports(package: str) -> None:
    assert modules(package), package
    assert offending(package, RULES[package]) == []


SQL_BUILDERS = {"select", "insert", "update", "delete", "func", "text", "and_", "or_", "exists"}


def test_the_cli_builds_no_sql() -> None:
    """The CLI may hold an engine and a session type; queries are the jobs' business."""
    built = [
        f"{path.relative_to(ARENA)} imports {alias.name} from {node.module}"
        for path in modules("cli")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sqlalchemy")
        for alias in node.names
        if alias.name in SQL_BUILDERS
    ]
    assert built == []


def test_the_rule_reader_sees_lazy_imports(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from arena.store.models import Agent\n    import httpx\n")
    assert imports(module) == {"arena.store.models", "httpx"}


def test_every_exception_lives_in_the_one_tree() -> None:
    """Exception classes are defined in ``arena/errors.py`` only, and all descend from
    ``ArenaError``; elsewhere a module imports the one it raises."""
    import inspect

    from arena import errors

    stray = [
        f"{path.relative_to(ARENA)}: class {node.name}"
        for path in sorted(ARENA.rglob("*.py"))
        if path.name != "errors.py" or path.parent != ARENA
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ClassDef)
        and any(
            (base.id if isinstance(base, ast.Name) else getattr(base, "attr", "")).endswith(
                ("Exception", "Error", "Warning")
            )
            or (isinstance(base, ast.Name) and base.id in vars(errors))
            for base in node.bases
        )
    ]
    assert stray == []
    defined = [
        cls
        for cls in vars(errors).values()
        if inspect.isclass(cls)
        and issubclass(cls, BaseException)
        and cls.__module__ == errors.__name__
    ]
    assert all(issubclass(cls, errors.ArenaError) for cls in defined)
    assert all(cls.__name__ in (errors.__doc__ or "") for cls in defined)


def test_the_drawn_error_tree_is_the_class_tree() -> None:
    """The tree drawn in ``arena/errors.py``'s docstring names each exception class once, under
    one of its bases: one name per idea, and the drawing cannot drift from the code."""
    import re

    from arena import errors

    drawn: list[tuple[int, str]] = []  # (depth, class name), in drawing order
    for line in (errors.__doc__ or "").splitlines():
        if line.startswith("ArenaError"):
            drawn.append((0, "ArenaError"))
        elif match := re.match(r"^([│ ]*)[├└]── (\w+)", line):
            drawn.append((len(match.group(1)) // 4 + 1, match.group(2)))
    names = [name for _, name in drawn]
    assert len(names) == len(set(names))
    parents: dict[int, str] = {}
    for depth, name in drawn:
        parents[depth] = name
        if depth:
            cls, parent = getattr(errors, name), getattr(errors, parents[depth - 1])
            assert parent in cls.__bases__, (name, parent.__name__)
    defined = {
        name
        for name, cls in vars(errors).items()
        if isinstance(cls, type) and issubclass(cls, errors.ArenaError)
    }
    assert set(names) == defined


MAX_MODULE_LINES = 600


def test_no_module_is_over_600_lines() -> None:
    """A module past 600 lines holds two ideas: split it along its seam."""
    long = {
        str(path.relative_to(ARENA)): lines
        for path in sorted(ARENA.rglob("*.py"))
        if (lines := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}

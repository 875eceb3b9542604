"""The architecture rules that read code rather than the import graph.

The layers and "no import cycle in arena/" are import-linter contracts in ``pyproject.toml``
(``[tool.importlinter]``), checked by ``lint-imports`` in ``.ci/run``. This module pins what a
graph cannot say, and shows that the cycle contract sees every kind of import:

* ``cli`` reaches the database only through jobs and queries: it may set up the engine
  (``arena.store.db``), but never builds SQL itself;
* ``web`` owns its read queries (as Datasette's views do) and never writes: no DML builder, no
  session write, in its modules nor in the job modules it borrows read queries from;
* every exception lives in the one tree, ``arena/errors.py``;
* every ``:mod:``/``:func:``/``:class:``... reference in a docstring names code that exists.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
ARENA = ROOT / "arena"


def modules(package: str) -> list[Path]:
    return sorted((ARENA / package).rglob("*.py"))


def contract(contract_id: str) -> dict:
    """The import-linter contract ``contract_id`` as pyproject.toml writes it."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    [found] = [c for c in config["contracts"] if c["id"] == contract_id]
    return found


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


CROSS_REFERENCE = re.compile(r":(?:mod|func|class|data|meth|attr|exc|obj):`~?\.?([\w.]+)`")


def names_something(dotted: str, module: str) -> bool:
    """Whether a docstring's ``:role:`dotted``` in ``module`` names something that exists: a
    module or an attribute reached from one (the module itself, ``arena.errors``, builtins, or any
    importable prefix of ``dotted``), or a name the module defines (a class's method, field or
    attribute, for a reference relative to the class the docstring is in)."""
    parts = dotted.split(".")
    starts = [(module, parts), ("arena.errors", parts), ("builtins", parts)]
    starts += [(".".join(parts[:i]), parts[i:]) for i in range(len(parts), 0, -1)]
    for start, rest in starts:
        try:
            found: object = importlib.import_module(start)
        except ImportError:
            continue
        for part in rest:
            found = getattr(found, part, None)
            if found is None:
                break
        if found is not None:
            return True
    source = Path(importlib.util.find_spec(module).origin).read_text()
    defined = rf"(def|class) {parts[-1]}\b|self\.{parts[-1]}\b|^\s+{parts[-1]}\s*[:=]"
    return re.search(defined, source, re.MULTILINE) is not None


def test_every_cross_reference_names_something() -> None:
    """``:mod:``, ``:func:``, ``:class:`` ... references in arena/ point at code that exists,
    so a rename or a deletion cannot leave a stale one behind."""
    stale = [
        f"{path.relative_to(ARENA)}: {match.group(0)}"
        for path in sorted(ARENA.rglob("*.py"))
        if "migrations" not in path.parts
        for match in CROSS_REFERENCE.finditer(path.read_text())
        if not names_something(match.group(1), module_name(path))
    ]
    assert stale == []


def test_a_stale_cross_reference_is_seen() -> None:
    assert names_something("arena.export.directory", "arena.export.writer")
    assert names_something("FakeGammaWorld.fail", "arena.fakes.gamma")
    assert not names_something("arena.export_dir", "arena.export.writer")
    assert not names_something("current_side_price", "arena.domain.prompting")


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


WRITES = {"insert", "update", "delete"}  # SQLAlchemy's DML builders (and the dialects' inserts)
SESSION_WRITES = {"commit", "flush", "merge", "add", "add_all", "bulk_save_objects"}


def writes(path: Path) -> list[str]:
    """Where the module at ``path`` imports a DML builder or an upsert, or writes through a
    session (``.commit()``, ``.flush()``, ``.merge()`` anywhere; ``.add()``/``.add_all()`` on
    something named like a session)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            names = {alias.name for alias in node.names}
            if module.startswith("sqlalchemy") and names & WRITES:
                found.append(f"line {node.lineno}: imports {sorted(names & WRITES)} from {module}")
            if module == "arena.store.upsert":
                found.append(f"line {node.lineno}: imports {module}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in SESSION_WRITES
        ):
            receiver = ast.unparse(node.func.value)
            if node.func.attr not in {"add", "add_all"} or "session" in receiver.lower():
                found.append(f"line {node.lineno}: {ast.unparse(node.func)}()")
    return found


def borrowed_read_queries() -> set[str]:
    """The job modules the web app imports (the web contract's ignored imports), and the job
    modules those import in turn."""
    borrowed = {rule.split(" -> ")[1] for rule in contract("web")["ignore_imports"]}
    graph = grimp.build_graph("arena")
    reached = set(borrowed)
    for module in borrowed:
        reached |= graph.find_upstream_modules(module)
    return {module for module in reached if module.startswith("arena.jobs.")}


def test_the_web_app_never_writes() -> None:
    """The web app owns its read queries and never writes, not even through a job module it
    borrows a read query from."""
    paths = modules("web") + [
        Path(importlib.util.find_spec(module).origin) for module in borrowed_read_queries()
    ]
    assert len(paths) > len(modules("web")), "the web app borrows read queries from jobs"
    found = {str(path.relative_to(ARENA)): lines for path in paths if (lines := writes(path))}
    assert found == {}


def test_the_write_check_sees_writes(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "from sqlalchemy import select, update\n"
        "from sqlalchemy.dialects.postgresql import insert\n"
        "def f(session, seen):\n"
        "    seen.add(1)\n"
        "    session.add(object())\n"
        "    session.commit()\n"
    )
    assert writes(module) == [
        "line 1: imports ['update'] from sqlalchemy",
        "line 2: imports ['insert'] from sqlalchemy.dialects.postgresql",
        "line 5: session.add()",
        "line 6: session.commit()",
    ]


CYCLE = {
    "__init__.py": "",
    "low.py": "import typing\nif typing.TYPE_CHECKING:\n    from pkg.high import High\n",
    "high.py": "from pkg.low import *\nclass High: ...\n",
    "lazy/__init__.py": "",
    "lazy/a.py": "def f():\n    from pkg.lazy import b\n",
    "lazy/b.py": "import pkg.lazy.a\n",
}


def test_the_cycle_contract_sees_type_only_and_lazy_imports(tmp_path: Path) -> None:
    """pyproject.toml's acyclic contract, run by ``lint-imports`` on a small package with two
    circles: one closed by an import under ``TYPE_CHECKING``, one by an import inside a
    function."""
    for name, text in CYCLE.items():
        (tmp_path / "pkg" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "pkg" / name).write_text(text)
    acyclic = contract("acyclic")
    assert acyclic["ancestors"] == ["arena"]
    config = {"tool": {"importlinter": {
        "root_package": "pkg", "contracts": [{**acyclic, "ancestors": ["pkg"]}]
    }}}  # fmt: skip
    (tmp_path / "pyproject.toml").write_text(toml(config))
    done = subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports"), "--no-cache"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "No cycles are allowed in pkg." in done.stdout
    assert "No cycles are allowed in pkg.lazy." in done.stdout


def toml(config: dict) -> str:
    """The little TOML the cycle test needs: one table of scalars and one array of tables."""
    table, body = "tool.importlinter", config["tool"]["importlinter"]
    lines = [f"[{table}]", f"root_package = {json.dumps(body['root_package'])}"]
    for item in body["contracts"]:
        lines.append(f"[[{table}.contracts]]")
        for key, value in item.items():
            lines.append(f"{key} = {json.dumps(value)}")
    return "\n".join(lines) + "\n"


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

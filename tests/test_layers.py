"""The house's floors (docs/developers.md): every import in synctool points down this list or
stays on its floor, and no two modules import each other, directly or round a circle. Imports inside
functions count too."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "synctool"

#: top to bottom; a module may import its own floor or any floor below
FLOORS = [
    {"cli", "testing"},
    {"web", "fakes"},
    {"ops"},
    {"platforms", "platform"},
    {"queue", "crm"},
    {
        "runtime",
        "console",
        "http",
        "store",
        "settings",
        "mappings",
        "secrets",
        "money",
        "timeutil",
        "renamed_keys",
        "notices",
        "orgs",
        "host",
    },
    {"config", "config_sections", "validation", "errors", "lazy"},
]


#: a platform's CLI commands stand on the CLI's floor, its fake on the fakes' floor: nothing below may import them
SLICE_ROOMS = {"commands": "cli", "fake": "fakes"}
#: what a platform's commands and fake are written with (Typer's and Starlette's helpers) stands on the fakes' floor
ROOMS = {"synctool.platform.edges": "fakes"}


def room(module: str) -> str:
    """``synctool.crm.gifts`` -> ``crm``; ``synctool.store`` -> ``store``; ``synctool.platforms.square.commands``
    -> ``cli``."""
    if module in ROOMS:
        return ROOMS[module]
    last = module.rsplit(".", 1)[-1]
    if last in SLICE_ROOMS and module.count(".") >= 2:
        return SLICE_ROOMS[last]
    return module.split(".")[1] if module.count(".") >= 1 else module


def floor(module: str) -> int:
    name = room(module)
    return next(n for n, rooms in enumerate(FLOORS) if name in rooms)


@functools.cache  # one parse of the package serves every test here
def imports() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found = graph.setdefault(module, set())
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("synctool"):
                for alias in node.names:
                    candidate = f"{node.module}.{alias.name}"
                    target = (
                        candidate
                        if (PACKAGE.parent / candidate.replace(".", "/")).with_suffix(".py").exists()
                        or (PACKAGE.parent / candidate.replace(".", "/")).is_dir()
                        else node.module
                    )
                    found.add(target)
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name.startswith("synctool"))
        found.discard(module)
    return graph


def test_every_room_is_on_a_floor():
    rooms = {room(m) for m in imports() if m != "synctool"}
    assert rooms <= set().union(*FLOORS), rooms - set().union(*FLOORS)


def face_of_its_own(module: str, target: str) -> bool:
    """A platform package's face (its ``__init__``, which declares its hooks) names its own commands and fake
    inside the hooks that return them, imported only when the CLI or the fake world calls those hooks."""
    return module.startswith("synctool.platforms.") and module.count(".") == 2 and target.rsplit(".", 1)[0] == module


def test_no_import_points_up():
    upward = [
        (m, t)
        for m, targets in imports().items()
        for t in targets
        if m != "synctool" and t != "synctool" and floor(t) < floor(m) and not face_of_its_own(m, t)
    ]
    assert upward == []


def test_no_circle():
    graph = imports()
    seen: dict[str, int] = {}  # 1 = on the current path, 2 = done

    def visit(module: str, path: list[str]) -> None:
        seen[module] = 1
        for target in sorted(graph.get(module, ())):
            if target.startswith(module + ".") or module.startswith(target + "."):
                continue  # a package and its own modules
            if seen.get(target) == 1:
                raise AssertionError("import circle: " + " -> ".join(path[path.index(target) :] + [target]))
            if target not in seen:
                visit(target, path + [target])
        seen[module] = 2

    for module in sorted(graph):
        if module not in seen:
            visit(module, [module])


def test_one_module_changes_jobs():
    """Every statement that changes a job's row lives in queue/jobs.py (the sandbox reset, which empties
    every table, aside)."""
    import re

    writes = re.compile(r"UPDATE jobs SET|INSERT INTO jobs \(|DELETE FROM jobs\b")
    found = [
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if writes.search(path.read_text()) and path.relative_to(PACKAGE).as_posix() != "queue/jobs.py"
    ]
    assert found == []


def test_no_test_changes_the_environment():
    """Tests hand synctool an environment of their own (conftest's ``env``); none writes ``os.environ``."""
    import re

    writes = re.compile(r"setenv\(|delenv\(|os\.environ(\[[^\]]+\]\s*=|\.update|\.pop|\.setdefault|\.clear)")
    here = Path(__file__).resolve().parent
    found = [p.name for p in here.glob("*.py") if p.name != "test_layers.py" and writes.search(p.read_text())]
    assert found == []


def test_nothing_reads_the_environment_after_the_runtime_is_built():
    """Only runtime.py and config.py read ``os.environ`` (and `init`, which is handed it, writes the config)."""
    allowed = {"runtime.py", "config.py", "cli/main.py"}
    found = [
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if "os.environ" in path.read_text() and path.relative_to(PACKAGE).as_posix() not in allowed
    ]
    assert found == []


def test_only_the_queue_reads_or_writes_the_jobs_tables():
    """The sync log has an owner: SQL on ``jobs``, ``job_attempts`` or ``jobs_search`` lives in ``queue/``
    (``jobs.py`` for changes, ``log.py`` for reads); the schema's migrations in ``store/schema/`` are the exception."""
    import re

    sql = re.compile(r"\b(FROM|JOIN|UPDATE|INTO)\s+(jobs|job_attempts|jobs_search)\b", re.IGNORECASE)
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{n}"
        for path in PACKAGE.rglob("*.py")
        if (parts := path.relative_to(PACKAGE).parts)[0] != "queue" and parts[:2] != ("store", "schema")
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if sql.search(line)
    ]
    assert found == []


def test_the_core_imports_no_terminal_or_web_framework():
    """Typer and Rich live in the CLI, the terminal kit (``console``) and the platforms' ``commands.py``;
    Starlette and uvicorn in ``web/`` and the fakes (and ``testing/``, which checks platforms' commands), and
    what a platform's commands and fake are written with (``platform/edges.py``); the core imports none of them,
    nor ``console``."""
    import re

    frameworks = re.compile(r"^\s*(from|import) (typer|rich|starlette|uvicorn|synctool\.console)\b", re.MULTILINE)
    allowed = ("cli/", "web/", "fakes/", "testing/", "console/", "platform/edges.py")
    found = [
        str(rel)
        for path in PACKAGE.rglob("*.py")
        if not (rel := path.relative_to(PACKAGE)).as_posix().startswith(allowed)
        and rel.name not in ("commands.py", "fake.py")
        and frameworks.search(path.read_text())
    ]
    assert found == []

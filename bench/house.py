"""The house's figures ("A house a stranger can live in"), printed from the tree as it stands.

- functions over 80 lines, and over 150 (synctool/, fakes included), the longest named;
- `Any` in annotations (parameters, returns, variables; ``dict[str, Any]`` counts once);
- modules over 400 lines;
- duplicate pairs (the workplace's `duplicates` command, when it is on PATH; said when it is not);
- imports inside functions (start-up laziness is worth some; the rest is a smell);
- public class names defined more than once (the fakes aside), and the synctool modules the built-in platform
  packages import outside their own package (issue 57, "Before the next platforms").

The start-up figure is ``bench/startup.py``'s (paired runs), the commits of one gift job
``tests/test_unit_of_work.py``'s (an exact count, so a test).

    python bench/house.py [--goal]
"""

from __future__ import annotations

import argparse
import ast
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "synctool"

#: the issue's goals: at most this many of each
GOALS = {
    "functions over 80 lines": 3,
    "functions over 150 lines": 0,
    "Any in annotations": 349,
    "modules over 400 lines": 2,
    "duplicate pairs": 20,
    "pairs between platform packages": 0,
    "class names defined twice": 4,
    "modules platforms import": 2,
}
#: names that may never be defined twice, whatever the count
NEVER_TWICE = ("Outcome", "Job", "Runner")


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def function_lengths(tree: ast.AST) -> list[tuple[str, int]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno:
            found.append((node.name, node.end_lineno - node.lineno + 1))
    return found


def any_annotations(tree: ast.AST) -> int:
    annotations: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            every = args.posonlyargs + args.args + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]
            annotations += [a.annotation for a in every if a.annotation is not None]
            if node.returns is not None:
                annotations.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            annotations.append(node.annotation)
    return sum(1 for a in annotations for n in ast.walk(a) if isinstance(n, ast.Name) and n.id == "Any")


def inner_imports(tree: ast.AST) -> int:
    count = 0
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            count += sum(1 for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom)))
    return count


def public_classes(tree: ast.AST) -> list[str]:
    return [n.name for n in tree.body if isinstance(n, ast.ClassDef) and not n.name.startswith("_")]  # type: ignore[attr-defined]


def platform_imports(tree: ast.AST, package: str) -> set[str]:
    """The synctool modules a built-in platform package's module imports outside its own package."""
    own = f"synctool.platforms.{package}"
    found = set()
    for node in ast.walk(tree):
        modules = [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
        modules += [a.name for a in node.names] if isinstance(node, ast.Import) else []
        for module in modules:
            names = {a.name for a in node.names}  # type: ignore[attr-defined]
            if not module.startswith("synctool") or module == own or module.startswith(own + "."):
                continue
            if (module, names) != ("synctool.platforms", {package}):
                found.add(module)
    return found


def duplicate_pairs() -> tuple[int, list[str]] | None:
    """How many pairs `duplicates` lists, and the rows whose two places are in two platform packages."""
    tool = shutil.which("duplicates")
    if tool is None:
        return None
    out = subprocess.run([tool, "--repo", str(PACKAGE), "--most", "200", "--seconds", "120"], capture_output=True, text=True)
    lines = out.stdout.splitlines() or ["0"]
    count = 0 if lines[0].startswith("no duplicates") else int(lines[0].split()[0])
    return count, [row for row in lines[1:] if len(set(platform_packages(row))) == 2]


def platform_packages(row: str) -> list[str]:
    """``D2 platforms/givebutter/__init__.py:32-42 ~ platforms/mailchimp/__init__.py:35-45 shape`` -> both packages."""
    places = row.split()[1:4:2] if " ~ " in row else []
    return [p.split("/")[1] for p in places if p.startswith("platforms/") and p.count("/") >= 2]


def figures() -> dict[str, object]:
    long_functions: list[tuple[str, int]] = []
    big_modules: list[tuple[str, int]] = []
    anys = inner = 0
    classes: dict[str, list[str]] = {}
    imported: set[str] = set()
    built_in = ("givebutter", "square", "mailchimp", "stripe", "portal")
    for path in modules():
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        where = str(path.relative_to(ROOT))
        long_functions += [(f"{where}:{name}", size) for name, size in function_lengths(tree) if size > 80]
        lines = text.count("\n")
        if lines > 400:
            big_modules.append((where, lines))
        anys += any_annotations(tree)
        inner += inner_imports(tree)
        if "fake" not in path.name and "fakes" not in path.parts:
            for name in public_classes(tree):
                classes.setdefault(name, []).append(where)
        parts = path.relative_to(PACKAGE).parts
        if len(parts) > 2 and parts[0] == "platforms" and parts[1] in built_in:
            imported |= platform_imports(tree, parts[1])
    long_functions.sort(key=lambda f: -f[1])
    big_modules.sort(key=lambda m: -m[1])
    pairs = duplicate_pairs()
    twice = {name: places for name, places in classes.items() if len(places) > 1}
    return {
        "functions over 80 lines": len(long_functions),
        "functions over 150 lines": sum(1 for _, size in long_functions if size > 150),
        "Any in annotations": anys,
        "modules over 400 lines": len(big_modules),
        "duplicate pairs": None if pairs is None else pairs[0],
        "pairs between platform packages": None if pairs is None else len(pairs[1]),
        "imports inside functions": inner,
        "class names defined twice": len(twice) + sum(100 for name in NEVER_TWICE if name in twice),
        "modules platforms import": len(imported),
        "_twice": sorted(twice.items()),
        "_imported": sorted(imported),
        "_longest": long_functions[:12],
        "_biggest": big_modules,
        "_between": [] if pairs is None else pairs[1],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--goal", action="store_true", help="exit 1 when a figure misses its goal")
    args = parser.parse_args()
    found = figures()
    missed = []
    for name, value in found.items():
        if name.startswith("_"):
            continue
        goal = GOALS.get(name)
        shown = "n/a (the `duplicates` command is not on PATH)" if value is None else value
        print(f"{name:33} {shown}" + (f"   (goal: at most {goal})" if goal is not None else ""))
        if goal is not None and isinstance(value, int) and value > goal:
            missed.append(name)
    print("\nlongest functions:")
    for where, size in found["_longest"]:  # type: ignore[attr-defined]
        print(f"  {size:5}  {where}")
    print("modules over 400 lines:")
    for where, size in found["_biggest"]:  # type: ignore[attr-defined]
        print(f"  {size:5}  {where}")
    if found["_between"]:
        print("pairs between platform packages:")
        for row in found["_between"]:  # type: ignore[attr-defined]
            print(f"  {row}")
    print("class names defined twice: " + ("; ".join(f"{n} ({', '.join(w)})" for n, w in found["_twice"]) or "none"))  # type: ignore[attr-defined]
    print("synctool modules the built-in platforms import: " + ", ".join(found["_imported"]))  # type: ignore[arg-type]
    if args.goal and missed:
        print("missed: " + ", ".join(missed), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()

"""``synctool.platform`` is the one module a platform package imports synctool from (with ``synctool.platform.edges``
for its commands and fake): the built-in packages are held to it, as an outside one is by docs/platforms.md."""

from __future__ import annotations

import ast
from pathlib import Path

import synctool.platform
from synctool.platforms.registry import DEFAULT_PLATFORMS, OPTIONAL_PLATFORMS

PLATFORMS = Path(__file__).resolve().parents[1] / "synctool" / "platforms"
#: the synctool modules a platform package may import from, beside its own package
ALLOWED = {"synctool.platform", "synctool.platform.edges"}


def synctool_imports(package: str, folder: Path = PLATFORMS) -> set[str]:
    """The synctool modules a built-in package's modules import, outside the package itself."""
    own = f"synctool.platforms.{package}"
    found = set()
    for path in (folder / package).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("synctool"):
                names = {a.name for a in node.names}
                if (
                    node.module == own
                    or node.module.startswith(own + ".")
                    or (node.module, names) == ("synctool.platforms", {package})
                ):
                    continue
                found.add(node.module if node.module != "synctool" else f"synctool.{'|'.join(sorted(names))}")
            elif isinstance(node, ast.Import):
                found |= {a.name for a in node.names if a.name.startswith("synctool") and not a.name.startswith(own)}
    return found


def test_each_built_in_platform_imports_synctool_only_through_the_platform_module():
    built_in = DEFAULT_PLATFORMS + OPTIONAL_PLATFORMS
    outside = {name: sorted(synctool_imports(name) - ALLOWED) for name in built_in}
    assert outside == {name: [] for name in built_in}


def test_the_walk_sees_an_import_of_the_core(tmp_path):
    package = tmp_path / "kind"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("from synctool.platform import Platform\nfrom synctool.platforms.kind import rules\n")
    (package / "sub" / "rules.py").write_text(
        "def f():\n    from synctool.runtime import Runtime\n    import synctool.queue.jobs\n"
    )
    assert synctool_imports("kind", tmp_path) - ALLOWED == {"synctool.runtime", "synctool.queue.jobs"}


def test_every_name_the_platform_module_gives_is_importable_and_listed():
    eager = {name for name in synctool.platform.__all__ if name in vars(synctool.platform)}
    assert sorted(synctool.platform.__all__) == sorted(eager | set(synctool.platform.exports()))
    missing = [name for name in synctool.platform.__all__ if getattr(synctool.platform, name, None) is None]
    assert missing == []


def test_declaring_a_platform_loads_neither_the_crm_nor_the_queue():
    import subprocess
    import sys

    code = (
        "import sys; from synctool.platform import Platform, Hook, Webhook; "
        "print(sorted(m for m in sys.modules if m.startswith(('synctool.crm', 'synctool.queue', 'synctool.store'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"

"""store.atomic: a transaction outside one, a savepoint inside one, so every data function works either
way; and the multi-row changes that must be one commit are one commit."""

from __future__ import annotations

import pytest

from synctool import mappings, settings, store
from synctool.crm import references
from synctool.platforms.square.ops import LocationOverrides, replace_location_overrides


def test_data_functions_nest_inside_a_callers_transaction(db):
    with store.atomic(db):
        mappings.put(db, "type_default", "donations:default", {"fund_id": 1})
        settings.put(db, "k", 1)
        settings.cache_replace(db, "x", {"a": 1})
        assert db.in_transaction
    assert mappings.get(db, "type_default", "donations:default") == {"fund_id": 1}
    assert settings.get(db, "k") == 1 and settings.cache_list(db, "x") == [1]


def test_an_error_rolls_back_the_whole_outer_transaction(db):
    with pytest.raises(RuntimeError), store.atomic(db):
        mappings.put(db, "type_default", "donations:default", {"fund_id": 1})
        settings.put(db, "k", 1)
        raise RuntimeError("boom")
    assert mappings.get(db, "type_default", "donations:default") is None and settings.get(db, "k") is None


def test_an_inner_failure_rolls_back_only_its_savepoint(db):
    with store.atomic(db):
        settings.put(db, "kept", 1)
        with pytest.raises(RuntimeError), store.atomic(db):
            settings.put(db, "dropped", 1)
            raise RuntimeError("inner")
    assert settings.get(db, "kept") == 1 and settings.get(db, "dropped") is None


def _commits(db) -> list[str]:
    seen: list[str] = []
    db.set_trace_callback(lambda sql: seen.append(sql) if sql.strip().upper() == "COMMIT" else None)
    return seen


def test_replacing_location_overrides_is_one_commit(db):
    replace_location_overrides(db, LocationOverrides.model_validate([{"location_id": "L1"}, {"location_id": "L2"}]))
    commits = _commits(db)
    replace_location_overrides(db, LocationOverrides.model_validate([{"location_id": "L3"}]))
    assert len(commits) == 1
    assert [r["key"] for r in mappings.all_of(db, "location_override")] == ["L3"]


class _Lists:
    def reference_list(self, path: str, **params: str) -> list[dict]:
        return [{"id": 1, "name": path}, {"id": 2, "name": path}]


def test_the_reference_refresh_is_one_commit(db):
    commits = _commits(db)
    counts = references.refresh(db, _Lists())
    assert len(commits) == 1 and counts["gift-fields"] == 2 and counts["tags"] == 0
    assert all(counts[kind] == 2 for kind in references.LISTS)


def test_the_package_re_exports_every_name_its_callers_use():
    """``store`` is a package of one idea a module; callers use ``store.<name>``, which ``store/__init__.py`` keeps."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    used = {
        name
        for folder in ("synctool", "tests", "bench")
        for path in (root / folder).rglob("*.py")
        for name in re.findall(r"(?<![\w.])store\.([A-Za-z]\w*)", path.read_text())
    }
    assert used - {"py"} <= set(store.__all__), used - {"py"} - set(store.__all__)
    assert all(hasattr(store, name) for name in store.__all__)

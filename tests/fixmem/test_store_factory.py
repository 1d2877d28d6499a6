"""Every store is built by a factory: ``fixmem.wiring`` (from ``Settings``) or ``fixmem.hooks.stores``
(the hook processes, from the mirrored defaults). A store built by hand missed the deployment's lock
and slack (``memory.py``, ``hooks/publisher.py``, ``hooks/reader.py`` each had their own cap only)."""

from __future__ import annotations

import ast
from pathlib import Path

import fixmem

PACKAGE = Path(fixmem.__file__).parent
FACTORIES = {"wiring.py", "hooks/stores.py"}


def constructor_calls(source: str) -> list[int]:
    """The lines of ``source`` that call ``FixStore(...)`` (by name or as an attribute)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            func = node.func
            name = (
                func.id
                if isinstance(func, ast.Name)
                else func.attr
                if isinstance(func, ast.Attribute)
                else ""
            )
            if name == "FixStore":
                lines.append(node.lineno)
    return lines


def test_the_scan_finds_a_call() -> None:
    assert constructor_calls("from store import FixStore\ns = FixStore('d', cap=5)\n") == [2]
    assert constructor_calls("import store\ns = store.FixStore('d')\n") == [2]
    assert constructor_calls("from store import FixStore\ndef f(s: FixStore) -> None: ...\n") == []


def test_only_the_factories_build_a_store() -> None:
    found = {
        f"{path.relative_to(PACKAGE)}:{line}"
        for path in PACKAGE.rglob("*.py")
        if path.relative_to(PACKAGE).as_posix() not in FACTORIES
        for line in constructor_calls(path.read_text())
    }
    assert found == set()
    for factory in FACTORIES:  # the allow-list names files that exist and do build stores
        assert constructor_calls((PACKAGE / factory).read_text())


def test_both_factories_pass_the_learning_switch(tmp_path: Path) -> None:
    from fixmem.hooks.config import HookConfig  # noqa: PLC0415
    from fixmem.hooks.stores import local_store  # noqa: PLC0415
    from fixmem.settings import Settings  # noqa: PLC0415
    from fixmem.wiring import make_store  # noqa: PLC0415

    for on in (True, False):
        settings = Settings.from_env({"HOME": str(tmp_path), "FIXMEM_DATA_DIR": str(tmp_path / "d")},
                                     learn_from_use=on)  # fmt: skip
        assert make_store(settings, None).learn_from_use is on
        assert local_store(HookConfig(tmp_path / "d", "bob", learn_from_use=on)).learn_from_use is on


def test_both_factories_pass_the_meaning_switch(tmp_path: Path) -> None:
    """On: the process's shared meaning signal (None when the optional extra is not installed); off: none."""
    from fixmem.hooks.config import HookConfig  # noqa: PLC0415
    from fixmem.hooks.stores import local_store  # noqa: PLC0415
    from fixmem.settings import Settings  # noqa: PLC0415
    from fixmem.wiring import make_store  # noqa: PLC0415
    from store.meaning import shared_meaning  # noqa: PLC0415

    for on in (True, False):
        settings = Settings.from_env({"HOME": str(tmp_path), "FIXMEM_DATA_DIR": str(tmp_path / "d")},
                                     meaning=on)  # fmt: skip
        want = shared_meaning() if on else None
        assert make_store(settings, None).meaning is want
        assert local_store(HookConfig(tmp_path / "d", "bob", meaning=on)).meaning is want

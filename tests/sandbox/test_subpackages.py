"""sandbox's subpackages are reachable by their dotted names (``sandbox.cgroup._cgroup``).

Rule (sandbox/__init__): a subpackage is named apart from every name the facade exports.
A facade name equal to a subpackage's (the function `sandbox.preflight` beside a package
``sandbox/preflight/``) binds over the package in ``sandbox``'s namespace: imports still
work, but ``sandbox.preflight._x`` resolves on the function, so a test's
``monkeypatch.setattr("sandbox.preflight._x.NAME", ...)`` or any attribute walk fails.
"""

from __future__ import annotations

import importlib
import types
from pathlib import Path

import sandbox

SUBPACKAGES = sorted(p.parent.name for p in Path(sandbox.__file__).parent.glob("*/__init__.py"))


def test_every_subpackage_is_the_module_its_dotted_name_reaches() -> None:
    assert {"cgroup", "checks", "confined", "network", "storage", "users"} <= set(SUBPACKAGES)
    for name in SUBPACKAGES:
        reached = getattr(sandbox, name)
        assert isinstance(reached, types.ModuleType), f"sandbox.{name} is {reached!r}"
        assert reached is importlib.import_module(f"sandbox.{name}")


def test_no_name_the_facade_exports_is_a_subpackages_name() -> None:
    exported = {name for name, value in vars(sandbox).items()
                if not name.startswith("_") and not isinstance(value, types.ModuleType)}
    assert not exported & set(SUBPACKAGES)

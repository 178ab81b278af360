"""The package benchfs_native: the installed Python package around the
compiled module, never the Rust crate folder of the same name."""

from __future__ import annotations

import typing
from pathlib import Path

import benchfs_native as bn
from benchfs_native import _native, _types

REPO = Path(__file__).resolve().parents[2]


def test_the_installed_package_is_imported_not_the_crate_folder() -> None:
    # The repository root is on sys.path (pytest's pythonpath); its
    # benchfs_native/ is the Rust crate, which has no __init__.py.
    assert bn.__file__ is not None
    package = Path(bn.__file__).resolve().parent
    assert package != REPO / "benchfs_native"
    assert not package.is_relative_to(REPO / "benchfs_native")
    assert Path(_native.__file__).parent == package
    assert Path(_native.__file__).name.startswith("_native.")


def test_exports_are_the_compiled_functions_and_the_typeddicts() -> None:
    compiled = set(_native.__all__)
    typed = {n for n, v in vars(_types).items() if typing.is_typeddict(v)}
    assert set(bn.__all__) == compiled | typed
    for name in compiled:
        assert getattr(bn, name) is getattr(_native, name), name
    for name in typed:
        assert getattr(bn, name) is getattr(_types, name), name
    assert bn.ChunkStore.__module__ == "benchfs_native"
    assert bn.__version__ == bn.build_info()["version"]

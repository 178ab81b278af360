"""Stub of the compiled extension, ``benchfs_native.benchfs_native``.

The API contract, with its docstrings, is ``/benchfs_native.pyi`` at the
repository root (maturin installs it as ``benchfs_native/__init__.pyi``); the
package re-exports everything of this compiled module, so this stub
re-exports the contract. pyproject's ``[tool.maturin] include`` ships it.
"""

from benchfs_native import *
from benchfs_native import __all__ as __all__

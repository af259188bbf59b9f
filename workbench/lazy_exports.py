"""Packages whose names load on first use, so that importing one light submodule (the CLI's option tables,
RunConfig, EvaluatorLayout) does not import TensorFlow through its package's __init__.

A package lists its public names once, as ordinary imports under `if TYPE_CHECKING:` (what type checkers and
editors read), and ends with `__getattr__ = lazy_exports(__name__)`: at run time the first use of a name imports
the submodule that the TYPE_CHECKING block names for it (PEP 562).
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable
from typing import Any


def _type_checking_imports(path: str) -> dict[str, str]:
    """{name: absolute module} of the `from X import name` lines under `if TYPE_CHECKING:` in the file at `path`."""
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    names: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for statement in node.body:
                if isinstance(statement, ast.ImportFrom) and statement.module and statement.level == 0:
                    for alias in statement.names:
                        names[alias.asname or alias.name] = statement.module
    return names


def lazy_exports(package: str) -> Callable[[str], Any]:
    """The module `__getattr__` of `package`: a name of its TYPE_CHECKING imports is imported from its submodule
    on first use (and kept in the package's namespace); any other name raises AttributeError as usual."""
    module = sys.modules[package]
    exports = _type_checking_imports(module.__file__ or "")

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(exports[name]), name)
        setattr(module, name, value)
        return value

    return __getattr__

"""The public API of every package module is annotated, and every module says what it is for."""

import ast
import pathlib

import pytest

from support import REPO

PACKAGE = pathlib.Path(REPO) / "workbench"
MODULES = sorted(PACKAGE.rglob("*.py"))
# The benchmarks are scripts (python -m workbench.bench.NAME), not an API to call: type-checked with the package,
# but their helpers need no annotations; every module still says what it is for.
API_MODULES = [path for path in MODULES if path.parent != PACKAGE / "bench"]
DUNDERS = ("__init__", "__call__", "__enter__", "__exit__", "__len__")


def public_functions(tree):
    """(qualified name, FunctionDef) of module functions and methods of public classes not starting with _."""

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef) and not child.name.startswith("_"):
                yield from visit(child, prefix + child.name + ".")
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if not child.name.startswith("_") or child.name in DUNDERS:
                    yield prefix + child.name, child

    yield from visit(tree, "")


@pytest.mark.parametrize("path", API_MODULES, ids=lambda p: str(p.relative_to(PACKAGE.parent)))
def test_public_functions_are_annotated(path):
    missing = []
    for name, function in public_functions(ast.parse(path.read_text())):
        arguments = function.args.posonlyargs + function.args.args + function.args.kwonlyargs
        arguments = [a for a in arguments if a.arg not in ("self", "cls")]
        arguments += [a for a in (function.args.vararg, function.args.kwarg) if a is not None]
        unannotated = [a.arg for a in arguments if a.annotation is None]
        if unannotated or function.returns is None:
            missing.append(f"{name}({', '.join(unannotated)})" + (" -> ?" if function.returns is None else ""))
    assert not missing, f"{path.name}: annotate {missing}"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE.parent)))
def test_every_module_has_a_docstring(path):
    assert ast.get_docstring(ast.parse(path.read_text())), f"{path.name} has no docstring saying what it is for"


LAZY_PACKAGES = ("workbench.evaluation", "workbench.lab", "workbench.models", "workbench.training")


@pytest.mark.parametrize("name", LAZY_PACKAGES)
def test_a_lazy_package_exports_what_it_lists_and_nothing_else(name):
    """Each name of a lazy package's __all__ is one of its TYPE_CHECKING imports and loads on first use (the same
    object as the submodule's); an unknown name raises AttributeError as for any module."""
    import importlib

    from workbench.lazy_exports import _type_checking_imports

    package = importlib.import_module(name)
    exports = _type_checking_imports(package.__file__)
    assert set(package.__all__) == set(exports)
    for export, module in exports.items():
        assert getattr(package, export) is getattr(importlib.import_module(module), export)
    with pytest.raises(AttributeError, match="no attribute 'NotAName'"):
        package.NotAName  # noqa: B018

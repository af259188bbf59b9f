"""Argument checks shared by every public boundary: each error names the argument and says what it must be.

    slots = check_int("slots", slots, low=1)
    sigma = check_real("sigma", sigma, low=0, low_open=True)
    backend = check_choice("backend", backend, BACKENDS, allow_none=True)

Integers accept Python and numpy integers but never bools; reals accept any finite
int or float (never bools). Each returns the value as a plain Python int, float or
the chosen item, so a caller can store what it returns.
"""

from __future__ import annotations

import difflib
import math
import os
from collections.abc import Iterable
from numbers import Integral, Real
from typing import Any, Literal, TypeVar, overload

T = TypeVar("T")


def _is_int(value: Any) -> bool:
    return isinstance(value, Integral) and not isinstance(value, bool)


def _bounds(low: float | None, high: float | None, low_open: bool = False, high_open: bool = False) -> str:
    if low is not None and high is not None:
        return f"in {'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"
    if low is not None:
        return f"{'>' if low_open else '>='} {low}"
    if high is not None:
        return f"{'<' if high_open else '<='} {high}"
    return ""


def check_int(name: str, value: Any, low: int | None = None, high: int | None = None) -> int:
    """`value` as an int in [low, high] (either bound optional), else a ValueError naming `name`."""
    if not _is_int(value) or (low is not None and value < low) or (high is not None and value > high):
        bounds = _bounds(low, high)
        raise ValueError(f"{name} must be an integer{' ' + bounds if bounds else ''}, got {value!r}")
    return int(value)


def check_path(name: str, value: Any) -> str:
    """`value` (a str or os.PathLike) as a non-empty path string, else a TypeError or ValueError naming `name`."""
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name} must be a path (str or os.PathLike), got {type(value).__name__}")
    path = os.fspath(value)
    if not isinstance(path, str) or not path.strip():
        raise ValueError(f"{name} must be a file or folder path, got {path!r}")
    return path


def check_positive_int(name: str, value: Any) -> int:
    """`value` as an int >= 1, else a ValueError naming `name` ("must be a positive integer")."""
    if not _is_int(value) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def check_real(
    name: str, value: Any, low: float | None = None, high: float | None = None, *, low_open: bool = False, high_open: bool = False
) -> float:
    """`value` as a finite float within the bounds (open or closed), else a ValueError naming `name`."""
    ok = isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(value)
    if ok and low is not None:
        ok = value > low if low_open else value >= low
    if ok and high is not None:
        ok = value < high if high_open else value <= high
    if not ok:
        bounds = _bounds(low, high, low_open, high_open)
        raise ValueError(f"{name} must be a finite number{' ' + bounds if bounds else ''}, got {value!r}")
    return float(value)


def check_bool(name: str, value: Any) -> bool:
    """`value` if it is a bool, else a TypeError naming `name`."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {value!r}")
    return value


@overload
def check_choice(name: str, value: T, choices: Iterable[T], allow_none: Literal[False] = False) -> T: ...


@overload
def check_choice(name: str, value: T | None, choices: Iterable[T], allow_none: bool) -> T | None: ...


def check_choice(name: str, value: Any, choices: Iterable[Any], allow_none: bool = False) -> Any:
    """`value` if it is one of `choices` (or None when allowed), else a ValueError listing them."""
    choices = tuple(choices)
    if (value is None and allow_none) or (value is not None and value in choices):
        return value
    listed = ", ".join(repr(c) for c in choices) + (" or None" if allow_none else "")
    raise ValueError(f"{name} must be one of {listed}, got {value!r}")


def check_optional_positive_int(name: str, value: Any) -> int | None:
    """None, or `value` as an int >= 1 (ValueError naming `name`)."""
    return None if value is None else check_positive_int(name, value)


def check_type(name: str, value: Any, kind: type | tuple[type, ...], description: str | None = None) -> Any:
    """`value` if it is an instance of `kind`, else a TypeError naming `name` and the type it got."""
    if not isinstance(value, kind):
        wanted = description or (kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind))
        raise TypeError(f"{name} must be {wanted}, got {type(value).__name__}")
    return value


# The plain annotations check_annotated knows: (test, what the value must be).
_ANNOTATED_KINDS: dict[str, tuple[Any, str]] = {
    "str": (lambda v: isinstance(v, str), "a string"),
    "int": (_is_int, "an integer"),
    "float": (lambda v: isinstance(v, Real) and not isinstance(v, bool), "a number"),
    "bool": (lambda v: isinstance(v, bool), "a bool"),
    "dict": (lambda v: isinstance(v, dict), "a dict"),
}


def check_annotated(name: str, value: Any, annotation: str) -> Any:
    """`value` if it has the type of a dataclass field annotated `annotation` (as a string: "int", "str | None",
    ...; "Any" and unknown annotations take anything), else a TypeError naming `name`."""
    kinds = [kind.strip() for kind in annotation.split("|")]
    if value is None and "None" in kinds:
        return value
    known = [_ANNOTATED_KINDS[kind] for kind in kinds if kind in _ANNOTATED_KINDS]
    if len(known) < len([kind for kind in kinds if kind != "None"]) or any(test(value) for test, _ in known):
        return value
    wanted = " or ".join([what for _, what in known] + (["None"] if "None" in kinds else []))
    raise TypeError(f"{name} must be {wanted}, got {type(value).__name__} {value!r}")


def close_matches(name: str, choices: Iterable[str], count: int = 5) -> list[str]:
    """Up to `count` of `choices` close to `name` (case-insensitive), for "did you mean" hints in errors."""
    lowered = {choice.lower(): choice for choice in choices}
    return [lowered[m] for m in difflib.get_close_matches(str(name).lower(), list(lowered), n=count, cutoff=0.5)]

"""Keeps large freed buffers in the process instead of handing them back to the kernel (glibc only).

An evaluator allocates and frees buffers of megabytes all the time: the decoded weights of every
member it loads, their per-layer pieces, the tensors TensorFlow makes of them, the outputs of the
ops. glibc serves every allocation above its mmap threshold (128 KiB, rising with what is freed, at
most 32 MiB) with fresh pages from the kernel and returns them on free, so each such buffer pays a
page fault and the kernel's zeroing for every 4 KiB it touches, every time. Measured here: loading
32 LargeModel members into their slots took 7.1 ms per member, 4.8 ms with the threshold raised.

tune_allocator() raises the threshold to 1 GiB and the heap's trim threshold to 2 GiB, once per
process, so freed buffers are reused. The cost: the process keeps what it freed up to those sizes
(its resident memory stays near its peak instead of shrinking between rounds; workbench/bench/soak.py
measures the growth over 200 generations). WORKBENCH_MALLOC_TUNING=0 leaves the allocator alone.
Elsewhere than glibc, or when the settings are refused, nothing changes.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading

MMAP_THRESHOLD = 1 << 30  # allocations below this come from the heap (and are reused)
TRIM_THRESHOLD = 2**31 - 1  # free memory at the heap's top kept before any is returned (mallopt takes an int)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # mallopt parameters (malloc.h)

_lock = threading.Lock()
_result: bool | None = None


def tune_allocator() -> bool:
    """Applies the settings above once per process; whether they are in force."""
    global _result
    with _lock:
        if _result is None:
            _result = _apply()
        return _result


def _apply() -> bool:
    if os.environ.get("WORKBENCH_MALLOC_TUNING", "1") == "0":
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        mallopt = libc.mallopt
    except (OSError, AttributeError, TypeError):
        return False
    if not hasattr(libc, "gnu_get_libc_version"):  # mallopt's parameter numbers are glibc's
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))

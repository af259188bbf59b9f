"""tune_allocator: glibc's mmap and trim thresholds raised once per process, or nothing when turned off."""

import os
import subprocess
import sys

import pytest

from support import REPO

MODULE = os.path.join(REPO, "workbench", "evaluation", "allocator.py")

SCRIPT = """
import ctypes, ctypes.util, importlib.util, sys
spec = importlib.util.spec_from_file_location("allocator", sys.argv[1])  # without the package (and TensorFlow)
allocator = importlib.util.module_from_spec(spec)
spec.loader.exec_module(allocator)
tune_allocator = allocator.tune_allocator

class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]

libc = ctypes.CDLL(ctypes.util.find_library("c"))
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
libc.mallinfo2.restype = MallInfo2
tuned = [tune_allocator(), tune_allocator()]
size = 64 << 20
block = libc.malloc(size)
mapped = libc.mallinfo2().hblkhd  # bytes in blocks glibc took straight from the kernel (mmap)
libc.free(block)
print(*tuned, mapped >= size)
"""


def run(tuning):
    env = dict(os.environ, WORKBENCH_MALLOC_TUNING=tuning)
    result = subprocess.run([sys.executable, "-c", SCRIPT, MODULE], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc only")
def test_large_buffers_come_from_the_heap_once_tuned_and_the_variable_turns_it_off():
    # tuned: both calls report the settings in force, and a 64 MiB buffer is a heap block (reused after free)
    assert run("1") == ["True", "True", "False"]
    # off: nothing changes, and glibc maps the buffer from the kernel as it does by default
    assert run("0") == ["False", "False", "True"]

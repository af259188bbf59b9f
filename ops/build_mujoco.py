"""Where the installed MuJoCo is, for building the MuJoCo ops against it.

The ops link the libmujoco shared library and use the C headers that ship inside the
`mujoco-core` wheel (mujoco/libmujoco.so.X.Y.Z and mujoco/include/mujoco/*.h), so no
MuJoCo build is needed. The version of that wheel goes into the library's build record;
the loader refuses a library built against another MuJoCo version.
"""

import glob
import importlib.metadata
import importlib.util
import os

DISTRIBUTION = "mujoco-core"  # the binary part of the `mujoco` package (4.x)


def find_mujoco():
    """(version, include directory, directory of libmujoco, file name of libmujoco) of the installed MuJoCo."""
    try:
        version = importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError as error:
        raise RuntimeError(
            f"Building the MuJoCo ops needs {DISTRIBUTION} at build time; install it first "
            f"(pip install '{DISTRIBUTION}==4.0.1'), then pip install --no-build-isolation -e ."
        ) from error
    spec = importlib.util.find_spec("mujoco")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"{DISTRIBUTION} {version} is installed but the mujoco package directory was not found")
    for directory in spec.submodule_search_locations:
        libraries = sorted(glob.glob(os.path.join(directory, "libmujoco.so.*")))
        include = os.path.join(directory, "include")
        if libraries and os.path.exists(os.path.join(include, "mujoco", "mujoco.h")):
            return version, include, directory, os.path.basename(libraries[-1])
    raise RuntimeError(f"{DISTRIBUTION} {version} has no libmujoco.so.* with include/mujoco/mujoco.h beside it")

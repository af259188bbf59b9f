"""Build ALE's C++ core (the Atari emulator) for the emulation ops, once per version.

setup.py calls ensure_ale() while it builds the ops library. It builds the
static library libale.a from the source distribution of the same ale-py
version as the installed ale-py wheel (whose ROMs the ops load), so the
emulator code and the ROM table always agree. The finished build is kept in a
cache directory and reused by every later build, including builds from other
clones of the repository:

  $WORKBENCH_ALE_CACHE, or $XDG_CACHE_HOME/deep-neuroevolution-workbench,
  or ~/.cache/deep-neuroevolution-workbench

A build is written to a temporary directory and renamed into place only when
complete, so an interrupted build never leaves a half-built cache behind.
Needs cmake, a C++17 compiler, zlib headers, and (for `pip download` of the
source distribution) scikit-build-core, ale-py's build backend.
"""
import glob
import hashlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

CMAKE_OPTIONS = [
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_PYTHON_LIB=OFF",
    "-DBUILD_CPP_LIB=ON",
    "-DSDL_SUPPORT=OFF",
    "-DBUILD_VECTOR_LIB=OFF",
    "-DCMAKE_POSITION_INDEPENDENT_CODE=ON",
    # ALE turns on link-time optimisation; fat objects keep ordinary machine code in
    # libale.a too, so the ops library links it without LTO.
    "-DCMAKE_CXX_FLAGS=-ffat-lto-objects",
]


class AleBuildError(RuntimeError):
    """ALE's C++ core could not be fetched or built."""


def installed_ale_version():
    try:
        return importlib.metadata.version("ale-py")
    except importlib.metadata.PackageNotFoundError as error:
        raise AleBuildError(
            "Building the emulation ops needs the ale-py wheel installed first "
            "(pip install ale-py): its version selects the ALE sources and its ROMs are used at run time."
        ) from error


def cache_root():
    explicit = os.environ.get("WORKBENCH_ALE_CACHE")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "deep-neuroevolution-workbench")


def _build_key(version):
    """Cache key: the ALE version, the compiler and the CMake options."""
    compiler = os.environ.get("CXX", "c++")
    try:
        compiler_id = subprocess.run([compiler, "--version"], capture_output=True, text=True).stdout
    except OSError:
        compiler_id = compiler
    digest = hashlib.sha256("\n".join([compiler_id] + CMAKE_OPTIONS).encode()).hexdigest()[:12]
    return f"ale-{version}-{digest}"


def _is_complete(prefix):
    return os.path.isfile(os.path.join(prefix, "lib", "libale.a")) and os.path.isfile(
        os.path.join(prefix, "include", "ale", "ale_interface.hpp")
    )


def _run(command, log, cwd=None):
    with open(log, "a") as stream:
        stream.write("$ " + " ".join(command) + "\n")
        stream.flush()
        result = subprocess.run(command, cwd=cwd, stdout=stream, stderr=subprocess.STDOUT)
    if result.returncode != 0:
        with open(log) as stream:
            tail = stream.read()[-4000:]
        raise AleBuildError(f"command failed ({result.returncode}): {' '.join(command)}\n{tail}")


def _download_sources(version, directory, log):
    try:
        import scikit_build_core  # noqa: F401  (pip needs ale-py's build backend to read the sdist)
    except ImportError as error:
        raise AleBuildError(
            "pip needs scikit-build-core (ale-py's build backend) to download the ALE sources: "
            "pip install scikit-build-core"
        ) from error
    _run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-binary", ":all:", "--no-deps",
         "--no-build-isolation", f"ale-py=={version}", "-d", directory],
        log,
    )
    archives = glob.glob(os.path.join(directory, "ale_py-*.tar.gz"))
    if len(archives) != 1:
        raise AleBuildError(f"expected one ale-py source archive in {directory}, found {archives}")
    with tarfile.open(archives[0]) as archive:
        archive.extractall(directory, filter="data")
    sources = os.path.join(directory, f"ale_py-{version}")
    if not os.path.isfile(os.path.join(sources, "CMakeLists.txt")):
        raise AleBuildError(f"the ale-py {version} source archive has no CMakeLists.txt")
    return sources


def ensure_ale(verbose=True):
    """Returns (include_dir, static_library) of a finished ALE build, building it if needed."""
    version = installed_ale_version()
    root = cache_root()
    prefix = os.path.join(root, _build_key(version))
    if _is_complete(prefix):
        if verbose:
            print(f"workbench: reusing ALE {version} built in {prefix}")
        return os.path.join(prefix, "include"), os.path.join(prefix, "lib", "libale.a")
    if shutil.which("cmake") is None:
        raise AleBuildError("building ALE needs cmake on PATH (pip install cmake, or the system package)")
    os.makedirs(root, exist_ok=True)
    work = tempfile.mkdtemp(prefix=f".ale-{version}-", dir=root)
    log = os.path.join(work, "build.log")
    if verbose:
        print(f"workbench: building ALE {version} from source (about a minute); log: {log}")
    try:
        sources = _download_sources(version, work, log)
        build = os.path.join(work, "build")
        staged = os.path.join(work, "install")
        jobs = str(os.cpu_count() or 1)
        _run(["cmake", "-S", sources, "-B", build, f"-DCMAKE_INSTALL_PREFIX={staged}"] + CMAKE_OPTIONS, log)
        _run(["cmake", "--build", build, "--parallel", jobs], log)
        _run(["cmake", "--install", build], log)
        if not _is_complete(staged):
            raise AleBuildError(f"the ALE build finished without libale.a and headers; log: {log}")
        try:
            os.rename(staged, prefix)  # atomic: the cache holds whole builds only
        except OSError:
            if not _is_complete(prefix):  # lost a race with a concurrent build: fine if it finished
                raise
    finally:
        if os.path.isdir(work) and not os.environ.get("WORKBENCH_KEEP_ALE_BUILD"):
            shutil.rmtree(work, ignore_errors=True)
    return os.path.join(prefix, "include"), os.path.join(prefix, "lib", "libale.a")


if __name__ == "__main__":
    print(ensure_ale())

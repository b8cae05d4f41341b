"""structop: a schema compiler for PyTorch custom operators with nested config records.

This package is what `pip install structop` gives besides the `structopc`
executable and the Python runtime of generated modules (`structop_runtime`):

- where build systems find structop, as pybind11 and numpy tell theirs:
  get_include(), get_pkgconfig_dir(), get_libdir(), get_cmake_dir(),
  get_structopc() (and `python -m structop --include-dir` etc.);
- load(), which generates, compiles and loads an IDL with its kernels in one
  call and caches the build (like torch.utils.cpp_extension.load);
- structop.setuptools.generate(), for packages built with setup.py;
- register_custom_op(), a decorator that makes a Python function taking
  frozen dataclasses a custom op through structopc (no C++ compiler), and
  to_idl(), the IDL of such ops, to move them to C++ with the same schema.

The C++ runtime library is compiled against the torch of this interpreter
the first time something needs it (get_pkgconfig_dir, get_libdir, the CMake
config, load, the setuptools helper) and cached per user and per torch
(docs/install.md: why it is not in the wheel).
"""

import functools
import os
import shutil
import sysconfig

from ._decorator import dynamic, register_custom_op, to_idl
from ._version import RUNTIME_VERSION, __version__

__all__ = [
    "__version__",
    "RUNTIME_VERSION",
    "IDLError",
    "BuildError",
    "get_include",
    "get_runtime_sources",
    "get_cmake_dir",
    "get_structopc",
    "get_pkgconfig_dir",
    "get_libdir",
    "get_cache_dir",
    "load",
    "register_custom_op",
    "dynamic",
    "to_idl",
]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


class IDLError(ValueError):
    """structopc rejected an IDL file; the message is its diagnostic
    (file:line:col: error: ..., the source line, a caret and a hint)."""


class BuildError(RuntimeError):
    """Compiling or linking generated code, kernels or the runtime library
    failed; the message holds the failing command's output."""


def get_include():
    """The folder to put on the include path: it holds structop/runtime.h etc."""
    return os.path.join(_PACKAGE_DIR, "include")


def get_runtime_sources():
    """The runtime library's C++ sources (compiled against the environment's torch)."""
    folder = os.path.join(_PACKAGE_DIR, "runtime_src")
    return sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".cpp"))


def get_cmake_dir():
    """The folder of structopConfig.cmake: `-Dstructop_DIR=...` for find_package(structop CONFIG)."""
    return os.path.join(_PACKAGE_DIR, "cmake")


@functools.lru_cache(maxsize=None)
def get_structopc():
    """The structopc executable installed with this package.

    Found through the distribution's record of installed files (the
    environment's scripts folder, whichever scheme pip used: a virtual
    environment, --user, a system prefix), then in this interpreter's scripts
    folder, then on PATH. $STRUCTOPC overrides all of them."""
    override = os.environ.get("STRUCTOPC")
    if override:
        return override
    try:
        from importlib import metadata

        dist = metadata.distribution("structop")
        for entry in dist.files or ():
            if entry.name == "structopc":
                path = os.path.abspath(str(dist.locate_file(entry)))
                if os.access(path, os.X_OK):
                    return path
    except Exception:  # no metadata (a build tree): look further
        pass
    scripts = os.path.join(sysconfig.get_path("scripts"), "structopc")
    if os.access(scripts, os.X_OK):
        return scripts
    found = shutil.which("structopc")
    if found:
        return found
    raise FileNotFoundError(
        "structop: structopc not found: it is installed with the structop package "
        "into the environment's bin/ folder (pip install structop); set $STRUCTOPC to "
        "its path otherwise"
    )


def get_cache_dir():
    """Where compiled runtime libraries and load() builds are cached:
    $STRUCTOP_CACHE_DIR, else $XDG_CACHE_HOME/structop, else ~/.cache/structop."""
    from . import _cache

    return _cache.cache_root()


def get_libdir():
    """The folder of libstructop_runtime.a compiled for this interpreter's torch
    (compiled on first use, then cached)."""
    from . import _runtime

    return os.path.dirname(_runtime.runtime_library())


def get_pkgconfig_dir():
    """A folder with structop.pc for this interpreter's torch: put it on
    PKG_CONFIG_PATH, then Meson's dependency('structop') (or `pkg-config
    structop`) finds the runtime headers, the runtime library and torch's
    flags, and the variable `structopc` names the compiler."""
    from . import _runtime

    return _runtime.pkgconfig_dir()


def load(name, idl, sources=(), **kwargs):
    """Generates, compiles and loads IDL `idl` with the kernels `sources`;
    returns the generated module. See structop.jit.load."""
    from . import jit

    return jit.load(name, idl, sources, **kwargs)

"""The C++ runtime library for the torch of this interpreter, and the files
that tell build systems about it (structop.pc, the CMake variables).

The wheel ships the runtime's sources, not a compiled library: the library
calls into torch's C++ API (the dispatcher, autograd's graph nodes), whose
ABI changes between torch releases, and the wheel is built without torch.
So the library is compiled here, against the torch this interpreter
imports, the first time something asks for it, and cached per user, torch
and compiler (_cache.py). Later calls find it published and return at once.
"""

import functools
import os
import sys

from . import _build, _cache, get_include, get_runtime_sources, get_structopc
from ._version import __version__
from .torch_config import torch_config

# How the runtime library is compiled (the Meson build uses the same
# standard; -O2 like its default debugoptimized build, without -g).
RUNTIME_CXXFLAGS = ("-std=c++17", "-O2", "-fPIC")

# The runtime's sources compiled together, each group as one translation
# unit (a file that includes them): the files of a group read the same torch
# headers, whose parsing is most of their compile time. Measured here (g++
# 12, torch 2.13, user CPU): autograd.cpp 13.6 s and no_backward.cpp 9.8 s,
# together 14.2 s; registration.cpp, instantiations.cpp and runtime.cpp 6.4,
# 5.9 and 1.7 s, together 6.8 s. Two translation units, one per core here,
# in 15 s instead of five in 19 s, and 21 s of CPU instead of 37 for the
# user's first build to share (jit.py compiles its sources meanwhile). A
# source in no group is compiled alone.
UNITY_GROUPS = (
    ("autograd", ("autograd.cpp", "no_backward.cpp")),
    ("registration", ("registration.cpp", "instantiations.cpp", "runtime.cpp")),
)


@functools.lru_cache(maxsize=None)
def config():
    """The TorchConfig of this interpreter's torch (asked once per process)."""
    return torch_config()


def toolchain_dir():
    return _cache.toolchain_dir(config())


def compile_args(joined=True):
    """What code compiled against structop's runtime needs: its headers and
    torch's flags (joined: see TorchConfig.compile_args)."""
    return ["-I" + get_include()] + config().compile_args(joined)


def _runtime_inputs():
    """The runtime library's sources and every header they read from this package."""
    sources = get_runtime_sources()
    headers = [os.path.join(os.path.dirname(sources[0]), "autograd_node.h")]
    folder = os.path.join(get_include(), "structop")
    headers += [os.path.join(folder, h) for h in sorted(os.listdir(folder))]
    return sources, headers


def runtime_key():
    """A hash of what the runtime library is made from: its sources and
    headers, the compiler and the flags (torch's among them)."""
    sources, headers = _runtime_inputs()
    return _cache.hasher(
        __version__,
        " ".join(_cache.cxx_command()),
        " ".join(RUNTIME_CXXFLAGS),
        " ".join(compile_args()),
        *(_cache.file_digest(p) for p in sources + headers),
    ).hexdigest()[:16]


def _unity_sources(sources, folder):
    """The translation units of the runtime library: per UNITY_GROUPS a file
    in `folder` that includes the group's sources, then the sources in no
    group. The files name the sources without their folder, which is on the
    include path (runtime_library): the same text in every installation, so
    that a compiler cache (ccache, with its base_dir) finds it again."""
    by_name = {os.path.basename(p): p for p in sources}
    units = []
    for group, names in UNITY_GROUPS:
        members = [n for n in names if by_name.pop(n, None)]
        if not members:
            continue
        unit = os.path.join(folder, f"unity-{group}.cpp")
        text = "// Written by structop (_runtime.UNITY_GROUPS).\n" + "".join(
            f'#include "{m}"\n' for m in members
        )
        _cache.write_if_changed(unit, text)
        units.append(unit)
    return units + sorted(by_name.values())


def runtime_library_path():
    """Where runtime_library() puts (or has put) the library, and whether it is there."""
    final = os.path.join(toolchain_dir(), "runtime", runtime_key())
    return os.path.join(final, "libstructop_runtime.a"), _cache.is_published(final)


def runtime_library(verbose=False):
    """The path of libstructop_runtime.a compiled for this torch (built once, cached)."""
    library, published = runtime_library_path()
    if published:
        return library
    final = os.path.dirname(library)
    parent, key = os.path.split(final)
    sources, _ = _runtime_inputs()
    cxx = _cache.cxx_build_command()
    # (The sources' folder: the unity files include them by name.)
    flags = list(RUNTIME_CXXFLAGS) + ["-I" + os.path.dirname(sources[0])] + compile_args()

    def fill(staging):
        build_dir = os.path.join(parent, "build")
        # Always said (on stderr): the first call waits for this, once per torch.
        print(
            f"structop: compiling the C++ runtime library for torch {config().version} "
            f"(once per torch and compiler) in {build_dir}",
            file=sys.stderr,
            flush=True,
        )
        with _build.build_folder(build_dir):
            _build.write_ninja(
                build_dir,
                cxx=cxx,
                cxxflags=flags,
                sources=_unity_sources(sources, os.path.join(build_dir, "unity")),
                output="libstructop_runtime.a",
                kind="static",
            )
            _build.run_ninja(build_dir, verbose, what="compiling structop's runtime library")
            os.replace(
                os.path.join(build_dir, "libstructop_runtime.a"),
                os.path.join(staging, "libstructop_runtime.a"),
            )

    with _cache.locked(parent):
        _cache.publish(parent, key, fill, f'{{"torch": "{config().version}"}}\n')
    return library


def _pc_escape(value):
    return value.replace("\\", "\\\\").replace(" ", "\\ ").replace("$", "$$")


def pkgconfig_dir():
    """A folder holding structop.pc for this interpreter's torch (rewritten
    when it changes, never otherwise: pkg-config users do not rebuild)."""
    library = runtime_library()
    cfg = config()
    folder = os.path.join(toolchain_dir(), "pkgconfig")
    lines = [
        "# structop for the torch of " + sys.executable,
        "# Written by `python -m structop --pkgconfig-dir`; torch " + cfg.version + ".",
        "includedir=" + _pc_escape(get_include()),
        "libdir=" + _pc_escape(os.path.dirname(library)),
        "structopc=" + _pc_escape(get_structopc()),
        "python=" + _pc_escape(sys.executable),
        "# The folder of the package structop_runtime: on this interpreter's path already.",
        "pythonpath=",
        "torch_version=" + cfg.version,
        "",
        "Name: structop",
        "Description: structop runtime (schema compiler for PyTorch custom ops)",
        "Version: " + __version__,
        "Cflags: " + " ".join(["-I${includedir}"] + [_pc_escape(a) for a in cfg.compile_args()]),
        "Libs: "
        + " ".join(
            ["-L${libdir}", "-lstructop_runtime"] + [_pc_escape(a) for a in cfg.link_args()]
        ),
    ]
    _cache.write_if_changed(os.path.join(folder, "structop.pc"), "\n".join(lines) + "\n")
    return folder


def _cmake_quote(value):
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$") + '"'


def cmake_vars_file():
    """A CMake file of set() commands for structopConfig.cmake: this
    package's folders, structopc, the runtime library and torch's flags."""
    library = runtime_library()
    cfg = config()
    libs = [os.path.join(cfg.libdir, f"lib{name}.so") for name in ("torch", "torch_cpu", "c10")]
    libs += ["-l" + lib for lib in cfg.extra_libs]
    values = {
        "structop_PACKAGE_DIR": os.path.dirname(os.path.abspath(__file__)),
        "structop_PYTHON": sys.executable,
        "structop_STRUCTOPC": get_structopc(),
        "structop_INCLUDE_DIR": get_include(),
        "structop_RUNTIME_LIBRARY": library,
        "structop_TORCH_VERSION": cfg.version,
        "structop_TORCH_INCLUDE_DIRS": ";".join(cfg.include_dirs),
        "structop_TORCH_DEFINITIONS": f"_GLIBCXX_USE_CXX11_ABI={cfg.cxx11_abi}",
        "structop_TORCH_LIBRARIES": ";".join(libs),
    }
    text = "# Written by `python -m structop --cmake-vars`; read by structopConfig.cmake.\n"
    text += "".join(f"set({k} {_cmake_quote(v)})\n" for k, v in values.items())
    path = os.path.join(toolchain_dir(), "cmake", "structop-vars.cmake")
    _cache.write_if_changed(path, text)
    return path

#!/usr/bin/env python3
"""The C++ build flags of the torch that this interpreter imports.

Two users: the Meson build runs this file as a script with the interpreter
given by its `python` option (runtime/meson.build), and the installed
`structop` package imports it to compile against the torch of the
environment it runs in (the runtime library, pkg-config and CMake files,
structop.load). It needs nothing but the standard library and torch.

As a script it prints one `key=value` per line:

    version=2.6.0
    include=DIR           one line per include directory, in search order
    libdir=DIR            where libtorch.so, libtorch_cpu.so and libc10.so are
    cxx11_abi=0|1         the value of _GLIBCXX_USE_CXX11_ABI torch was built with

`include` omits the compiler's default directories (/usr/include,
/usr/local/include): passing those as -isystem breaks libstdc++'s
`#include_next`. `libdir` is resolved through symlinks when all three
libraries live in one real directory (Debian's python3-torch links
site-packages/torch/lib/*.so to /usr/lib/<triple>), so that a system torch
needs no rpath while a pip-installed torch gets its site-packages/torch/lib.

Exits with status 1 and a reason on stderr when torch cannot be imported.
"""

import contextlib
import dataclasses
import os
import sys

LIBRARIES = ("libtorch.so", "libtorch_cpu.so", "libc10.so")
DEFAULT_INCLUDE_DIRS = {"/usr/include", "/usr/local/include"}
# Library folders the linker searches anyway: no -L or rpath for them.
SYSTEM_LIB_DIRS = ("/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib")


@dataclasses.dataclass(frozen=True)
class TorchConfig:
    """How to compile and link against one torch installation."""

    version: str
    include_dirs: tuple
    libdir: str
    cxx11_abi: int
    # glog / gflags when torch's c10 headers call into them inline (Debian's
    # torch is built with both), else empty.
    extra_libs: tuple = ()

    @property
    def system_libdir(self):
        """Whether libdir is one the linker searches by default (a multiarch
        folder such as /usr/lib/x86_64-linux-gnu included)."""
        parent, base = os.path.split(self.libdir)
        return self.libdir in SYSTEM_LIB_DIRS or (
            parent in ("/lib", "/usr/lib") and "-linux-" in base
        )

    def compile_args(self, joined=True):
        """-isystem for each include folder (quiet about torch's own warnings)
        and the C++11 ABI flag torch was built with. joined: `-isystemDIR`
        as one word (pkg-config merges duplicates of it), else two (nvcc)."""
        args = []
        for d in self.include_dirs:
            args += ["-isystem" + d] if joined else ["-isystem", d]
        args.append(f"-D_GLIBCXX_USE_CXX11_ABI={self.cxx11_abi}")
        return args

    def link_args(self):
        """-L, an rpath unless torch is in a system folder, torch's libraries."""
        args = []
        if not self.system_libdir:
            args += ["-L" + self.libdir, "-Wl,-rpath," + self.libdir]
        args += ["-ltorch", "-ltorch_cpu", "-lc10"]
        args += ["-l" + lib for lib in self.extra_libs]
        args.append("-pthread")
        return args


def _import_torch():
    """Imports torch with its stdout chatter (CUDA_HOME notices) sent to stderr."""
    with contextlib.redirect_stdout(sys.stderr):
        import torch
    return torch


# The folders torch.utils.cpp_extension.include_paths() and library_paths()
# name for a CPU build: torch/include, its C++ API folder, torch/lib.
# Computed here rather than asked: importing cpp_extension imports setuptools,
# which costs half a second, and structop.load's cached path must be fast.
def _include_dirs(torch):
    root = os.path.join(os.path.dirname(torch.__file__), "include")
    dirs = [root, os.path.join(root, "torch", "csrc", "api", "include")]
    real = []
    for d in dirs:
        if os.path.isdir(d) and os.path.realpath(d) not in DEFAULT_INCLUDE_DIRS:
            real.append(d)
    return real


def _lib_dir(torch):
    d = os.path.join(os.path.dirname(torch.__file__), "lib")
    paths = [os.path.join(d, lib) for lib in LIBRARIES]
    if not all(os.path.exists(p) for p in paths):
        return None
    real_dirs = {os.path.dirname(os.path.realpath(p)) for p in paths}
    return real_dirs.pop() if len(real_dirs) == 1 else d


def _extra_libs(include_dirs):
    """glog and gflags when c10's cmake_macros.h turns them on."""
    for d in list(include_dirs) + sorted(DEFAULT_INCLUDE_DIRS):
        path = os.path.join(d, "c10", "macros", "cmake_macros.h")
        if os.path.exists(path):
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            return tuple(
                lib
                for macro, lib in (("C10_USE_GLOG", "glog"), ("C10_USE_GFLAGS", "gflags"))
                if f"#define {macro}\n" in text or f"#define {macro} " in text
            )
    return ()


def torch_config():
    """The TorchConfig of the torch this interpreter imports; raises
    RuntimeError (with the reason) when there is none."""
    try:
        torch = _import_torch()
    except Exception as e:  # ImportError, or a broken install raising anything
        raise RuntimeError(f"cannot import torch: {e}") from e
    includes = _include_dirs(torch)
    libdir = _lib_dir(torch)
    if libdir is None:
        raise RuntimeError("torch has no libtorch.so/libtorch_cpu.so/libc10.so")
    return TorchConfig(
        version=str(torch.__version__),
        include_dirs=tuple(includes),
        libdir=libdir,
        cxx11_abi=int(bool(torch._C._GLIBCXX_USE_CXX11_ABI)),
        extra_libs=_extra_libs(includes),
    )


def main():
    try:
        config = torch_config()
    except RuntimeError as e:
        print(f"torch_config: {e}", file=sys.stderr)
        return 1
    print(f"version={config.version}")
    for d in config.include_dirs:
        print(f"include={d}")
    print(f"libdir={config.libdir}")
    print(f"cxx11_abi={config.cxx11_abi}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

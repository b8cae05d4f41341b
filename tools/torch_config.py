#!/usr/bin/env python3
"""Print the C++ build flags of the torch that this interpreter imports.

Used by runtime/meson.build (run with the interpreter given by the `python`
option). Output, one `key=value` per line:

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
import os
import sys

LIBRARIES = ("libtorch.so", "libtorch_cpu.so", "libc10.so")
DEFAULT_INCLUDE_DIRS = {"/usr/include", "/usr/local/include"}


def import_torch():
    """Imports torch with its stdout chatter (CUDA_HOME notices) sent to stderr."""
    with contextlib.redirect_stdout(sys.stderr):
        import torch  # noqa: F401  (imported for its side effect)

        try:
            from torch.utils import cpp_extension
        except Exception:  # cpp_extension needs setuptools; fall back below
            cpp_extension = None
    return torch, cpp_extension


def torch_include_dirs(torch, cpp_extension):
    if cpp_extension is not None:
        with contextlib.redirect_stdout(sys.stderr):
            dirs = cpp_extension.include_paths()
    else:
        root = os.path.join(os.path.dirname(torch.__file__), "include")
        dirs = [root, os.path.join(root, "torch", "csrc", "api", "include")]
    real = []
    for d in dirs:
        if os.path.isdir(d) and os.path.realpath(d) not in DEFAULT_INCLUDE_DIRS:
            real.append(d)
    return real


def torch_lib_dir(torch, cpp_extension):
    if cpp_extension is not None:
        with contextlib.redirect_stdout(sys.stderr):
            candidates = cpp_extension.library_paths()
    else:
        candidates = [os.path.join(os.path.dirname(torch.__file__), "lib")]
    for d in candidates:
        paths = [os.path.join(d, lib) for lib in LIBRARIES]
        if not all(os.path.exists(p) for p in paths):
            continue
        real_dirs = {os.path.dirname(os.path.realpath(p)) for p in paths}
        return real_dirs.pop() if len(real_dirs) == 1 else d
    return None


def main():
    try:
        torch, cpp_extension = import_torch()
    except Exception as e:  # ImportError, or a broken install raising anything
        print(f"torch_config: cannot import torch: {e}", file=sys.stderr)
        return 1
    includes = torch_include_dirs(torch, cpp_extension)
    libdir = torch_lib_dir(torch, cpp_extension)
    if libdir is None:
        print("torch_config: torch has no libtorch.so/libtorch_cpu.so/libc10.so",
              file=sys.stderr)
        return 1
    print(f"version={torch.__version__}")
    for d in includes:
        print(f"include={d}")
    print(f"libdir={libdir}")
    print(f"cxx11_abi={int(bool(torch._C._GLIBCXX_USE_CXX11_ABI))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

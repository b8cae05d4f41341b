"""structop for packages built with setup.py and torch.utils.cpp_extension.

In setup.py, at build time:

    import structop.setuptools
    from torch.utils.cpp_extension import BuildExtension, CppExtension

    gen = structop.setuptools.generate("my_pkg/my.ops.yaml", "build/structop",
                                       python_dir="my_pkg")
    setup(
        ...,
        ext_modules=[CppExtension("my_pkg._ops", gen.sources + ["csrc/my_kernels.cpp"],
                                  include_dirs=gen.include_dirs,
                                  extra_objects=gen.extra_objects)],
        cmdclass={"build_ext": BuildExtension},
    )

generate() runs structopc: X.ops.h and X.ops.cpp (and the headers of the
IDLs X includes) into out_dir, X_ops.py (and the included IDLs' modules)
into python_dir, a package folder, where they import each other relatively.
It compiles structop's runtime library for the torch of the interpreter
running setup.py (cached: _runtime.py), which is the torch CppExtension
compiles against; extra_objects links it in. At run time the package loads
its extension with X_ops.load_library(path) (see
idl_examples/setuptools_example).

Build with `pip install --no-build-isolation .` so that setup.py sees the
environment's torch (and structop), as torch's own extension docs advise;
an isolated build would install another torch into a temporary
environment.
"""

import dataclasses
import os

from . import _runtime, get_include
from .jit import _generate, _stem

__all__ = ["Generated", "generate"]


@dataclasses.dataclass
class Generated:
    """What generate() made, in the shape CppExtension takes it."""

    sources: list  # X.ops.cpp: compile with the kernels
    include_dirs: list  # out_dir (X.ops.h) and structop's runtime headers
    extra_objects: list  # libstructop_runtime.a for this torch: link after the objects
    python_modules: list  # X_ops.py and the included IDLs' modules, in python_dir
    idl_files: list  # every IDL file read (for a build's dependencies)


def generate(idl, out_dir, *, python_dir=None, idl_include_paths=(), verbose=False):
    """Generates C++ from `idl` into out_dir and, with python_dir, its Python
    modules into python_dir; returns a Generated. Raises structop.IDLError
    (structopc's diagnostic) on a bad IDL."""
    idl = os.path.abspath(os.fspath(idl))
    out_dir = os.path.abspath(os.fspath(out_dir))
    include_paths = [os.path.abspath(p) for p in idl_include_paths]
    stem = _stem(idl)
    os.makedirs(out_dir, exist_ok=True)
    idl_files = _generate(idl, out_dir, include_paths, "h,cpp")
    included = [p for p in idl_files if p != idl]
    for path in included:
        _generate(path, out_dir, include_paths, "h")
    python_modules = []
    if python_dir is not None:
        python_dir = os.path.abspath(os.fspath(python_dir))
        os.makedirs(python_dir, exist_ok=True)
        for path in [idl] + included:
            _generate(path, python_dir, include_paths, "py")
            python_modules.append(os.path.join(python_dir, _stem(path) + "_ops.py"))
    return Generated(
        sources=[os.path.join(out_dir, f"{stem}.ops.cpp")],
        include_dirs=[out_dir, get_include()],
        extra_objects=[_runtime.runtime_library(verbose)],
        python_modules=python_modules,
        idl_files=idl_files,
    )

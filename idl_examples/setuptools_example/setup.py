"""A PyTorch extension package built with setuptools and structop.

    pip install --no-build-isolation .

setup.py runs structopc at build time (structop.setuptools.generate): the
C++ registration into build/structop, the Python API (example_ops.py) into
the package, and it hands CppExtension the generated sources, include
folders and structop's runtime library compiled for the torch this build
sees. --no-build-isolation makes that the environment's torch (as torch's
own extension docs advise); an isolated build would install another torch.
"""

import os

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

import structop.setuptools

HERE = os.path.dirname(os.path.abspath(__file__))

gen = structop.setuptools.generate(
    os.path.join(HERE, "idl", "example.ops.yaml"),
    os.path.join(HERE, "build", "structop"),
    python_dir=os.path.join(HERE, "structop_example"),
)

setup(
    ext_modules=[
        CppExtension(
            "structop_example._ops",
            gen.sources + ["csrc/example_kernels.cpp"],
            include_dirs=gen.include_dirs,
            extra_objects=gen.extra_objects,
            depends=gen.idl_files,
        )
    ],
    cmdclass={"build_ext": BuildExtension},
)

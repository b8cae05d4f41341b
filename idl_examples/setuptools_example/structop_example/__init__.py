"""An extension package whose ops come from idl/example.ops.yaml.

example_ops (the generated Python API: records, enums, one function per op)
is generated into this folder by setup.py; the compiled extension _ops
registers the ops with torch and is loaded on import.
"""

import importlib.machinery
import os

from . import example_ops
from .example_ops import Activation, LayerCfg, Linear1d, layer

__all__ = ["Activation", "LayerCfg", "Linear1d", "layer", "example_ops"]


def _library():
    here = os.path.dirname(os.path.abspath(__file__))
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = os.path.join(here, "_ops" + suffix)
        if os.path.exists(path):
            return path
    raise ImportError(f"structop_example: the compiled extension _ops is missing from {here}")


example_ops.load_library(_library())

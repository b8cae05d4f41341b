#!/usr/bin/env python3
"""structop's Python runtime (the package structop_runtime) on its own, and the version
check of the modules that import it.

- The module imported is the configured one of this build (PYTHONPATH), and
  its RUNTIME_VERSION is the C++ runtime's STRUCTOP_RUNTIME_VERSION and the
  version structopc writes into a generated module.
- require_version(): passes for RUNTIME_VERSION, raises a clear ImportError
  otherwise; a generated module made for another version does not import.
- The checks, problem() and explain_failure(): what they accept, the
  messages naming op, parameter and field path.
- register_pytree(): children and static context, key paths, the stable
  serialized type name, a dump and load of the tree spec, idempotence.

Usage: test_runtime.py RUNTIME_PY RUNTIME_H STRUCTOPC GOLDEN_DIR
"""

import dataclasses
import enum
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import typing
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import unittest_main  # noqa: E402  (tests/support: a skipped case is not a pass)

import torch
from torch.utils import _pytree

import structop_runtime as rt

RUNTIME_PY = RUNTIME_H = STRUCTOPC = GOLDEN_DIR = None


def generate(idl, out_dir):
    """structopc --emit py; returns the path of the generated module."""
    subprocess.run([STRUCTOPC, "--emit", "py", "-o", out_dir, idl], check=True)
    return os.path.join(out_dir, os.path.basename(idl)[: -len(".ops.yaml")] + "_ops.py")


def import_file(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Version(unittest.TestCase):
    def test_the_module_of_this_build(self):
        self.assertTrue(os.path.samefile(rt.__file__, RUNTIME_PY), rt.__file__)

    def test_same_version_as_the_cpp_runtime_and_structopc(self):
        with open(RUNTIME_H, encoding="utf-8") as f:
            cpp = int(
                re.search(r"^#define STRUCTOP_RUNTIME_VERSION (\d+)$", f.read(), re.M).group(1)
            )
        self.assertEqual(rt.RUNTIME_VERSION, cpp)
        with tempfile.TemporaryDirectory() as tmp:
            with open(
                generate(os.path.join(GOLDEN_DIR, "records.ops.yaml"), tmp), encoding="utf-8"
            ) as f:
                text = f.read()
        self.assertIn(f"\n_rt.require_version({cpp}, __name__)\n", text)

    def test_require_version(self):
        self.assertIsNone(rt.require_version(rt.RUNTIME_VERSION, "demo_ops"))
        for other in (rt.RUNTIME_VERSION - 1, rt.RUNTIME_VERSION + 1):  # older and newer
            with self.assertRaises(ImportError) as cm:
                rt.require_version(other, "demo_ops")
            self.assertEqual(
                str(cm.exception),
                f"structop: demo_ops was generated for structop runtime version {other}, but "
                f"structop_runtime ({rt.__file__}) is version {rt.RUNTIME_VERSION}; regenerate "
                "demo_ops with the structopc that matches this runtime",
            )

    def test_generated_module_of_another_version_does_not_import(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = generate(os.path.join(GOLDEN_DIR, "records.ops.yaml"), tmp)
            module = import_file("records_ops_current", path)  # this version: imports
            self.assertEqual(module.NAMESPACE, "golden")
            with open(path, encoding="utf-8") as f:
                text = f.read()
            call = f"_rt.require_version({rt.RUNTIME_VERSION}, __name__)"
            self.assertEqual(text.count(call), 1)
            old = os.path.join(tmp, "old_ops.py")
            with open(old, "w", encoding="utf-8") as f:
                f.write(
                    text.replace(call, f"_rt.require_version({rt.RUNTIME_VERSION + 1}, __name__)")
                )
            with self.assertRaises(ImportError) as cm:
                import_file("old_ops", old)
        message = str(cm.exception)
        self.assertIn(
            f"old_ops was generated for structop runtime version {rt.RUNTIME_VERSION + 1}", message
        )
        self.assertIn("regenerate old_ops with the structopc that matches this runtime", message)


class Checks(unittest.TestCase):
    def accepts(self, check, *values):
        for v in values:
            self.assertTrue(check[0](v), f"{check[1]} rejects {v!r}")

    def rejects(self, check, *values):
        for v in values:
            self.assertFalse(check[0](v), f"{check[1]} accepts {v!r}")

    def test_builtins(self):
        self.accepts(rt.TENSOR, torch.ones(1))
        self.rejects(rt.TENSOR, 1, None, [torch.ones(1)])
        self.accepts(rt.INT, 0, -3)
        self.rejects(rt.INT, True, 1.0, "1")
        self.accepts(rt.FLOAT, 1, 1.5)
        self.rejects(rt.FLOAT, False, "1.5", None)
        self.accepts(rt.BOOL, True, False)
        self.rejects(rt.BOOL, 0, 1)
        self.accepts(rt.STR, "", "a")
        self.rejects(rt.STR, b"a", None)
        self.accepts(rt.SCALAR, 1, 1.5, True, 1j)
        self.rejects(rt.SCALAR, "1", torch.ones(1))
        self.accepts(rt.DTYPE, torch.float32)
        self.rejects(rt.DTYPE, "float32")
        self.accepts(rt.DEVICE, torch.device("cpu"), "cpu")
        self.rejects(rt.DEVICE, 0)
        self.accepts(rt.LAYOUT, torch.strided)
        self.rejects(rt.LAYOUT, "strided")
        self.accepts(rt.MEMORY_FORMAT, torch.channels_last)
        self.rejects(rt.MEMORY_FORMAT, torch.strided)
        self.accepts(rt.ANY, None, object())

    def test_combinators(self):
        self.accepts(rt.optional(rt.INT), None, 2)
        self.rejects(rt.optional(rt.INT), 2.0)
        self.assertEqual(rt.optional(rt.INT)[1], "None or int")
        self.accepts(rt.list_of(rt.INT), [], [1, 2], (1, 2))
        self.rejects(rt.list_of(rt.INT), [1, "2"], 1, "12")
        self.assertEqual(rt.list_of(rt.optional(rt.TENSOR))[1], "list of None or Tensor")
        self.accepts(rt.enum_of(Mode), Mode.fast, "fast", "anything")  # the kernel checks the value
        self.rejects(rt.enum_of(Mode), 1)
        self.assertEqual(rt.enum_of(Mode)[1], "Mode or str")
        self.assertEqual(rt.record(Inner), ("record", Inner))

    def test_enum_values_convert_each_item_and_name_a_bad_one(self):
        self.assertEqual(rt.enum_value(Mode, "fast", "d::op", "cfg.mode"), Mode.fast)
        self.assertEqual(
            rt.enum_values(Mode, ["exact", "fast"], "d::op", "cfg.modes"), [Mode.exact, Mode.fast]
        )
        self.assertEqual(rt.enum_values(Mode, (), "d::op", "cfg.modes"), [])
        with self.assertRaises(ValueError) as cm:
            rt.enum_values(Mode, ["fast", "slow"], "d::op", "cfg.modes")
        self.assertEqual(
            str(cm.exception),
            'd::op: cfg.modes[1]: invalid value "slow" for Mode; '
            "expected one of: " + ", ".join(m.value for m in Mode),
        )


class Mode(str, enum.Enum):
    fast = "fast"
    exact = "exact"


@dataclasses.dataclass(frozen=True)
class Inner:
    w: torch.Tensor
    b: typing.Optional[torch.Tensor] = None


@dataclasses.dataclass(frozen=True)
class Cfg:
    inner: Inner
    sizes: typing.List[int] = dataclasses.field(default_factory=lambda: [1, 2])
    mode: Mode = Mode.exact
    dtype: torch.dtype = torch.float32
    device: typing.Union[torch.device, str] = torch.device("cpu")


Inner._structop_fields = (("w", rt.TENSOR), ("b", rt.optional(rt.TENSOR)))
Cfg._structop_fields = (
    ("inner", rt.record(Inner)),
    ("sizes", rt.list_of(rt.INT)),
    ("mode", rt.enum_of(Mode)),
    ("dtype", rt.DTYPE),
    ("device", rt.DEVICE),
)
PARAMS = (("x", rt.TENSOR), ("cfg", rt.record(Cfg)))


class Explain(unittest.TestCase):
    def test_problem(self):
        good = Cfg(Inner(torch.ones(2)))
        self.assertIsNone(rt.problem(rt.record(Cfg), good, "cfg"))
        self.assertEqual(rt.problem(rt.record(Cfg), 3, "cfg"), "`cfg` must be Cfg, got int")
        self.assertEqual(
            rt.problem(rt.record(Cfg), Cfg(Inner(1)), "cfg"),
            "`cfg.inner.w` must be Tensor, got int",
        )
        self.assertEqual(
            rt.problem(rt.record(Cfg), Cfg(Inner(torch.ones(2), b=[1])), "cfg"),
            "`cfg.inner.b` must be None or Tensor, got list",
        )
        self.assertEqual(
            rt.problem(rt.record(Cfg), Cfg(Inner(torch.ones(2)), sizes=[1, "2"]), "cfg"),
            "`cfg.sizes` must be list of int, got list",
        )
        self.assertEqual(
            rt.problem(rt.record(Cfg), Cfg(None), "cfg"), "`cfg.inner` must be Inner, got NoneType"
        )
        self.assertEqual(rt.problem(rt.INT, True, "k"), "`k` must be int, got bool")

    def test_explain_failure_names_op_and_path(self):
        error = RuntimeError("from the dispatcher")
        with self.assertRaises(TypeError) as cm:
            rt.explain_failure("demo::op", PARAMS, (torch.ones(2), Cfg(Inner(1))), error, True)
        self.assertEqual(str(cm.exception), "demo::op: `cfg.inner.w` must be Tensor, got int")
        self.assertIs(cm.exception.__cause__, error)
        with self.assertRaises(TypeError) as cm:
            rt.explain_failure("demo::op", PARAMS, ("x", Cfg(Inner(1))), error, False)
        self.assertEqual(
            str(cm.exception), "demo::op: `x` must be Tensor, got str"
        )  # first parameter first

    def test_explain_failure_not_registered(self):
        error = AttributeError("no op")
        with self.assertRaises(RuntimeError) as cm:
            rt.explain_failure(
                "demo::op", PARAMS, (torch.ones(2), Cfg(Inner(torch.ones(2)))), error, False
            )
        self.assertEqual(
            str(cm.exception),
            "demo::op is not registered: call load_library(path) "
            "with the compiled extension first, or implement it in "
            "Python (register_kernel)",
        )
        self.assertIs(cm.exception.__cause__, error)

    def test_explain_failure_returns_when_arguments_fit(self):
        # The caller then re-raises the original error (e.g. the kernel's).
        self.assertIsNone(
            rt.explain_failure(
                "demo::op",
                PARAMS,
                (torch.ones(2), Cfg(Inner(torch.ones(2)))),
                RuntimeError("kernel"),
                True,
            )
        )


rt.register_pytree(Inner, ("w", "b"), (), "runtime_test", "unit")
rt.register_pytree(Cfg, ("inner",), ("sizes", "mode", "dtype", "device"), "runtime_test", "unit")


class Pytree(unittest.TestCase):
    def cfg(self):
        return Cfg(
            Inner(torch.ones(2), torch.zeros(2)),
            sizes=[3],
            mode=Mode.fast,
            dtype=torch.float16,
            device=torch.device("meta"),
        )

    def test_children_and_context(self):
        cfg = self.cfg()
        leaves, spec = _pytree.tree_flatten(cfg)
        self.assertEqual(len(leaves), 2)
        self.assertIs(leaves[0], cfg.inner.w)
        self.assertIs(leaves[1], cfg.inner.b)
        rebuilt = _pytree.tree_unflatten([torch.full((2,), 5.0), None], spec)
        self.assertIsInstance(rebuilt, Cfg)
        self.assertEqual(
            (rebuilt.sizes, rebuilt.mode, rebuilt.dtype, rebuilt.device),
            ([3], Mode.fast, torch.float16, torch.device("meta")),
        )
        self.assertIsNone(rebuilt.inner.b)

    def test_key_paths(self):
        paths = [path for path, _ in _pytree.tree_flatten_with_path(self.cfg())[0]]
        self.assertEqual([_pytree.keystr(p) for p in paths], ["['inner']['w']", "['inner']['b']"])

    def test_serialized_name_and_dumped_spec(self):
        self.assertIs(_pytree.SERIALIZED_TYPE_TO_PYTHON_TYPE["structop.runtime_test.unit.Cfg"], Cfg)
        cfg = self.cfg()
        leaves, spec = _pytree.tree_flatten(cfg)
        text = _pytree.treespec_dumps(spec)
        self.assertIn("structop.runtime_test.unit.Cfg", text)
        loaded = _pytree.treespec_loads(text)
        rebuilt = _pytree.tree_unflatten(leaves, loaded)
        self.assertEqual(
            (rebuilt.sizes, rebuilt.mode, rebuilt.dtype, rebuilt.device),
            ([3], "fast", torch.float16, torch.device("meta")),
        )  # enums come back as str

    def test_registering_again_does_nothing(self):
        before = _pytree.SUPPORTED_NODES[Cfg]
        rt.register_pytree(
            Cfg, ("inner",), ("sizes", "mode", "dtype", "device"), "runtime_test", "unit"
        )
        self.assertIs(_pytree.SUPPORTED_NODES[Cfg], before)


if __name__ == "__main__":
    RUNTIME_PY, RUNTIME_H, STRUCTOPC, GOLDEN_DIR = sys.argv[1:5]
    unittest_main.main(argv=[sys.argv[0]])

#!/usr/bin/env python3
"""structop.register_custom_op (issue 42): custom ops from Python functions
taking frozen dataclasses, on structopc, with the seed decorator's API
(../shared/seed/dataclass-custom-op.md).

  Seed         the seed's quick start and full example with only the import
               changed: forward, nested records, gradients through record
               fields (dict grads), keyword calls, the auto name, the errors
               the seed raises (no namespace, already registered).
  Types        every accepted annotation (Tensor, Optional, scalars, dtype,
               device, lists, nested/optional/list-of dataclasses, str enums,
               Literal strings, keyword-only), defaults in the schema or in
               Python only, the lowered schema written out by hand, and the
               same op compiled from a hand-written YAML file: the same schema.
  Rejections   each rejected annotation with its exception type and what
               its message names; a failed decoration leaves the name free.
  Kernels      the kernel gets the caller's own classes and enum members;
               default meta (first N tensor inputs, record fields counted),
               infer_output_meta_fn in the original signature; mutates_args
               by record, path and lowered name; record, tuple and list
               returns; ops calling ops.
  Autograd     gradients as dict, the user's dataclass, the grad record, an
               object with attributes, None; the wrong count (ValueError).
  Dynamic      Annotated[float, structop.dynamic] on a field and a parameter:
               0-dim tensors in the schema, numbers in the kernel, at most 2
               graphs for 10 values under torch.compile with the backward
               following the value; misplaced markers rejected.
  PT2          opcheck, torch.compile(fullgraph=True, dynamic=True),
               torch.export with a record input.
  Cache        a second process does not run structopc.
  IDL export   to_idl(op), to_idl(module), `python -m structop idl`; the
               exported IDL lowers to the same schema.

Usage: test_decorator.py PACKAGE_DIR  (a folder holding the `structop`
package, as tests/decorator/meson.build assembles it; $STRUCTOPC names the
compiler; structop_runtime on PYTHONPATH).
"""

import dataclasses
import enum
import os
import subprocess
import sys
import tempfile
import textwrap
import types
import typing
import unittest
from typing import Literal, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
import unittest_main  # noqa: E402

import torch  # noqa: E402

structop = None
register_custom_op = None
CACHE = None


def setUpModule():
    global structop, register_custom_op, CACHE
    CACHE = tempfile.mkdtemp(prefix="structop-decorator-cache-")
    os.environ["STRUCTOP_CACHE_DIR"] = CACHE
    import structop as _structop

    structop = _structop
    # The seed's users port by changing the import only:
    from structop import register_custom_op as _magi_register_custom_op

    register_custom_op = _magi_register_custom_op


def run_child(code, env=None):
    """Runs `code` in a new interpreter with this one's sys.path; returns its stdout."""
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    full_env.update(env or {})
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=full_env,
        check=False,
    )
    if result.returncode != 0:
        raise AssertionError(
            f"child failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
        )
    return result.stdout


def close(a, b):
    torch.testing.assert_close(a, b)


# ---------------------------------------------------------------------------
# The seed's own examples, only the import changed
# ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class AttnCfg:
    scale: float
    causal: bool = False


@dataclasses.dataclass(frozen=True)
class Inner:
    w: torch.Tensor
    b: torch.Tensor


@dataclasses.dataclass(frozen=True)
class WeightCfg:
    inner: Inner
    scale: float


def weight_setup(ctx, inputs, output):
    x, cfg = inputs
    ctx.save_for_backward(x, cfg.inner.w)
    ctx.scale = cfg.scale


def weight_bwd(ctx, gy):
    x, w = ctx.saved_tensors
    s = ctx.scale
    return (
        gy * w * s,
        {"inner": {"w": gy * x * s, "b": None}, "scale": None},
    )


@dataclasses.dataclass(frozen=True)
class Scalars:
    scale: float
    offset: float = 0.0


def lambda_free_scale(x: torch.Tensor, cfg: Scalars) -> torch.Tensor:
    return x * cfg.scale + cfg.offset


class PlainMode(enum.Enum):  # str values, not a str subclass
    A = "a"
    B = "b"


class Seed(unittest.TestCase):
    def test_no_gradient_records_and_tensorless_ops(self):
        # A record without tensor fields takes no gradient; the backward may
        # still give it record-shaped Nones (a dataclass or a dict), as the
        # seed's users write it.
        for i, form in enumerate(
            (None, Scalars(scale=None, offset=None), {"scale": None}, {"offset": {}})
        ):

            def setup(ctx, inputs, output):
                ctx.scale = inputs[1].scale

            def bwd(ctx, g, form=form):
                return g * ctx.scale, form

            op = register_custom_op(
                name=f"seedlike::nograd{i}", setup_context_fn=setup, backward_fn=bwd
            )(lambda_free_scale)
            x = torch.ones(3, requires_grad=True)
            (g,) = torch.autograd.grad(op(x, Scalars(4.0)).sum(), x)
            close(g, torch.full((3,), 4.0))

        def bad(ctx, g):
            return g, Scalars(scale=torch.ones(1))

        op = register_custom_op(
            name="seedlike::nograd_bad", setup_context_fn=None, backward_fn=bad
        )(lambda_free_scale)
        x = torch.ones(3, requires_grad=True)
        with self.assertRaisesRegex(TypeError, "gradient for `cfg`, which takes none"):
            op(x, Scalars(1.0)).sum().backward()

        # An op without tensor inputs, with a backward that returns None.
        @register_custom_op(name="seedlike::tensorless", backward_fn=lambda ctx, g: None)
        def tensorless(cfg: Scalars) -> torch.Tensor:
            return torch.full((2, 3), cfg.scale)

        close(tensorless(Scalars(1.5)), torch.full((2, 3), 1.5))

    def test_plain_enum_with_str_values(self):
        seen = []

        @register_custom_op(name="seedlike::plain_enum")
        def plain_enum(x: torch.Tensor, mode: PlainMode) -> torch.Tensor:
            seen.append(mode)
            return x * (2.0 if mode is PlainMode.A else 3.0)

        close(plain_enum(torch.ones(1), "a"), torch.full((1,), 2.0))  # the value, as the seed's
        close(plain_enum(torch.ones(1), PlainMode.B), torch.full((1,), 3.0))
        self.assertEqual(seen, [PlainMode.A, PlainMode.B])  # the kernel gets members

    def test_seed_messages(self):
        # The phrases the seed's own tests match on.
        @dataclasses.dataclass(frozen=True)
        class Unresolved:
            inner: "_DefinitelyNotInScope"  # noqa: F821

        @dataclasses.dataclass(frozen=True)
        class HoldsDict:
            weight_by_name: dict[str, torch.Tensor]

        def op_unresolved(x: torch.Tensor, cfg: Unresolved) -> torch.Tensor: ...

        def op_dict(x: torch.Tensor, cfg: HoldsDict) -> torch.Tensor: ...

        def op_mut(x: torch.Tensor, cfg: WeightCfg) -> torch.Tensor: ...

        with self.assertRaisesRegex(TypeError, "unresolved string annotation"):
            register_custom_op(name="seedlike::unresolved")(op_unresolved)
        with self.assertRaisesRegex(TypeError, "dict-typed"):
            register_custom_op(name="seedlike::dict")(op_dict)
        with self.assertRaisesRegex(ValueError, "does not match.*valid names are"):
            register_custom_op(name="seedlike::mut", mutates_args=("does_not_exist",))(op_mut)

    def test_quick_start(self):
        @register_custom_op()
        def attn(q: torch.Tensor, k: torch.Tensor, cfg: AttnCfg) -> torch.Tensor:
            out = (q @ k.transpose(-1, -2)) * cfg.scale
            if cfg.causal:
                out = out.masked_fill(~torch.tril(torch.ones_like(out, dtype=torch.bool)), 0.0)
            return out

        q, k = torch.randn(2, 4, 8), torch.randn(2, 4, 8)
        expected = (q @ k.transpose(-1, -2)) * 0.25
        close(attn(q, k, AttnCfg(scale=0.25)), expected)
        close(attn(q, k=k, cfg=AttnCfg(0.25, causal=False)), expected)
        # The auto name: the defining file's stem, the function's name.
        self.assertEqual(
            attn.schema,
            "test_decorator::attn(Tensor q, Tensor k, float cfg__scale, bool cfg__causal=False) "
            "-> Tensor",
        )
        close(torch.ops.test_decorator.attn(q, k, 0.25, False), expected)
        causal = attn(q, k, AttnCfg(0.25, True))
        self.assertEqual(float(causal[0, 0, 1]), 0.0)

    def test_full_example_gradients(self):
        @register_custom_op(setup_context_fn=weight_setup, backward_fn=weight_bwd)
        def seed_op(x: torch.Tensor, cfg: WeightCfg) -> torch.Tensor:
            return (x * cfg.inner.w + cfg.inner.b) * cfg.scale

        x = torch.randn(5, requires_grad=True)
        w = torch.randn(5, requires_grad=True)
        b = torch.randn(5, requires_grad=True)
        y = seed_op(x, WeightCfg(Inner(w, b), 3.0))
        close(y, (x * w + b) * 3.0)
        y.sum().backward()
        close(x.grad, w.detach() * 3.0)
        close(w.grad, x.detach() * 3.0)
        self.assertIsNone(b.grad)  # None for the field: no gradient, as in the seed
        self.assertEqual(
            seed_op.slot_map,
            {
                "x": "x",
                "cfg.inner.w": "cfg__inner__w",
                "cfg.inner.b": "cfg__inner__b",
                "cfg.scale": "cfg__scale",
            },
        )

    def test_name_errors(self):
        with self.assertRaisesRegex(ValueError, "namespace"):

            @register_custom_op(name="missing_namespace_op")
            def op_a(x: torch.Tensor) -> torch.Tensor:
                return x

        with self.assertRaisesRegex(ValueError, "identifier"):

            @register_custom_op(name="bad-ns::op")
            def op_b(x: torch.Tensor) -> torch.Tensor:
                return x

        @register_custom_op(name="dtest::dup_first")
        def first(x: torch.Tensor) -> torch.Tensor:
            return x + 1

        with self.assertRaisesRegex(RuntimeError, "already registered"):

            @register_custom_op(name="dtest::dup_first")
            def second(x: torch.Tensor) -> torch.Tensor:
                return x + 2

        close(first(torch.zeros(2)), torch.ones(2))  # the first registration stands
        lib = torch.library.Library("dtest_lib", "FRAGMENT")
        lib.define("taken(Tensor x) -> Tensor")
        with self.assertRaisesRegex(RuntimeError, "already registered"):

            @register_custom_op(name="dtest_lib::taken")
            def taken(x: torch.Tensor) -> torch.Tensor:
                return x

    def test_auto_name_without_a_file(self):
        namespace = {"__name__": "my_pkg.shapes", "torch": torch, "op": register_custom_op}
        code = "@op()\ndef no_file(x: torch.Tensor) -> torch.Tensor:\n    return x - 1\n"
        exec(compile(code, "<string>", "exec"), namespace)  # noqa: S102
        self.assertTrue(namespace["no_file"].schema.startswith("shapes::no_file("))

    def test_bare_decorator(self):
        @register_custom_op
        def bare_op(x: torch.Tensor) -> torch.Tensor:
            return x * 3

        close(bare_op(torch.ones(2)), torch.full((2,), 3.0))
        self.assertTrue(bare_op.schema.startswith("test_decorator::bare_op("))


# ---------------------------------------------------------------------------
# Types
# ---------------------------------------------------------------------------


class Mode(str, enum.Enum):
    FAST = "fast"
    EXACT = "exact"


@dataclasses.dataclass(frozen=True)
class Norm:
    eps: float = 1e-5
    affine: bool = True


@dataclasses.dataclass(frozen=True)
class Block:
    w: torch.Tensor
    sizes: typing.List[int] = dataclasses.field(default_factory=lambda: [1, 2])
    bias: Optional[torch.Tensor] = None
    norm: Norm = dataclasses.field(default_factory=Norm)
    mode: Mode = Mode.EXACT
    act: Literal["relu", "gelu"] = "relu"
    dtype: torch.dtype = torch.float32
    device: torch.device = torch.device("cpu")
    label: str = 'say "hi"\n'
    count: Optional[int] = None


@dataclasses.dataclass(frozen=True)
class Term:
    w: torch.Tensor
    scale: float = 1.0


# Defaults in the schema but for the Python-only ones (lists, default_factory):
# cfg.sizes keeps none, which is why it comes before the fields with one
# (lowering drops the defaults of positional leaves before one without).
BLOCK_SCHEMA = (
    "dtypes::block(Tensor x, Tensor cfg__w, int[] cfg__sizes, Tensor? cfg__bias=None, "
    'float cfg__norm__eps=1e-05, bool cfg__norm__affine=True, str cfg__mode="exact", '
    'str cfg__act="relu", ScalarType cfg__dtype=6, Device cfg__device="cpu", '
    'str cfg__label="say \\"hi\\"\\n", int? cfg__count=None, Tensor? post__w=None, '
    'float? post__scale=None, *, Tensor[] terms__w, float[] terms__scale, str how="fast", '
    "int k=2, float[] ks, Tensor?[] extra) -> Tensor"
)

# The same op, written by hand as YAML.
BLOCK_YAML = """
namespace: dtypes
enums:
  Mode: [fast, exact]
  BlockAct: [relu, gelu]
  How: [fast, slow]
records:
  Block:
    fields:
      w: Tensor
      sizes: int[]
      bias: Tensor? = None
      norm: Norm
      mode: Mode = exact
      act: BlockAct = relu
      dtype: ScalarType = float32
      device: 'Device = "cpu"'
      label: {type: str, default: "say \\"hi\\"\\n"}
      count: int? = None
  Norm:
    fields:
      eps: float = 1e-05
      affine: bool = True
  Term:
    fields:
      w: Tensor
      scale: float = 1.0
ops:
  - func: "block(Tensor x, Block cfg, Term? post=None, *, Term[] terms, How how=fast, int k=2, float[] ks, Tensor?[] extra) -> Tensor"
    meta: [x]
"""


class Types(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        seen = {}

        @register_custom_op(name="dtypes::block")
        def block(
            x: torch.Tensor,
            cfg: Block,
            post: Optional[Term] = None,
            *,
            terms: list[Term] = [],  # noqa: B006 (a Python-only default, as the seed keeps it)
            how: Literal["fast", "slow"] = "fast",
            k: int = 2,
            ks: list[float] = [0.5],  # noqa: B006
            extra: list[Optional[torch.Tensor]] = [],  # noqa: B006
        ) -> torch.Tensor:
            seen["args"] = (cfg, post, terms, how, k, ks, extra)
            y = x * cfg.w * cfg.norm.eps * 1e5
            if cfg.bias is not None:
                y = y + cfg.bias
            if post is not None:
                y = y * post.w * post.scale
            for t in terms:
                y = y + t.w * t.scale
            return y * k

        cls.block = staticmethod(block)
        cls.seen = seen

    def test_schema(self):
        self.assertEqual(self.block.schema, BLOCK_SCHEMA)

    def test_same_schema_as_yaml(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "yaml_block.ops.yaml")
            with open(path, "w") as f:
                f.write(BLOCK_YAML)
            subprocess.run([structop.get_structopc(), "--emit", "py", "-o", d, path], check=True)
            sys.path.insert(0, d)
            try:
                import yaml_block_ops
            finally:
                sys.path.remove(d)
        self.assertEqual(yaml_block_ops.block.schema, self.block.schema)
        self.assertEqual(yaml_block_ops.block.slot_map, self.block.slot_map)

    def test_call_with_defaults_and_classes(self):
        x, w = torch.ones(3), torch.full((3,), 2.0)
        y = self.block(x, Block(w))  # every default: schema's and Python's
        close(y, x * w * 2)
        cfg, post, terms, how, k, ks, extra = self.seen["args"]
        self.assertIs(type(cfg), Block)  # the caller's own class
        self.assertIs(type(cfg.norm), Norm)
        self.assertIs(cfg.mode, Mode.EXACT)  # the caller's enum member
        self.assertEqual(cfg.act, "relu")
        self.assertEqual(cfg.sizes, [1, 2])
        self.assertEqual(cfg.dtype, torch.float32)
        self.assertEqual(cfg.label, 'say "hi"\n')
        self.assertIsNone(post)
        self.assertEqual((terms, how, k, ks, extra), ([], "fast", 2, [0.5], []))

    def test_call_with_everything(self):
        x, w = torch.ones(3), torch.full((3,), 2.0)
        cfg = Block(
            w,
            bias=torch.ones(3),
            norm=Norm(eps=2e-5),
            mode="fast",
            act="gelu",
            sizes=[4],
            dtype=torch.float16,
            count=7,
        )
        terms = [Term(torch.ones(3), 2.0), Term(torch.ones(3))]
        y = self.block(
            x,
            cfg,
            Term(torch.full((3,), 3.0), 0.5),
            terms=terms,
            how="slow",
            k=3,
            ks=[1.0],
            extra=[None, torch.ones(1)],
        )
        close(y, ((x * w * 2 + 1) * 1.5 + 3) * 3)
        got, post, got_terms, how, _, _, extra = self.seen["args"]
        self.assertIs(got.mode, Mode.FAST)  # a plain string given, the member received
        self.assertEqual((got.count, got.dtype, how), (7, torch.float16, "slow"))
        self.assertEqual([type(t) for t in got_terms], [Term, Term])
        self.assertEqual(post.scale, 0.5)
        self.assertIsNone(extra[0])

    def test_bad_values_named(self):
        with self.assertRaisesRegex(ValueError, 'cfg.mode.*invalid value "slowest"'):
            self.block(torch.ones(3), Block(torch.ones(3), mode="slowest"))
        with self.assertRaisesRegex(TypeError, "cfg.w` must be Tensor"):
            self.block(torch.ones(3), Block(3.0))

    def test_scalars_dtype_device(self):
        @register_custom_op(name="dtypes::full")
        def full(
            x: torch.Tensor,
            n: int,
            v: float,
            flag: bool,
            name: str,
            dtype: torch.dtype = torch.float64,
            device: torch.device = torch.device("cpu"),
            maybe: torch.Tensor | None = None,
            ts: list[torch.Tensor] = [],  # noqa: B006
            flags: list[bool] = [],  # noqa: B006
        ) -> torch.Tensor:
            return torch.full(
                (n,), v * (2 if flag else 1) + len(name) + len(ts), dtype=dtype, device=device
            )

        # `ts` keeps its default in Python only (a list): the positional
        # parameters before it lose theirs in the schema, and keep them in
        # Python.
        self.assertEqual(
            full.schema,
            "dtypes::full(Tensor x, int n, float v, bool flag, str name, ScalarType dtype, "
            "Device device, Tensor? maybe, Tensor[] ts, bool[] flags) -> Tensor",
        )
        y = full(torch.ones(1), 2, 1.5, True, "ab")
        self.assertEqual(y.dtype, torch.float64)
        close(y, torch.full((2,), 5.0, dtype=torch.float64))

    def test_slots_kw_only_and_post_init(self):
        checked = []

        @dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
        class Tight:
            w: torch.Tensor
            k: int = 2

            def __post_init__(self):
                checked.append(self.k)

        @register_custom_op(name="dtypes::tight")
        def tight(x: torch.Tensor, cfg: Tight) -> torch.Tensor:
            return x * cfg.w * cfg.k

        close(tight(torch.ones(2), Tight(w=torch.full((2,), 3.0))), torch.full((2,), 6.0))
        self.assertEqual(checked, [2, 2])  # the caller's record, then the kernel's

    def test_record_list_field_with_nested_records(self):
        @dataclasses.dataclass(frozen=True)
        class Core:
            w: torch.Tensor
            s: float = 1.0

        @dataclasses.dataclass(frozen=True)
        class Item:
            core: Core
            k: int = 1

        @dataclasses.dataclass(frozen=True)
        class Holder:
            items: list[Item]
            g: float = 2.0

        @register_custom_op(name="dtypes::holder")
        def holder(x: torch.Tensor, h: Holder) -> torch.Tensor:
            y = x * h.g
            for item in h.items:
                y = y + item.core.w * item.core.s * item.k
            return y

        self.assertEqual(
            holder.schema,
            "dtypes::holder(Tensor x, Tensor[] h__items__core__w, float[] h__items__core__s, "
            "int[] h__items__k, float h__g=2.0) -> Tensor",
        )
        items = [Item(Core(torch.ones(2), 3.0), 2), Item(Core(torch.ones(2)))]
        close(holder(torch.ones(2), Holder(items)), torch.full((2,), 9.0))

    def test_keyword_only_record(self):
        @register_custom_op(name="dtypes::kw")
        def kw(x: torch.Tensor, *, cfg: AttnCfg) -> torch.Tensor:
            return x * cfg.scale

        self.assertEqual(
            kw.schema, "dtypes::kw(Tensor x, *, float cfg__scale, bool cfg__causal=False) -> Tensor"
        )
        close(kw(torch.ones(2), cfg=AttnCfg(4.0)), torch.full((2,), 4.0))


# ---------------------------------------------------------------------------
# Rejections
# ---------------------------------------------------------------------------


@dataclasses.dataclass
class Mutable:
    a: float


@dataclasses.dataclass(frozen=True)
class HoldsMutable:
    m: Mutable


@dataclasses.dataclass(frozen=True)
class HoldsTuple:
    pair: tuple[int, int]


class Level(enum.Enum):
    LOW = 1
    HIGH = 2


class Rejections(unittest.TestCase):
    def reject(self, exception, pattern, fn, **kwargs):
        name = f"rejected::{fn.__name__}"
        with self.assertRaisesRegex(exception, pattern):
            register_custom_op(name=name, **kwargs)(fn)
        self.assertIsNone(
            getattr(getattr(torch.ops, "rejected"), fn.__name__, None)
            if hasattr(torch.ops.rejected, fn.__name__)
            else None
        )

    def test_mutable_dataclass(self):
        def mut(x: torch.Tensor, cfg: HoldsMutable) -> torch.Tensor: ...

        self.reject(TypeError, r"cfg\.m.*Mutable is not frozen.*frozen=True", mut)

    def test_tuple_and_dict(self):
        def tup(x: torch.Tensor, sizes: tuple[int, int]) -> torch.Tensor: ...

        def tup_field(x: torch.Tensor, cfg: HoldsTuple) -> torch.Tensor: ...

        def dct(x: torch.Tensor, opts: dict[str, int]) -> torch.Tensor: ...

        self.reject(TypeError, r"parameter `sizes`: tuple\[\.\.\.\].*list\[\.\.\.\]", tup)
        self.reject(TypeError, r"field `cfg\.pair`.*tuple\[\.\.\.\].*list\[\.\.\.\]", tup_field)
        self.reject(TypeError, r"parameter `opts`: dict\[\.\.\.\]", dct)

    def test_missing_annotations(self):
        def no_param(x, y: torch.Tensor) -> torch.Tensor: ...

        def no_return(x: torch.Tensor): ...

        self.reject(TypeError, r"parameter `x` has no annotation", no_param)
        self.reject(TypeError, r"the return has no annotation", no_return)

    def test_variadic(self):
        def star(x: torch.Tensor, *rest: torch.Tensor) -> torch.Tensor: ...

        def stars(x: torch.Tensor, **rest: torch.Tensor) -> torch.Tensor: ...

        self.reject(TypeError, r"\*rest: an op has a fixed signature", star)
        self.reject(TypeError, r"\*\*rest: an op has a fixed signature", stars)

    def test_numeric_literal_and_enum(self):
        def lit(x: torch.Tensor, n: Literal[1, 2]) -> torch.Tensor: ...

        def num_enum(x: torch.Tensor, level: Level) -> torch.Tensor: ...

        self.reject(TypeError, r"parameter `n`: Literal\[1, 2\].*int or float", lit)
        self.reject(TypeError, r"parameter `level`: enum .*Level has non-str values", num_enum)

    def test_bad_names_and_mutates(self):
        def m(x: torch.Tensor, cfg: WeightCfg) -> None: ...

        with self.assertRaisesRegex(ValueError, r"(?s)cfg\.nope.*valid names.*cfg\.inner\.w"):
            register_custom_op(name="rejected::m", mutates_args=("cfg.nope",))(m)

    def test_failed_decoration_leaves_the_name_free(self):
        def op(x: torch.Tensor, cfg: HoldsMutable) -> torch.Tensor:
            return x

        with self.assertRaises(TypeError):
            register_custom_op(name="rejected::retry")(op)
        self.assertFalse(
            hasattr(torch.ops.rejected, "retry") and hasattr(torch.ops.rejected.retry, "default")
        )

        @register_custom_op(name="rejected::retry")
        def retry(x: torch.Tensor) -> torch.Tensor:
            return x + 1

        close(retry(torch.zeros(1)), torch.ones(1))

    def test_postponed_annotations(self):
        sys.path.insert(0, HERE)
        try:
            import postponed
        finally:
            sys.path.remove(HERE)
        op = postponed.local_classes(register_custom_op)
        close(op(torch.ones(2), op.Cfg(op.Inner(2.0), 3)), torch.full((2,), 5.0))
        with self.assertRaisesRegex(TypeError, r"field `cfg\.inner`.*'Hidden' does not resolve"):
            postponed.unresolvable(register_custom_op)


# ---------------------------------------------------------------------------
# Kernels: meta, mutation, returns, ops calling ops
# ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ProjCfg:
    out_dim: int
    w: torch.Tensor


@dataclasses.dataclass(frozen=True)
class Moments:
    mean: torch.Tensor
    var: torch.Tensor


class Kernels(unittest.TestCase):
    def test_default_meta_counts_record_fields(self):
        @register_custom_op(name="kern::two")
        def two(scale: float, cfg: ProjCfg, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return cfg.w * scale, x.clone()

        # The first two tensor inputs in order: cfg.w, then x.
        w, x = torch.ones(2, 3), torch.ones(4)
        fake = torch.compile(two, fullgraph=True, backend="eager")
        a, b = fake(2.0, ProjCfg(3, w), x)
        self.assertEqual((a.shape, b.shape), ((2, 3), (4,)))
        from torch._subclasses.fake_tensor import FakeTensorMode

        with FakeTensorMode() as mode:
            fa, fb = two(2.0, ProjCfg(3, mode.from_tensor(w)), mode.from_tensor(x))
        self.assertEqual((fa.shape, fb.shape), ((2, 3), (4,)))

    def test_infer_output_meta_fn_gets_records(self):
        seen = []

        def proj_meta(x: torch.Tensor, cfg: ProjCfg) -> torch.Tensor:
            seen.append(type(cfg))
            return x.new_empty((*x.shape[:-1], cfg.out_dim))

        @register_custom_op(name="kern::proj", infer_output_meta_fn=proj_meta)
        def proj(x: torch.Tensor, cfg: ProjCfg) -> torch.Tensor:
            return x[..., : cfg.out_dim].clone() * cfg.w

        x = torch.randn(2, 8)
        out = torch.compile(proj, fullgraph=True, backend="eager")(x, ProjCfg(3, torch.ones(3)))
        close(out, x[..., :3])
        self.assertIn(ProjCfg, seen)

    def test_mutates_args(self):
        for i, spec in enumerate(("cfg", "cfg.inner.w", "cfg__inner__w")):

            def scale_(x: torch.Tensor, cfg: WeightCfg) -> None:
                cfg.inner.w.mul_(cfg.scale)

            op = register_custom_op(name=f"kern::scale_{i}", mutates_args=(spec,))(scale_)
            self.assertIn("Tensor(a!) cfg__inner__w", op.schema)
            w = torch.ones(2)
            self.assertIsNone(op(torch.ones(2), WeightCfg(Inner(w, torch.ones(2)), 3.0)))
            close(w, torch.full((2,), 3.0))

    def test_returns(self):
        @register_custom_op(name="kern::moments")
        def moments(x: torch.Tensor) -> Moments:
            return Moments(x.mean(0), x.var(0))

        self.assertEqual(
            moments.schema, "kern::moments(Tensor x) -> (Tensor output__mean, Tensor output__var)"
        )
        x = torch.randn(5, 3)
        m = moments(x)
        self.assertIs(type(m), Moments)
        close(m.var, x.var(0))

        def pieces_meta(x: torch.Tensor, n: int) -> list[torch.Tensor]:
            return [torch.empty_like(x) for _ in range(n)]

        @register_custom_op(name="kern::pieces", infer_output_meta_fn=pieces_meta)
        def pieces(x: torch.Tensor, n: int) -> list[torch.Tensor]:
            return [x * i for i in range(n)]

        self.assertEqual(len(pieces(torch.ones(2), 3)), 3)

        @register_custom_op(name="kern::nolist")
        def nolist(x: torch.Tensor, n: int) -> list[torch.Tensor]:
            return [x * i for i in range(n)]

        self.assertEqual(len(nolist(torch.ones(2), 2)), 2)  # eager needs no fake kernel
        with self.assertRaisesRegex(Exception, "no fake .meta. kernel.*infer_output_meta_fn"):
            torch.compile(nolist, fullgraph=True, backend="eager")(torch.ones(2), 2)

    def test_ops_calling_ops(self):
        @register_custom_op(name="kern::inner_double")
        def inner_double(x: torch.Tensor) -> torch.Tensor:
            return x * 2

        def setup(ctx, inputs, output):
            pass

        def bwd(ctx, g):
            return inner_double(g), None

        @register_custom_op(name="kern::outer", setup_context_fn=setup, backward_fn=bwd)
        def outer(x: torch.Tensor, cfg: AttnCfg) -> torch.Tensor:
            return inner_double(x) * cfg.scale

        x = torch.ones(2, requires_grad=True)
        outer(x, AttnCfg(3.0)).sum().backward()
        close(x.grad, torch.full((2,), 2.0))


# ---------------------------------------------------------------------------
# Autograd
# ---------------------------------------------------------------------------


class Autograd(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.results = {}

        def setup(ctx, inputs, output):
            x, cfg = inputs
            ctx.save_for_backward(x, cfg.inner.w)
            ctx.kind = type(cfg)

        def bwd(ctx, gy):
            x, w = ctx.saved_tensors
            return gy * w, cls.results["form"](gy * x, ctx)

        @register_custom_op(name="grads::affine", setup_context_fn=setup, backward_fn=bwd)
        def affine(x: torch.Tensor, cfg: WeightCfg) -> torch.Tensor:
            return x * cfg.inner.w + cfg.inner.b

        cls.affine = staticmethod(affine)

    def grads_with(self, form):
        self.results["form"] = form
        x, w, b = (torch.randn(3, requires_grad=True) for _ in range(3))
        self.affine(x, WeightCfg(Inner(w, b), 1.0)).sum().backward()
        return x, w, b

    def test_forms(self):
        forms = {
            "dict": lambda g, ctx: {"inner": {"w": g}},
            "user dataclass": lambda g, ctx: WeightCfg(Inner(g, None), None),
            "grad record": lambda g, ctx: ctx.kind._structop_grad(inner=Inner._structop_grad(w=g)),
            "attributes": lambda g, ctx: types.SimpleNamespace(
                inner=types.SimpleNamespace(w=g, b=None)
            ),
        }
        for name, form in forms.items():
            with self.subTest(name):
                x, w, b = self.grads_with(form)
                close(w.grad, x.detach())
                close(x.grad, w.detach())
                self.assertIsNone(b.grad)
        x, w, b = self.grads_with(lambda g, ctx: None)
        self.assertIsNone(w.grad)
        close(x.grad, w.detach())

    def test_wrong_count(self):
        def bwd(ctx, gy):
            return gy, None, None

        @register_custom_op(name="grads::count", setup_context_fn=None, backward_fn=bwd)
        def count(x: torch.Tensor, cfg: AttnCfg) -> torch.Tensor:
            return x * cfg.scale

        x = torch.ones(2, requires_grad=True)
        with self.assertRaisesRegex(ValueError, r"2 gradients \(one per parameter: x, cfg\)"):
            count(x, AttnCfg(2.0)).sum().backward()


# String annotations: structop is imported in setUpModule, before decoration
# resolves them; `gain`'s Annotated carries metadata for another tool only.
@dataclasses.dataclass(frozen=True)
class NoiseCfg:
    sigma: "typing.Annotated[float, structop.dynamic]" = 0.5
    step: "typing.Annotated[int, structop.dynamic]" = 0
    gain: typing.Annotated[float, "a unit, for another tool"] = 1.0


class Dynamic(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        seen = cls.seen = []

        def setup(ctx, inputs, output):
            ctx.sigma, ctx.factor = inputs[1].sigma, inputs[2]

        def bwd(ctx, gy):
            return gy * ctx.factor, None, None

        @register_custom_op(name="dyn::step", setup_context_fn=setup, backward_fn=bwd)
        def step(
            x: torch.Tensor, cfg: NoiseCfg, factor: typing.Annotated[float, structop.dynamic]
        ) -> torch.Tensor:
            seen.append((type(cfg.sigma), type(cfg.step), type(factor)))
            return x * factor + cfg.sigma * cfg.gain / (cfg.step + 1)

        cls.step = staticmethod(step)

    def test_schema_and_kernel(self):
        self.assertTrue(
            self.step.schema.endswith(
                "step(Tensor x, Tensor cfg__sigma, Tensor cfg__step, float cfg__gain, "
                "Tensor factor) -> Tensor"
            ),
            self.step.schema,
        )
        self.assertIn("dynamic: true", structop.to_idl(self.step))
        self.assertIn("dynamic: [factor]", structop.to_idl(self.step))
        x = torch.ones(2, requires_grad=True)
        del self.seen[:]
        y = self.step(x, NoiseCfg(sigma=1.0, step=1), 3.0)
        close(y, torch.full((2,), 3.5))
        self.assertEqual(self.seen, [(float, int, float)])
        y.sum().backward()
        close(x.grad, torch.full((2,), 3.0))

    def test_compile_follows_the_values(self):
        from torch._dynamo.testing import CompileCounterWithBackend

        torch._dynamo.reset()
        counter = CompileCounterWithBackend("aot_eager")
        compiled = torch.compile(
            lambda x, s, k: self.step(x, NoiseCfg(sigma=s, step=k), s),
            backend=counter,
            fullgraph=True,
        )
        for k in range(10):
            s = 0.25 * (k + 1)
            x = torch.ones(2, requires_grad=True)
            y = compiled(x, s, k)
            close(y, torch.full((2,), s + s / (k + 1)))
            y.sum().backward()
            close(x.grad, torch.full((2,), s))
        self.assertLessEqual(counter.frame_count, 2)

    def test_misplaced_markers(self):
        def on_tensor(x: typing.Annotated[torch.Tensor, structop.dynamic]) -> torch.Tensor: ...

        def optional(
            x: torch.Tensor, s: typing.Optional[typing.Annotated[float, structop.dynamic]] = None
        ) -> torch.Tensor: ...

        def in_list(
            x: torch.Tensor, s: list[typing.Annotated[float, structop.dynamic]]
        ) -> torch.Tensor: ...

        for fn, pattern in (
            (on_tensor, r"parameter `x`: structop.dynamic marks an int or a float.*graph input"),
            (optional, r"parameter `s`: a dynamic number cannot be optional"),
            (in_list, r"parameter `s`: a list of dynamic numbers is not supported"),
        ):
            with self.subTest(fn.__name__), self.assertRaisesRegex(TypeError, pattern):
                register_custom_op(name=f"dynrejected::{fn.__name__}")(fn)


# ---------------------------------------------------------------------------
# PT2
# ---------------------------------------------------------------------------


class PT2(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        def setup(ctx, inputs, output):
            x, cfg = inputs
            ctx.save_for_backward(x, cfg.inner.w)
            ctx.scale = cfg.scale

        def bwd(ctx, gy):
            x, w = ctx.saved_tensors
            g = gy * ctx.scale
            return g * w, {"inner": {"w": (g * x).sum(0), "b": g.sum(0)}}

        @register_custom_op(name="ptwo::affine", setup_context_fn=setup, backward_fn=bwd)
        def affine(x: torch.Tensor, cfg: WeightCfg) -> torch.Tensor:
            return (x * cfg.inner.w + cfg.inner.b) * cfg.scale

        cls.affine = staticmethod(affine)

    def inputs(self, n=4):
        return (
            torch.randn(n, 3, requires_grad=True),
            WeightCfg(
                Inner(torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)), 2.0
            ),
        )

    def test_opcheck(self):
        x, cfg = self.inputs()
        flat = (x, cfg.inner.w, cfg.inner.b, cfg.scale)
        torch.library.opcheck(torch.ops.ptwo.affine.default, flat)

    def test_compile_fullgraph_dynamic(self):
        compiled = torch.compile(self.affine, fullgraph=True, dynamic=True, backend="aot_eager")
        for n in (2, 5):
            x, cfg = self.inputs(n)
            got = compiled(x, cfg)
            close(got, self.affine(x, cfg))
            got.sum().backward()
            close(cfg.inner.b.grad, torch.full((3,), 2.0 * n))

    def test_export_with_record_input(self):
        affine = self.affine

        class M(torch.nn.Module):
            def forward(self, x, cfg):
                return affine(x, cfg) + 1

        x, cfg = self.inputs()
        x, cfg = x.detach(), WeightCfg(Inner(cfg.inner.w.detach(), cfg.inner.b.detach()), 2.0)
        ep = torch.export.export(M(), (x, cfg))
        self.assertIn("torch.ops.ptwo.affine.default", ep.graph_module.code)
        close(ep.module()(x, cfg), affine(x, cfg) + 1)


# ---------------------------------------------------------------------------
# Cache
# ---------------------------------------------------------------------------


class Cache(unittest.TestCase):
    def test_second_process_does_not_run_structopc(self):
        with tempfile.TemporaryDirectory() as d:
            log = os.path.join(d, "runs.log")
            wrapper = os.path.join(d, "structopc")
            with open(wrapper, "w") as f:
                f.write(f'#!/bin/sh\necho run >> "{log}"\nexec "{structop.get_structopc()}" "$@"\n')
            os.chmod(wrapper, 0o755)
            code = """
                import dataclasses, torch, structop
                @dataclasses.dataclass(frozen=True)
                class C:
                    s: float
                @structop.register_custom_op(name="cached::op")
                def op(x: torch.Tensor, c: C) -> torch.Tensor:
                    return x * c.s
                print(float(op(torch.ones(1), C(4.0))))
            """
            env = {"STRUCTOPC": wrapper, "STRUCTOP_CACHE_DIR": os.path.join(d, "cache")}
            self.assertEqual(run_child(code, env).strip(), "4.0")
            self.assertEqual(run_child(code, env).strip(), "4.0")
            with open(log) as f:
                self.assertEqual(f.read().split(), ["run"])  # the second process: none


# ---------------------------------------------------------------------------
# IDL export
# ---------------------------------------------------------------------------


class IdlExport(unittest.TestCase):
    def test_to_idl_and_cli(self):
        sys.path.insert(0, HERE)
        try:
            import proto_ops_module as proto
        finally:
            sys.path.remove(HERE)
        text = structop.to_idl(proto)
        self.assertEqual(structop.to_idl(proto.rms_norm), structop.to_idl(proto.rms_norm))
        self.assertIn("namespace: proto", text)
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "proto.ops.yaml")
            subprocess.run(
                [sys.executable, "-m", "structop", "idl", "proto_ops_module", "-o", out],
                check=True,
                cwd=HERE,
                env=dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p)),
            )
            with open(out) as f:
                self.assertEqual(f.read(), text)
            subprocess.run([structop.get_structopc(), "--emit", "py", "-o", d, out], check=True)
            sys.path.insert(0, d)
            try:
                import proto_ops as exported
            finally:
                sys.path.remove(d)
        for name in ("rms_norm", "gate"):
            self.assertEqual(getattr(exported, name).schema, getattr(proto, name).schema)
        with self.assertRaisesRegex(TypeError, "decorated"):
            structop.to_idl(len)


if __name__ == "__main__":
    sys.path.insert(0, sys.argv[1])  # the folder holding the structop package
    unittest_main.main(argv=sys.argv[:1] + sys.argv[2:])

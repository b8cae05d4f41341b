"""Binding and loading: Op (what an op function calls), find_op(), load_library()."""

import enum
import functools
import typing
import weakref

import torch

from ._checks import explain_failure
from ._records import record_form


# ---------------------------------------------------------------------------
# Binding and loading
# ---------------------------------------------------------------------------

# True while torch.compile's Dynamo (also torch.export's strict mode) traces,
# which reads it as a constant; an eager call costs one Python call. (It is
# torch.compiler.is_compiling on a torch without it.)
is_dynamo_compiling = getattr(torch.compiler, "is_dynamo_compiling", torch.compiler.is_compiling)

# Whether a call that torch.compile traces passes a record's flat values
# (`_structop_flat`, a tuple its __post_init__ sets) or reads its fields one
# by one: each value read from an object costs a guard on every call of the
# compiled model. Dynamo of torch 2.13 guards what the traced code reads, and
# one tuple's items cost less than a guard per field (10 layers of an 8-leaf
# record: 1.007x against literal flat arguments, 1.032x by fields, in
# instructions). Dynamo of torch 2.6 guards every field of a frozen dataclass
# when it first meets one (FrozenDataClassVariable): the fields then cost
# nothing more, and the tuple would add a guard per leaf (1.034x against
# 1.007x). Measured on those two versions; the ones between read the fields.
FLAT_IN_GRAPH = torch.torch_version.TorchVersion(torch.__version__) >= (2, 13)


class _Default(enum.Enum):
    """FACTORY: the default of a record field whose default is built afresh
    for each record (a list, a record). The generated __init__ builds it
    when it gets this, as a dataclass's default_factory would. An enum
    member, which Dynamo can trace where a record is made (it is the
    __init__'s default: a value without a source)."""

    FACTORY = "factory"

    def __repr__(self):
        return "<factory>"


# Typed Any: a field's default in the generated __init__, whatever the field's type.
FACTORY: typing.Any = _Default.FACTORY


def init_record(record, flat, /, **fields):
    """What a record's generated __init__ stores where set_record does not
    serve: each field set as a frozen dataclass sets it, then the flat
    values `flat` unless None, with no key (`_structop_key` None). The
    __init__ calls it while Dynamo traces (which cannot trace C, and a key
    would hash symbolic values) and when a nested field holds something
    else than its record (`flat` None: no flat values, and a call with the
    record then explains the field)."""
    for name, value in fields.items():
        object.__setattr__(record, name, value)
    if flat is not None:
        object.__setattr__(record, "_structop_flat", flat)
        object.__setattr__(record, "_structop_key", None)


def traced_flat(record, keyed):
    """A record's flat values for a call Dynamo traces (torch 2.13 and later,
    FLAT_IN_GRAPH): the leaves at the indices `keyed` (the record's value
    leaves, in order: a constant of the op function) from its
    `_structop_key`, the others from its `_structop_flat`. Dynamo guards
    what the traced code reads: the key is one frozenset of those values,
    which it compares in one guard, where each item read from the tuple
    would cost an index and an equality guard on every call of the compiled
    code. A record without a key (made while tracing; a nan, or a value of
    another type than its field's) passes its tuple, item by item. No
    built-in is called: each would cost a guard too."""
    flat = record._structop_flat
    key = record._structop_key
    if key is None:
        return flat
    (values,) = key
    out = []
    start = 0
    j = 0
    for i in keyed:
        out.extend(flat[start:i])
        out.append(values[j])
        j += 1
        start = i + 1
    out.extend(flat[start:])
    return out


# has_torch_function(args): whether a call with these arguments (a tuple or
# list) must go through __torch_function__: some argument defines it (a
# tensor subclass, a tracing proxy), or a TorchFunctionMode is active (True
# for any non-empty `args`). The C check torch itself makes; an exact
# Tensor, a number, a str or None costs a type comparison.
has_torch_function = torch._C._has_torch_function

# The exact types of values that define no __torch_function__ of their own,
# the commonest first (the C version compares them in this order).
_PLAIN_TYPES = (torch.Tensor, float, int, bool, str, type(None), torch.nn.Parameter)


def _record_columns(records, cls, n, override=False):
    """A list of records taken apart into an op's flat arguments: n tuples,
    tuple k holding every record's k-th flat value (`_structop_flat`), in
    order; then `override` or'ed with whether some value's type may define
    __torch_function__ (the call must then take the OpOverload). The C version
    (_native.c: the same contract and messages) replaces it where it was
    built."""
    columns = tuple([] for _ in range(n))
    for i, item in enumerate(records):
        if not isinstance(item, cls):
            raise TypeError(f"item {i}: expected {cls.__qualname__}, got {type(item).__qualname__}")
        flat = item._structop_flat
        if type(flat) is not tuple or len(flat) != n:
            raise TypeError(f"item {i}: _structop_flat is not a tuple of {n} values")
        for column, value in zip(columns, flat):
            column.append(value)
            override = override or type(value) not in _PLAIN_TYPES
    return (*map(tuple, columns), bool(override))


def _fits(value, kind):
    """Whether `value` fits `kind` (_value_key)."""
    if kind.isupper():
        if value is None:
            return True
        kind = kind.lower()
    if kind == "f":
        return (type(value) is float and value == value) or type(value) is int
    return type(value) is {"i": int, "b": bool, "s": str}.get(kind)


def _value_key(flat, keyed, kinds):
    """A record's `_structop_key`: frozenset({(flat[keyed[0]], ...)}) when
    each of those values fits its kind (kinds[j]: 'f' a float that is not
    nan, or an int; 'i' an int; 'b' a bool; 's' a str; upper case: the same
    or None; exact types), else None. The C version (_native.c) replaces it
    where it was built."""
    values = tuple(flat[i] for i in keyed)
    if len(kinds) != len(values):
        raise ValueError("value_key(): one kind per index")
    if all(_fits(v, k) for v, k in zip(values, kinds)):
        return frozenset((values,))
    return None


def _set_record(record, names, values, flat, keyed=None, kinds=None):
    """What a record's generated __init__ stores, eagerly: each field
    (`names` and `values`, in field order) as a frozen dataclass sets it
    (object.__setattr__, which keeps the values in the instance's inline
    storage, where attribute loads are fastest; a store through __dict__
    makes a dict of them), then `_structop_flat` = flat and, given `keyed`
    and `kinds`, `_structop_key` = value_key(flat, keyed, kinds). The C
    version (_native.c) replaces it where it was built."""
    for name, value in zip(names, values):
        object.__setattr__(record, name, value)
    object.__setattr__(record, "_structop_flat", flat)
    if keyed is not None:
        object.__setattr__(record, "_structop_key", value_key(flat, keyed, kinds))


try:
    from ._native import plain_types as _plain_types
    from ._native import record_columns, set_record, value_key

    _plain_types(*_PLAIN_TYPES)
except ImportError:  # built without Python's headers: the same in Python
    record_columns = _record_columns
    value_key = _value_key
    set_record = _set_record

# torch namespace -> the Op objects of the generated modules (bound when a
# compiled extension of the namespace is loaded, or an op defined from Python).
_OPS = {}


# torch namespace -> the torch.library.Library ("FRAGMENT") that holds the
# ops structop defines from Python; kept for the life of the process.
_LIBRARIES = {}
# "ns::op.overload" -> _Definition, one per op defined from Python (shared by
# every copy of a generated module).
_DEFINED = {}


class Op:
    """One op of a generated module: what its IDL says of it, as data, and
    what the op function calls.

    The generated module declares each op as

        _affine_op = _rt.Op(_IDL_STEM, "ns::affine(...) -> Tensor", params, slot_map, ...)


        @_affine_op.function
        def affine(x: torch.Tensor, cfg: Cfg) -> torch.Tensor:
            try:
                args = (x, cfg.w, ...)
                return (
                    _affine_op.overload
                    if _rt.is_dynamo_compiling() or _rt.has_torch_function(args)
                    else _affine_op.boxed
                )(*args)
            except (AttributeError, TypeError, RuntimeError) as error:
                return _affine_op.failed(error, affine, (x, cfg), {})

    `function` gives the op function its attributes (slot_map, schema,
    annotations; __doc__ where a docstring would not keep it) and the
    Python-kernel API (register_kernel, register_fake,
    register_autograd: _kernels.py).

    `overload` is the OpOverload (torch.ops.<namespace>.<name>.<overload>),
    which torch.compile and torch.export must see to record one op call,
    and which an argument with __torch_function__ (or an active
    TorchFunctionMode) must see to override it. `boxed` calls the op's
    dispatcher entry with positional arguments and makes no
    __torch_function__ check (torch._C._dispatch_call_boxed on its
    OperatorHandle): the function calls it after has_torch_function said
    no, checking each tensor list too (about 0.8x the instructions of a
    call of `overload`; docs/benchmarks.md). `eager` is OpOverload._op,
    which OpOverload.__call__ calls and which makes that check itself: the
    function of an op with keyword-only or no arguments calls it. An op
    already registered when the module is imported (torch.ops.load_library
    called first) is bound at once, so that a first call under
    torch.compile(fullgraph=True) or torch.export already sees the
    OpOverload. Otherwise all three are None until something registers the
    op (load_library, a Python kernel): the call then fails, and the
    function hands the error to failed(), which binds the op and calls the
    function again, or explains the error."""

    __slots__ = (
        "qualname",
        "namespace",
        "name",
        "overload_name",
        "stem",
        "schema",
        "params",
        "slot_map",
        "api_names",
        "grads",
        "meta",
        "backward",
        "tags",
        "annotations",
        "results",
        "doc",
        "overload",
        "eager",
        "boxed",
        "_record_form",
        "__weakref__",
    )

    def __init__(
        self,
        stem,
        schema,
        params,
        slot_map,
        *,
        api_names=None,
        grads=(),
        meta=None,
        backward=False,
        tags=(),
        annotations=(),
        results=None,
        doc=None,
    ):
        """stem: the IDL file's stem (for messages); schema: the lowered schema
        with its namespace ("ns::op.overload(...) -> ..."); params: per
        original parameter (name, check), the checks explain a failed call;
        slot_map: per slot (original path: schema argument name), in slot
        order. api_names: the op function's parameter names where one differs
        from its parameter's (a Python keyword: `from_`). For Python kernels:
        grads: per slot that takes a gradient, (api path, schema name), in
        slot order; meta: per output, the schema name of the input whose
        metadata it copies (the IDL's identity or listed meta), None for
        `meta: custom`; backward: the IDL's `backward: true`; tags: torch tag
        names; annotations: the IDL's; results: for an op that returns a
        record, its generated (`_<op>_outputs`, `_<op>_results`): a kernel's
        record-form result as the flat outputs, and the flat outputs (or
        their gradients, with _grad=True) in record form. doc: the function's
        __doc__ where a docstring would not keep it (Python cleans the
        indentation of a docstring's text)."""
        self.qualname = schema.split("(", 1)[0]  # "ns::op.overload"
        self.namespace, _, name = self.qualname.partition("::")
        self.name, _, overload = name.partition(".")
        self.overload_name = overload or "default"
        self.stem = stem
        self.schema = schema
        self.params = params
        self.slot_map = slot_map
        self.api_names = api_names or tuple(name for name, _ in params)
        self.grads = grads
        self.meta = meta
        self.backward = backward
        self.tags = tags
        self.annotations = annotations
        self.results = results
        self.doc = doc
        self.overload = None
        self.eager = None
        self.boxed = None
        self._record_form = None
        _OPS.setdefault(self.namespace, weakref.WeakSet()).add(self)
        self.bind()

    def function(self, function):
        """Decorates the generated op function: its slot_map, schema and
        annotations, and register_kernel, register_fake and
        register_autograd."""
        from ._kernels import python_kernels  # (_kernels imports this module)

        function.slot_map = self.slot_map
        function.schema = self.schema
        function.annotations = self.annotations
        if self.doc is not None:
            function.__doc__ = self.doc
        python_kernels(function, self)
        return function

    def record_form(self, args, kwargs):
        """The flat arguments torch passes to a kernel of the op, in record
        form: (args, kwargs) of the op function."""
        return self.record_form_function()(args, kwargs)

    def record_form_function(self):
        """record_form as one function, made on first use (_records.py)."""
        if self._record_form is None:
            self._record_form = record_form(
                self.qualname,
                torch._C.parse_schema(self.schema),
                self.params,
                self.api_names,
                tuple(self.slot_map),
            )
        return self._record_form

    def bind(self):
        """Binds the op once something registered it; returns whether it bound
        it now."""
        if self.overload is not None:
            return False
        overload = find_op(getattr(torch.ops, self.namespace), self.name, self.overload_name)
        if overload is None:
            return False
        handle = torch._C._dispatch_find_schema_or_throw(
            f"{self.namespace}::{self.name}",
            "" if self.overload_name == "default" else self.overload_name,
        )
        self.overload, self.eager = overload, overload._op
        self.boxed = functools.partial(torch._C._dispatch_call_boxed, handle)
        return True

    def failed(self, error, function, args, kwargs):
        """The generated function `function`, called with (args, kwargs), raised
        `error` (AttributeError, TypeError or RuntimeError): calls it again if
        the op was not bound and now is; else raises TypeError naming the
        argument that does not fit, RuntimeError if the op is not registered,
        or `error` itself (one raised by the kernel)."""
        if self.bind():
            return function(*args, **kwargs)
        explain_failure(
            self.qualname,
            self.params,
            args + tuple(kwargs.values()),
            error,
            self.overload is not None,
        )
        raise error


def _bind_namespace(namespace):
    for op in list(_OPS.get(namespace, ())):
        op.bind()


def find_op(namespace_ops, name, overload):
    """The OpOverload `namespace_ops.<name>.<overload>` (namespace_ops is
    torch.ops.<namespace>), or None while nothing registers it."""
    try:
        return getattr(getattr(namespace_ops, name), overload)
    except (AttributeError, RuntimeError):
        return None


def load_library(path, namespace):
    """torch.ops.load_library(path), for a generated module of torch namespace
    `namespace`. Refuses while ops of that namespace are defined from Python
    (python_kernels): an extension that registers them again would make torch
    abort the process (a second definition of an op, raised while the library
    loads)."""
    defined = sorted(q for q in _DEFINED if q.split("::", 1)[0] == namespace)
    if defined:
        raise RuntimeError(
            f"structop: cannot load {path}: {', '.join(defined)} "
            f"{'is' if len(defined) == 1 else 'are'} already defined from Python (Python "
            f"kernels), and a compiled extension for torch namespace `{namespace}` would "
            "register them a second time, which aborts the process; an op is implemented "
            "either by the compiled extension or in Python: load the extension in a process "
            "that registers no Python kernels for its ops"
        )
    torch.ops.load_library(path)
    _bind_namespace(namespace)

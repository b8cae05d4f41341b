"""The record form of an op's flat arguments (what a Python kernel takes),
built from what the generated module declares: the op's parameters with
their checks, each record's `_structop_fields`, and the flat slots' paths in
slot order. Lowering decided the slots (one per leaf, depth first, in field
order); this walks the same fields in the same order, so flat argument k is
the leaf that slot k names. Nothing here makes a flat name: arguments are
taken by position, or by the name torch's schema gives them."""

import torch

from ._checks import DTYPE, LAYOUT, MEMORY_FORMAT, absent, zip_leaves
from ._dynamic import kernel_value


def enum_value(cls, value, op, path):
    """The member of str enum `cls` whose value is `value` (an enum leaf as the
    dispatcher passes it, a str); ValueError naming op and path otherwise, as
    the C++ adapters do."""
    try:
        return cls._value2member_map_[value]
    except (KeyError, TypeError):
        values = ", ".join(m.value for m in cls)
        raise ValueError(
            f'{op}: {path}: invalid value "{value}" for {cls.__name__}; expected one of: {values}'
        ) from None


def enum_values(cls, values, op, path):
    """An enum list leaf (a list of str) as a list of members of `cls`;
    ValueError naming op and the item's path (`cfg.modes[1]`) otherwise."""
    return [enum_value(cls, v, op, f"{path}[{i}]") for i, v in enumerate(values)]


# c10's Layout and MemoryFormat in the order of their C++ enums (a schema's
# default holds the number).
_LAYOUTS = ("strided", "sparse_coo", "sparse_csr", "_mkldnn", "sparse_csc", "sparse_bsr")
_MEMORY_FORMATS = ("contiguous_format", "preserve_format", "channels_last", "channels_last_3d")


def _schema_default(value, check):
    """A schema default as the Python value a kernel gets for it: torch's
    FunctionSchema gives a ScalarType, Layout or MemoryFormat default as
    its number."""
    if not isinstance(value, int) or isinstance(value, bool):
        return value
    if check is DTYPE:
        return torch.ops.aten.scalar_tensor.default(0, dtype=value).dtype
    if check is LAYOUT and value < len(_LAYOUTS):
        return getattr(torch, _LAYOUTS[value])
    if check is MEMORY_FORMAT and value < len(_MEMORY_FORMATS):
        return getattr(torch, _MEMORY_FORMATS[value])
    return value


def record_form(qualname, schema, params, api_names, paths):
    """The function record_form(args, kwargs) that turns the flat arguments
    torch passes to a kernel of op `qualname` ((args, kwargs) bindable to
    `schema`, a torch FunctionSchema; torch leaves out arguments at their
    default) into the record form: (args, kwargs) of the op function's
    parameters. params: per parameter (name, check), as Op takes them;
    api_names: the function's parameter names; paths: per slot its original
    path (the keys of slot_map).

    The walk over the parameters and fields happens here, once: it writes
    one expression of the flat values `v` (`Cfg(w=v[1], mode=_enum(...))`),
    compiled to a function, so that a call runs straight-line code as a
    hand-written one would (dataclasses makes its __init__ the same way)."""
    arguments = schema.arguments
    if len(arguments) != len(paths):
        raise RuntimeError(
            f"{qualname}: the schema has {len(arguments)} arguments, the slot map "
            f"{len(paths)} (regenerate the module)"
        )
    walk = _Walk(qualname, paths)
    positional, keyword = [], []
    for (name, check), api_name in zip(params, api_names):
        first = walk.next
        value = walk.value(check, name)
        if arguments[first].kwarg_only:
            keyword.append(f"{walk.name(api_name)}: {value}")
        else:
            positional.append(value)
    walk.names["_bind"] = _binder(arguments, walk.checks)
    source = (
        "def record_form(args, kwargs):\n"
        f"    v = args if len(args) == {len(arguments)} else _bind(args, kwargs)\n"
        f"    return ({''.join(p + ', ' for p in positional)}), {{{', '.join(keyword)}}}\n"
    )
    exec(source, walk.names)  # noqa: S102 (text made above: no user text in it)
    return walk.names["record_form"]


def _binder(arguments, checks):
    """bind(args, kwargs): the flat values in schema order, an argument torch
    left out being its schema default."""
    names = [a.name for a in arguments]
    defaults = [
        _schema_default(a.default_value, check) if a.has_default_value() else _MISSING
        for a, check in zip(arguments, checks)
    ]

    def bind(args, kwargs):
        values = list(args)
        for i in range(len(values), len(names)):
            value = kwargs.get(names[i], _MISSING)
            if value is _MISSING:
                value = defaults[i]
                if isinstance(value, list):
                    value = list(value)  # a kernel may keep or change it
            values.append(value)
        return values

    return bind


_MISSING = object()


class _Walk:
    """Writes, per parameter, the expression of the flat values `v` that is
    its record-form value, taking slots in order (leaves depth first).
    Classes, the op's name, paths and keyword names are names of `names`
    (the expression's globals), so no user text becomes code: only
    generated names, numbers and field names (identifiers)."""

    def __init__(self, op, paths):
        self.paths = paths
        self.next = 0  # the next slot
        self.item = None  # inside a list of records: (loop variable, first slot)
        self.checks = []  # per slot, its leaf's check
        self.names = {
            "__builtins__": {"len": len},
            "_op": op,
            "_enum": enum_value,
            "_enums": enum_values,
            "_absent": absent,
            "_zip": zip_leaves,
            "_dynamic": kernel_value,
        }

    def name(self, value):
        """A global name of the expression for `value`."""
        name = f"_{len(self.names)}"
        self.names[name] = value
        return name

    def value(self, check, path):
        kind = check[0]
        if kind == "record":
            return self.record(check[1], path)[0]
        if kind == "optional_record":
            return self.optional_record(check[1], path)
        if kind == "record_list":
            return self.record_list(check[1], path)
        return self.leaf(check)

    def flat(self, slot):
        """The flat value of `slot`: `v[i]`, or in a list's item `_l[i]`."""
        if self.item is None:
            return f"v[{slot}]"
        variable, first = self.item
        return f"{variable}[{slot - first}]"

    def leaf(self, check):
        slot = self.next
        self.next += 1
        self.checks.append(check)
        value = self.flat(slot)
        optional = check[2:3] == ("optional",)
        inner = check[3] if optional else check
        if inner[2:3] == ("dynamic",):
            return f"_dynamic({value}, _op, {self.name(self.paths[slot])})"
        if inner[2:3] == ("enum",):
            convert = f"_enum({self.name(inner[3])}, {value}, _op, {self.name(self.paths[slot])})"
        elif inner[2:3] == ("list",) and inner[3][2:3] == ("enum",):
            convert = (
                f"_enums({self.name(inner[3][3])}, {value}, _op, {self.name(self.paths[slot])})"
            )
        else:
            return value
        return f"(None if {value} is None else {convert})" if optional else convert

    def record(self, cls, path):
        """(expression, required): required are the slots of the leaves never
        None in a given record (the first is the presence witness of an
        optional record), as lowering's RecordLayout::required_leaves."""
        fields, required = [], []
        for name, check in cls._structop_fields:
            kind = check[0]
            if kind == "record":
                value, inner = self.record(check[1], path + "." + name)
                required += inner
            else:
                if kind not in ("optional_record", "record_list") and check[2:3] != ("optional",):
                    required.append(self.next)
                value = self.value(check, path + "." + name)
            fields.append(f"{name}={value}")
        return f"{self.name(cls)}({', '.join(fields)})", required

    def leaves(self, first, path):
        """`(("w", v[3]), ...)`: slots first..next as (path below `path`, value)."""
        prefix = path + "."
        pairs = []
        for slot in range(first, self.next):
            leaf = self.paths[slot]
            leaf = leaf[len(prefix) :] if leaf.startswith(prefix) else leaf
            pairs.append(f"({self.name(leaf)}, {self.flat(slot)}), ")
        return f"({''.join(pairs)})"

    def optional_record(self, cls, path):
        first = self.next
        value, required = self.record(cls, path)
        required = tuple(k - first for k in required)
        leaves = self.leaves(first, path)
        return (
            f"(None if _absent(_op, {self.name(path)}, {leaves}, {self.name(required)}) "
            f"else {value})"
        )

    def record_list(self, cls, path):
        first, outer = self.next, self.item
        variable = f"_l{len(self.names)}"
        self.item = (variable, first)  # an item's leaves are indexed from its first
        item = self.record(cls, path)[0]
        self.item = outer
        leaves = self.leaves(first, path)
        return f"[{item} for {variable} in _zip(_op, {self.name(path)}, {leaves})]"

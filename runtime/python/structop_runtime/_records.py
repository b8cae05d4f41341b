"""The record form of an op's flat arguments (what a Python kernel takes),
built from what the generated module declares: the op's parameters with
their checks, each record's `_structop_fields`, and the flat slots' paths in
slot order. Lowering decided the slots (one per leaf, depth first, in field
order); this walks the same fields in the same order, so flat argument k is
the leaf that slot k names. Nothing here makes a flat name: arguments are
taken by position, or by the name torch's schema gives them."""

import operator

import torch

from ._checks import DTYPE, LAYOUT, MEMORY_FORMAT, absent, zip_leaves


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


class RecordForm:
    """Turns the flat arguments torch passes to a kernel of op `qualname`
    ((args, kwargs) bindable to `schema`, a torch FunctionSchema; torch
    leaves out arguments at their default) into the record form: (args,
    kwargs) of the op function's parameters. params: per parameter (name,
    check), as Op takes them; api_names: the function's parameter names;
    paths: per slot its original path (the keys of slot_map)."""

    def __init__(self, qualname, schema, params, api_names, paths):
        arguments = schema.arguments
        if len(arguments) != len(paths):
            raise RuntimeError(
                f"{qualname}: the schema has {len(arguments)} arguments, the slot map "
                f"{len(paths)} (regenerate the module)"
            )
        walk = _Walk(qualname, paths)
        self.positional, self.keyword = [], []
        for (name, check), api_name in zip(params, api_names):
            first = walk.next
            build = walk.value(check, name)
            if arguments[first].kwarg_only:
                self.keyword.append((api_name, build))
            else:
                self.positional.append(build)
        self.names = [a.name for a in arguments]
        self.defaults = [
            _schema_default(a.default_value, check) if a.has_default_value() else _MISSING
            for a, check in zip(arguments, walk.checks)
        ]

    def __call__(self, args, kwargs):
        values = list(args)
        for i in range(len(values), len(self.names)):
            value = kwargs.get(self.names[i], _MISSING)
            if value is _MISSING:
                value = self.defaults[i]
                if isinstance(value, list):
                    value = list(value)  # a kernel may keep or change it
            values.append(value)
        return (
            tuple(build(values) for build in self.positional),
            {name: build(values) for name, build in self.keyword},
        )


_MISSING = object()


class _Walk:
    """Builds, per parameter, a function of the flat values that returns
    its record-form value, taking slots in order (leaves depth first)."""

    def __init__(self, op, paths):
        self.op = op
        self.paths = paths
        self.next = 0  # the next slot
        self.base = 0  # inside a list of records: the slot of its first leaf
        self.checks = []  # per slot, its leaf's check

    def value(self, check, path):
        kind = check[0]
        if kind == "record":
            return self.record(check[1], path)[0]
        if kind == "optional_record":
            return self.optional_record(check[1], path)
        if kind == "record_list":
            return self.record_list(check[1], path)
        return self.leaf(check)

    def leaf(self, check):
        slot = self.next
        self.next += 1
        self.checks.append(check)
        i, op, path = slot - self.base, self.op, self.paths[slot]
        optional = check[2:3] == ("optional",)
        inner = check[3] if optional else check
        if inner[2:3] == ("enum",):
            cls = inner[3]
            if optional:
                return lambda v: None if v[i] is None else enum_value(cls, v[i], op, path)
            return lambda v: enum_value(cls, v[i], op, path)
        if inner[2:3] == ("list",) and inner[3][2:3] == ("enum",):
            cls = inner[3][3]
            if optional:
                return lambda v: None if v[i] is None else enum_values(cls, v[i], op, path)
            return lambda v: enum_values(cls, v[i], op, path)
        return operator.itemgetter(i)

    def record(self, cls, path):
        """(build, required): required are the slots of the leaves never None
        in a given record (the first is the presence witness of an optional
        record), as lowering's RecordLayout::required_leaves."""
        fields, required = [], []
        for name, check in cls._structop_fields:
            kind = check[0]
            if kind == "record":
                build, inner = self.record(check[1], path + "." + name)
                required += inner
            else:
                if kind not in ("optional_record", "record_list") and check[2:3] != ("optional",):
                    required.append(self.next)
                build = self.value(check, path + "." + name)
            fields.append((name, build))
        return (lambda v: cls(**{name: build(v) for name, build in fields})), required

    def relative(self, first, end, path):
        """The paths of slots first..end below `path`."""
        prefix = path + "."
        return [p[len(prefix) :] if p.startswith(prefix) else p for p in self.paths[first:end]]

    def optional_record(self, cls, path):
        first = self.next
        build, required = self.record(cls, path)
        names = self.relative(first, self.next, path)
        required = tuple(k - first for k in required)
        op, begin, end = self.op, first - self.base, self.next - self.base

        def optional_build(v):
            if absent(op, path, tuple(zip(names, v[begin:end])), required):
                return None
            return build(v)

        return optional_build

    def record_list(self, cls, path):
        first, base = self.next, self.base
        self.base = first  # an item's leaves are indexed from its first
        item = self.record(cls, path)[0]
        self.base = base
        names = self.relative(first, self.next, path)
        op, begin, end = self.op, first - base, self.next - base
        return lambda v: [
            item(leaves) for leaves in zip_leaves(op, path, tuple(zip(names, v[begin:end])))
        ]

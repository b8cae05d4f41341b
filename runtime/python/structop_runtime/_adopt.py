"""adopt(): a generated module whose records and enums are the caller's own
classes (structop.register_custom_op: the frozen dataclasses and str enums
of a decorated function's annotations).

The module is generated from an IDL as any other (its schema, checks, slot
map, defaults and gradient slots are the compiler's); adopt() then puts the
caller's classes where its generated ones were, so that its op functions
take the caller's instances, and its Python kernels, fake kernels and
setup_context get them back:

- each adopted record class gets what a generated record class has: its
  fields' checks (`_structop_fields`, naming the adopted classes), its grad
  record (`_structop_grad`, the generated one), no guard key
  (`_structop_key` None) and its flat values as the property
  `_structop_flat`, computed from its fields in slot order on each read
  (a generated record computes them once, in its __init__, which the
  caller's dataclass does not have); it becomes a pytree node as a
  generated record does (unless something registered it already);
- each adopted enum replaces the generated one in the checks, so a kernel
  gets the caller's members (the values are the IDL's);
- the module's names of the generated classes name the adopted ones, and
  its ops' parameter checks are rewritten to match.

Nothing here decides a layout: the flat values are the fields' leaves in
the order of `_structop_fields`, which is the generated module's (slot
order, as lowering decided it).
"""

from ._checks import enum_of, list_of, optional
from ._loading import Op, record_columns
from ._pytree import register_pytree


def adopt(module, records, enums=()):
    """Makes the generated module `module` use the caller's classes: records
    maps the name of each generated record class to the class that replaces
    it, enums the name of each generated enum to its replacement (records
    and enums of the module not named keep their generated classes).
    Returns the mapping {generated class: adopted class}."""
    mapping = {}
    for name, cls in dict(records).items():
        mapping[getattr(module, name)] = cls
    for name, cls in dict(enums).items():
        mapping[getattr(module, name)] = cls

    def remap(check):
        kind = check[0]
        if kind in ("record", "optional_record", "record_list"):
            return (kind, mapping.get(check[1], check[1]))
        tag = check[2:3]
        if tag == ("optional",):
            return optional(remap(check[3]))
        if tag == ("list",):
            return list_of(remap(check[3]))
        if tag == ("enum",):
            return enum_of(mapping.get(check[3], check[3]))
        return check

    generated_records = [g for g in mapping if hasattr(g, "_structop_fields")]
    for generated in generated_records:
        cls = mapping[generated]
        fields = tuple((name, remap(check)) for name, check in generated._structop_fields)
        cls._structop_fields = fields
        cls._structop_grad = getattr(generated, "_structop_grad", None)
        cls._structop_key = None
    for generated in generated_records:  # (a flat function reads nested records' fields)
        cls = mapping[generated]
        cls._structop_flat = property(_flat_function(cls.__qualname__, cls._structop_fields))
        children, static = generated._structop_pytree
        register_pytree(cls, children, static, module.NAMESPACE, module._IDL_STEM)
    for generated, cls in mapping.items():
        setattr(module, generated.__name__, cls)
    for value in list(vars(module).values()):
        if isinstance(value, Op):
            value.params = tuple((name, remap(check)) for name, check in value.params)
            value._record_form = None
    return mapping


def _width(check):
    """How many flat values (slots) a field of this check has."""
    if check[0] in ("record", "optional_record", "record_list"):  # (a list: one list per leaf)
        return sum(_width(c) for _, c in check[1]._structop_fields)
    return 1


def _columns(items, cls, n):
    """A list-of-records field's flat values: one tuple per leaf."""
    return record_columns(items, cls, n)[:-1]


def _flat_function(qualname, fields):
    """The getter of `_structop_flat` for a record with these fields: one
    expression, compiled once (as dataclasses makes an __init__), of field
    names (identifiers), numbers and names of its globals."""
    names = {"__builtins__": {"getattr": getattr}, "_columns": _columns}
    parts = []
    for i, (name, check) in enumerate(fields):
        if not name.isidentifier():
            raise ValueError(f"structop: {qualname}: field name {name!r} is not an identifier")
        value = f"self.{name}"
        kind = check[0]
        if kind == "record":
            parts.append(f"*{value}._structop_flat")
        elif kind == "optional_record":
            nones = "(" + "None, " * _width(check) + ")"
            parts.append(f"*({value}._structop_flat if {value} is not None else {nones})")
        elif kind == "record_list":
            cls_name = f"_c{i}"
            names[cls_name] = check[1]
            parts.append(f"*_columns({value}, {cls_name}, {_width(check)})")
        else:
            inner = check[3] if check[2:3] == ("optional",) else check
            if inner[2:3] == ("enum",):
                parts.append(f'getattr({value}, "_value_", {value})')
            else:
                parts.append(value)
    source = f"def _structop_flat(self):\n    return ({''.join(p + ', ' for p in parts)})\n"
    exec(source, names)  # noqa: S102 (identifiers and numbers only, checked above)
    function = names["_structop_flat"]
    function.__qualname__ = f"{qualname}._structop_flat"
    return function

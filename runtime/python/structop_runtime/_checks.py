"""The checks that explain a failed call (TENSOR, ..., optional(), list_of(),
enum_of(), record()), and the messages they give."""

import torch


# Checks used only to explain a call that failed: (predicate, description).
TENSOR = (lambda v: isinstance(v, torch.Tensor), "Tensor")
INT = (lambda v: isinstance(v, int) and not isinstance(v, bool), "int")
FLOAT = (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool), "float")
BOOL = (lambda v: isinstance(v, bool), "bool")
STR = (lambda v: isinstance(v, str), "str")
SCALAR = (lambda v: isinstance(v, (int, float, bool, complex)), "Scalar (int, float or bool)")
DTYPE = (lambda v: isinstance(v, torch.dtype), "torch.dtype")
DEVICE = (lambda v: isinstance(v, (torch.device, str)), "torch.device or str")
LAYOUT = (lambda v: isinstance(v, torch.layout), "torch.layout")
MEMORY_FORMAT = (lambda v: isinstance(v, torch.memory_format), "torch.memory_format")
ANY = (lambda v: True, "any")


# A check is (predicate, description), with what it wraps after them where
# the record form (_records.py) needs it: ("optional", check), ("list",
# check) or ("enum", cls). A record's is ("record", cls), and an optional
# record's and a list of records' ("optional_record", cls) and
# ("record_list", cls).


def optional(check):
    if check[0] == "record":  # an optional record: None, or checked field by field
        return ("optional_record", check[1])
    return (lambda v: v is None or check[0](v), "None or " + check[1], "optional", check)


def list_of(check):
    if check[0] == "record":  # a list of records: each item checked field by field
        return ("record_list", check[1])
    return (
        lambda v: isinstance(v, (list, tuple)) and all(check[0](x) for x in v),
        "list of " + check[1],
        "list",
        check,
    )


def enum_of(cls):
    return (lambda v: isinstance(v, str), cls.__name__ + " or str", "enum", cls)


def record(cls):
    """A record parameter or field; its fields' checks are cls._structop_fields."""
    return ("record", cls)


def problem(check, value, path):
    """Describes why `value` at `path` does not fit `check`, or returns None."""
    if check[0] == "record_list":
        if not isinstance(value, (list, tuple)):
            return f"`{path}` must be a list of {check[1].__name__}, got {type(value).__name__}"
        for i, item in enumerate(value):
            found = problem(("record", check[1]), item, f"{path}[{i}]")
            if found:
                return found
        return None
    if check[0] == "optional_record":
        return None if value is None else problem(("record", check[1]), value, path)
    if check[0] == "record":
        cls = check[1]
        if not isinstance(value, cls):
            return f"`{path}` must be {cls.__name__}, got {type(value).__name__}"
        for name, field_check in cls._structop_fields:
            found = problem(field_check, getattr(value, name), f"{path}.{name}")
            if found:
                return found
        return None
    if not check[0](value):
        return f"`{path}` must be {check[1]}, got {type(value).__name__}"
    return None


class ListOf:
    """In python_kernels' params, a parameter that is a list of records:
    `("cfgs", ListOf(Cfg))`."""

    __slots__ = ("record_class",)

    def __init__(self, record_class):
        self.record_class = record_class


def returned(op, result, returns):
    """A Python kernel's result as a tuple with one value per return, each
    returned record checked to be an instance of its class. returns: per
    return of the op, (api name, record class or None)."""
    values = (result,) if len(returns) == 1 else result
    if len(returns) > 1 and (not isinstance(result, (tuple, list)) or len(result) != len(returns)):
        raise TypeError(
            f"{op}: a kernel must return a tuple of {len(returns)} values "
            f"({', '.join(name for name, _ in returns)}), got "
            f"{type(result).__name__}"
        )
    for (name, cls), value in zip(returns, values):
        if cls is not None and not isinstance(value, cls):
            raise TypeError(
                f"{op}: a kernel must return a {cls.__name__} as `{name}`, got "
                f"{type(value).__name__}"
            )
    return tuple(values)


def zip_leaves(op, path, leaves):
    """A list of records' leaves, as torch passes them (one list per leaf:
    `leaves` holds (leaf path, list) pairs), zipped to one tuple per record;
    raises ValueError naming them when their lengths differ (the C++
    runtime's structop::check_lengths)."""
    if len({len(values) for _, values in leaves}) > 1:
        lengths = ", ".join(f"{name}: {len(values)}" for name, values in leaves)
        raise ValueError(
            f"{op}: {path}: its leaves' lists have different lengths ({lengths}); "
            "each holds one entry per record"
        )
    return zip(*(values for _, values in leaves))


def absent(op, path, leaves, required):
    """Whether the optional record at `path` is absent, from its leaves as
    torch passes them ((leaf path, value) pairs; `required` indexes those
    never None in a given record, the first being the presence witness);
    raises ValueError when they disagree (the C++ runtime's
    structop::check_optional_record)."""
    witness = leaves[required[0]][0]
    if leaves[required[0]][1] is None:
        for name, value in leaves:
            if value is not None:
                raise ValueError(
                    f"{op}: {path}.{name} is given but {path}.{witness} is None, which means "
                    f"{path} is None; give all of {path}'s leaves or none"
                )
        return True
    for i in required:
        name, value = leaves[i]
        if value is None:
            raise ValueError(
                f"{op}: {path}.{name} is None but {path} is given ({path}.{witness} is not "
                f"None); a given {path} needs every field that is not optional"
            )
    return False


def explain_failure(op, params, values, error, bound):
    """Raises TypeError naming the parameter or field that does not fit, or
    RuntimeError if the op is not registered; else returns (the caller then
    re-raises the original error, e.g. one raised by the kernel)."""
    for (name, check), value in zip(params, values):
        found = problem(check, value, name)
        if found:
            raise TypeError(f"{op}: {found}") from error
    if isinstance(error, AttributeError) and getattr(error, "name", None) == "_structop_flat":
        # A record's __init__ sets it; this one was made around its class.
        raise TypeError(
            f"{op}: this {type(error.obj).__name__} was made without its __init__ "
            "(object.__new__, or a copy that skips it), which sets the flat values "
            "a call passes; make records by calling their class or dataclasses.replace"
        ) from error
    if not bound:
        raise RuntimeError(
            f"{op} is not registered: call load_library(path) with the "
            "compiled extension first, or implement it in Python "
            "(register_kernel)"
        ) from error

"""structop.register_custom_op and structop.to_idl: custom ops defined from
Python functions whose parameters are frozen dataclasses, on structop's
compiler.

The decorator is a second front end of the same pipeline. It reads the
function's signature and annotations and writes the IDL they mean (records
for the dataclasses, enums for str enums and string Literals, the op's
`func:` line, `meta:`, `mutates:`, `backward:`); the installed structopc
checks and lowers that IDL and emits its Python module (`--emit py`), as it
would for a YAML file; the module is imported, made to take the caller's own
classes (structop_runtime.adopt), and the function becomes its op's kernel
on every device. Nothing here lowers: the flat schema, its names, defaults,
checks and gradient slots are the compiler's, so a decorated op and the same
IDL compiled from YAML register the same op (to_idl() gives that YAML).

The generated module is cached by the hash of its IDL, the structopc
binary and the runtime version ($STRUCTOP_CACHE_DIR/decorated/): a process
that decorates an unchanged function imports it without running structopc.
"""

import collections.abc
import dataclasses
import enum
import hashlib
import importlib.util
import inspect
import keyword
import math
import os
import re
import subprocess
import sys
import types
import typing

from ._version import RUNTIME_VERSION, __version__

__all__ = ["register_custom_op", "to_idl"]

# "ns::op" -> the decorated function, for every op this process decorated.
_DECORATED = {}

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def register_custom_op(
    name=None,
    mutates_args=(),
    infer_output_meta_fn=None,
    setup_context_fn=None,
    backward_fn=None,
):
    """Registers the decorated function as a custom op (torch.ops.NS.NAME),
    with the parameters and meaning of MagiCompiler's
    magi_register_custom_op:

        @structop.register_custom_op()
        def attn(q: torch.Tensor, k: torch.Tensor, cfg: AttnCfg) -> torch.Tensor: ...

    name: "namespace::op_name"; by default `<file stem>::<function name>`.
    mutates_args: what the op writes to: a parameter (a record parameter
    means all its tensor leaves), a dotted path (`cfg.a`) or a lowered name
    (`cfg__a`). infer_output_meta_fn: the fake (meta) kernel, with the
    function's signature; without it output k copies the metadata of the
    k-th tensor input (tensor fields of records counted, in order).
    setup_context_fn(ctx, inputs, output) and backward_fn(ctx, *grads): the
    op's autograd; backward returns one gradient per parameter (for a record
    None, a dict by field name, its grad record or an object with those
    attributes).

    Parameters may be annotated Tensor, Optional[Tensor], int, float, bool,
    str, torch.dtype, torch.device, list[...] of those, frozen dataclasses
    (nested, optional, lists of them), str enums and Literal strings.
    Returns the op function: the original signature, fast; it carries
    slot_map, schema, register_kernel, register_fake and register_autograd.
    Raises TypeError for an annotation structop cannot take, ValueError for
    a bad name, RuntimeError for a name already registered; a failed
    decoration registers nothing."""
    bare = callable(name) and not isinstance(name, str)  # @register_custom_op without ()
    fn, name = (name, None) if bare else (None, name)
    if name is not None and not isinstance(name, str):
        raise TypeError(
            f"register_custom_op: name must be a str 'namespace::op_name', got {name!r}"
        )
    for what, given in (
        ("infer_output_meta_fn", infer_output_meta_fn),
        ("setup_context_fn", setup_context_fn),
        ("backward_fn", backward_fn),
    ):
        if given is not None and not callable(given):
            raise TypeError(
                f"register_custom_op: {what} must be a function, got {type(given).__name__}"
            )
    if setup_context_fn is not None and backward_fn is None:
        raise ValueError(
            "register_custom_op: setup_context_fn without backward_fn; give backward_fn "
            "(setup_context_fn only saves what the backward reads)"
        )
    if isinstance(mutates_args, str):
        mutates_args = (mutates_args,)
    mutates = tuple(mutates_args or ())
    caller = sys._getframe(1)
    scope = dict(caller.f_globals)
    scope.update(caller.f_locals)

    def decorate(fn):
        return _register(
            fn, name, mutates, infer_output_meta_fn, setup_context_fn, backward_fn, scope
        )

    return decorate(fn) if bare else decorate


def to_idl(op_or_module):
    """The `.ops.yaml` text of a decorated op, or of every decorated op of a
    module (one namespace): compile it with `structopc --emit h,cpp,stubs` to
    write the op's kernels in C++; the registered schema is the same."""
    if isinstance(op_or_module, types.ModuleType):
        sources = [
            value._structop_source
            for value in vars(op_or_module).values()
            if callable(value) and hasattr(value, "_structop_source")
        ]
        what = f"module {op_or_module.__name__}"
    elif hasattr(op_or_module, "_structop_source"):
        sources = [op_or_module._structop_source]
        what = None
    else:
        raise TypeError(
            "structop.to_idl takes a function decorated with structop.register_custom_op "
            f"or a module holding some, got {type(op_or_module).__name__}"
        )
    if not sources:
        raise ValueError(f"structop.to_idl: {what} holds no op decorated with register_custom_op")
    namespaces = sorted({s.namespace for s in sources})
    if len(namespaces) > 1:
        raise ValueError(
            f"structop.to_idl: {what} holds ops of namespaces {', '.join(namespaces)}; an IDL "
            "file has one namespace: export each op (structop.to_idl(op)) or "
            "`python -m structop idl MODULE:FUNCTION`"
        )
    front = _Front(namespaces[0])
    for source in sources:
        front.add_op(source)
    return front.text()


# ---------------------------------------------------------------------------
# Registration
# ---------------------------------------------------------------------------


class _Source:
    """What the IDL of one decorated op is derived from."""

    def __init__(self, fn, namespace, op_name, mutates, custom_meta, backward, scope):
        self.fn = fn
        self.namespace = namespace
        self.op_name = op_name
        self.mutates = mutates
        self.custom_meta = custom_meta
        self.backward = backward
        self.scope = scope


def _op_name(fn, name):
    """(namespace, op name) from `name` or the function."""
    if name is None:
        try:
            path = inspect.getsourcefile(fn)
        except TypeError:
            path = None
        if path and not path.startswith("<"):
            stem = os.path.basename(path).split(".")[0]
        else:  # no file (exec, a REPL): the module's name, `__main__` as `main`
            stem = (getattr(fn, "__module__", None) or "main").rpartition(".")[2].strip("_")
        stem = stem or "main"
        namespace = re.sub(r"\W", "_", stem)
        if namespace[0].isdigit():
            namespace = "_" + namespace
        op = fn.__name__
        qualified = f"{namespace}::{op}"
    else:
        qualified = name
    if "::" not in qualified:
        raise ValueError(
            f"register_custom_op: name {qualified!r} has no namespace: torch.library names an op "
            "'namespace::op_name' (e.g. 'mylib::attn')"
        )
    namespace, _, op = qualified.partition("::")
    for part, what in ((namespace, "namespace"), (op, "op name")):
        if not _IDENTIFIER.match(part) or keyword.iskeyword(part):
            raise ValueError(
                f"register_custom_op: name {qualified!r}: the {what} {part!r} must be a Python "
                "identifier (letters, digits, _), as torch.ops.NAMESPACE.OP_NAME spells it"
            )
    return namespace, op


def _register(fn, name, mutates, meta_fn, setup_fn, backward_fn, scope):
    import torch

    import structop_runtime as rt
    from structop_runtime import _loading

    if not inspect.isfunction(fn):
        raise TypeError(
            f"register_custom_op decorates a function, got {type(fn).__name__} (a method, "
            "class or callable object: decorate a plain def)"
        )
    namespace, op_name = _op_name(fn, name)
    qualname = f"{namespace}::{op_name}"
    if (
        qualname in _DECORATED
        or qualname in _loading._DEFINED
        or _loading.find_op(getattr(torch.ops, namespace), op_name, "default") is not None
    ):
        raise RuntimeError(
            f"register_custom_op: {qualname} is already registered (by register_custom_op, "
            "torch.library or a loaded extension): give this op another name"
        )
    source = _Source(
        fn, namespace, op_name, mutates, meta_fn is not None, backward_fn is not None, scope
    )
    front = _Front(namespace)
    op = front.add_op(source)
    idl = front.text()
    module = _import_generated(idl, op_name, fn)
    rt.adopt(module, front.adopted_records(), front.adopted_enums())
    generated = getattr(module, op_name)

    generated.register_kernel(None)(fn)
    if meta_fn is not None:
        generated.register_fake(meta_fn)
    elif op.meta_problem is not None:
        problem = op.meta_problem

        def no_meta(*args, **kwargs):
            raise NotImplementedError(
                f"{qualname}: no fake (meta) kernel: {problem}; pass "
                "infer_output_meta_fn= to register_custom_op (it returns empty tensors "
                "shaped like the outputs)"
            )

        generated.register_fake(no_meta)
    if backward_fn is not None and op.differentiable:
        generated.register_autograd(backward_fn, setup_context=setup_fn)

    function = _front_function(fn, generated, op)
    function._structop_source = source
    function.idl = idl
    _DECORATED[qualname] = function
    return function


def _front_function(fn, generated, op):
    """The function the decorator returns: the generated op function itself
    when the user's signature holds no default the schema cannot (then a
    call costs what a generated op's call costs), else a wrapper that
    applies those defaults and calls it."""
    if not op.python_defaults:
        function = generated
    else:
        names = {"_op": generated}
        params, call = [], []
        star = False
        for i, param in enumerate(inspect.signature(fn).parameters.values()):
            if param.kind is inspect.Parameter.KEYWORD_ONLY and not star:
                params.append("*")
                star = True
            text = param.name
            if param.default is not inspect.Parameter.empty:
                names[f"_d{i}"] = param.default
                text += f"=_d{i}"
            params.append(text)
            call.append(f"{param.name}={param.name}" if star else param.name)
        source = f"def {fn.__name__}({', '.join(params)}):\n    return _op({', '.join(call)})\n"
        exec(source, names)  # noqa: S102 (parameter names: identifiers)
        function = names[fn.__name__]
        for attribute in (
            "slot_map",
            "schema",
            "annotations",
            "register_kernel",
            "register_fake",
            "register_autograd",
        ):
            setattr(function, attribute, getattr(generated, attribute))
    doc = generated.__doc__
    function.__name__ = fn.__name__
    function.__qualname__ = fn.__qualname__
    function.__module__ = fn.__module__
    function.__doc__ = fn.__doc__ if fn.__doc__ else doc
    function.__wrapped__ = fn
    function.__annotations__ = dict(getattr(fn, "__annotations__", {}))
    return function


# ---------------------------------------------------------------------------
# Lowering with structopc, cached
# ---------------------------------------------------------------------------


def _structopc_identity(structopc):
    try:
        st = os.stat(structopc)
    except OSError:
        return structopc
    return f"{os.path.realpath(structopc)}:{st.st_size}:{st.st_mtime_ns}"


def _import_generated(idl, stem, fn):
    """Imports the module structopc generates from `idl` (file stem `stem`),
    generating it into the cache unless it is there."""
    from . import IDLError, _cache, get_structopc

    structopc = get_structopc()
    key = hashlib.sha256(
        "\0".join(
            (__version__, str(RUNTIME_VERSION), _structopc_identity(structopc), stem, idl)
        ).encode()
    ).hexdigest()[:24]
    folder = os.path.join(_cache.cache_root(), "decorated", key)
    path = os.path.join(folder, f"{stem}_ops.py")
    if not os.path.isfile(path):
        # structopc writes each output under a temporary name and renames it
        # into place: a process that finds the module finds all of it, and
        # processes that generate it at once write the same text.
        idl_path = os.path.join(folder, f"{stem}.ops.yaml")
        _cache.write_if_changed(idl_path, idl)
        result = subprocess.run(
            [structopc, "--emit", "py", "-o", folder, "--", idl_path],
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            diagnostic = result.stderr.strip().replace(idl_path, f"<IDL of {fn.__qualname__}>")
            mutates = re.search(r"`([^`]*)` in `mutates:` is not (.*)", diagnostic)
            if mutates:
                hint = re.search(r"^hint: (.*)$", diagnostic, re.M)
                raise IDLError(
                    f"register_custom_op: {fn.__qualname__}: mutates_args {mutates.group(1)!r} "
                    f"does not match a tensor parameter or field ({mutates.group(2)}); "
                    + (hint.group(1) if hint else "")
                )
            raise IDLError(
                f"register_custom_op: {fn.__qualname__}: structopc rejected the op its "
                f"annotations describe:\n{diagnostic}\nThe IDL derived from them:\n{idl}"
            )
    module_name = f"_structop_decorated_{stem}_{key}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
    return module


# ---------------------------------------------------------------------------
# The front end: annotations -> IDL
# ---------------------------------------------------------------------------


def _schema_string(text):
    """A str as a schema string literal (the IDL's default syntax)."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append("\\%03o" % ord(ch))
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _yaml_quote(text):
    """A YAML single-quoted scalar."""
    return "'" + text.replace("'", "''") + "'"


def _camel(text):
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"_+", text) if part)


_SCALARS = None


def _scalars():
    global _SCALARS
    if _SCALARS is None:
        import torch

        _SCALARS = {
            torch.Tensor: "Tensor",
            bool: "bool",
            int: "int",
            float: "float",
            str: "str",
            torch.dtype: "ScalarType",
            torch.device: "Device",
        }
    return _SCALARS


_SUPPORTED = (
    "structop takes torch.Tensor, int, float, bool, str, torch.dtype, torch.device, "
    "Optional[...] and list[...] of them, frozen dataclasses, str enums and Literal strings"
)


class _Dynamic:
    """The marker of a number that changes per call: `Annotated[float,
    structop.dynamic]` on a parameter or a dataclass field is the IDL's
    `dynamic: true` (a 0-dim CPU tensor in the schema, a graph input under
    torch.compile)."""

    __slots__ = ()

    def __repr__(self):
        return "structop.dynamic"


dynamic = _Dynamic()


class _Type:
    """An annotation as the IDL spells it, and what the front end needs of it."""

    def __init__(
        self, text, *, record=None, optional=False, is_list=False, enum_cls=None, dynamic=False
    ):
        self.text = text  # the IDL type: "Tensor", "Cfg?", "int[]"...
        self.dynamic = dynamic  # Annotated[int | float, structop.dynamic]
        self.record = record  # the dataclass, for a record, optional record or list of records
        self.optional = optional
        self.is_list = is_list
        self.enum_cls = enum_cls  # the user's enum class, or the Literal's values (tuple)


class _OpInfo:
    def __init__(self):
        self.python_defaults = False
        self.meta_problem = None
        self.differentiable = False  # some parameter holds a tensor


class _Front:
    """Derives one IDL file (one namespace) from decorated functions."""

    def __init__(self, namespace):
        self.namespace = namespace
        self.records = {}  # dataclass -> (IDL name, [field lines], [(field name, _Type)])
        self.record_names = set()
        self.enums = {}  # enum class or tuple of Literal values -> IDL name
        self.enum_values = {}  # IDL name -> values
        self.ops = []  # op entries (lists of lines)

    # -- names ------------------------------------------------------------

    def _fresh(self, base):
        base = base.lstrip("_") or "Record"
        if base[0].isdigit():
            base = "R" + base
        taken = self.record_names | set(self.enum_values)
        name, i = base, 2
        while name in taken:
            name, i = f"{base}{i}", i + 1
        return name

    def adopted_records(self):
        return {name: cls for cls, (name, _, _) in self.records.items()}

    def adopted_enums(self):
        return {
            name: key
            for key, name in self.enums.items()
            if isinstance(key, type) and issubclass(key, enum.Enum)
        }

    # -- annotations ------------------------------------------------------

    def _resolve(self, annotation, where, globalns, localns, owner):
        if isinstance(annotation, str):
            try:
                return eval(annotation, globalns, localns)  # noqa: S307 (the user's annotation)
            except Exception as e:  # NameError above all
                raise TypeError(
                    f"{owner}: {where}: unresolved string annotation: {annotation!r} does not "
                    f"resolve ({e}); "
                    "a string annotation (from __future__ import annotations) is evaluated in "
                    "the module's globals and the decorated function's scope: a class defined "
                    "inside another function must be visible there (define it at module level, "
                    "or where the op is decorated)"
                ) from None
        return annotation

    def _type(self, t, where, owner, scope):
        """_Type of annotation `t` (resolved) at `where` ("parameter `cfg`",
        "field `cfg.inner.w`")."""
        scalars = _scalars()
        if t is inspect.Parameter.empty:
            raise TypeError(f"{owner}: {where} has no annotation; {_SUPPORTED}")
        if t is None or t is type(None):
            raise TypeError(f"{owner}: {where}: None alone is not a type; use Optional[...]")
        origin = typing.get_origin(t)
        args = typing.get_args(t)
        if origin is typing.Annotated:
            inner = self._type(args[0], where, owner, scope)
            if not any(m is dynamic for m in t.__metadata__):
                return inner  # metadata for other tools
            if inner.text not in ("int", "float"):
                raise TypeError(
                    f"{owner}: {where}: structop.dynamic marks an int or a float (a value that "
                    f"changes per call), not {inner.text}"
                    + (": a Tensor is already a graph input" if "Tensor" in inner.text else "")
                )
            return _Type(inner.text, dynamic=True)
        if origin is typing.Union or (hasattr(types, "UnionType") and origin is types.UnionType):
            rest = [a for a in args if a is not type(None)]
            if len(rest) != 1 or len(rest) == len(args):
                raise TypeError(
                    f"{owner}: {where}: the union {t} is not a schema type; only X | None "
                    f"(Optional[X]) is. {_SUPPORTED}"
                )
            inner = self._type(rest[0], where, owner, scope)
            if inner.dynamic:
                raise TypeError(
                    f"{owner}: {where}: a dynamic number cannot be optional; give it a default"
                )
            if inner.optional:
                return inner
            if inner.is_list and inner.record is not None:
                raise TypeError(
                    f"{owner}: {where}: an optional list of records is not supported; use "
                    "list[...] with [] for none"
                )
            return _Type(
                inner.text + "?",
                record=inner.record,
                optional=True,
                is_list=inner.is_list,
                enum_cls=inner.enum_cls,
            )
        if origin in (list, typing.List, collections.abc.Sequence) or t in (list, typing.List):
            if not args:
                raise TypeError(f"{owner}: {where}: a list needs its item type, as list[int]")
            item = self._type(args[0], where, owner, scope)
            if item.dynamic:
                raise TypeError(
                    f"{owner}: {where}: a list of dynamic numbers is not supported; pass a Tensor"
                )
            if item.is_list:
                raise TypeError(
                    f"{owner}: {where}: nested lists are not schema types; use separate fields"
                )
            return _Type(item.text + "[]", record=item.record, is_list=True, enum_cls=item.enum_cls)
        if origin is tuple or t is tuple or origin is dict or t is dict:
            kind = "tuple" if (origin is tuple or t is tuple) else "dict"
            raise TypeError(
                f"{owner}: {where}: {kind}[...] is not supported ({kind}-typed parameters and "
                "fields have no schema type): use list[...] for a sequence of one type, or "
                "separate fields (a frozen dataclass) for values of several"
            )
        if origin is typing.Literal:
            if not args or not all(type(a) is str for a in args):
                raise TypeError(
                    f"{owner}: {where}: Literal{list(args)}: only Literal strings become enums; "
                    "for numbers annotate int or float"
                )
            return self._enum(tuple(args), where, owner)
        if isinstance(t, type) and issubclass(t, enum.Enum):
            values = [m.value for m in t]
            if not values or not all(isinstance(v, str) for v in values):
                raise TypeError(
                    f"{owner}: {where}: enum {t.__qualname__} has non-str values; structop's "
                    "enums are strings: make it a str enum (class E(str, enum.Enum), values "
                    "strings)"
                )
            return self._enum(t, where, owner)
        if isinstance(t, type) and dataclasses.is_dataclass(t):
            return _Type(self._record(t, where, owner, scope), record=t)
        if t in scalars:
            return _Type(scalars[t])
        raise TypeError(f"{owner}: {where}: unsupported annotation {t!r}; {_SUPPORTED}")

    def _enum(self, key, where, owner):
        name = self.enums.get(key)
        if name is None:
            if isinstance(key, tuple):
                values = list(key)
                base = _camel(where.split("`")[1].replace(".", "_")) if "`" in where else "Choice"
            else:
                values = [m.value for m in key]
                base = key.__name__
            for v in values:
                if not _IDENTIFIER.match(v):
                    raise TypeError(
                        f"{owner}: {where}: enum value {v!r} is not an identifier; structop's "
                        "enums take identifier values (C++ names them); annotate str for any "
                        "string"
                    )
            name = self._fresh(base)
            self.enums[key] = name
            self.enum_values[name] = values
        return _Type(name, enum_cls=key)

    def _record(self, cls, where, owner, scope):
        entry = self.records.get(cls)
        if entry is not None:
            return entry[0]
        params = getattr(cls, "__dataclass_params__", None)
        if params is None or not params.frozen:
            raise TypeError(
                f"{owner}: {where}: dataclass {cls.__qualname__} is not frozen; records are "
                f"values: declare it @dataclasses.dataclass(frozen=True)"
            )
        name = self._fresh(cls.__name__)
        self.record_names.add(name)
        lines, types_ = [], []
        self.records[cls] = (name, lines, types_)  # (one that holds itself: structopc says so)
        module = sys.modules.get(cls.__module__)
        globalns = vars(module) if module is not None else {}
        base = where.split("`")[1] if "`" in where else cls.__name__
        for field in dataclasses.fields(cls):
            if not field.init:
                raise TypeError(
                    f"{owner}: field `{base}.{field.name}` ({cls.__qualname__}) has init=False; "
                    "every field of a record is an input"
                )
            path = f"field `{base}.{field.name}` ({cls.__qualname__}.{field.name})"
            annotation = self._resolve(field.type, path, globalns, scope, owner)
            ftype = self._type(annotation, path, owner, scope)
            default = None
            if field.default is not dataclasses.MISSING:
                default = self._default(field.default, ftype)
            types_.append((field.name, ftype))
            if ftype.dynamic:  # the long form
                spec = f"type: {ftype.text}" + ("" if default is None else f", default: {default}")
                lines.append(f"      {field.name}: {{{spec}, dynamic: true}}")
                continue
            text = ftype.text if default is None else f"{ftype.text} = {default}"
            lines.append(f"      {field.name}: {_yaml_quote(text)}")
        return name

    def _default(self, value, ftype):
        """The schema literal of a default, or None for one that stays in
        Python (a list, a dataclass instance, a value of another type)."""
        import torch

        text = ftype.text
        base = text.rstrip("?")
        if value is None:
            return "None" if text.endswith("?") else None
        if base.endswith("]"):
            return None  # a list: Python keeps it (as the seed's decorator does)
        if ftype.enum_cls is not None:
            values = self.enum_values[self.enums[ftype.enum_cls]]
            if isinstance(ftype.enum_cls, type) and isinstance(value, ftype.enum_cls):
                return value.value
            if type(value) is str and value in values:
                return value
            return None
        if base == "bool":
            return ("True" if value else "False") if type(value) is bool else None
        if base == "int":
            return str(value) if type(value) is int else None
        if base == "float":
            if type(value) in (int, float) and math.isfinite(value):
                return repr(float(value))
            return None
        if base == "str":
            return _schema_string(value) if type(value) is str else None
        if base == "ScalarType":
            return str(value).split(".", 1)[1] if isinstance(value, torch.dtype) else None
        if base == "Device":
            if isinstance(value, (str, torch.device)):
                return _schema_string(str(value))
            return None
        return None

    # -- ops --------------------------------------------------------------

    def add_op(self, source):
        fn = source.fn
        owner = f"{fn.__module__}.{fn.__qualname__}" if fn.__module__ else fn.__qualname__
        scope = dict(source.scope)
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            try:
                scope[name] = cell.cell_contents  # the function's closure variables
            except ValueError:  # a cell not yet filled
                pass
        globalns = fn.__globals__
        signature = inspect.signature(fn)
        info = _OpInfo()
        args = []  # [text, schema default or None], or "*"
        positional = []
        star = False
        tensor_inputs = []
        dynamic_params = []
        for param in signature.parameters.values():
            where = f"parameter `{param.name}`"
            if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
                raise TypeError(
                    f"{owner}: {'*' if param.kind is inspect.Parameter.VAR_POSITIONAL else '**'}"
                    f"{param.name}: an op has a fixed signature; name each parameter (a list[...] "
                    "parameter for a variable number of tensors)"
                )
            # (A positional-only parameter becomes a plain one: the schema has no `/`.)
            annotation = self._resolve(param.annotation, where, globalns, scope, owner)
            ptype = self._type(annotation, where, owner, scope)
            if param.kind is inspect.Parameter.KEYWORD_ONLY and not star:
                args.append("*")
                star = True
            default = None
            if param.default is not inspect.Parameter.empty:
                default = self._default(param.default, ptype)
                if default is None:
                    info.python_defaults = True
                    if not star:
                        # The schema's positional parameters after one with
                        # a default have one too: those before this one keep
                        # theirs in Python only.
                        for earlier in positional:
                            earlier[1] = None
            if ptype.dynamic:
                dynamic_params.append(param.name)
            entry = [f"{ptype.text} {param.name}", default]
            if not star:
                positional.append(entry)
            args.append(entry)
            self._tensor_leaves(ptype, param.name, tensor_inputs)
            info.differentiable = info.differentiable or self._holds_tensor(ptype)
        annotation = self._resolve(
            signature.return_annotation, "the return", globalns, scope, owner
        )
        returns, outputs = self._returns(annotation, owner, scope)
        texts = [a if a == "*" else a[0] if a[1] is None else f"{a[0]}={a[1]}" for a in args]
        func = f"{source.op_name}({', '.join(texts)}) -> {returns}"
        lines = [f"  - func: {_yaml_quote(func)}"]
        if source.backward and info.differentiable:
            # (With no tensor input nothing takes a gradient: the backward,
            # which the seed's decorator accepts there, is never called.)
            lines.append("    backward: true")
        if source.custom_meta:
            lines.append("    meta: custom")
        elif outputs is None:
            lines.append("    meta: custom")
            info.meta_problem = "its output is a list, whose length the inputs do not give"
        elif outputs > len(tensor_inputs):
            lines.append("    meta: custom")
            info.meta_problem = (
                f"it returns {outputs} tensor{'s' if outputs != 1 else ''} and takes "
                f"{len(tensor_inputs)} tensor input{'s' if len(tensor_inputs) != 1 else ''} "
                "whose metadata they could copy"
            )
        elif outputs:
            lines.append(f"    meta: [{', '.join(tensor_inputs[:outputs])}]")
        if source.mutates:
            lines.append(f"    mutates: [{', '.join(_yaml_quote(m) for m in source.mutates)}]")
        if dynamic_params:
            lines.append(f"    dynamic: [{', '.join(dynamic_params)}]")
        doc = inspect.getdoc(fn)
        if doc:
            lines.append(f"    doc: {_yaml_quote(doc)}")
        self.ops.append(lines)
        return info

    def _tensor_leaves(self, ptype, path, out):
        """Appends the paths of the required Tensor leaves of a value of
        `ptype` at `path`, in field order (what the default meta copies)."""
        if ptype.optional or ptype.is_list:
            return
        if ptype.record is not None:
            for name, ftype in self.records[ptype.record][2]:
                self._tensor_leaves(ftype, f"{path}.{name}", out)
        elif ptype.text == "Tensor":
            out.append(path)

    def _holds_tensor(self, ptype, seen=None):
        """Whether a value of `ptype` holds a tensor (a leaf, a list, a record's field)."""
        if ptype.record is None:
            return ptype.text.startswith("Tensor")
        seen = set() if seen is None else seen
        if ptype.record in seen:
            return False
        seen.add(ptype.record)
        return any(self._holds_tensor(f, seen) for _, f in self.records[ptype.record][2])

    def _returns(self, t, owner, scope):
        """(the IDL returns text, the number of tensor outputs or None for a list)."""
        where = "the return"
        if t is inspect.Parameter.empty:
            raise TypeError(
                f"{owner}: the return has no annotation; annotate it (-> torch.Tensor, "
                "-> tuple[torch.Tensor, torch.Tensor], -> None, a frozen dataclass)"
            )
        if t is None or t is type(None):
            return "()", 0
        origin = typing.get_origin(t)
        if origin is tuple or t is tuple:
            items = typing.get_args(t)
            if not items or items[-1] is Ellipsis:
                raise TypeError(
                    f"{owner}: the return: tuple[..., ...] of any length is not a schema type; "
                    "name each output (tuple[torch.Tensor, torch.Tensor]) or return "
                    "list[torch.Tensor]"
                )
            texts, count = [], 0
            for i, item in enumerate(items):
                text, n = self._one_return(item, f"{where} item {i}", owner, scope)
                texts.append(text)
                count += n
            return "(" + ", ".join(texts) + ")", count
        if origin in (list, typing.List):
            item = self._type(t, where, owner, scope)
            if item.text != "Tensor[]":
                raise TypeError(f"{owner}: the return: only list[torch.Tensor] is a list return")
            return "Tensor[]", None
        return self._one_return(t, where, owner, scope)

    def _one_return(self, t, where, owner, scope):
        ptype = self._type(t, where, owner, scope)
        if ptype.record is not None and not ptype.optional and not ptype.is_list:
            leaves = []
            self._tensor_leaves(ptype, "r", leaves)
            return ptype.text, len(leaves)
        return ptype.text, 1 if ptype.text.rstrip("?") == "Tensor" else 0

    # -- text -------------------------------------------------------------

    def text(self):
        lines = [
            "# Derived by structop.register_custom_op from Python annotations.",
            f"namespace: {self.namespace}",
        ]
        if self.enum_values:
            lines.append("enums:")
            for name, values in self.enum_values.items():
                lines.append(f"  {name}: [{', '.join(values)}]")
        if self.records:
            lines.append("records:")
            for name, fields, _ in self.records.values():
                lines.append(f"  {name}:")
                if fields:
                    lines.append("    fields:")
                    lines.extend(fields)
                else:
                    lines.append("    fields: {}")
        lines.append("ops:")
        for op in self.ops:
            lines.extend(op)
        return "\n".join(lines) + "\n"

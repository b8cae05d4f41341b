"""Binding and loading: Op (what an op function calls), find_op(), load_library()."""

import weakref

import torch

from ._checks import explain_failure


# ---------------------------------------------------------------------------
# Binding and loading
# ---------------------------------------------------------------------------

# True while torch.compile's Dynamo (also torch.export's strict mode) traces,
# which reads it as a constant; an eager call costs one Python call. (It is
# torch.compiler.is_compiling on a torch without it.)
is_dynamo_compiling = getattr(torch.compiler, "is_dynamo_compiling", torch.compiler.is_compiling)

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
    """What a generated op function calls: the op's OpOverload.

    `overload` is the OpOverload (torch.ops.<namespace>.<name>.<overload>),
    which torch.compile and torch.export must see to record one op call;
    `eager` is its bound C++ callable (OpOverload._op), which
    OpOverload.__call__ calls: an eager call to it skips that Python frame
    and the packing of its arguments. A generated function calls

        (_op.overload if _rt.is_dynamo_compiling() else _op.eager)(flat args)

    Both are None until something registers the op (load_library, a Python
    kernel): the call then fails, and the function hands the error to
    failed(), which binds the op and calls the function again, or explains
    the error."""

    __slots__ = (
        "qualname",
        "namespace",
        "name",
        "overload_name",
        "params",
        "overload",
        "eager",
        "__weakref__",
    )

    def __init__(self, qualname, name, overload, params):
        """qualname: "ns::op.overload" (for messages); name and overload: the
        torch.ops attributes; params: per original parameter (name, check)
        for explain_failure."""
        self.qualname = qualname
        self.namespace = qualname.split("::", 1)[0]
        self.name = name
        self.overload_name = overload
        self.params = params
        self.overload = None
        self.eager = None
        _OPS.setdefault(self.namespace, weakref.WeakSet()).add(self)

    def bind(self):
        """Binds the op once something registered it; returns whether it bound
        it now."""
        if self.overload is not None:
            return False
        overload = find_op(getattr(torch.ops, self.namespace), self.name, self.overload_name)
        if overload is None:
            return False
        self.overload, self.eager = overload, overload._op
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

"""Python kernels: python_kernels() and the register_kernel, register_fake and
register_autograd it gives each op function."""

import dataclasses

import torch

from ._autograd import (
    _AutogradEntry,
    _Definition,
    _Entry,
    _RecordGrad,
    _RecordListGrad,
    _slot_grad,
)
from ._checks import ListOf
from ._loading import _DEFINED, _bind_namespace, find_op


# ---------------------------------------------------------------------------
# Python kernels
# ---------------------------------------------------------------------------


def python_kernels(function, op):
    """Gives the generated op function `function` of Op `op` the methods
    register_kernel, register_fake and register_autograd (torch.library's
    names), with which its op is implemented in Python against records
    (Op.function calls it)."""
    api = _OpApi(function, op)
    function.register_kernel = api.register_kernel
    function.register_fake = api.register_fake
    function.register_autograd = api.register_autograd


def _kernel_param(name, check):
    """(api name, record class, ListOf(record class) or None), as grad_tree
    reads a parameter."""
    if check[0] in ("record", "optional_record"):
        return (name, check[1])
    if check[0] == "record_list":
        return (name, ListOf(check[1]))
    return (name, None)


class _OpApi:
    """One generated op function's view of its op: what the generated module
    says about it (a module imported twice has two, for one definition)."""

    def __init__(self, function, op):
        self.function = function
        self.op = op
        self.qualname = op.qualname
        self.namespace = op.namespace
        self.schema = op.schema[len(self.namespace) + 2 :]
        self.stem = op.stem
        self._params = None
        self.grads = op.grads
        self.meta = op.meta
        self.backward = op.backward
        self.tags = op.tags
        self.flat_outputs, self.record_outputs = op.results or (None, None)
        self._grad_tree = None
        # record_form(args, kwargs): the record form of a kernel's flat
        # arguments (made with the op's definition).
        self.record_form = None

    @property
    def params(self):
        """Per parameter (api name, record class, ListOf(record class) or
        None), read from the Op on first use (adopt() may have replaced its
        record classes before)."""
        if self._params is None:
            self._params = tuple(
                _kernel_param(name, check)
                for name, (_, check) in zip(self.op.api_names, self.op.params)
            )
        return self._params

    # -- registration ---------------------------------------------------------

    def register_kernel(self, device_types, fn=None):
        """Registers `fn` as the op's kernel for the given device types ("cpu",
        "cuda", ... or a list of them; None: every device); as a decorator
        without `fn`. fn takes the op's original parameters (records) and
        returns its outputs. Registering again for a device replaces it."""
        if device_types is None or isinstance(device_types, str):
            devices = [device_types]
        elif isinstance(device_types, (list, tuple, set, frozenset)):
            devices = list(device_types)
        else:
            devices = [device_types]  # reported below
        for device in devices:
            if device is not None and not isinstance(device, str):
                raise TypeError(
                    f'{self.qualname}: register_kernel takes a device type ("cpu", '
                    f'"cuda", ...), a list of them or None, got {device!r}'
                )
            if device == "meta":
                raise ValueError(
                    f'{self.qualname}: a kernel for device type "meta" is a fake '
                    "kernel: use register_fake"
                )

        def register(fn):
            _check_callable(self.qualname, "register_kernel", fn)
            definition = self._definition("register_kernel")
            for device in devices:
                definition.set_kernel(device, _Entry(self, fn))
            return fn

        return register if fn is None else register(fn)

    def register_fake(self, fn):
        """Registers `fn` as the op's fake (meta) kernel: the outputs' metadata
        from the inputs', for FakeTensor, torch.compile and torch.export; also
        a decorator. Without one an op with identity or listed `meta:` in its
        IDL gets the IDL's (outputs like the listed inputs); `meta: custom`
        needs one."""
        _check_callable(self.qualname, "register_fake", fn)
        definition = self._definition("register_fake")
        definition.fake = _Entry(self, fn)
        return fn

    def register_autograd(self, backward, /, *, setup_context=None):
        """Registers the op's backward (op needs `backward: true` in its IDL):
        setup_context(ctx, inputs, output) (also keyword_only_inputs= when the
        op has keyword-only parameters) runs after the forward with the
        record-form inputs; backward(ctx, *grad_outputs) returns one gradient
        per original parameter: None, a Tensor, for a Tensor[] or Tensor?[] a
        list with one Tensor or None per tensor of the input list, or for a
        record a record-shaped value (its generated <Record>Grad, a dict by
        field name, None for the record or any field). In backward,
        ctx.needs_input_grad holds one entry per parameter in the same shape
        (a list of bools for a list, a <Record>Grad of them for a record)."""
        if not self.backward:
            raise RuntimeError(
                f"{self.qualname}: register_autograd needs `backward: true` on the op in "
                f"{self.stem}.ops.yaml (without it a backward through the op raises "
                '"not implemented", as with a compiled extension)'
            )
        _check_callable(self.qualname, "register_autograd", backward)
        if setup_context is not None:
            _check_callable(self.qualname, "register_autograd (setup_context)", setup_context)
        self._definition("register_autograd").autograd = _AutogradEntry(
            self, backward, setup_context
        )

    def _definition(self, what):
        """The op's Python definition, made by the first registration; refused
        for an op registered by anything else (a compiled extension)."""
        definition = _DEFINED.get(self.qualname)
        if definition is None:
            definition = self._define(what)
        elif definition.api.schema != self.schema:
            raise RuntimeError(
                f"{self.qualname}: {what}: the op is already defined from Python with "
                f"another schema, {definition.api.schema!r} (another version of "
                f"{self.stem}.ops.yaml?), not {self.schema!r}"
            )
        if self.record_form is None:
            self.record_form = self.op.record_form_function()
        return definition

    def _define(self, what):
        name, _, overload = self.qualname.split("::", 1)[1].partition(".")
        if find_op(getattr(torch.ops, self.namespace), name, overload or "default") is not None:
            raise RuntimeError(
                f"{self.qualname}: {what}: the op is already registered, by a compiled extension "
                "(load_library) or another torch.library definition, so its kernels come from "
                "there; an op has one registration, so structop does not define it again from "
                "Python. Implement the op either in the extension or in Python (in a process "
                "that does not load the extension)"
            )
        definition = _Definition(self)
        _DEFINED[self.qualname] = definition
        _bind_namespace(self.namespace)
        return definition

    # -- gradients ------------------------------------------------------------

    def grad_tree(self):
        """Per parameter how its gradient maps onto the grad slots (built on
        the first backward): None (takes none), a slot index, or a _RecordGrad."""
        if self._grad_tree is None:
            index = {path: i for i, (path, _) in enumerate(self.grads)}
            tree = []
            for name, record_class in self.params:
                if name in index:
                    tree.append(index[name])
                elif isinstance(record_class, ListOf):
                    tree.append(
                        _RecordListGrad(record_class.record_class, name, index)
                        if any(p.startswith(name + ".") for p in index)
                        else None
                    )
                elif record_class is not None and any(p.startswith(name + ".") for p in index):
                    tree.append(_RecordGrad(record_class, name, index))
                else:
                    tree.append(None)
            self._grad_tree = tree
        return self._grad_tree

    def needs_input_grad(self, flags):
        """ctx.needs_input_grad for the user's backward: one entry per
        parameter from the flags of the grad slots (a list of flags for a
        list slot)."""
        return tuple(
            False if node is None else flags[node] if isinstance(node, int) else node.flags(flags)
            for node in self.grad_tree()
        )

    def slot_grads(self, result, counts):
        """The gradient per grad slot from what the user's backward returned
        (for a list slot, a list of `counts[slot]` gradients)."""
        params = self.params
        if len(params) == 1 and not isinstance(result, (tuple, list)):
            result = (result,)
        if not isinstance(result, (tuple, list)) or len(result) != len(params):
            got = (
                f"{len(result)}"
                if isinstance(result, (tuple, list))
                else f"a {type(result).__name__}"
            )
            raise GradientCountError(
                f"{self.qualname}: backward must return {len(params)} "
                f"gradient{'s' if len(params) != 1 else ''} (one per parameter: "
                f"{', '.join(name for name, _ in params)}), got {got}"
            )
        out = [None if count < 0 else [None] * count for count in counts]
        for (name, _), node, value in zip(params, self.grad_tree(), result):
            if node is None:
                if not _no_gradient(value):
                    raise TypeError(
                        f"{self.qualname}: backward returned a gradient for `{name}`, "
                        "which takes none (return None for it)"
                    )
            elif isinstance(node, int):
                out[node] = _slot_grad(self.qualname, name, value, counts[node])
            else:
                node.collect(self.qualname, value, out, counts)
        return out


def _no_gradient(value):
    """Whether a backward's value for a parameter that takes no gradient says
    none: None, or a record-shaped value of Nones (a dict, a dataclass or the
    parameter's own record with None in every field, as the seed's decorator
    lets a backward return `Cfg(scale=None)` for a record of scalars)."""
    if value is None:
        return True
    if isinstance(value, dict):
        return all(_no_gradient(v) for v in value.values())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return all(_no_gradient(getattr(value, f.name)) for f in dataclasses.fields(value))
    return False


class GradientCountError(TypeError, ValueError):
    """A Python backward returned another number of gradients than the op
    has parameters (one per original parameter). A TypeError, as a wrong
    result of a backward is in torch; also a ValueError, as the seed's
    decorator (structop.register_custom_op) raises it."""


def _check_callable(op, what, fn):
    if not callable(fn):
        raise TypeError(f"{op}: {what} takes a function, got {type(fn).__name__}")

"""Python kernels' autograd: the record-form backward of an op defined from
Python, its saved values and its gradients."""

import dataclasses

import torch

from ._loading import _LIBRARIES, find_op


def _tensor_kind(t):
    """How a schema type holds tensors: 'tensor' (Tensor, Tensor?), 'list'
    (Tensor[], Tensor?[]) or None."""
    if t.kind() == "OptionalType":
        t = t.getElementType()
    if t.kind() == "TensorType":
        return "tensor"
    if t.kind() == "ListType":
        element = t.getElementType()
        if element.kind() == "OptionalType":
            element = element.getElementType()
        if element.kind() == "TensorType":
            return "list"
    return None


def _tensors(value):
    """The tensors in an argument value (a tensor, None, or a list of them)."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, torch.Tensor)]
    return []


def _shape_text(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]"


def _tensor_grad(op, path, value):
    if value is None or isinstance(value, torch.Tensor):
        return value
    raise TypeError(
        f"{op}: the gradient for `{path}` must be a Tensor or None, got {type(value).__name__}"
    )


def _slot_grad(op, path, value, count):
    """The gradient of one grad slot: a Tensor or None, or for a list slot
    (`count` >= 0 tensors) a list with one Tensor or None per tensor (None for
    the whole list: no gradient for any)."""
    if count < 0:
        return _tensor_grad(op, path, value)
    if value is None:
        return [None] * count
    if not isinstance(value, (list, tuple)):
        raise TypeError(
            f"{op}: the gradient for `{path}` must be a list (one Tensor or None per "
            f"tensor of the input list) or None, got {type(value).__name__}"
        )
    if len(value) != count:
        raise RuntimeError(
            f"{op}: backward returned {len(value)} gradient{'' if len(value) == 1 else 's'} for "
            f"{path}, but the input list has {count} tensor{'' if count == 1 else 's'} (give one "
            f'per tensor; None for "no gradient")'
        )
    return [_tensor_grad(op, f"{path}[{j}]", v) for j, v in enumerate(value)]


class _RecordGrad:
    """How the gradient of one record (a parameter or a nested field) maps
    onto the grad slots, by field name."""

    def __init__(self, record_class, path, index):
        self.record_class = record_class
        self.path = path
        self.grad_class = getattr(record_class, "_structop_grad", None)
        self.field_names = [f.name for f in dataclasses.fields(record_class)]
        self.fields = {}  # field name -> slot index or _RecordGrad, for fields that take gradients
        for name, check in record_class._structop_fields:
            sub = f"{path}.{name}"
            if sub in index:
                self.fields[name] = index[sub]
            elif check[0] == "record_list" and any(p.startswith(sub + ".") for p in index):
                self.fields[name] = _RecordListGrad(check[1], sub, index)
            elif check[0] in ("record", "optional_record") and any(
                p.startswith(sub + ".") for p in index
            ):
                self.fields[name] = _RecordGrad(check[1], sub, index)

    def flags(self, flags):
        values = {
            name: flags[node] if isinstance(node, int) else node.flags(flags)
            for name, node in self.fields.items()
        }
        return self.grad_class(**values) if self.grad_class is not None else values

    def collect(self, op, value, out, counts, path=None):
        """Writes `value`'s gradients into `out` (per grad slot); `path` names
        the record in messages (an item of a list: `terms[1]`)."""
        path = self.path if path is None else path
        if value is None:
            return
        if isinstance(value, dict):
            items = value.items()
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            items = [(f.name, getattr(value, f.name)) for f in dataclasses.fields(value)]
        elif not isinstance(value, (torch.Tensor, list, tuple, str, int, float)) and any(
            hasattr(value, name) for name in self.fields
        ):  # any object with the fields as attributes (a namespace, a named tuple)
            items = [(name, getattr(value, name, None)) for name in self.fields]
        else:
            kind = self.grad_class.__name__ if self.grad_class is not None else "grads record"
            raise TypeError(
                f"{op}: the gradient for `{path}` must be a {kind}, a dict by "
                f"field name, or None, got {type(value).__name__}"
            )
        for name, field_value in items:
            node = self.fields.get(name)
            if node is None:
                if name not in self.field_names:
                    raise TypeError(
                        f"{op}: backward returned a gradient for `{path}.{name}`, but "
                        f"{self.record_class.__name__} has no field `{name}` (fields that take "
                        f"gradients: {', '.join(self.fields) or 'none'})"
                    )
                if field_value is not None:
                    raise TypeError(
                        f"{op}: backward returned a gradient for `{path}.{name}`, which "
                        "takes none (only Tensor, Tensor?, Tensor[] and Tensor?[] fields do; "
                        "return None for it)"
                    )
            elif isinstance(node, int):
                out[node] = _slot_grad(op, f"{path}.{name}", field_value, counts[node])
            else:
                node.collect(op, field_value, out, counts, f"{path}.{name}")


class _Item:
    """Item `i` of per-slot lists (the flags or gradients of list slots), as
    a _RecordGrad of one item of a list of records reads and writes them."""

    __slots__ = ("lists", "i")

    def __init__(self, lists, i):
        self.lists = lists
        self.i = i

    def __getitem__(self, slot):
        return self.lists[slot][self.i]

    def __setitem__(self, slot, value):
        self.lists[slot][self.i] = value


class _ItemCounts:
    """Per slot -1 (one gradient): the counts as one item of a list of
    records sees them."""

    def __getitem__(self, slot):
        return -1


class _RecordListGrad:
    """How the gradient of a list of records (a list with one record-shaped
    value per record) maps onto the list slots of its tensor leaves: item i
    of each."""

    def __init__(self, record_class, path, index):
        self.path = path
        self.item = _RecordGrad(record_class, path, index)
        self.some_slot = _first_slot(self.item)

    def flags(self, flags):
        return [self.item.flags(_Item(flags, i)) for i in range(len(flags[self.some_slot]))]

    def collect(self, op, value, out, counts, path=None):
        path = self.path if path is None else path
        if value is None:
            return
        n = counts[self.some_slot]
        if not isinstance(value, (list, tuple)):
            raise TypeError(
                f"{op}: the gradient for `{path}` must be a list (one per record "
                f"of the input list) or None, got {type(value).__name__}"
            )
        if len(value) != n:
            raise RuntimeError(
                f"{op}: backward returned {len(value)} gradient{'' if len(value) == 1 else 's'} "
                f"for {path}, but the input list has {n} record{'' if n == 1 else 's'} "
                '(give one per record; None for "no gradient")'
            )
        for i, item in enumerate(value):
            self.item.collect(op, item, _Item(out, i), _ItemCounts(), f"{path}[{i}]")


def _first_slot(node):
    """Some slot index under a _RecordGrad (its list slots all have the
    list's length)."""
    for child in node.fields.values():
        return child if isinstance(child, int) else _first_slot(child)
    raise AssertionError("a grad record without gradient slots")


class _Entry:
    """A user function registered through one module's op function (whose
    Op gives it the record form)."""

    __slots__ = ("api", "fn", "record_form")

    def __init__(self, api, fn):
        self.api = api
        self.fn = fn
        self.record_form = api.record_form

    def __call__(self, args, kwargs):
        record_args, record_kwargs = self.record_form(args, kwargs)
        result = self.fn(*record_args, **record_kwargs)
        return result if self.api.flat_outputs is None else self.api.flat_outputs(result)


class _AutogradEntry:
    def __init__(self, api, backward, setup_context):
        self.api = api
        self.backward = backward
        self.setup_context = setup_context


class _Call:
    """One call of the op through its Autograd kernel (what autograd.Function
    forward needs besides the tensors)."""

    __slots__ = ("keyset", "args", "kwargs", "structure", "written", "counts")

    def __init__(self, keyset, args, kwargs):
        self.keyset = keyset
        self.args = args
        self.kwargs = kwargs
        self.structure = None  # see _flatten_outputs
        self.written = 0  # how many written inputs follow the outputs
        self.counts = None  # per grad slot: tensors in its list, -1 if not a list


class _Saved:
    """What the backward needs of the forward (kept on ctx)."""

    __slots__ = ("structure", "input_meta", "counts")

    def __init__(self, structure, input_meta, counts):
        self.structure = structure
        self.input_meta = input_meta  # per tensor of the grad slots (lists flattened)
        self.counts = counts  # per grad slot: tensors in its list, -1 if not a list


def _flatten_outputs(result, returns):
    """(tensors, structure): the op's result as a flat tuple and how to rebuild
    it: structure is None for one value (a Tensor), else per return the
    length of a list (Tensor[]) or None."""
    if returns == 1:
        if isinstance(result, list):
            return tuple(result), (len(result),)
        return (result,), None
    structure, flat = [], []
    for value in result:
        if isinstance(value, list):
            structure.append(len(value))
            flat.extend(value)
        else:
            structure.append(None)
            flat.append(value)
    return tuple(flat), tuple(structure)


def _rebuild_outputs(flat, structure):
    if structure is None:
        return flat[0]
    out, at = [], 0
    for length in structure:
        if length is None:
            out.append(flat[at])
            at += 1
        else:
            out.append(list(flat[at : at + length]))
            at += length
    return out[0] if len(structure) == 1 else tuple(out)


class _Definition:
    """An op defined from Python: its torch.library registrations, made once,
    which call whatever user functions are registered when the op runs."""

    def __init__(self, api):
        self.api = api  # the first module's view (schema, meta, backward)
        self.qualname = api.qualname
        self.name = api.qualname.split("::", 1)[1]
        tags = []
        for tag in api.tags:
            if not hasattr(torch.Tag, tag):
                raise RuntimeError(
                    f"{self.qualname}: this torch ({torch.__version__}) has no "
                    f"operator tag `{tag}`; a newer torch is needed for the op's "
                    f"tags in {api.stem}.ops.yaml"
                )
            tags.append(getattr(torch.Tag, tag))
        library = _LIBRARIES.get(api.namespace)
        if library is None:
            library = _LIBRARIES[api.namespace] = torch.library.Library(api.namespace, "FRAGMENT")
        self.library = library
        library.define(api.schema, tags=tuple(tags))
        name, _, overload = self.name.partition(".")
        self.op = find_op(getattr(torch.ops, api.namespace), name, overload or "default")
        self.kernels = {}  # device type (None: every device) -> _Entry
        self.fake = None
        self.autograd = None
        schema = self.op._schema
        self.returns = len(schema.returns)
        # Where the tensors are among the arguments: (position, name, kind, keyword-only).
        self.tensor_args = [
            (i, a.name, _tensor_kind(a.type), a.kwarg_only)
            for i, a in enumerate(schema.arguments)
            if _tensor_kind(a.type)
        ]
        self.written = [
            (i, a.name, a.kwarg_only)
            for i, a in enumerate(schema.arguments)
            if a.alias_info is not None and a.alias_info.is_write
        ]
        self.defaults = [(a.name, a.kwarg_only, a.default_value) for a in schema.arguments]
        self.has_tensor_input = bool(self.tensor_args)
        grad_names = [lowered for _, lowered in api.grads]
        positions = {a.name: (i, a.kwarg_only) for i, a in enumerate(schema.arguments)}
        self.grad_args = [positions[n] for n in grad_names]
        self.meta_args = None if api.meta is None else [positions[n] for n in api.meta]
        self.function_class = self._function_class()
        library.impl(self.name, _no_dynamo(self._device_kernel(None)), "CompositeExplicitAutograd")
        library.impl(self.name, self._autograd_kernel(), "Autograd", with_keyset=True)
        torch.library.register_fake(self.qualname, self._fake_kernel, lib=library)

    # -- arguments ------------------------------------------------------------

    def argument(self, args, kwargs, position, keyword_only):
        """An argument as the dispatcher passed it; trailing arguments equal to
        their default are left out, and read as the default."""
        if keyword_only:
            name = self.defaults[position][0]
            return kwargs[name] if name in kwargs else self.defaults[position][2]
        return args[position] if position < len(args) else self.defaults[position][2]

    # -- kernels ----------------------------------------------------------------

    def set_kernel(self, device, entry):
        if device is not None and not self.has_tensor_input:
            raise RuntimeError(
                f"{self.qualname} takes no tensor, so torch cannot choose a kernel by device "
                f"for it: register its kernel for every device (register_kernel(None)) and "
                f"read the device from its arguments"
            )
        if device not in self.kernels and device is not None:
            try:
                key = torch._C._dispatch_key_for_device(device)
            except Exception as error:  # noqa: BLE001 (the message names the device)
                raise ValueError(
                    f"{self.qualname}: unknown device type {device!r}: {error}"
                ) from None
            self.library.impl(self.name, _no_dynamo(self._device_kernel(device)), key)
        self.kernels[device] = entry

    def _device_kernel(self, device):
        """The kernel torch calls for `device` (None: CompositeExplicitAutograd,
        every device without a kernel of its own): the user function
        registered for it when the op runs."""
        kernels = self.kernels
        definition = self
        returns_nothing = self.returns == 0

        def kernel(*args, **kwargs):
            entry = kernels.get(device)
            if entry is None:
                definition._no_kernel(args, kwargs)
            result = entry(args, kwargs)
            if returns_nothing and result is not None:
                raise TypeError(
                    f"{definition.qualname} returns nothing (`-> ()`), but its Python "
                    f"kernel returned a {type(result).__name__}: return None"
                )
            return result

        kernel.__name__ = f"{self.name.replace('.', '_')}_{device or 'kernel'}"
        return kernel

    def _no_kernel(self, args, kwargs):
        devices = sorted(
            {
                str(t.device.type)
                for i, name, _, kw in self.tensor_args
                for t in _tensors(self.argument(args, kwargs, i, kw))
            }
        )
        registered = ", ".join(repr(d) for d in self.kernels) or "none"
        raise NotImplementedError(
            f"{self.qualname} has no Python kernel for device type "
            f"{' / '.join(devices) or '(no tensor input)'} (kernels registered for: "
            f'{registered}): register one with register_kernel("<device>") or, for '
            "every device, register_kernel(None)"
        )

    def _fake_kernel(self, *args, **kwargs):
        entry = self.fake
        if entry is not None:
            return entry(args, kwargs)
        if self.meta_args is None:
            raise RuntimeError(
                f"{self.qualname} has no fake kernel: its IDL says `meta: custom` "
                "(register one with register_fake)"
            )
        outputs = [torch.empty_like(self.argument(args, kwargs, i, kw)) for i, kw in self.meta_args]
        if not outputs:
            return None
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    # -- autograd ---------------------------------------------------------------

    def _autograd_kernel(self):
        """The op's Autograd kernel: below autograd when no input needs a
        gradient (the path of every call without grad: names bound once),
        else through the op's autograd.Function."""
        definition = self
        tensor_args = self.tensor_args
        is_grad_enabled = torch.is_grad_enabled
        below_autograd = torch._C._AutoDispatchBelowAutograd
        after_autograd = torch._C._after_autograd_keyset
        redispatch = self.op.redispatch

        def kernel(keyset, *args, **kwargs):
            if is_grad_enabled():
                for i, name, kind, kw in tensor_args:
                    value = kwargs.get(name) if kw else args[i] if i < len(args) else None
                    if value is None:
                        continue
                    if (
                        value.requires_grad
                        if kind == "tensor"
                        else any(t.requires_grad for t in _tensors(value))
                    ):
                        return definition._differentiable(keyset, args, kwargs)
            with below_autograd():
                return redispatch(keyset & after_autograd, *args, **kwargs)

        kernel.__name__ = f"{self.name.replace('.', '_')}_autograd"
        return kernel

    def _differentiable(self, keyset, args, kwargs):
        call = _Call(keyset, args, kwargs)
        if self.api.backward:
            # A list slot (Tensor[], Tensor?[]) passes each of its tensors to
            # autograd.Function (which only sees top-level tensors).
            slots = [self.argument(args, kwargs, i, kw) for i, kw in self.grad_args]
            call.counts = [len(v) if isinstance(v, (list, tuple)) else -1 for v in slots]
            values = [t for v in slots for t in (v if isinstance(v, (list, tuple)) else (v,))]
        elif self.returns or self.written:
            values = [
                t
                for i, _, _, kw in self.tensor_args
                for t in _tensors(self.argument(args, kwargs, i, kw))
            ]
        else:  # returns nothing, writes nothing: no tensor to attach a backward to
            with torch._C._AutoDispatchBelowAutograd():
                return self.op.redispatch(keyset & torch._C._after_autograd_keyset, *args, **kwargs)
        flat = self.function_class.apply(call, *values)
        if call.written:
            flat = flat[: len(flat) - call.written]  # the written inputs come last
        return _rebuild_outputs(flat, call.structure) if self.returns else None

    def _function_class(self):
        """The torch.autograd.Function of the op: forward redispatches below
        autograd; backward raises without `backward: true`, else calls the
        registered backward in record form."""
        namespace, name = self.qualname.split("::", 1)
        class_name = f"{namespace}_{name.replace('.', '_')}"
        make = self._with_backward if self.api.backward else self._without_backward
        forward, backward = make()
        return type(
            class_name,
            (torch.autograd.Function,),
            {"forward": staticmethod(forward), "backward": staticmethod(backward)},
        )

    def _run(self, call):
        """The op below autograd, with the call's arguments."""
        with torch._C._AutoDispatchBelowAutograd():
            return self.op.redispatch(
                call.keyset & torch._C._after_autograd_keyset, *call.args, **call.kwargs
            )

    def _without_backward(self):
        """forward and backward of an op without `backward: true`: a backward
        through what the op returned or wrote raises, as for the C++
        registration."""
        definition = self
        run = self._run

        def forward(ctx, call, *values):
            result = run(call)
            written = [
                t
                for i, _, kw in definition.written
                for t in _tensors(definition.argument(call.args, call.kwargs, i, kw))
            ]
            if written:
                ctx.mark_dirty(*written)
            flat, call.structure = (
                _flatten_outputs(result, definition.returns) if definition.returns else ((), None)
            )
            call.written = len(written)
            return flat + tuple(written)

        def backward(ctx, *grads):
            raise RuntimeError(
                f"derivative for {definition.qualname} is not implemented: "
                f"the op has no `backward: true` in "
                f"{definition.api.stem}.ops.yaml"
            )

        return forward, backward

    def _with_backward(self):
        """forward (which saves what backward needs) and backward (which calls
        the registered backward in record form and checks its gradients)."""
        definition = self
        run = self._run

        def forward(ctx, call, *values):
            result = run(call)
            flat, call.structure = _flatten_outputs(result, definition.returns)
            entry = definition.autograd
            if entry is not None and entry.setup_context is not None:
                inputs, keyword_only = entry.api.record_form(call.args, call.kwargs)
                if entry.api.record_outputs is not None:
                    result = entry.api.record_outputs(result)
                if keyword_only:
                    entry.setup_context(
                        ctx=ctx, inputs=inputs, keyword_only_inputs=keyword_only, output=result
                    )
                else:
                    entry.setup_context(ctx=ctx, inputs=inputs, output=result)
            meta = [
                (tuple(v.shape), v.dtype, v.device)
                if isinstance(v, torch.Tensor) and v.requires_grad
                else None
                for v in values
            ]
            ctx._structop = _Saved(call.structure, meta, call.counts)
            return flat

        def backward(ctx, *grads):
            entry = definition.autograd
            if entry is None:
                raise RuntimeError(
                    f"{definition.qualname}: no backward registered: the op has "
                    f"`backward: true` in {definition.api.stem}.ops.yaml; register one with "
                    f"register_autograd(backward, setup_context=...)"
                )
            saved = ctx._structop
            grad_outputs = _rebuild_outputs(grads, saved.structure)
            if entry.api.record_outputs is not None:
                grad_outputs = entry.api.record_outputs(grad_outputs, _grad=True)
                if not isinstance(grad_outputs, tuple):  # one return, a record
                    grad_outputs = (grad_outputs,)
            elif saved.structure is None or len(saved.structure) == 1:
                grad_outputs = (grad_outputs,)
            flags = ctx.needs_input_grad
            ctx.needs_input_grad = entry.api.needs_input_grad(_per_slot(flags[1:], saved.counts))
            try:
                result = entry.backward(ctx, *grad_outputs)
            finally:
                ctx.needs_input_grad = flags
            out = []  # one per tensor of the grad slots, as forward took them
            for i, grad in enumerate(entry.api.slot_grads(result, saved.counts)):
                count = saved.counts[i]
                path = entry.api.grads[i][0]
                for j, item in enumerate((grad,) if count < 0 else grad):
                    meta = saved.input_meta[len(out)]
                    if meta is None:
                        item = None
                    elif item is not None:
                        _check_grad(
                            definition.qualname,
                            path if count < 0 else f"{path}[{j}]",
                            item,
                            meta,
                        )
                    out.append(item)
            return (None, *out)

        return forward, backward


def _per_slot(flags, counts):
    """Per grad slot, its entry of `flags` (one per tensor the Function took):
    the flag, or for a list slot the list of its tensors' flags."""
    out, at = [], 0
    for count in counts:
        if count < 0:
            out.append(flags[at])
            at += 1
        else:
            out.append(list(flags[at : at + count]))
            at += count
    return out


def _check_grad(op, path, grad, meta):
    """A gradient against the metadata of its input, naming the input's path
    (the C++ bridge's checks and messages)."""
    shape, dtype, device = meta
    if grad.dtype != dtype:
        raise RuntimeError(
            f"{op}: gradient for {path} has dtype {grad.dtype} but the input has dtype {dtype}"
        )
    if grad.device != device:
        raise RuntimeError(
            f"{op}: gradient for {path} is on device {grad.device} but the input is on {device}"
        )
    got = tuple(grad.shape)
    # Symbolic sizes (torch.compile) are left to autograd.
    if all(type(s) is int for s in got + shape) and got != shape:
        raise RuntimeError(
            f"{op}: gradient for {path} has shape {_shape_text(got)} but the input "
            f"has shape {_shape_text(shape)}"
        )


def _no_dynamo(fn):
    """fn, which torch.compile must not trace into (as torch.library does
    for the kernels it registers)."""
    return torch._disable_dynamo(fn)

"""Records as pytree nodes, for torch.compile and torch.export: register_pytree()."""

import enum

import torch


def _to_json(value):
    """A record's static field value as JSON data (torch.export saves it)."""
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (torch.dtype, torch.layout, torch.memory_format)):
        return {"torch": str(value).split(".", 1)[1]}
    if isinstance(value, torch.device):
        return {"device": str(value)}
    if isinstance(value, (list, tuple)):
        return [_to_json(v) for v in value]
    return value


def _from_json(value):
    if isinstance(value, dict):
        return getattr(torch, value["torch"]) if "torch" in value else torch.device(value["device"])
    if isinstance(value, list):
        return [_from_json(v) for v in value]
    return value


def register_pytree(cls, children, static, namespace, stem):
    """Registers a record with torch.utils._pytree, as torch.compile and
    torch.export take inputs apart: the fields in `children` (tensors and
    records) are its children; the others are static values, kept in the
    context (a record input to an exported program is specialized on
    them). The serialized type name is stable,
    structop.<namespace>.<IDL stem>.<record>; a second import of a generated
    module registers its new classes under the same name, which then refers
    to the newest. Registering a class again does nothing. The class keeps
    (children, static) as `_structop_pytree` (adopt() reads it)."""
    from torch.utils import _pytree

    cls._structop_pytree = (tuple(children), tuple(static))
    if cls in _pytree.SUPPORTED_NODES:
        return

    def flatten(obj):
        return [getattr(obj, n) for n in children], tuple(getattr(obj, n) for n in static)

    # Keys as ['field'], not .field: torch.export (2.13) rewrites guard
    # code by text, and `.exp_avg` would also match `.exp_avg_sq`.
    def flatten_with_keys(obj):
        values, context = flatten(obj)
        return [(_pytree.MappingKey(n), v) for n, v in zip(children, values)], context

    def unflatten(values, context):
        return cls(**dict(zip(children, values)), **dict(zip(static, context)))

    _pytree.register_pytree_node(
        cls,
        flatten,
        unflatten,
        serialized_type_name=f"structop.{namespace}.{stem}.{cls.__name__}",
        to_dumpable_context=lambda context: [_to_json(v) for v in context],
        from_dumpable_context=lambda data: tuple(_from_json(v) for v in data),
        flatten_with_keys_fn=flatten_with_keys,
    )
    # torch.export of torch 2.6 flattens inputs through torch.fx's own
    # registry too.
    from torch.fx import _pytree as _fx_pytree

    _fx_pytree.register_pytree_flatten_spec(cls, lambda obj, spec: flatten(obj)[0])

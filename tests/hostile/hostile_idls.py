#!/usr/bin/env python3
"""Hostile IDLs, generated: every IDL structopc accepts must give code that
compiles and imports, with string defaults byte-exact everywhere.

A seeded, deterministic generator writes IDL files whose names come from a
pool of C++/Python/schema keywords, macros and the generated code's own
helper names, and whose docs and string defaults hold quotes, backslashes,
comment terminators, line breaks, NULs, trigraphs, bidi controls and other
unicode. The first IDLs are a fixed set (one per finding of the hostile-input
review, each saying whether it must be accepted or rejected, and with which
diagnostic); the rest are random. For each IDL structopc either

- rejects it: exit status 1, nothing written, and a diagnostic of the form
  `FILE:LINE:COL: error: ...` (a crash, another exit status or a diagnostic
  without a location fails the test); or
- accepts it: then
  * the generated `X.ops.cpp` and `X.ops.stubs.cpp` (which include `X.ops.h`)
    compile with `-fsyntax-only -Wall -Wextra -Werror`, batched into a few
    compiler runs;
  * `X_ops.py` imports (with structop_runtime, without the extension);
  * every `str` default is byte-exact: in the schema (as torch's schema
    parser reads it back), in the Python API (parameter defaults and record
    field defaults) and in C++ (a program built from all the headers prints
    each record's default-constructed `std::string` fields);
  * every doc reaches Python's `__doc__` unchanged (but for the documented
    normalisation: trailing line breaks are dropped; before Python 3.13 a
    docstring's later lines keep the indentation of their block);
  * each op's Op.record_form (Python kernels) turns one flat value per slot
    back into record form.

Usage: hostile_idls.py --structopc PATH --work DIR --python PY
         [--count N] [--seed S] [--batch B]
         -- CXX... -- CFLAGS... -- LDFLAGS...
"""

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import textwrap

# ---- pools ----------------------------------------------------------------

PLAIN = ["alpha", "beta", "gamma", "x", "w", "scale", "mode", "cfg", "inner", "value"]
CPP_KEYWORDS = [
    "class",
    "int",
    "new",
    "delete",
    "template",
    "this",
    "namespace",
    "and",
    "or",
    "not",
    "xor",
    "bitand",
    "register",
    "auto",
    "default",
    "operator",
    "union",
    "typename",
    "struct",
    "const",
    "void",
    "bool",
    "char",
]
PY_KEYWORDS = [
    "from",
    "lambda",
    "in",
    "if",
    "None",
    "True",
    "False",
    "is",
    "def",
    "pass",
    "yield",
    "async",
    "await",
    "import",
    "global",
    "with",
    "del",
    "print",
    "type",
]
MACROS = [
    "errno",
    "NULL",
    "EOF",
    "INT64_MIN",
    "linux",
    "unix",
    "assert",
    "stdin",
    "i386",
    "TORCH_CHECK",
    "TORCH_LIBRARY",
]
HELPERS = [
    "ctx",
    "ks",
    "grad_fn",
    "path",
    "output",
    "grads",
    "kernel",
    "kernels",
    "torch",
    "typing",
    "dataclasses",
    "enum",
    "load_library",
    "_fast",
    "error",
    "args",
    "args_1",
    "r",
    "_rt",
    "NAMESPACE",
    "STRUCTOPC_VERSION",
    "_IDL_STEM",
    "_bind",
    "mro",
    "_value_",
    "_name_",
    "self",
    "cls",
    "handle",
    "signature",
    "with_records",
    "at",
    "c10",
    "std",
    "structop",
    "m",
    "backward",
    "backward_def",
    "grad_paths",
    "op_name",
    "args",
    "fn",
    "Kernel",
    "meta",
    "autograd",
    "forward",
    "slot_map",
    "schema",
    "__all__",
    "__init__",
]
SCHEMA_WORDS = ["Tensor", "float", "str", "out", "Scalar", "Device", "SymInt"]
NAMES = PLAIN + CPP_KEYWORDS + PY_KEYWORDS + MACROS + HELPERS + SCHEMA_WORDS

# Pieces of hostile text for docs and string defaults.
PIECES = [
    '"',
    "'",
    "\\",
    '"""',
    "'''",
    "*/",
    "/*",
    "//",
    "\r",
    "\n",
    "\r\n",
    "\t",
    "\0",
    "??/",
    "??=",
    "\u202e",
    "\u2066",
    "\u2069",
    "\u200b",
    "é",
    "\u00a0",
    "😀",
    "$",
    "$$",
    "$name$",
    "{}",
    "{0}",
    "%s",
    "#error injected",
    "#include <x>",
    "\\N{DASH}",
    "\\x41",
    "\\u0041",
    "\\n",
    'R"(',
    ')"',
    ')cc"',
    ')py"',
    "\v",
    "\f",
    "\x7f",
    "\x1b[31m",
    "\u2028",
    "\u0085",
    " ",
    "  ",
    "end\\",
    "import os",
    "'''",
    "\\\r",
    "\\\n",
]


def hostile_text(rng, allow_empty=True):
    n = rng.randint(0 if allow_empty else 1, 5)
    parts = []
    for _ in range(n):
        parts.append(rng.choice(PIECES) if rng.random() < 0.7 else rng.choice(PLAIN))
    text = "".join(parts)
    if rng.random() < 0.25:  # end on a hazard
        text += rng.choice(["\\", '"', "'", "\r", "??/", "\u202e"])
    return text


# ---- YAML and schema spelling ----------------------------------------------


def yaml_dq(s):
    """A YAML double-quoted scalar holding exactly `s`."""
    out = []
    for ch in s:
        o = ord(ch)
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif o < 0x20 or o == 0x7F or 0x80 <= o < 0xA0 or o in (0x2028, 0x2029, 0xFEFF):
            out.append(f"\\u{o:04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


SCHEMA_ESCAPES = {
    "\n": "\\n",
    "\t": "\\t",
    "\r": "\\r",
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\v": "\\v",
    "\\": "\\\\",
    '"': '\\"',
}


def schema_str(s):
    """The IDL's (= PyTorch's) schema string literal for `s`; characters
    without an escape are written raw."""
    return '"' + "".join(SCHEMA_ESCAPES.get(ch, ch) for ch in s) + '"'


# ---- the generator -----------------------------------------------------------


class Idl:
    """One generated IDL: its text, plus what the checks expect."""

    def __init__(self, stem):
        self.stem = stem
        self.lines = []
        # ("record", R, field), ("op", func index, param), or ("nested", W, R, k):
        # W's one field is an R whose record default sets R's field k -> value
        self.str_defaults = {}
        self.docs = {}  # ("record", R) / ("op", index) -> doc

    def text(self):
        return "\n".join(self.lines) + "\n"


def pick_name(rng, used, pool=None):
    for _ in range(50):
        name = rng.choice(pool or NAMES)
        if rng.random() < 0.55:  # else most IDLs would be rejected for a name
            name = rng.choice(PLAIN)
        if name not in used:
            used.add(name)
            return name
    name = f"n{len(used)}"
    used.add(name)
    return name


def fresh_name(prefix, used):
    """The first of prefix0, prefix1, ... not in `used` (then in it)."""
    k = 0
    while f"{prefix}{k}" in used:
        k += 1
    used.add(f"{prefix}{k}")
    return f"{prefix}{k}"


def generate(index, rng, fixed=None):
    """One IDL. A fixed case names what it tests; everything else in it is
    plain (fresh names, defaults that fit), so that its verdict is about the
    finding it holds and not about a random name or default."""
    idl = Idl(f"h{index}")
    spec = fixed or {}

    def pick(used, pool=None, prefix="n"):
        return fresh_name(prefix, used) if fixed else pick_name(rng, used, pool)

    def default_of(choices, plain):
        return plain if fixed else rng.choice(choices)

    ns = spec.get("namespace", f"h{index}")
    idl.lines += [f"namespace: {ns}"]
    if "cpp_namespace" in spec:
        idl.lines += [f"cpp_namespace: {yaml_dq(spec['cpp_namespace'])}"]

    enum_name = None
    if spec.get("enum", rng.random() < 0.5):
        enum_name = spec.get("enum_name") or pick(set(), ["E", "Mode", "Kind"] + NAMES, "E")
        values = spec.get("enum_values") or sorted(
            {pick(set(), None, "v") for _ in range(rng.randint(1, 3))}
        )
        idl.lines += [
            "enums:",
            f"  {yaml_dq(enum_name)}:",
            "    values: [" + ", ".join(yaml_dq(v) for v in values) + "]",
        ]
        if rng.random() < 0.6:
            idl.lines += [f"    doc: {yaml_dq(hostile_text(rng))}"]
        enum_default = values[0]

    records = []
    n_records = spec.get("records", rng.randint(0, 2))
    record_names = set()
    for r in range(n_records):
        rname = (spec.get("record_names") or [None] * 3)[r] or pick(
            record_names, ["R", "Cfg", "Opts"] + NAMES, "Rec"
        )
        fields = []
        used = set()
        for f in range(len(spec["field_kinds"]) if "field_kinds" in spec else rng.randint(1, 4)):
            fname = (
                (spec.get("field_names") or [None] * 5)[f]
                if f < len(spec.get("field_names", []))
                else None
            )
            fname = fname or pick(used, None, "f")
            used.add(fname)
            kind = rng.choice(
                ["Tensor", "Tensor?", "int", "float", "bool", "str", "str", "enum", "int[]"]
            )
            if f < len(spec.get("field_kinds", [])):
                kind = spec["field_kinds"][f]
            if kind == "enum" and not enum_name:
                kind = "str"
            fields.append((fname, kind))
        records.append((rname, fields))
    if records:
        idl.lines += ["records:"]
    required = {}  # record -> its fields without a default
    for rname, fields in records:
        idl.lines += [f"  {yaml_dq(rname)}:"]
        doc = (
            spec.get("doc")
            if "doc" in spec
            else (hostile_text(rng) if rng.random() < 0.7 else None)
        )
        if doc is not None:
            idl.lines += [f"    doc: {yaml_dq(doc)}"]
            idl.docs[("record", rname)] = doc
        idl.lines += ["    fields:"]
        for fname, kind in fields:
            type_text = enum_name if kind == "enum" else kind
            default = None
            if kind == "str" and rng.random() < 0.8:
                value = spec.get("str_default", hostile_text(rng))
                default = schema_str(value)
                idl.str_defaults[("record", rname, fname)] = value
            elif kind == "int" and rng.random() < 0.5:
                default = default_of(
                    ["0", "-1", "7", "010", "-0", "9223372036854775807", "0x10", "1_0"], "7"
                )
            elif kind == "float" and rng.random() < 0.5:
                default = default_of(
                    ["1.0", "-2.5", "1e-5", "1.", ".5", "inf", "nan", "1e400"], "1.0"
                )
            elif kind == "bool" and rng.random() < 0.5:
                default = default_of(["True", "False", "true", "1"], "True")
            elif kind == "enum" and rng.random() < 0.5:
                default = enum_default
            elif kind == "int[]" and rng.random() < 0.3:
                default = default_of(["[1, 2]", "[]", "[010]"], "[1, 2]")
            entry = type_text + (f" = {default}" if default is not None else "")
            idl.lines += [f"      {yaml_dq(fname)}: {yaml_dq(entry)}"]
            if default is None:
                required.setdefault(rname, []).append(fname)

    # A record whose one field has a record default setting the str fields of
    # the first record (`inner: "R = {s: \"...\"}"`): hostile strings inside a
    # record literal, in the C++ aggregate initializer and Python's
    # default_factory.
    if records and spec.get("wrap", rng.random() < 0.4):
        rname, fields = records[0]
        strs = [k for k, (_, kind) in enumerate(fields) if kind == "str"]
        if strs and all(
            fields[k][1] == "str"
            for k in [i for i, (f, _) in enumerate(fields) if f in required.get(rname, [])]
        ):
            wname = spec.get("wrap_name") or pick(record_names, ["W", "Outer"] + NAMES, "Wrap")
            values = {k: spec.get("wrap_default", hostile_text(rng)) for k in strs}
            literal = (
                "{" + ", ".join(f"{fields[k][0]}: {schema_str(v)}" for k, v in values.items()) + "}"
            )
            idl.lines += [
                f"  {yaml_dq(wname)}:",
                "    fields:",
                f"      {yaml_dq(spec.get('wrap_field') or pick(set(), None, 'inner'))}: "
                f"{yaml_dq(rname + ' = ' + literal)}",
            ]
            for k, value in values.items():
                idl.str_defaults[("nested", wname, rname, k)] = value
            records.append((wname, [("inner", rname)]))

    n_ops = spec.get("ops", rng.randint(1, 2))
    op_names = set()
    if n_ops:
        idl.lines += ["ops:"]
    for o in range(n_ops):
        oname = (spec.get("op_names") or [None] * 3)[o] or pick(op_names, None, "op")
        overload = (
            spec.get("overload")
            if o == 0 and "overload" in spec
            else (pick(set(), None, "ov") if not fixed and rng.random() < 0.2 else None)
        )
        used = set()
        params = []
        tname = (spec.get("param_names") or [None])[0] or pick(used, None, "a")
        used.add(tname)
        params.append(f"Tensor {tname}")
        for rname, fields in records:
            if rng.random() < 0.8:
                params.append(f"{rname} {pick(used, None, 'a')}")
        str_param = None
        if rng.random() < 0.6 or "str_default" in spec:
            str_param = pick(used, None, "a")
            value = spec.get("str_default", hostile_text(rng))
            params.append(f"str {str_param}={schema_str(value)}")
            idl.str_defaults[("op", o, len(params) - 1)] = value
        full = oname + (f".{overload}" if overload else "")
        # Sometimes a returned record (one output per leaf), preferring one
        # whose fields can be returned; another is rejected with a diagnostic.
        returns = "Tensor"
        if records and spec.get("returns_record", False if fixed else rng.random() < 0.3):
            returnable = [
                r
                for r, fields in records
                if all(kind in ("Tensor", "int", "float", "bool") for _, kind in fields)
            ]
            rname = returnable[0] if returnable else records[0][0]
            returns = f"(Tensor, {rname} {pick(used, None, 'a')})"
        func = f"{full}({', '.join(params)}) -> {returns}"
        idl.lines += [f"  - func: {yaml_dq(func)}"]
        doc = (
            spec.get("doc")
            if "doc" in spec
            else (hostile_text(rng) if rng.random() < 0.7 else None)
        )
        if doc is not None:
            idl.lines += [f"    doc: {yaml_dq(doc)}"]
            idl.docs[("op", o)] = doc
        if spec.get("backward", rng.random() < 0.4):
            idl.lines += ["    backward: true"]
    return idl


# One IDL per finding of the hostile-input review, each with its verdict:
# "accept" (it must compile, import and keep its text exact) or "reject" (the
# diagnostic it must get; nothing written). Either way the other verdict fails.
ACCEPT = {"accept": True}


def reject(message):
    return {"reject": message}


FIXED = [
    {"doc": "x\r#error injected\r", "records": 1, "ops": 1, **ACCEPT},
    {"doc": "ends in a backslash\\", "records": 1, "ops": 1, **ACCEPT},
    {"doc": 'docstring """ quotes \\u \\N \\x and a NUL \0 end"', "records": 1, "ops": 1, **ACCEPT},
    {"doc": "tab\tnewline\ncr\r bidi \u202e trigraph ??/", "records": 1, "ops": 1, **ACCEPT},
    {"str_default": 'a\rb\\"c\td\n', "records": 1, "ops": 1, **ACCEPT},
    {"param_names": ["ctx"], "records": 0, "ops": 1, **ACCEPT},
    {"param_names": ["ks"], "records": 0, "ops": 1, **ACCEPT},
    {"param_names": ["grad_fn"], "records": 0, "ops": 1, **ACCEPT},
    {"field_names": ["path", "errno", "NULL", "EOF"], "records": 1, "ops": 1, **ACCEPT},
    {"field_names": ["INT64_MIN", "linux", "unix", "assert"], "records": 1, "ops": 1, **ACCEPT},
    {"record_names": ["R", "RGrad"], "records": 2, "ops": 1, **ACCEPT},
    {
        "record_names": ["op_grads"],
        "op_names": ["op"],
        "records": 1,
        "ops": 1,
        **reject(
            "record `op_grads` cannot be called `op_grads` in generated code: that is already the "
            "C++ struct of op `op`'s gradients"
        ),
    },
    {
        "op_names": ["kernels"],
        "records": 0,
        "ops": 1,
        **reject(
            "op `kernels` cannot be called `kernels` in generated code: that is already the C++ "
            "namespace of the kernels"
        ),
    },
    {"op_names": ["from"], "records": 0, "ops": 1, **ACCEPT},
    {"op_names": ["lambda"], "records": 0, "ops": 1, **ACCEPT},
    {
        "op_names": ["True"],
        "records": 0,
        "ops": 1,
        **reject("op `True`: torch's schema parser reserves the word `True`"),
    },
    {
        "op_names": ["torch"],
        "records": 0,
        "ops": 1,
        **reject(
            "op `torch` cannot be called `torch` in generated code: that is already a module the "
            "generated Python imports"
        ),
    },
    {
        "op_names": ["typing"],
        "records": 0,
        "ops": 1,
        **reject(
            "op `typing` cannot be called `typing` in generated code: that is already a module the "
            "generated Python imports"
        ),
    },
    {
        "op_names": ["dataclasses"],
        "records": 0,
        "ops": 1,
        **reject("op `dataclasses` cannot be called `dataclasses` in generated code"),
    },
    {
        "op_names": ["load_library"],
        "records": 0,
        "ops": 1,
        **reject(
            "op `load_library` cannot be called `load_library` in generated code: that is already "
            "a global of the generated Python module"
        ),
    },
    {"op_names": ["_fast", "error"], "records": 0, "ops": 2, **ACCEPT},
    {
        "op_names": ["x", "_x_op"],
        "records": 0,
        "ops": 2,
        **reject(
            "op `_x_op` cannot be called `_x_op` in generated code: that is already the Python "
            "global holding op `x`"
        ),
    },
    {
        "enum": True,
        "enum_values": ["mro", "_value_", "a"],
        "records": 1,
        "ops": 1,
        **reject("value `mro` of enum `E0`: Python's enum.Enum cannot have a member `mro`"),
    },
    {
        "overload": "default",
        "records": 0,
        "ops": 1,
        **reject(
            "`default` cannot be an overload name; torch calls the op without overload `default`"
        ),
    },
    {
        "param_names": ["class"],
        "records": 0,
        "ops": 1,
        **reject("parameter `class` of op `op0`: torch's schema parser reserves the word `class`"),
    },
    {
        "param_names": ["in"],
        "records": 0,
        "ops": 1,
        **reject("parameter `in` of op `op0`: torch's schema parser reserves the word `in`"),
    },
    {
        "param_names": ["None"],
        "records": 0,
        "ops": 1,
        **reject("parameter `None` of op `op0`: torch's schema parser reserves the word `None`"),
    },
    {
        "cpp_namespace": "ok::class",
        "records": 1,
        "ops": 1,
        **reject(
            "`ok::class` cannot be the C++ namespace of generated code: `class` is a C++ or Python "
            "keyword"
        ),
    },
    # Records and enums named like the members of the generated adapter struct.
    {"record_names": ["backward", "handle"], "records": 2, "ops": 1, **ACCEPT},
    # Returned records named like the adapter's conversions, with keyword fields.
    {
        "record_names": ["flat_outputs", "record_outputs"],
        "field_kinds": ["Tensor", "Tensor"],
        "field_names": ["errno", "result"],
        "records": 2,
        "ops": 1,
        "returns_record": True,
        "backward": False,
        "enum": False,
        **ACCEPT,
    },
    # ... and like the Python helpers' own names, with a backward (grad records).
    {
        "record_names": ["flat", "grad"],
        "field_kinds": ["Tensor"],
        "records": 2,
        "ops": 1,
        "returns_record": True,
        "backward": True,
        "enum": False,
        **ACCEPT,
    },
    {
        "enum": True,
        "enum_name": "Kernel",
        "record_names": ["signature"],
        "records": 1,
        "ops": 1,
        **ACCEPT,
    },
    # A record named like the AutogradContext parameter of setup_context and
    # backward, or `op` (once the call API's local).
    {"record_names": ["ctx", "op"], "records": 2, "ops": 1, "backward": True, **ACCEPT},
    # Hostile strings inside a record default (`inner: "R = {a: \"...\"}"`):
    # the literal's own delimiters, quotes, escapes and line breaks.
    {
        "records": 1,
        "ops": 0,
        "wrap": True,
        "field_kinds": ["str", "str"],
        "field_names": ["a", "b"],
        "record_names": ["R"],
        "wrap_name": "W",
        "wrap_field": "inner",
        "wrap_default": 'q"}, b: "x\\\r\n]{:',
        **ACCEPT,
    },
]


# ---- running ---------------------------------------------------------------

LOCATED = re.compile(r"^[^\n:]+:\d+:\d+: error: ", re.M)


def run_structopc(structopc, idl_path, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    return subprocess.run(
        [structopc, "--emit", "h,cpp,stubs,py,json", "-o", out_dir, idl_path],
        capture_output=True,
        timeout=60,
    )


PY_CHECK = textwrap.dedent(r"""
    import dataclasses, importlib, inspect, json, sys
    import torch
    failures = []
    cases = json.load(open(sys.argv[1], encoding="utf-8"))
    for case in cases:
        sys.path.insert(0, case["dir"])
        try:
            mod = importlib.import_module(case["stem"] + "_ops")
        except BaseException as e:
            failures.append(f"{case['idl']}: import failed: {type(e).__name__}: {e}")
            continue
        finally:
            sys.path.pop(0)
        model = case["json"]
        funcs = {}
        for name in dir(mod):
            obj = getattr(mod, name)
            if callable(obj) and hasattr(obj, "schema"):
                funcs[obj.schema] = obj
        for i, op in enumerate(model["ops"]):
            try:
                schema = torch._C.parse_schema(model["namespace"] + "::" + op["schema"])
            except RuntimeError as e:
                failures.append(f"{case['idl']}: torch rejects the schema of op {i}: {e}")
                continue
            fn = funcs.get(model["namespace"] + "::" + op["schema"])
            if fn is None:
                failures.append(f"{case['idl']}: no Python function with schema {op['schema']!r}")
                continue
            op_decl = getattr(mod, "_" + fn.__name__ + "_op", None)
            if op_decl is None:
                failures.append(f"{case['idl']}: op {i} has no _{fn.__name__}_op")
            else:
                enums = {e["name"]: e["values"] for e in model["enums"]}
                flat, named = [], {}
                for s in op["slots"]:
                    value = flat_value(s["type"], enums)
                    if s["kwarg_only"]:
                        named[s["name"]] = value
                    else:
                        flat.append(value)
                try:
                    args, kwargs = op_decl.record_form(tuple(flat), named)
                    assert len(args) + len(kwargs) == len(fn_params(op)), (args, kwargs)
                except Exception as e:  # noqa: BLE001 (any failure is the finding)
                    failures.append(f"{case['idl']}: op {i} record form failed: "
                                    f"{type(e).__name__}: {e}")
            doc = case["docs"].get(f"op {i}", "").rstrip("\n")  # the one normalisation
            if doc and not any((fn.__doc__ or "").startswith(f) for f in doc_forms(doc + "\n\n")):
                failures.append(f"{case['idl']}: op {i} __doc__ {fn.__doc__!r} does not hold {doc!r}")
            params = list(inspect.signature(fn).parameters.values())
            for key, value in case["str_defaults"].items():
                kind, *rest = key.split(" ")
                if kind != "op" or int(rest[0]) != i:
                    continue
                p = int(rest[1])
                if params[p].default != value:
                    failures.append(f"{case['idl']}: op {i} Python default {params[p].default!r} != {value!r}")
                # the flat slot of that parameter: the one with its param name
                slot = [j for j, s in enumerate(op["slots"]) if s["param"] == fn_params(op)[p]]
                got = schema.arguments[slot[0]].default_value if slot else None
                if got != value:
                    failures.append(f"{case['idl']}: op {i} schema default {got!r} != {value!r}")
        classes = {c.__name__: c for c in vars(mod).values()
                   if isinstance(c, type) and dataclasses.is_dataclass(c)}
        for rec in model["records"]:
            cls = classes.get(rec["name"]) or classes.get(rec["name"] + "_")
            if cls is None:
                failures.append(f"{case['idl']}: no dataclass for record {rec['name']!r}")
                continue
            doc = case["docs"].get("record " + rec["name"], "").rstrip("\n")
            if doc and cls.__doc__ not in doc_forms(doc):
                failures.append(f"{case['idl']}: record {rec['name']} __doc__ {cls.__doc__!r} != {doc!r}")
            fields = dataclasses.fields(cls)
            for k, f in enumerate(rec["fields"]):
                value = case["str_defaults"].get(f"record {rec['name']} {f['name']}")
                if value is not None and fields[k].default != value:
                    failures.append(f"{case['idl']}: {rec['name']}.{f['name']} Python default "
                                    f"{fields[k].default!r} != {value!r}")
        for key, value in case["str_defaults"].items():
            if not key.startswith("nested "):
                continue
            _, w, r, k = key.split(" ")
            cls = classes.get(w) or classes.get(w + "_")
            try:
                inner = getattr(cls(), dataclasses.fields(cls)[0].name)
                got = getattr(inner, dataclasses.fields(type(inner))[int(k)].name)
            except Exception as e:  # noqa: BLE001 (any failure is the finding)
                failures.append(f"{case['idl']}: {w}() failed: {type(e).__name__}: {e}")
                continue
            if got != value:
                failures.append(f"{case['idl']}: {w}().{r} field {k} Python default {got!r} != {value!r}")
    for f in failures:
        print(f)
    sys.exit(1 if failures else 0)
""")


# A doc given as a real multi-line docstring: its later lines are indented as
# the block is, before Python 3.13 (which removes that indentation).
PY_CHECK = PY_CHECK.replace(
    "import torch\n",
    "import torch\n"
    + textwrap.dedent('''
    def indented(text, indent="    "):
        first, *later = text.split("\\n")
        return "\\n".join([first] + [indent + line if line else line for line in later])

    def doc_forms(text):
        """The __doc__s that hold text: as it is (assigned, or a docstring that
        Python 3.13 cleaned) or, before 3.13, as a docstring."""
        return {text} if sys.version_info >= (3, 13) else {text, indented(text)}
    '''),
)

# The original parameter names of an op, in order, from its signature text.
PY_CHECK = PY_CHECK.replace(
    "import torch\n",
    "import keyword\nimport torch\n"
    + textwrap.dedent('''
    def flat_value(schema_type, enums):
        """A value of a slot's type (as X.ops.json spells it), as torch passes it."""
        if schema_type.endswith("?"):
            return None
        if "[" in schema_type:
            return []
        base = schema_type.split("(")[0]
        if base in enums:
            return enums[base][0]
        return {"Tensor": torch.zeros(1), "int": 0, "SymInt": 0, "DeviceIndex": 0, "float": 0.5,
                "bool": False, "str": "s", "Scalar": 1, "ScalarType": torch.float32,
                "Device": torch.device("cpu"), "Layout": torch.strided,
                "MemoryFormat": torch.contiguous_format}.get(base)

    def fn_params(op):
        names = []
        for s in op["slots"]:
            if s["param"] not in names:
                names.append(s["param"])
        return names
'''),
    1,
)


def cpp_string_printer(cases):
    """A program printing each record's default-constructed str fields."""
    lines = ["#include <cstdio>", "#include <string>"]
    for case in cases:
        lines.append(f'#include "{case["dir"]}/{case["stem"]}.ops.h"')
    lines += [
        "static void show(const char* key, const std::string& s) {",
        '  std::printf("%s ", key);',
        '  for (unsigned char c : s) std::printf("%02x", c);',
        '  std::printf("\\n");',
        "}",
        "int main() {",
    ]
    for case in cases:
        header = open(os.path.join(case["dir"], case["stem"] + ".ops.h"), encoding="utf-8").read()
        model = case["json"]
        for rec in model["records"]:
            keys = [f"record {rec['name']} {f['name']}" for f in rec["fields"]]
            if not any(k in case["str_defaults"] for k in keys):
                continue
            m = re.search(r"^struct (" + re.escape(rec["name"]) + r"_?) \{", header, re.M)
            if not m:
                raise SystemExit(f"{case['idl']}: no `struct {rec['name']}` in the header")
            cpp_type = f"::{rec['cpp_namespace']}::{m.group(1)}"
            names = [f"f{k}" for k in range(len(rec["fields"]))]
            lines.append(f"  {{ const {cpp_type} r{{}}; const auto& [{', '.join(names)}] = r;")
            for k, key in enumerate(keys):
                if key in case["str_defaults"]:
                    lines.append(f"    show({json.dumps(case['idl'] + ' ' + key)}, f{k});")
            for k, key in enumerate(keys):
                if key not in case["str_defaults"]:
                    lines.append(f"    (void)f{k};")
            lines.append("  }")
        records = {rec["name"]: rec for rec in model["records"]}
        for key in case["str_defaults"]:
            if not key.startswith("nested "):
                continue
            _, w, r, k = key.split(" ")
            types = []
            for name in (w, r):
                m = re.search(r"^struct (" + re.escape(name) + r"_?) \{", header, re.M)
                if not m:
                    raise SystemExit(f"{case['idl']}: no `struct {name}` in the header")
                types.append(f"::{records[name]['cpp_namespace']}::{m.group(1)}")
            names = [f"f{j}" for j in range(len(records[r]["fields"]))]
            lines.append(f"  {{ const {types[0]} w{{}}; const auto& [inner] = w;")
            lines.append(f"    const {types[1]}& r = inner; const auto& [{', '.join(names)}] = r;")
            lines.append(f"    show({json.dumps(case['idl'] + ' ' + key)}, f{k});")
            lines += [f"    (void)f{j};" for j in range(len(names)) if j != int(k)]
            lines.append("  }")
    lines += ["}"]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--structopc", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--python", required=True)
    ap.add_argument("--pythonpath", default="")
    ap.add_argument("--count", type=int, default=500)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    argv = sys.argv[1:]
    if argv.count("--") != 3:
        ap.error("give the compiler and its flags as: -- CXX... -- CFLAGS... -- LDFLAGS...")
    cut = [i for i, x in enumerate(argv) if x == "--"]
    a = ap.parse_args(argv[: cut[0]])
    a.structopc = os.path.abspath(a.structopc)
    a.cxx, a.cflags, a.ldflags = (
        argv[cut[0] + 1 : cut[1]],
        argv[cut[1] + 1 : cut[2]],
        argv[cut[2] + 1 :],
    )

    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    problems = []
    accepted, rejected = [], 0
    reasons = {}  # first diagnostic of each rejected IDL, names masked -> count
    for i in range(a.count):
        rng = random.Random(a.seed * 1_000_003 + i)
        idl = generate(i, rng, FIXED[i] if i < len(FIXED) else None)
        folder = os.path.join(a.work, idl.stem)
        os.makedirs(folder)
        path = os.path.join(folder, idl.stem + ".ops.yaml")
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(idl.text())
        out = os.path.join(folder, "out")
        try:
            run = run_structopc(a.structopc, path, out)
        except subprocess.TimeoutExpired:
            problems.append(f"{path}: structopc did not finish in 60 s")
            continue
        stderr = run.stderr.decode("utf-8", "replace")
        verdict = FIXED[i] if i < len(FIXED) else {}
        if run.returncode == 1 and verdict.get("accept"):
            problems.append(f"{path}: a fixed case that must be accepted was rejected:\n{stderr}")
        if "reject" in verdict and (run.returncode != 1 or verdict["reject"] not in stderr):
            problems.append(
                f"{path}: a fixed case that must be rejected with `{verdict['reject']}` "
                f"got exit status {run.returncode}:\n{stderr}"
            )
        if run.returncode == 1:
            rejected += 1
            first = LOCATED.search(stderr)
            if first:
                line = stderr[first.end() :].split("\n", 1)[0]
                key = re.sub(r"`[^`]*`", "`_`", line)
                reasons[key] = reasons.get(key, 0) + 1
            if not LOCATED.search(stderr):
                problems.append(f"{path}: rejected without a FILE:LINE:COL diagnostic:\n{stderr}")
            if os.listdir(out):
                problems.append(f"{path}: rejected, but wrote {os.listdir(out)}")
            continue
        if run.returncode != 0:
            problems.append(f"{path}: structopc exit status {run.returncode}:\n{stderr}")
            continue
        with open(os.path.join(out, idl.stem + ".ops.json"), encoding="utf-8") as f:
            model = json.load(f)
        accepted.append(
            {
                "idl": path,
                "dir": out,
                "stem": idl.stem,
                "json": model,
                "str_defaults": {" ".join(map(str, k)): v for k, v in idl.str_defaults.items()},
                "docs": {" ".join(map(str, k)): v for k, v in idl.docs.items()},
            }
        )
    print(
        f"{a.count} IDLs (seed {a.seed}, {len(FIXED)} fixed): {len(accepted)} accepted, {rejected} rejected"
    )
    for key, n in sorted(reasons.items(), key=lambda kv: -kv[1]):
        print(f"  rejected {n:4d}x: {key}")

    # C++: the sources of each batch as one translation unit.
    for start in range(0, len(accepted), a.batch):
        batch = accepted[start : start + a.batch]
        unity = os.path.join(a.work, f"unity{start // a.batch}.cpp")
        with open(unity, "w", encoding="utf-8") as f:
            for case in batch:
                for suffix in (".ops.cpp", ".ops.stubs.cpp"):
                    src = os.path.join(case["dir"], case["stem"] + suffix)
                    if os.path.exists(src):
                        f.write(f'#include "{src}"\n')
        cmd = a.cxx + a.cflags + ["-Wall", "-Wextra", "-Werror", "-fsyntax-only", unity]
        run = subprocess.run(cmd, capture_output=True, text=True, errors="replace")
        if run.returncode != 0 or run.stderr.strip():
            problems.append(
                f"C++ of IDLs {start}..{start + len(batch) - 1} does not compile "
                f"cleanly:\n{run.stderr[:6000]}"
            )
        else:
            print(
                f"ok   C++ of IDLs {start}..{start + len(batch) - 1} compiles (-Wall -Wextra -Werror)"
            )

    # C++ string defaults, byte-exact: one program over all headers.
    printer = os.path.join(a.work, "print_defaults.cpp")
    with open(printer, "w", encoding="utf-8") as f:
        f.write(cpp_string_printer(accepted))
    exe = os.path.join(a.work, "print_defaults")
    run = subprocess.run(
        a.cxx + a.cflags + ["-O0", printer, "-o", exe] + a.ldflags,
        capture_output=True,
        text=True,
        errors="replace",
    )
    if run.returncode != 0:
        problems.append(f"the C++ default printer does not build:\n{run.stderr[:6000]}")
    else:
        shown = subprocess.run([exe], capture_output=True, text=True, check=True).stdout
        got = {}
        for line in shown.splitlines():
            key, _, hexed = line.rpartition(" ")
            got[key] = bytes.fromhex(hexed).decode("utf-8", "replace")
        checked = 0
        for case in accepted:
            for key, value in case["str_defaults"].items():
                if not key.startswith(("record ", "nested ")):
                    continue
                full = case["idl"] + " " + key
                if full in got:
                    checked += 1
                    if got[full] != value:
                        problems.append(f"{full}: C++ default {got[full]!r} != {value!r}")
        nested = sum(key.startswith("nested ") for case in accepted for key in case["str_defaults"])
        print(f"ok   C++ string defaults checked: {checked} ({nested} in record defaults)")
        if checked == 0 or (a.count >= 100 and nested == 0):
            problems.append("no C++ string default (or none in a record default) was checked")

    # Python: import every module, check defaults and docs.
    cases_json = os.path.join(a.work, "cases.json")
    with open(cases_json, "w", encoding="utf-8") as f:
        json.dump(accepted, f)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [a.pythonpath, env.get("PYTHONPATH", "")] if p)
    run = subprocess.run(
        [a.python, "-c", PY_CHECK, cases_json],
        capture_output=True,
        text=True,
        env=env,
        errors="replace",
    )
    if run.returncode != 0:
        problems.append("Python checks failed:\n" + (run.stdout + run.stderr)[:8000])
    else:
        print(f"ok   {len(accepted)} Python modules import; defaults and docs exact")

    for p in problems:
        print("FAIL " + p)
    print(f"{len(problems)} problem(s)")
    if not a.keep and not problems:
        shutil.rmtree(a.work, ignore_errors=True)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

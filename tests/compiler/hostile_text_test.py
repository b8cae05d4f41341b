#!/usr/bin/env python3
"""Hostile text in docs, string defaults and file names (issue 14).

Writes an IDL whose docs and string defaults hold every kind of hostile
character (line breaks, CR, NUL, control characters, quotes and backslashes
where they end a literal, escape sequences as text, tabs and indentation that
Python 3.13 cleans from docstrings, bidi controls, line separators, trigraphs,
non-ASCII), runs `structopc --emit h,cpp,stubs,py,json` and checks:

- X_ops.py compiles and imports (with stand-ins for torch and
  structop_runtime: no torch needed), and every `__doc__`, record field
  default and parameter default is exactly the IDL's text (docs without their
  trailing line breaks, the documented normalisation; a doc that is a real
  multi-line docstring holds its later lines indented as the block is before
  Python 3.13, which removes that indentation);
- X.ops.json parses and holds the docs exactly; every string default of every
  lowered schema reads back exactly, with a reader of torch's schema string
  syntax here and, when the build has a Python with torch (--torch-python),
  with torch._C.parse_schema (and torch.library defines the op);
- the C++ files hold no raw control character or hazard (bidi controls, line
  separators), no comment that ends in a backslash, no trigraph outside the
  raw schema strings;
- a file name that is not an identifier (a newline, a quote, a dash, also of
  an included file) is an error, shown escaped, and nothing is written.

usage: hostile_text_test.py STRUCTOPC [--torch-python PYTHON]

Meson passes --torch-python when the build has a Python with torch; the check
through torch is then required (an interpreter that cannot import torch is a
failure), and without it the test says that torch's reading was not checked.
"""

import argparse
import importlib.util
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest.mock

STEM = "hostile"

DOCS = [
    "x\r#error injected\r",
    "ends in a backslash \\",
    'ends in a quote"',
    'triple """ quotes, "" two and """"" five',
    "escapes as text: \\u \\N{DASH} \\x41 \\t \\n \\0 \\",
    "a\ttab",
    " a leading space",
    "First line.\n  every later line\n  indented",
    "First line.\n\tindented by a tab",
    "a NUL\0inside",
    "bidi \u202eoverride\u202c \u2066isolate\u2069 marks \u200e\u200f\u061c",
    "line\u2028separator, paragraph\u2029separator, NEL\u0085here",
    "a trigraph ??/",
    "??/\nat the end of a line ??/",
    "controls \x01\x1b[31m\x7f\x9b",
    "caf\u00e9 \u2192 \u65e5\u672c \U0001f600",
    "trailing spaces   ",
    "several\nlines\n\nwith a blank one\n\n",
    "windows\r\nline ends\r\n",
    "'''single triple quotes'''",
    "a backslash at a line end \\\nnext line",
    "#include <nothing>\n#define X 1",
]

DEFAULTS = DOCS + ["", "\0", "\\", '"', "'", "\n", "\r", "\t", "?\u200b?/"]

HAZARDS = re.compile("[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c\u0085\u2028\u2029]")


def yaml_string(text):
    """A YAML double-quoted scalar: printable ASCII, everything else escaped."""
    out = '"'
    for ch in text:
        code = ord(ch)
        if ch in '"\\':
            out += "\\" + ch
        elif 0x20 <= code < 0x7F:
            out += ch
        elif code <= 0xFF:
            out += f"\\x{code:02x}"
        elif code <= 0xFFFF:
            out += f"\\u{code:04x}"
        else:
            out += f"\\U{code:08x}"
    return out + '"'


def schema_string(text):
    """`text` as a schema string literal the way an IDL author may write it."""
    out = '"'
    for byte in text.encode("utf-8"):
        ch = chr(byte)
        if ch in '"\\':
            out += "\\" + ch
        elif 0x20 <= byte < 0x7F:
            out += ch
        else:
            out += f"\\{byte:03o}"
    return out + '"'


def idl_text():
    lines = [f"namespace: {STEM}", f"doc: {yaml_string(DOCS[0])}", "enums:"]
    for i, doc in enumerate(DOCS):
        lines += [f"  E{i}:", "    values: [a, b]", f"    doc: {yaml_string(doc)}"]
    lines.append("records:")
    for i, doc in enumerate(DOCS):
        lines += [f"  R{i}:", f"    doc: {yaml_string(doc)}", "    fields:", "      x: int = 1"]
    lines += ["  Defaults:", "    fields:"]
    for i, value in enumerate(DEFAULTS):
        lines += [f"      s{i}:", "        type: str", f"        default: {yaml_string(value)}"]
    lines.append("ops:")
    for i, doc in enumerate(DOCS):
        func = f"op{i}(Tensor x) -> Tensor"
        if i == 0:
            func = "op0(Tensor x, Defaults d) -> Tensor"
        elif i < len(DEFAULTS):  # a schema literal in the func line, with octal escapes
            func = f"op{i}(Tensor x, str tag={schema_string(DEFAULTS[i])}) -> Tensor"
        lines += [f"  - func: {yaml_string(func)}", f"    doc: {yaml_string(doc)}"]
    return "\n".join(lines) + "\n"


def expected_doc(doc):
    return doc.rstrip("\n")


def indented(text, indent="    "):
    """`text` as a docstring of a block at `indent` holds it before Python 3.13."""
    first, *later = text.split("\n")
    return "\n".join([first] + [indent + line if line else line for line in later])


def doc_forms(text):
    """The `__doc__`s that hold `text`: as it is (assigned to `__doc__`, or a
    docstring that Python 3.13 cleaned) or, before 3.13, as a docstring."""
    return {text} if sys.version_info >= (3, 13) else {text, indented(text)}


class _StandInOp:
    """structop_runtime.Op as far as the texts go: Op.function returns the
    function it decorates, with `__doc__` set from `doc=` when given."""

    def __init__(self, *args, doc=None, **kwargs):
        self.doc = doc

    def function(self, fn):
        if self.doc is not None:
            fn.__doc__ = self.doc
        return fn


def import_generated(path):
    """Imports X_ops.py with stand-ins for torch and structop_runtime."""
    saved = {name: sys.modules.get(name) for name in ("torch", "structop_runtime")}
    sys.modules["torch"] = unittest.mock.MagicMock(name="torch")
    runtime = unittest.mock.MagicMock(name="structop_runtime")
    runtime.Op = _StandInOp
    sys.modules["structop_runtime"] = runtime
    try:
        spec = importlib.util.spec_from_file_location(STEM + "_ops", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        for name, old in saved.items():
            if old is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = old


def schema_string_defaults(schema):
    """{name: value} of the `str` defaults of a schema, read as torch's lexer reads them."""
    out = {}
    for name, body in re.findall(r'str\?? (\w+)="((?:[^"\\]|\\.)*)"', schema):
        raw = bytearray()
        i = 0
        while i < len(body):
            if body[i] != "\\":
                raw += body[i].encode("utf-8")
                i += 1
                continue
            nxt = body[i + 1]
            if nxt in "01234567":
                raw.append(int(body[i + 1 : i + 4], 8))
                i += 4
                continue
            raw += {"n": b"\n", "t": b"\t", '"': b'"', "\\": b"\\", "'": b"'"}[nxt]
            i += 2
        out[name] = raw.decode("utf-8")
    return out


TORCH_READER = """
import json, sys, torch
out = []
library = torch.library.Library("structop_hostile_text", "DEF")
for schema in json.load(sys.stdin):
    library.define(schema)  # registration accepts it too
    parsed = torch._C.parse_schema(schema)
    out.append({a.name: a.default_value for a in parsed.arguments
                if isinstance(a.default_value, str)})
json.dump(out, sys.stdout)
"""


def check_cpp(name, text, failures):
    for n, line in enumerate(text.split("\n"), 1):
        where = f"{name}:{n}"
        if re.search("[\x00-\x09\x0b-\x1f\x7f]", line):
            failures.append(f"{where}: a raw control character: {line!r}")
        if HAZARDS.search(line):
            failures.append(f"{where}: a bidi control or line separator: {line!r}")
        comment = line.find("//")
        if comment >= 0 and 'R"' not in line and (line.endswith("\\") or line.endswith("??/")):
            failures.append(f"{where}: a comment continued onto the next line: {line!r}")
        if re.search(r"\?\?[=/'()!<>-]", line) and 'R"' not in line:
            failures.append(f"{where}: a trigraph: {line!r}")


def check_outputs(structopc, scratch, failures, torch_python):
    idl = os.path.join(scratch, STEM + ".ops.yaml")
    with open(idl, "w", encoding="utf-8") as f:
        f.write(idl_text())
    out = os.path.join(scratch, "out")
    os.makedirs(out)
    run = subprocess.run(
        [structopc, "--emit", "h,cpp,stubs,py,json", "-o", out, idl], capture_output=True, text=True
    )
    if run.returncode != 0:
        failures.append(f"structopc failed (exit {run.returncode}):\n{run.stderr}")
        return

    def read(name):
        with open(os.path.join(out, name), encoding="utf-8", newline="") as f:
            return f.read()

    for name in (f"{STEM}.ops.h", f"{STEM}.ops.cpp", f"{STEM}.ops.stubs.cpp"):
        check_cpp(name, read(name), failures)

    # Python: compiles, imports, and holds the texts exactly.
    py = os.path.join(out, STEM + "_ops.py")
    try:
        module = import_generated(py)
    except Exception as error:  # noqa: BLE001 - any failure to import is the finding
        failures.append(f"{STEM}_ops.py does not import: {type(error).__name__}: {error}")
        return
    if expected_doc(DOCS[0]) not in module.__doc__:
        failures.append(f"module __doc__ does not hold the doc: {module.__doc__!r}")
    for i, doc in enumerate(DOCS):
        want = expected_doc(doc)
        for kind, obj in (("enum", getattr(module, f"E{i}")), ("record", getattr(module, f"R{i}"))):
            if obj.__doc__ not in doc_forms(want):
                failures.append(f"{kind} doc {i}: __doc__ is {obj.__doc__!r}, want {want!r}")
        fn = getattr(module, f"op{i}")
        op_doc = fn.__doc__ or ""
        if not any(op_doc.startswith(form) for form in doc_forms(want + "\n\nCalls torch.ops.")):
            failures.append(f"op doc {i}: __doc__ is {fn.__doc__!r}, want {want!r} first")
        if 0 < i < len(DEFAULTS):
            got = inspect.signature(fn).parameters["tag"].default
            if got != DEFAULTS[i]:
                failures.append(f"op{i} parameter default is {got!r}, want {DEFAULTS[i]!r}")
    record = module.Defaults()
    for i, value in enumerate(DEFAULTS):
        if getattr(record, f"s{i}") != value:
            failures.append(f"Defaults.s{i} is {getattr(record, f's{i}')!r}, want {value!r}")

    # JSON: the docs exactly; the schemas' string defaults read back exactly.
    model = json.loads(read(STEM + ".ops.json"))
    docs = {e["name"]: e["doc"] for e in model["enums"]}
    for i, doc in enumerate(DOCS):
        if docs.get(f"E{i}") != doc:
            failures.append(f"JSON doc of E{i} is {docs.get(f'E{i}')!r}, want {doc!r}")
    schemas = [op["schema"] for op in model["ops"]]
    wanted = []
    for i in range(len(DOCS)):
        if i == 0:
            wanted.append({f"d__s{k}": v for k, v in enumerate(DEFAULTS)})
        elif i < len(DEFAULTS):
            wanted.append({"tag": DEFAULTS[i]})
        else:
            wanted.append({})
    for i, schema in enumerate(schemas):
        if schema_string_defaults(schema) != wanted[i]:
            failures.append(f"schema of op{i} reads back {schema_string_defaults(schema)!r}")
        if not schema.isascii() or not schema.isprintable():
            failures.append(f"schema of op{i} is not printable ASCII: {schema!r}")
    if torch_python is None:
        print("no Python with torch in this build: torch's reading of the schemas not checked")
        return
    torch_run = subprocess.run(
        [torch_python, "-c", TORCH_READER],
        input=json.dumps(schemas),
        capture_output=True,
        text=True,
    )
    if torch_run.returncode != 0:
        failures.append(f"torch._C.parse_schema failed:\n{torch_run.stderr[-2000:]}")
    elif json.loads(torch_run.stdout) != wanted:
        failures.append(f"torch reads other defaults: {torch_run.stdout[:2000]}")


def check_file_names(structopc, scratch, failures):
    folder = os.path.join(scratch, "names")
    os.makedirs(folder)
    good = "namespace: n\nrecords: {R: {fields: {x: int}}}\n"
    files = {
        "new\nline.ops.yaml": (good, "`new\\nline` is not an identifier"),
        'q"uote.ops.yaml': (good, '`q"uote` is not an identifier'),
        "a-b.ops.yaml": (good, "`a-b` is not an identifier"),
        "includer.ops.yaml": (
            "namespace: i\ninclude: [a-b.ops.yaml]\n",
            "a-b.ops.yaml:1:1: error: file name `a-b.ops.yaml`",
        ),
    }
    for name, (text, _) in files.items():
        with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
            f.write(text)
    for name, (_, message) in files.items():
        out = os.path.join(scratch, "names-out")
        os.makedirs(out)
        run = subprocess.run(
            [structopc, "--emit", "h,cpp,stubs,py,json", "-o", out, name],
            cwd=folder,
            capture_output=True,
            text=True,
        )
        if run.returncode != 1 or message not in run.stderr:
            failures.append(f"file name {name!r}: exit {run.returncode}, stderr:\n{run.stderr}")
        if os.listdir(out):
            failures.append(f"file name {name!r}: wrote {os.listdir(out)}")
        shutil.rmtree(out)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("structopc")
    parser.add_argument("--torch-python")
    args = parser.parse_args()
    structopc = os.path.abspath(args.structopc)
    failures = []
    with tempfile.TemporaryDirectory() as scratch:
        check_outputs(structopc, scratch, failures, args.torch_python)
        check_file_names(structopc, scratch, failures)
    for failure in failures:
        print("FAIL " + failure)
    print(
        f"hostile text: {len(DOCS)} docs, {len(DEFAULTS)} string defaults, "
        f"{len(failures)} failures (Python {sys.version.split()[0]})"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

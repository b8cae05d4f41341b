#!/usr/bin/env python3
"""The IDL's JSON Schema (`structopc --print-json-schema`) against the IDLs.

- structopc prints exactly compiler/schema/ops.schema.json, a valid draft-07
  schema whose every key has a description;
- docs/idl-keys.md is what `--write-docs` makes from it (the descriptions
  live in one place; the docs cannot drift);
- every example, test, golden and compat-corpus IDL validates;
- every diagnostics-corpus case that is a shape error (an unknown key, a
  wrong YAML type, a missing required key) fails validation.

YAML is read as the YAML language server reads it (YAML 1.2: only
true/false are booleans, `on`/`yes` are strings).

Usage: json_schema_test.py STRUCTOPC SOURCE_ROOT [--write-docs]
"""

import json
import os
import re
import subprocess
import sys

try:
    import jsonschema
    import yaml
except ImportError as e:  # tools/requirements/tests.txt pins both
    print(f"SKIP: {e}; install tools/requirements/tests.txt")
    sys.exit(77)


class Yaml12Loader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2's booleans (true/false only)."""


Yaml12Loader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:bool"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
Yaml12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)

# First messages of diagnostics cases that are errors of shape, which a JSON
# Schema can see; the others (types, defaults, names...) need structopc.
SHAPE_ERRORS = [
    r"unknown key `",
    r"must be a mapping",
    r"must be a list",
    r"must be a single value",
    r"must be `true` or `false`",
    r"missing required key",
    r"has no type",
    r"has no `fields`",
    r"must be `TYPE`, `TYPE = DEFAULT` or a mapping",
    r"must be `identity`, `custom`",
    r"an IDL file must be a mapping",
    r"each op must be a mapping",
    r"op has no `func:`",
    r"an annotation must be a string",
    r"is not a valid identifier",
    r"has no values",
]


def walk_keys(schema, path, out):
    """Every key the schema names, with its description: (path, description)."""
    if not isinstance(schema, dict):
        return
    for key, sub in schema.get("properties", {}).items():
        out.append((f"{path}{key}", sub.get("description")))
        walk_keys(resolve(sub), f"{path}{key}.", out)
    add = schema.get("additionalProperties")
    if isinstance(add, dict):
        walk_keys(resolve(add), f"{path}NAME.", out)
    for variant in schema.get("oneOf", []):
        walk_keys(resolve(variant), path, out)
    items = schema.get("items")
    if isinstance(items, dict):
        walk_keys(resolve(items), f"{path[:-1]}[].", out)


ROOT_SCHEMA = {}


def resolve(node):
    while isinstance(node, dict) and ("$ref" in node or "allOf" in node):
        ref = node["$ref"] if "$ref" in node else node["allOf"][0]["$ref"]
        node = ROOT_SCHEMA["definitions"][ref.split("/")[-1]]
    return node


def keys_doc(schema):
    keys = []
    walk_keys(schema, "", keys)
    lines = [
        "# IDL keys",
        "",
        "<!-- Generated from compiler/schema/ops.schema.json by",
        "     `tests/json_schema/json_schema_test.py build/compiler/structopc . --write-docs`;",
        "     the test json-schema fails when this file and the schema differ. -->",
        "",
        "Every key of a `*.ops.yaml` file, as the JSON Schema of the format describes it",
        "(`structopc --print-json-schema`; [editor setup](evolution.md#editors)). `NAME` stands",
        "for a name you choose, `[]` for the items of a list.",
        "",
        "| key | meaning |",
        "| --- | --- |",
    ]
    seen = set()
    for key, description in keys:
        if key in seen:
            continue
        seen.add(key)
        lines.append(f"| `{key}` | {description.replace('|', '&#124;')} |")
    return "\n".join(lines) + "\n", keys


def idl_files(source_root):
    skip = {os.path.join(source_root, "tests", "diagnostics")}
    out = []
    for folder, dirs, names in os.walk(source_root):
        dirs[:] = sorted(
            d
            for d in dirs
            if not d.startswith((".", "build", "subprojects"))
            and os.path.join(folder, d) not in skip
        )
        out += [os.path.join(folder, n) for n in sorted(names) if n.endswith(".ops.yaml")]
    return out


def load(path):
    with open(path, encoding="utf-8") as f:
        return yaml.load(f, Loader=Yaml12Loader)


def main():
    global ROOT_SCHEMA
    structopc, source_root = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    problems = []
    printed = subprocess.run(
        [structopc, "--print-json-schema"], capture_output=True, text=True, check=True
    ).stdout
    source = open(
        os.path.join(source_root, "compiler", "schema", "ops.schema.json"), encoding="utf-8"
    ).read()
    if printed != source:
        problems.append("--print-json-schema differs from compiler/schema/ops.schema.json")
    schema = ROOT_SCHEMA = json.loads(printed)
    jsonschema.Draft7Validator.check_schema(schema)
    validator = jsonschema.Draft7Validator(schema)

    doc, keys = keys_doc(schema)
    for key, description in keys:
        if not description:
            problems.append(f"key `{key}` has no description")
    doc_path = os.path.join(source_root, "docs", "idl-keys.md")
    if "--write-docs" in sys.argv[3:]:
        with open(doc_path, "w", encoding="utf-8") as f:
            f.write(doc)
    elif not os.path.exists(doc_path) or open(doc_path, encoding="utf-8").read() != doc:
        problems.append("docs/idl-keys.md is not what the schema gives; run with --write-docs")

    files = idl_files(source_root)
    for path in files:
        errors = sorted(validator.iter_errors(load(path)), key=lambda e: list(e.path))
        for e in errors[:3]:
            problems.append(f"{os.path.relpath(path, source_root)}: {list(e.path)}: {e.message}")

    diagnostics = os.path.join(source_root, "tests", "diagnostics")
    shape_cases, other = 0, 0
    for name in sorted(os.listdir(diagnostics)):
        if not name.endswith(".stderr"):
            continue
        stem = name[: -len(".stderr")]
        idl = os.path.join(diagnostics, stem + ".ops.yaml")
        if not os.path.exists(idl):
            idl = os.path.join(diagnostics, stem, "main.ops.yaml")
        first = open(os.path.join(diagnostics, name), encoding="utf-8").readline()
        if not any(re.search(p, first) for p in SHAPE_ERRORS):
            other += 1
            continue
        try:
            data = load(idl)
        except yaml.YAMLError:
            continue  # not YAML at all: the editor reports that itself
        shape_cases += 1
        if validator.is_valid(data):
            problems.append(
                f"diagnostics/{stem}: a shape error ({first.strip()}) passes the schema"
            )

    for p in problems:
        print("FAIL " + p)
    print(
        f"{len(files)} IDLs validated, {shape_cases} shape-error diagnostics cases rejected "
        f"({other} other cases not shape errors), {len(keys)} keys described; "
        f"{len(problems)} problems"
    )
    if len(files) < 50 or shape_cases < 10:
        print("too few files or cases found")
        return 1
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The docs test: README.md and docs/*.md cannot drift from the code.

Usage:
  docs_test.py --root SRC --structopc STRUCTOPC --part static
  docs_test.py --root SRC --structopc STRUCTOPC --part examples \
      --examples-dir BUILD/idl_examples --runtime-python BUILD/runtime/python \
      --python PYTHON --work DIR --cxx CXX... -- KERNEL_CXX_FLAGS...

A fenced code block is checked when the line before its opening fence (blank
lines aside) is a marker comment, `<!-- check: KIND [ARGS] -->`
(docs/development.md, "The docs test"):

  idl FILE        the block is FILE (an IDL); `structopc --check FILE` must
                  succeed silently. Later blocks of the same page see FILE.
  idl-error FILE  `structopc --check FILE` must exit 1 with exactly the text
                  of the next fenced block on stderr.
  shell [exit=N]  `$ structopc ...` lines, each followed by its output; the
                  output must match (a line `...` matches any lines), the
                  exit status must be N (default 0). Runs beside the page's
                  IDL files.
  cpp             (part examples) all C++ blocks form one translation unit,
                  compiled with the flags of a kernel source against the
                  examples' generated headers (-fsyntax-only).
  python          (part examples) each block runs in its own interpreter,
                  beside the page's IDL files and their `structopc --emit py`
                  modules, with the examples' modules and structop's runtime
                  on PYTHONPATH and build/idl_examples and build/runtime/python
                  linked into its folder, so that the paths the docs show work.
  no-names        the block is not run, and its names are not checked (an
                  example of this test's own failure output).

Part static also checks names, in every page: each `structop::NAME` must be
used by the goldens or declared in runtime/** or compiler/** (a CMake target
in python/**'s CMake files), each `_rt.NAME` defined in the Python
runtime (runtime/python/**, whatever its files are called), each generated
name pattern in inline code (`unflatten_<Record>`, `_<op>_op`) must match
generated code in tests/golden/approved (or, for a name structopc reserves,
its literal parts must be strings of compiler/ or python/), each `NS::OP` and
`torch.ops.NS.OP` whose NS is the namespace of a known IDL (idl_examples,
tests/golden, the pages' own IDL blocks) must name an op, record or enum of
it, each relative link must name an existing file (and heading), and each
repository path in inline code (`compiler/...`, `tests/...`, ...) must exist
(checking what a split or a rename leaves behind); the option tables
of docs/cli.md and docs/development.md list exactly the options of
`structopc --help` and meson_options.txt (with their defaults). Every failure is
reported as `PAGE:LINE: what`; the exit status is 1 if any.
"""

import argparse
import concurrent.futures
import difflib
import os
import pathlib
import re
import shlex
import subprocess
import sys
import tempfile


MARKER = re.compile(r"^\s*<!--\s*check:\s*(\S+)(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)(```+|~~~+)(.*)$")


# Sections other work is writing; links to them are not checked until then.
PENDING_ANCHORS = set()


def anchors(path):
    """The anchors of a Markdown page as GitHub makes them: headings (lower
    case, punctuation dropped, spaces as `-`, repeats numbered) and `id=`s."""
    out, seen, fenced = set(), {}, False
    for text in path.read_text(encoding="utf-8").split("\n"):
        if FENCE.match(text):
            fenced = not fenced
        m = re.match(r"#+\s+(.*?)\s*#*\s*$", text)
        if m and not fenced:
            slug = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
            out.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
            seen[slug] = seen.get(slug, 0) + 1
        out |= set(re.findall(r'\bid="([^"]+)"', text))
    return out


class Block:
    def __init__(self, page, line, info, text, kind, args):
        self.page, self.line, self.info, self.text = page, line, info, text
        self.kind, self.args = kind, args

    def where(self, offset=0):
        return f"{self.page}:{self.line + offset}"


def parse_page(root, rel):
    """The fenced blocks of a page (marked or not) and its inline-code spans."""
    lines = (root / rel).read_text(encoding="utf-8").split("\n")
    blocks, spans, marker = [], [], None
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m:
            indent, fence, info = m.group(1), m.group(2), m.group(3).strip()
            body, j = [], i + 1
            while j < len(lines) and not (
                lines[j].strip().startswith(fence) and lines[j].strip().strip(fence[0]) == ""
            ):
                text = lines[j]
                body.append(text[len(indent) :] if text.startswith(indent) else text.lstrip())
                j += 1
            kind, args = (marker.group(1), marker.group(2).split()) if marker else (None, [])
            blocks.append(Block(rel, i + 2, info, "\n".join(body) + "\n", kind, args))
            marker = None
            i = j + 1
            continue
        mk = MARKER.match(lines[i])
        if mk:
            marker = mk
        elif lines[i].strip():
            if marker:
                raise SystemExit(
                    f"{rel}:{i + 1}: a check marker must come right before a code block"
                )
            for s in re.finditer(r"(`+)(.+?)\1", lines[i]):
                spans.append((i + 1, s.group(2).strip()))
        i += 1
    if marker:
        raise SystemExit(f"{rel}: a check marker at the end of the page has no code block")
    return blocks, spans


def pages(root):
    return ["README.md"] + sorted(str(p.relative_to(root)) for p in (root / "docs").glob("*.md"))


def read_tree(root, folders, suffixes):
    out = {}
    for folder in folders:
        for p in sorted((root / folder).rglob("*")):
            if p.is_file() and (not suffixes or p.suffix in suffixes or p.name.endswith(".py.in")):
                try:
                    out[str(p.relative_to(root))] = p.read_text(encoding="utf-8")
                except UnicodeDecodeError:
                    pass
    return out


def run(cmd, cwd, env=None):
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def match_output(expected, actual):
    """Expected lines against actual ones; a line `...` matches any number of lines."""
    exp, act = expected.rstrip("\n").split("\n"), actual.rstrip("\n").split("\n")

    def go(i, j):
        if i == len(exp):
            return j == len(act)
        if exp[i] == "...":
            return any(go(i + 1, k) for k in range(j, len(act) + 1))
        return j < len(act) and exp[i].rstrip() == act[j].rstrip() and go(i + 1, j + 1)

    return go(0, 0)


class Checker:
    def __init__(self, args):
        self.args = args
        self.root = pathlib.Path(args.root).resolve()
        self.failures = []
        self.work = pathlib.Path(args.work or tempfile.mkdtemp(prefix="structop-docs-"))
        self.parsed = {rel: parse_page(self.root, rel) for rel in pages(self.root)}

    def fail(self, where, message):
        self.failures.append(f"{where}: {message}")

    def page_dir(self, rel):
        d = self.work / rel.replace("/", "_").replace(".md", "")
        d.mkdir(parents=True, exist_ok=True)
        return d

    # --- IDL and shell blocks -------------------------------------------------

    def idl_blocks(self, emit_py):
        structopc = self.args.structopc
        count = 0
        for rel, (blocks, _) in self.parsed.items():
            d = self.page_dir(rel)
            for k, b in enumerate(blocks):
                if b.kind not in ("idl", "idl-error", "shell"):
                    if b.kind not in (None, "cpp", "python", "no-names"):
                        self.fail(b.where(-1), f"unknown marker `check: {b.kind}`")
                    continue
                count += 1
                if b.kind in ("idl", "idl-error"):
                    if len(b.args) != 1:
                        self.fail(b.where(-1), f"`check: {b.kind}` needs a file name")
                        continue
                    (d / b.args[0]).parent.mkdir(parents=True, exist_ok=True)
                    (d / b.args[0]).write_text(b.text, encoding="utf-8")
                    r = run([structopc, "--check", b.args[0]], d)
                    if b.kind == "idl":
                        if r.returncode != 0 or r.stderr or r.stdout:
                            self.fail(
                                b.where(),
                                f"structopc --check {b.args[0]} (exit {r.returncode}):\n"
                                + r.stderr
                                + r.stdout,
                            )
                        elif emit_py:
                            r = run([structopc, "--emit", "py", b.args[0]], d)
                            if r.returncode:
                                self.fail(b.where(), "structopc --emit py: " + r.stderr)
                    else:
                        shown = blocks[k + 1].text if k + 1 < len(blocks) else None
                        if shown is None:
                            self.fail(
                                b.where(),
                                "`check: idl-error` needs the diagnostic as the next block",
                            )
                        elif r.returncode != 1 or r.stderr != shown:
                            self.fail(
                                blocks[k + 1].where(),
                                f"structopc --check {b.args[0]} exited {r.returncode} and said:\n"
                                f"{r.stderr}which is not the diagnostic shown",
                            )
                else:
                    self.shell_block(b, d)
        return count

    def shell_block(self, b, d):
        status = 0
        for a in b.args:
            if a.startswith("exit="):
                status = int(a[5:])
        lines = b.text.rstrip("\n").split("\n")
        cmds = [i for i, line in enumerate(lines) if line.startswith("$ ")]
        if not cmds or cmds[0] != 0:
            self.fail(b.where(), "a `check: shell` block starts with a `$ structopc ...` line")
            return
        for n, i in enumerate(cmds):
            end = cmds[n + 1] if n + 1 < len(cmds) else len(lines)
            argv = shlex.split(lines[i][2:])
            if argv[0] != "structopc":
                self.fail(b.where(i), "a `check: shell` block runs structopc only")
                continue
            r = subprocess.run(
                [self.args.structopc] + argv[1:],
                cwd=d,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=60,
            )
            expected = "\n".join(lines[i + 1 : end]) + "\n"
            if r.returncode != status or not match_output(expected, r.stdout):
                diff = "".join(
                    difflib.unified_diff(
                        expected.splitlines(True),
                        r.stdout.splitlines(True),
                        "the page",
                        "structopc",
                    )
                )
                self.fail(
                    b.where(i),
                    f"`{lines[i][2:]}` exited {r.returncode} (the page expects "
                    f"{status}); its output against the page's (`...` lines match any lines):\n"
                    + diff,
                )

    # --- names ---------------------------------------------------------------

    def known_idls(self):
        """{namespace: set of op, record and enum names} of every IDL we know."""
        import yaml  # only here: part examples runs where PyYAML may be missing

        known = {}
        texts = [
            p.read_text(encoding="utf-8")
            for p in sorted(self.root.glob("idl_examples/**/*.ops.yaml"))
        ]
        texts += [
            p.read_text(encoding="utf-8")
            for p in sorted(self.root.glob("tests/golden/**/*.ops.yaml"))
        ]
        for blocks, _ in self.parsed.values():
            texts += [b.text for b in blocks if b.kind == "idl"]
        for text in texts:
            try:
                idl = yaml.safe_load(text)
            except yaml.YAMLError:
                continue
            if not isinstance(idl, dict) or "namespace" not in idl:
                continue
            names = set((idl.get("records") or {}).keys()) | set((idl.get("enums") or {}).keys())
            for op in idl.get("ops") or []:
                names.add(re.match(r"\s*([\w]+)", str(op.get("func", ""))).group(1))
            for ns in {str(idl["namespace"]), str(idl.get("cpp_namespace", idl["namespace"]))}:
                known.setdefault(ns, set()).update(names)
        return known

    def names(self):
        cpp_sources = "\n".join(
            read_tree(
                self.root, ["runtime/include", "runtime/src", "compiler"], {".h", ".cpp", ".cu"}
            ).values()
        )
        cmake = "\n".join(read_tree(self.root, ["python"], {".cmake", ".in"}).values())
        py_runtime = read_tree(self.root, ["runtime/python"], {".py", ".in"})
        # The environment variables the scripts and the `structop` package read.
        tool_sources = "\n".join(
            read_tree(self.root, ["scripts", "python/structop"], {".sh", ".py"}).values()
        )
        goldens = "\n".join(read_tree(self.root, ["tests/golden/approved"], None).values())
        compiler = "\n".join(
            read_tree(self.root, ["compiler", "python"], {".h", ".cpp", ".py"}).values()
        )
        compiler_strings = set(re.findall(r'"((?:[^"\\\n]|\\.)*)"', compiler))
        known = self.known_idls()
        py_defined = set()
        for text in py_runtime.values():
            py_defined |= set(re.findall(r"^\s*(?:async\s+)?(?:def|class)\s+(\w+)", text, re.M))
            py_defined |= set(re.findall(r"^\s*(\w+)\s*(?::[^=\n]*)?=(?!=)", text, re.M))
            for imported in re.findall(r"^\s*from\s+\S+\s+import\s+(\([^)]*\)|[^\n]*)", text, re.M):
                py_defined |= set(
                    re.findall(r"\b(\w+)\b(?!\s+as\b)", imported.replace(" as ", " as_ "))
                )
        checked = 0

        def check_text(rel, line, text, inline):
            nonlocal checked
            before = checked
            for m in re.finditer(r"\bstructop::([A-Za-z_]\w*)", text):
                checked += 1
                name = m.group(1)
                declared = (
                    r"(\b(struct|class|using|enum|enum class|define)\s+" + name + r"\b"
                    r"|\b" + name + r"\s*(<[^;{}()]*>)?\s*\()"
                )
                if not (
                    re.search(r"\bstructop::" + name + r"\b", goldens + cmake)
                    or re.search(declared, cpp_sources)
                ):
                    self.fail(
                        f"{rel}:{line}",
                        f"`structop::{name}` is not declared in runtime/ or compiler/, "
                        "nor used by the goldens (tests/golden/approved)",
                    )
            for m in re.finditer(r"(?<![\w.])_rt\.([A-Za-z_]\w*)", text):
                checked += 1
                if m.group(1) not in py_defined:
                    self.fail(
                        f"{rel}:{line}",
                        f"`_rt.{m.group(1)}` is not defined in the Python runtime "
                        "(runtime/python/)",
                    )
            for m in re.finditer(r"(?<![\w:.])([a-z_]\w*)::([A-Za-z_]\w*)", text):
                ns, name = m.groups()
                if ns in known:
                    checked += 1
                    base = re.sub(r"(Grad|_grads|_grad_slot)$", "", name)
                    if name not in known[ns] and base not in known[ns] and name != "kernels":
                        self.fail(
                            f"{rel}:{line}",
                            f"`{ns}::{name}`: no op, record or enum `{name}` in an IDL "
                            f"of namespace {ns}",
                        )
            for m in re.finditer(r"\btorch\.ops\.(\w+)\.(\w+)", text):
                ns, name = m.groups()
                if ns in known:
                    checked += 1
                    if name not in known[ns]:
                        self.fail(
                            f"{rel}:{line}",
                            f"`torch.ops.{ns}.{name}`: no op `{name}` in namespace {ns}",
                        )
            if inline and re.fullmatch(r"_structop\w*|_IDL_\w+|_rt|STRUCTOPC?_[A-Z0-9_]+", text):
                # A private name of generated code (`_structop_fields`, `_IDL_STEM`), a
                # macro, or an environment variable of the scripts or the package.
                checked += 1
                word = re.compile(r"(?<!\w)" + re.escape(text) + r"(?!\w)")
                if not (
                    word.search(goldens)
                    or word.search(cpp_sources)
                    or any(word.search(t) for t in py_runtime.values())
                    or word.search(tool_sources)
                ):
                    self.fail(
                        f"{rel}:{line}",
                        f"`{text}` is not in the goldens, runtime/, compiler/, scripts/ "
                        "or python/structop/",
                    )
            if (
                inline
                and re.fullmatch(r"[\w<>]*<[A-Za-z ]+>[\w<>]*", text)
                and re.search(r"[\w]", re.sub(r"<[^>]*>", "", text))
            ):
                checked += 1
                parts = re.split(r"<[A-Za-z ]+>", text)
                pattern = (
                    r"(?<!\w)" + r"[A-Za-z_]\w*?".join(re.escape(p) for p in parts) + r"(?!\w)"
                )
                if not re.search(pattern, goldens) and not all(
                    any(p in s for s in compiler_strings) for p in parts if p
                ):
                    self.fail(
                        f"{rel}:{line}",
                        f"`{text}`: no such name in the goldens (tests/golden/approved), "
                        "nor its parts among the strings of compiler/ or python/",
                    )

            if self.args.verbose and checked > before:
                print(f"{rel}:{line}: checked {text.strip()}")

        tops = (
            "compiler/",
            "runtime/",
            "tests/",
            "idl_examples/",
            "python/",
            "tools/",
            "scripts/",
            "docs/",
        )

        def check_path(rel, line, span):
            """A path of this repository in inline code names a file or folder that exists."""
            nonlocal checked
            m = re.fullmatch(r"([\w.-]+/)+[\w.{},*-]*", span)
            if not m or not span.startswith(tops):
                return
            checked += 1
            brace = re.search(r"\{([^}]*)\}", span)
            variants = (
                [span[: brace.start()] + v + span[brace.end() :] for v in brace.group(1).split(",")]
                if brace
                else [span]
            )
            for v in variants:
                if not list(self.root.glob(v.rstrip("/"))):
                    self.fail(f"{rel}:{line}", f"`{span}`: {v} does not exist")

        for rel, (blocks, spans) in self.parsed.items():
            for line, span in spans:
                check_text(rel, line, span, True)
                check_path(rel, line, span)
            for b in blocks:
                if b.kind == "no-names":
                    continue
                for k, text in enumerate(b.text.split("\n")):
                    check_text(rel, b.line + k, text, False)
            # Relative links name files that exist, and headings of pages that exist.
            for n, text in enumerate((self.root / rel).read_text(encoding="utf-8").split("\n"), 1):
                for m in re.finditer(r"\]\(([^)\s]+)\)", re.sub(r"(`+).+?\1", "", text)):
                    target, _, anchor = m.group(1).partition("#")
                    if re.match(r"[a-z]+:", target):
                        continue
                    checked += 1
                    path = ((self.root / rel).parent / target) if target else (self.root / rel)
                    if not path.exists():
                        self.fail(f"{rel}:{n}", f"link to {target}: no such file")
                    elif anchor and path.suffix == ".md":
                        page = str(path.resolve().relative_to(self.root))
                        if (
                            anchor not in anchors(path)
                            and f"{page}#{anchor}" not in PENDING_ANCHORS
                        ):
                            self.fail(
                                f"{rel}:{n}",
                                f"link to {m.group(1)}: {page} has no heading `{anchor}`",
                            )
        return checked

    # --- tables that list what the code has ------------------------------------

    def tables(self):
        """docs/cli.md's option table against `structopc --help`, and
        docs/development.md's option table against meson_options.txt: each
        lists every option, and only options that exist."""
        checked = 0
        helptext = run([self.args.structopc, "--help"], self.root).stdout
        in_help = set(re.findall(r"(?<![\w-])(--[a-z][\w-]*|-[a-zA-Z])\b", helptext)) - {
            "-h",
            "--help",
        }
        cli = (self.root / "docs/cli.md").read_text(encoding="utf-8").split("\n")
        in_doc = {}
        for n, text in enumerate(cli, 1):
            m = re.match(r"\|\s*`([^`]*)`", text)
            if m:
                for opt in re.findall(r"(?<![\w-])(--[a-z][\w-]*|-[a-zA-Z])\b", m.group(1)):
                    in_doc.setdefault(opt, n)
        for opt, n in sorted(in_doc.items()):
            checked += 1
            if opt not in in_help and opt != "--help":
                self.fail(f"docs/cli.md:{n}", f"option {opt} is not in `structopc --help`")
        for opt in sorted(in_help - set(in_doc)):
            checked += 1
            self.fail(
                "docs/cli.md", f"`structopc --help` has {opt}, which the option table does not list"
            )
        options = dict(
            re.findall(
                r"option\('(\w+)',[^)]*?value:\s*'?([\w.]+)'?",
                (self.root / "meson_options.txt").read_text(encoding="utf-8"),
                re.S,
            )
        )
        dev = (self.root / "docs/development.md").read_text(encoding="utf-8").split("\n")
        listed = {}
        for n, text in enumerate(dev, 1):
            m = re.match(r"\s*\|\s*`(\w+)`\s*\|\s*`([^`]*)`\s*\|", text)
            if m:
                listed[m.group(1)] = (n, m.group(2))
        for name, (n, default) in sorted(listed.items()):
            checked += 1
            if name not in options:
                self.fail(
                    f"docs/development.md:{n}", f"option `{name}` is not in meson_options.txt"
                )
            elif options[name] != default:
                self.fail(
                    f"docs/development.md:{n}",
                    f"option `{name}`: meson_options.txt's default is "
                    f"`{options[name]}`, the page says `{default}`",
                )
        for name in sorted(set(options) - set(listed)):
            checked += 1
            self.fail(
                "docs/development.md",
                f"option `{name}` of meson_options.txt is not in the option table",
            )
        return checked

    # --- C++ and Python blocks --------------------------------------------------

    def cpp_blocks(self):
        tu = ["// The C++ blocks of the docs, one translation unit (tests/docs/docs_test.py)."]
        blocks = [b for bs, _ in self.parsed.values() for b in bs if b.kind == "cpp"]
        for b in blocks:
            tu.append(f'#line {b.line} "{b.page}"')
            tu.append(b.text)
        path = self.work / "docs_blocks.cpp"
        path.write_text("\n".join(tu), encoding="utf-8")
        r = run(
            self.args.cxx
            + self.args.flags
            + ["-I" + self.args.examples_dir, "-fsyntax-only", str(path)],
            self.root,
        )
        if r.returncode or r.stderr:
            self.fail(
                "C++ blocks", "do not compile against the examples' generated headers:\n" + r.stderr
            )
        return len(blocks)

    def python_blocks(self):
        jobs = []
        for rel, (blocks, _) in self.parsed.items():
            if not any(b.kind == "python" for b in blocks):
                continue
            d = self.page_dir(rel)
            for link, target in (
                ("build/idl_examples", self.args.examples_dir),
                ("build/runtime/python", self.args.runtime_python),
            ):
                (d / link).parent.mkdir(parents=True, exist_ok=True)
                if not (d / link).exists():
                    os.symlink(os.path.abspath(target), d / link)
            for b in blocks:
                if b.kind == "python":
                    script = d / f"block_{b.line}.py"
                    script.write_text(b.text, encoding="utf-8")
                    jobs.append((b, script, d))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            [os.path.abspath(self.args.examples_dir), os.path.abspath(self.args.runtime_python)]
            + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
        )

        def one(job):
            b, script, d = job
            return b, script, run([self.args.python, script.name], d, env)

        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            for b, script, r in pool.map(one, jobs):
                if r.returncode:
                    # Point at the page: the block's line k is page line b.line + k - 1.
                    text = re.sub(
                        r'File "[^"]*' + re.escape(script.name) + r'", line (\d+)',
                        lambda m: f'File "{b.page}", line {b.line + int(m.group(1)) - 1}',
                        r.stderr,
                    )
                    self.fail(b.where(), f"the Python block failed (exit {r.returncode}):\n" + text)
        return len(jobs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", required=True)
    ap.add_argument("--structopc", required=True)
    ap.add_argument("--part", choices=["static", "examples"], required=True)
    ap.add_argument("--work")
    ap.add_argument("--verbose", action="store_true", help="list every name checked")
    ap.add_argument("--examples-dir")
    ap.add_argument("--runtime-python")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--cxx", nargs="+", default=[])
    ap.add_argument("flags", nargs="*")
    args = ap.parse_args()
    args.structopc = os.path.abspath(args.structopc)
    c = Checker(args)
    if args.part == "static":
        n_idl = c.idl_blocks(emit_py=False)
        n_names = c.names() + c.tables()
        summary = f"{n_idl} IDL and shell blocks, {n_names} names and links"
    else:
        c.idl_blocks(emit_py=True)
        n_cpp = c.cpp_blocks()
        n_py = c.python_blocks()
        summary = f"{n_cpp} C++ blocks (one translation unit), {n_py} Python blocks"
    pages_n = len(c.parsed)
    if c.failures:
        print("\n".join(c.failures), file=sys.stderr)
        print(f"docs: {len(c.failures)} failure(s) in {pages_n} pages ({summary})", file=sys.stderr)
        return 1
    print(f"docs: {pages_n} pages checked: {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

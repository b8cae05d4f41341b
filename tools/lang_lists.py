#!/usr/bin/env python3
"""Regenerates or checks structopc's lists of target-language names
(compiler/lang/lists/*.inc) from the headers and the Python installed here.

structopc does not link libtorch, yet the names it generates meet the C and
C++ libraries, libtorch's headers and Python. Three lists come from the
installation, not from a standard, so they are read from it:

  cpp_macros.inc       the macros a generated file (or a kernel source that
                       includes it) sees: `g++ -std=gnu++17 -dM -E` over the
                       probe below, plus the predefined macros of the 32-bit
                       target (`i386`); names with `__`, beginning with `_`,
                       or with a macro prefix of libtorch or structop
                       (lang/cpp_names.cpp covers those) are left out
  cpp_globals.inc      the names declared at global scope (functions,
                       variables, types, enumerators, namespaces) by the same
                       probe, from GCC's own tree dump of it
                       (`-fdump-lang-raw`: the global namespace's
                       declaration chain), without GCC's built-ins that no
                       header declares
  python_keywords.inc  keyword.kwlist of this Python

The probe is the C++ standard library (<bits/stdc++.h>) and the runtime
headers generated X.ops.cpp files include, with the compile flags given
after `--` (the flags of a kernel file: torch's include folders, the
runtime's include folder); without flags they are computed with
python/structop/torch_config.py for --python's torch.

The lists differ between installations (glibc 2.36 and 2.41, g++ 12 and 14,
torch 2.13 and 2.6 on the two tested legs), so each list records the
installations it was generated on (`// installations:`), the names all of
them give, and per installation the names only it gives (`// only on:`); the
compiler uses the union. --check (the default; the lang-lists test) compares
this installation's names with what the list records for it and fails on any
difference either way, so a hand edit fails; on an installation the list does
not record, it only fails when a name found here is missing. --update records
this installation (adding or replacing its names); --replace forgets the
others. After an --update on one leg, run it on the other:
`bash scripts/debian13.sh python3 tools/lang_lists.py --update`.

Usage: lang_lists.py [--check | --update | --replace] [--cxx WORD]...
                     [--python PYTHON] [--only NAME]... [-- FLAGS...]
"""

import argparse
import keyword
import os
import re
import shlex
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LISTS_DIR = os.path.join(ROOT, "compiler", "lang", "lists")

# lang/cpp_names.cpp reserves every name with these prefixes.
MACRO_PREFIXES = ("AT_", "C10_", "CAFFE2_", "STRUCTOP_", "TORCH_")

PROBE = """\
#include <bits/stdc++.h>
#include <structop/registration.h>
#include <structop/convert.h>
"""

HEADERS = {
    "cpp_macros": (
        "The predefined macros a generated file sees: `g++ -std=gnu++17 -dM -E` over the\n"
        "C++ standard library and the runtime headers generated code includes (with\n"
        "torch's), and the 32-bit target's (`i386`), on every tested installation;\n"
        "without names with `__` or beginning with `_`, and without the prefixes\n"
        "lang/cpp_names.cpp reserves (AT_ C10_ CAFFE2_ STRUCTOP_ TORCH_)."
    ),
    "cpp_globals": (
        "The names declared at global scope by the C++ standard library and the runtime\n"
        "headers generated code includes (with torch's), from GCC's tree dump\n"
        "(-fdump-lang-raw), on every tested installation; without names with `__` or\n"
        "beginning with `_`."
    ),
    "python_keywords": "Python's keywords (keyword.kwlist).",
}


def reserved(name):
    return "__" in name or name.startswith("_")


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"lang_lists.py: {shlex.join(cmd)} failed:\n{r.stderr[-4000:]}")
    return r.stdout


def macro_names(defines):
    names = set()
    for line in defines.splitlines():
        m = re.match(r"#define ([A-Za-z_][A-Za-z0-9_]*)", line)
        if m and not reserved(m.group(1)) and not m.group(1).startswith(MACRO_PREFIXES):
            names.add(m.group(1))
    return names


def cpp_macros(cxx, flags, work):
    probe = os.path.join(work, "probe.cpp")
    names = macro_names(run(cxx + flags + ["-std=gnu++17", "-dM", "-E", probe]))
    # The 32-bit target's own predefined macros (no headers needed).
    names |= macro_names(run(cxx + ["-m32", "-std=gnu++17", "-dM", "-E", "-x", "c++", os.devnull]))
    return names


def dump_globals(path):
    """Names of the global namespace's declarations in a -fdump-lang-raw file.

    The dump is a list of nodes `@N kind field: value ...`, continued on
    indented lines. Node @1 is the global namespace: its `dcls` is the first
    declaration, each declaration's `chain` the next; a declaration's `name`
    is an identifier_node whose `strg` has `lngt` characters."""
    name_of, chain, strg, builtin = {}, {}, {}, set()
    first = None
    field = re.compile(rb"\b(name|chain|dcls): @(\d+)")

    def node(num, kind, text):
        nonlocal first
        if kind == b"identifier_node":
            i, j = text.find(b"strg: "), text.rfind(b"lngt: ")
            if i >= 0 and j >= 0:
                strg[num] = text[i + 6 : i + 6 + int(text[j + 6 :].split()[0])].decode(
                    errors="replace"
                )
            return
        if b"srcp: <built-in>" in text:
            builtin.add(num)
        for key, ref in field.findall(text):
            if key == b"name":
                name_of.setdefault(num, int(ref))
            elif key == b"chain":
                chain[num] = int(ref)
            elif num == 1:
                first = int(ref)

    num, kind, parts = None, None, []
    with open(path, "rb") as f:
        for raw in f:
            if raw[:1] == b"@":
                if num is not None:
                    node(num, kind, b" ".join(parts))
                head, _, rest = raw.partition(b" ")
                num = int(head[1:])
                kind, _, rest = rest.lstrip().partition(b" ")
                parts = [rest]
            else:
                parts.append(raw)
        if num is not None:
            node(num, kind, b" ".join(parts))
    names, seen, d = set(), set(), first
    while d is not None and d not in seen:
        seen.add(d)
        n = name_of.get(d)
        if n in strg and d not in builtin:
            names.add(strg[n])
        d = chain.get(d)
    return {n for n in names if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", n) and not reserved(n)}


def cpp_globals(cxx, flags, work):
    probe = os.path.join(work, "probe.cpp")
    dump = os.path.join(work, "probe.raw")
    run(cxx + flags + ["-std=gnu++17", "-fsyntax-only", f"-fdump-lang-raw={dump}", probe])
    names = dump_globals(dump)
    if not names:
        sys.exit("lang_lists.py: no global name in GCC's dump (is the compiler GCC?)")
    return names


def python_keywords(*_):
    return set(keyword.kwlist)


PRODUCERS = {
    "cpp_macros": cpp_macros,
    "cpp_globals": cpp_globals,
    "python_keywords": python_keywords,
}


def list_path(name):
    return os.path.join(LISTS_DIR, name + ".inc")


SECTION = re.compile(r'(?:// only on: ([^\n]*)\n)?R"\((.*?)\)"', re.S)


def read_list(name):
    """{installation: names it gives} from a list file (see write_list)."""
    text = open(list_path(name), encoding="utf-8").read()
    m = re.search(r"^// installations: (.*)$", text, re.M)
    installations = m.group(1).split("; ") if m else []
    common, only = None, {}
    for label, words in SECTION.findall(text):
        if label:
            only[label] = set(words.split())
        elif common is None:
            common = set(words.split())
        else:
            sys.exit(f"lang_lists.py: {list_path(name)}: a second unlabelled list")
    if common is None:
        sys.exit(f"lang_lists.py: {list_path(name)} holds no raw string literal")
    unknown = set(only) - set(installations)
    if unknown:
        sys.exit(
            f"lang_lists.py: {list_path(name)}: sections of unrecorded installations {unknown}"
        )
    return {i: common | only.get(i, set()) for i in installations} or {"": common}


def words_literal(names):
    lines, line = [], ""
    for n in sorted(names):
        if line and len(line) + 1 + len(n) > 100:
            lines.append(line)
            line = n
        else:
            line = f"{line} {n}" if line else n
    lines.append(line)
    return 'R"(\n' + "\n".join(lines) + '\n)"'


def write_list(name, per_installation):
    """The names every installation gives, then per installation the names
    only it gives: raw string literals separated by commas, which
    compiler/lang/*.cpp include in a WordList's initializer list."""
    installations = sorted(per_installation)
    common = set.intersection(*per_installation.values())
    total = set.union(*per_installation.values())
    parts = [words_literal(common)]
    for i in installations:
        only = per_installation[i] - common
        if only:
            parts.append(f"// only on: {i}\n" + words_literal(only))
    header = "".join(f"// {h}\n" for h in HEADERS[name].splitlines())
    text = (
        f"{header}// Generated by tools/lang_lists.py (do not edit: the lang-lists test compares):\n"
        f"// {len(total)} names, sorted; first the names every installation below gives,\n"
        f"// then the names only one gives.\n"
        f"// installations: {'; '.join(installations)}\n" + ",\n".join(parts) + "\n"
    )
    with open(list_path(name), "w", encoding="utf-8") as f:
        f.write(text)


def installation(cxx, python, flags_given):
    """What the lists depend on: the C library, the compiler, torch, Python."""
    libc = " ".join(os.confstr("CS_GNU_LIBC_VERSION").split())
    gxx = run(cxx + ["-dumpfullversion", "-dumpversion"]).strip().split(".")[0]
    if flags_given:
        torch = "torch from the flags given"
    else:
        out = run([python, os.path.join(ROOT, "python", "structop", "torch_config.py")])
        version = dict(line.partition("=")[::2] for line in out.splitlines()).get("version", "?")
        torch = "torch " + version.split("+")[0]
    py = run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"]).strip()
    return f"{libc}, g++ {gxx}, {torch}, python {py}"


def torch_flags(python):
    out = run([python, os.path.join(ROOT, "python", "structop", "torch_config.py")])
    flags = ["-I" + os.path.join(ROOT, "runtime", "include")]
    for line in out.splitlines():
        key, _, value = line.partition("=")
        if key == "include":
            flags.append("-isystem" + value)
        elif key == "cxx11_abi":
            flags.append(f"-D_GLIBCXX_USE_CXX11_ABI={value}")
    return flags


def main():
    argv = sys.argv[1:]
    flags = []
    if "--" in argv:
        i = argv.index("--")
        argv, flags = argv[:i], argv[i + 1 :]
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_const", dest="mode", const="check")
    mode.add_argument("--update", action="store_const", dest="mode", const="update")
    mode.add_argument("--replace", action="store_const", dest="mode", const="replace")
    p.add_argument("--cxx", action="append", help="the C++ compiler (GCC), one word per --cxx")
    p.add_argument("--python", default=sys.executable, help="for torch's flags when none follow --")
    p.add_argument("--only", action="append", choices=sorted(PRODUCERS))
    a = p.parse_args(argv)
    cxx = [w for w in (a.cxx or ["g++"]) if os.path.basename(w) != "ccache"]
    flags_given = flags
    if not flags:
        flags = torch_flags(a.python)
    here = installation(cxx, a.python, bool(flags_given))
    print(f"this installation: {here}")
    failed = False
    with tempfile.TemporaryDirectory() as work:
        with open(os.path.join(work, "probe.cpp"), "w") as f:
            f.write(PROBE)
        for name in a.only or sorted(PRODUCERS):
            failed |= not one_list(name, PRODUCERS[name](cxx, flags, work), here, a.mode)
    return 1 if failed else 0


def one_list(name, found, here, mode):
    """Checks or writes list `name` given what this installation found."""
    per = read_list(name)
    rel = os.path.relpath(list_path(name), ROOT)
    if mode in ("update", "replace"):
        per = {here: found} if mode == "replace" else {**per, here: found}
        per.pop("", None)  # an unlabelled list of unknown origin
        write_list(name, per)
        print(f"{name}: {len(found)} names here; {len(set.union(*per.values()))} written to {rel}")
        return True
    listed = per.get(here)
    if listed is None:
        # Not a recorded installation: its names must be listed (else the
        # compiler misses a clash here), others may be listed too.
        listed = set.union(*per.values())
        missing = sorted(found - listed)
        print(
            f"{name}: {len(found)} names here; this installation is not recorded in {rel}, "
            f"so only checked for names missing from it"
        )
        extra = []
    else:
        missing, extra = sorted(found - listed), sorted(listed - found)
        print(f"{name}: {len(found)} names here, {len(listed)} listed for this installation")
    if missing:
        print(f"  missing from {rel}: {' '.join(missing)}")
    if extra:
        print(f"  in {rel} for this installation but not found here: {' '.join(extra)}")
    if missing or extra:
        print(
            "  (the list is generated: run tools/lang_lists.py --update here and review the diff)"
        )
    return not missing and not extra


if __name__ == "__main__":
    sys.exit(main())

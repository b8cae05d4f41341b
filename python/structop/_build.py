"""Compiles C++ (and CUDA) sources with ninja: the runtime library and
structop.load's extensions.

One build.ninja per build folder: each source compiled to an object (with a
depfile, so ninja recompiles what an edited header reaches), then one
archive (ar) or one shared library (the C++ compiler). Commands are
quoted for /bin/sh; paths are escaped for ninja.
"""

import contextlib
import os
import shlex
import shutil
import subprocess

from . import BuildError

CUDA_SUFFIXES = (".cu",)


def find_ninja():
    """ninja from the `ninja` Python package, else from PATH."""
    try:
        import ninja  # the PyPI package: ninja.BIN_DIR holds the executable

        path = os.path.join(ninja.BIN_DIR, "ninja")
        if os.access(path, os.X_OK):
            return path
    except Exception:
        pass
    found = shutil.which("ninja")
    if found:
        return found
    raise BuildError(
        "structop: ninja is needed to compile (pip install ninja, or your "
        "distribution's ninja-build package)"
    )


def find_cuda_home():
    """The CUDA toolkit's folder (bin/nvcc, include/, lib64/): $CUDA_HOME or
    $CUDA_PATH, else the toolkit of the nvcc on PATH (a wrapper script there
    is looked through by finding include/cuda_runtime.h), else
    /usr/local/cuda; None when there is no nvcc."""
    candidates = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")]
    on_path = shutil.which("nvcc")
    if on_path:
        candidates.append(os.path.dirname(os.path.dirname(os.path.realpath(on_path))))
    candidates.append("/usr/local/cuda")
    for home in candidates:
        if (
            home
            and os.access(os.path.join(home, "bin", "nvcc"), os.X_OK)
            and os.path.exists(os.path.join(home, "include", "cuda_runtime.h"))
        ):
            return home
    return None


def _escape_path(path):
    """A path as ninja reads it in a build line."""
    return path.replace("$", "$$").replace(" ", "$ ").replace(":", "$:")


def _command(words):
    return " ".join(shlex.quote(w) for w in words)


def write_ninja(
    build_dir,
    *,
    cxx,
    cxxflags,
    sources,
    output,
    kind,
    ldflags=(),
    nvcc=None,
    cuda_flags=(),
    link_inputs=(),
):
    """Writes build_dir/build.ninja. sources: absolute paths (.cu ones go to
    nvcc); output: the archive (kind "static") or shared library (kind
    "shared") to make, relative to build_dir; link_inputs: static libraries
    linked after the objects (and rebuilt-on-change dependencies)."""
    lines = [
        "# Written by structop; rewritten on every build.",
        "ninja_required_version = 1.3",
        "",
        "rule cxx",
        f"  command = {_command(cxx)} -MMD -MF $out.d {_command(cxxflags)} -c $in -o $out",
        "  depfile = $out.d",
        "  deps = gcc",
        "  description = CXX $in",
        "",
    ]
    if nvcc:
        lines += [
            "rule nvcc",
            f"  command = {_command([nvcc])} -MD -MF $out.d {_command(cuda_flags)} -c $in -o $out",
            "  depfile = $out.d",
            "  deps = gcc",
            "  description = NVCC $in",
            "",
        ]
    if kind == "static":
        ar = shlex.split(os.environ.get("AR") or "ar")
        lines += [
            "rule archive",
            f"  command = rm -f $out && {_command(ar)} rcs $out $in",
            "  description = AR $out",
            "",
        ]
    else:
        lines += [
            "rule link",
            f"  command = {_command(cxx)} -shared -o $out $in {_command(ldflags)}",
            "  description = LINK $out",
            "",
        ]
    objects = []
    for i, src in enumerate(sources):
        stem = os.path.basename(src)
        obj = f"obj/{i}-{stem}.o"
        rule = "nvcc" if src.endswith(CUDA_SUFFIXES) else "cxx"
        if rule == "nvcc" and not nvcc:
            raise BuildError(
                f"structop: {src} is a CUDA source but nvcc was not found "
                "(set CUDA_HOME, or put nvcc on PATH)"
            )
        lines.append(f"build {_escape_path(obj)}: {rule} {_escape_path(src)}")
        objects.append(obj)
    inputs = " ".join(_escape_path(o) for o in objects)
    if kind == "static":
        lines.append(f"build {_escape_path(output)}: archive {inputs}")
    else:
        extra = " ".join(_escape_path(p) for p in link_inputs)
        lines.append(f"build {_escape_path(output)}: link {inputs} {extra}".rstrip())
    # `objects`: everything but the archive or link (jit.py compiles the
    # sources while the runtime library is built).
    lines.append(f"build objects: phony {inputs}")
    lines.append(f"default {_escape_path(output)}")
    text = "\n".join(lines) + "\n"
    path = os.path.join(build_dir, "build.ninja")
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return
    except OSError:
        pass
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


IN_PROGRESS = ".in-progress"


@contextlib.contextmanager
def build_folder(build_dir):
    """Marks build_dir while a build works in it (the caller holds its lock).

    A mark left from an earlier build means that build was killed (nobody
    else builds here): its objects or copied sources may be cut short, so
    the folder is emptied first and this build starts clean. The mark is
    removed when the build finishes, failed or not (a failed compiler
    command leaves no output behind); only a build that dies keeps it."""
    marker = os.path.join(build_dir, IN_PROGRESS)
    if os.path.exists(marker):
        shutil.rmtree(build_dir)
    os.makedirs(os.path.join(build_dir, "obj"), exist_ok=True)
    with open(marker, "w", encoding="utf-8") as f:
        f.write(f"{os.getpid()}\n")
    try:
        yield
    except Exception:  # the build failed, its process lives on: nothing is cut short
        os.unlink(marker)
        raise
    os.unlink(marker)


def run_ninja(build_dir, verbose=False, what="build", targets=(), nice=False):
    """Runs ninja in build_dir (its default target, or `targets`), at a lower
    CPU priority with `nice` (when the program is there); raises BuildError
    with its output on failure."""
    cmd = [find_ninja(), "-C", build_dir, *targets]
    if nice and shutil.which("nice"):
        cmd = ["nice", "-n", "10", *cmd]
    if verbose:
        cmd.append("-v")
        result = subprocess.run(cmd)
        output = "(the compiler's output is above)"
    else:
        result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        output = result.stdout
    if result.returncode != 0:
        raise BuildError(f"structop: {what} failed:\n{output}")


def header_deps(build_dir):
    """Every file ninja recorded as an input of an object (from the compilers'
    depfiles): the headers the sources included."""
    result = subprocess.run(
        [find_ninja(), "-C", build_dir, "-t", "deps"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    deps = set()
    for line in result.stdout.splitlines():
        if line.startswith("    "):
            deps.add(os.path.normpath(os.path.join(build_dir, line.strip())))
    return deps

"""The per-user build cache: where it is, one folder per torch, a lock, and
atomic publication of finished builds.

Layout (root: $STRUCTOP_CACHE_DIR, else $XDG_CACHE_HOME/structop, else
~/.cache/structop):

    torch-2.13.0+cpu-<hash>/      one folder per torch installation and compiler
      runtime/<key>/              libstructop_runtime.a for it
      pkgconfig/structop.pc       written by get_pkgconfig_dir()
      cmake/structop-vars.cmake   read by structopConfig.cmake
      jit/<name>/                 structop.load(name, ...): build/ (ninja's work
                                  folder) and one published folder per input key

<hash> covers structop's version, torch's version, include and library
folders and C++11 ABI, and the C++ compiler: two virtual environments with
the same torch version have their own folders (their libraries are in
different places), and a torch upgrade starts a new one.

Publication: a build runs under an exclusive lock (fcntl.flock on `.lock`
in the parent folder; the kernel releases it when the holder dies, so a
killed build never blocks the next one) in a staging folder, which is
renamed to its final name only once every file is written. A folder with the
final name is therefore always complete: a build killed halfway leaves a
staging folder (removed by the next build under the lock), never something a
later call would load.
"""

import contextlib
import fcntl
import hashlib
import os
import shlex
import shutil
import tempfile

from ._version import __version__


def cache_root():
    override = os.environ.get("STRUCTOP_CACHE_DIR")
    if override:
        return os.path.abspath(os.path.expanduser(override))
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(os.path.abspath(base), "structop")


def hasher(*parts):
    """A sha256 over text parts, each length-prefixed (no two part lists collide)."""
    h = hashlib.sha256()
    for part in parts:
        data = part if isinstance(part, bytes) else str(part).encode()
        h.update(b"%d:" % len(data))
        h.update(data)
    return h


def file_digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


COMPILER_WRAPPERS = ("ccache", "sccache")


def cxx_command():
    """The C++ compiler as an argument list: $CXX (which may hold a wrapper,
    e.g. `ccache g++`), else c++. What the cache keys name."""
    return shlex.split(os.environ.get("CXX") or "c++")


def cxx_build_command():
    """The command that compiles: cxx_command() behind ccache or sccache when
    one is on PATH and $CXX names none, as torch.utils.cpp_extension does;
    STRUCTOP_NO_COMPILER_WRAPPER (or torch's TORCH_NO_COMPILER_WRAPPER) set
    turns that off. A wrapper changes no output, so no key names it."""
    cxx = cxx_command()
    if (
        os.environ.get("STRUCTOP_NO_COMPILER_WRAPPER")
        or os.environ.get("TORCH_NO_COMPILER_WRAPPER")
        or os.path.basename(cxx[0]) in COMPILER_WRAPPERS
    ):
        return cxx
    for wrapper in COMPILER_WRAPPERS:
        path = shutil.which(wrapper)
        if path:
            return [path] + cxx
    return cxx


def _program_identity(argv):
    """The programs of a command (resolved paths, sizes, mtimes): a compiler
    upgrade or a different compiler gets a different cache folder, at the
    cost of a few stat calls."""
    parts = []
    for word in argv:
        if word.startswith("-"):
            parts.append(word)
            continue
        path = shutil.which(word) or word
        try:
            real = os.path.realpath(path)
            st = os.stat(real)
            parts.append(f"{real}:{st.st_size}:{st.st_mtime_ns}")
        except OSError:
            parts.append(word)
    return "|".join(parts)


def toolchain_dir(config, cxx=None):
    """The cache folder for torch `config` (a torch_config.TorchConfig) and the C++ compiler."""
    cxx = cxx or cxx_command()
    key = hasher(
        __version__,
        config.version,
        "\n".join(config.include_dirs),
        config.libdir,
        config.cxx11_abi,
        " ".join(config.extra_libs),
        _program_identity(cxx),
    ).hexdigest()
    safe_version = "".join(c if c.isalnum() or c in ".+-_" else "_" for c in config.version)
    return os.path.join(cache_root(), f"torch-{safe_version}-{key[:12]}")


@contextlib.contextmanager
def locked(folder):
    """Holds the exclusive lock of `folder` (its file `.lock`), across processes and threads."""
    os.makedirs(folder, exist_ok=True)
    fd = os.open(os.path.join(folder, ".lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


COMPLETE = "complete.json"


def is_published(path):
    return os.path.exists(os.path.join(path, COMPLETE))


def publish(parent, final_name, fill, complete_text):
    """Builds `parent/final_name` unless it is published; the caller holds the
    lock of `parent`. fill(staging) writes every file into the staging
    folder; then `complete.json` (complete_text) is written and the folder
    renamed into place. Returns the final path."""
    final = os.path.join(parent, final_name)
    if is_published(final):
        return final
    remove_stale(parent)
    if os.path.exists(final):  # made by hand or an older structop: not ours to trust
        shutil.rmtree(final)
    staging = tempfile.mkdtemp(prefix=".staging-", dir=parent)
    try:
        fill(staging)
        with open(os.path.join(staging, COMPLETE), "w", encoding="utf-8") as f:
            f.write(complete_text)
        os.rename(staging, final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return final


def remove_stale(parent):
    """Staging folders of builds that died (we hold the lock: nobody else builds here)."""
    for entry in os.listdir(parent):
        if entry.startswith(".staging-"):
            shutil.rmtree(os.path.join(parent, entry), ignore_errors=True)


def write_if_changed(path, text):
    """Writes `text` to `path` atomically (a temporary file renamed over it),
    and not at all when the file already holds it; returns whether it wrote."""
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return False
    except OSError:
        pass
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return True

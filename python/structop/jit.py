"""structop.load: an IDL and its kernels, generated, compiled and loaded in
one call, with the build cached (the anchor: torch.utils.cpp_extension.load).

    import structop
    ops = structop.load("my_ops", "my.ops.yaml", sources=["my_kernels.cpp"])
    y = ops.op(x, ops.Cfg(...))

What a call does:

1. structopc generates X.ops.h, X.ops.cpp and X_ops.py into a temporary
   folder (milliseconds; an IDL error raises structop.IDLError whose message
   is structopc's diagnostic).
2. The inputs are hashed into a key: the generated files, every IDL file
   read (the depfile lists the included ones), the sources and the headers
   they included in the last build of this name, the flags, structop's
   version and runtime sources; the cache folder itself is per torch and
   compiler (_cache.py).
3. If the folder jit/<name>/<key> is published, it is loaded at once: the
   second call with unchanged inputs costs the structopc run, the hashing
   and torch.ops.load_library.
4. Otherwise, under the lock of jit/<name>: the runtime library is built for
   this torch if needed, the generated files (and the included IDLs'
   headers and modules) go into jit/<name>/build/, ninja compiles them with
   the sources (.cu files with nvcc) and links lib<name>.so, and the library
   and modules are published as jit/<name>/<key> by renaming a complete
   staging folder. A process that waited for the lock finds the folder
   published and loads it: concurrent calls build once. A build killed
   halfway publishes nothing and leaves a marked build folder, which the next
   build cleans before it starts.
5. The generated modules are imported as a package private to this key
   (_structop_jit_<name>_<key>), so included IDLs' modules resolve beside
   them and nothing is added to sys.path; the library is loaded through the
   module's load_library. The module is returned.

torch cannot unregister ops: in one process, a second call with changed
inputs builds and caches the new version, then raises RuntimeError asking
for a new process.
"""

import concurrent.futures
import dataclasses
import importlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import typing

from . import BuildError, IDLError, _build, _cache, _runtime, get_include, get_structopc
from ._version import __version__

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_IDL_SUFFIX = ".ops.yaml"

# One load at a time per process (the file lock serializes processes; this
# keeps the in-process tables consistent between threads).
_LOCK = threading.RLock()
# key -> module, name -> key: what this process loaded.
_LOADED = {}
_LOADED_NAMES = {}


def _log(verbose, message):
    if verbose:
        print(f"structop: {message}", file=sys.stderr, flush=True)


def _parse_depfile(path):
    """The prerequisites of a Make-style depfile (backslash-escaped spaces)."""
    with open(path, encoding="utf-8") as f:
        text = f.read().replace("\\\n", " ")
    # Split on unescaped whitespace; the first word ending in an unescaped ':' ends the targets.
    words, word, i = [], "", 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text) and text[i + 1] in " #\\":
            word += text[i + 1]
            i += 2
            continue
        if c == "$" and i + 1 < len(text) and text[i + 1] == "$":
            word += "$"
            i += 2
            continue
        if c.isspace():
            if word:
                words.append(word)
            word = ""
        else:
            word += c
        i += 1
    if word:
        words.append(word)
    for j, w in enumerate(words):
        if w.endswith(":"):
            return words[j + 1 :]
        if w == ":":
            return words[j + 1 :]
    return []


def _structopc(args, what):
    result = subprocess.run([get_structopc()] + args, capture_output=True, text=True)
    if result.returncode != 0:
        message = (result.stderr or result.stdout).rstrip()
        raise IDLError(message or f"structopc failed on {what} (exit {result.returncode})")
    return result


def _generate(idl, out_dir, idl_include_paths, emit):
    """Runs structopc on `idl` into out_dir; returns the IDL files it read (absolute)."""
    with tempfile.TemporaryDirectory(prefix="structop-dep-") as scratch:
        depfile = os.path.join(scratch, "idl.d")
        args = ["--emit", emit, "-o", out_dir, "--depfile", depfile]
        for d in idl_include_paths:
            args += ["-I", d]
        _structopc(args + [idl], idl)
        return [os.path.abspath(p) for p in _parse_depfile(depfile)]


def _stem(idl):
    base = os.path.basename(idl)
    if not base.endswith(_IDL_SUFFIX):
        raise IDLError(f"{idl}: an IDL file's name ends in {_IDL_SUFFIX} (NAME{_IDL_SUFFIX})")
    return base[: -len(_IDL_SUFFIX)]


def _digest_or_missing(path):
    try:
        return _cache.file_digest(path)
    except OSError:
        return "missing"


def _key(parts, gen_dir, idl_files, sources, headers):
    h = _cache.hasher(*parts)
    for name in sorted(os.listdir(gen_dir)):
        h.update(f"gen {name} {_cache.file_digest(os.path.join(gen_dir, name))}\n".encode())
    for path in sorted(idl_files):
        h.update(f"idl {path} {_digest_or_missing(path)}\n".encode())
    for path in sources:
        h.update(f"source {path} {_cache.file_digest(path)}\n".encode())
    for path in sorted(headers):
        h.update(f"header {path} {_digest_or_missing(path)}\n".encode())
    return h.hexdigest()[:20]


def _read_headers(name_dir):
    try:
        with open(os.path.join(name_dir, "headers.json"), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return []


def _user_headers(build_dir, exclude_dirs):
    """The headers the last build's objects included, less torch's, structop's,
    the generated ones and the system's: the user's own."""
    prefixes = tuple(os.path.join(os.path.realpath(d), "") for d in exclude_dirs)
    kept = []
    for path in _build.header_deps(build_dir):
        real = os.path.realpath(path)
        if not real.startswith(prefixes):
            kept.append(path)
    return sorted(kept)


def _copy_if_changed(src, dst):
    """Copies src over dst unless dst holds the same bytes (its mtime then stays,
    and ninja rebuilds nothing for it)."""
    if os.path.exists(dst) and _cache.file_digest(dst) == _cache.file_digest(src):
        return
    shutil.copyfile(src, dst)


def load(
    name,
    idl,
    sources=(),
    *,
    extra_cflags=None,
    extra_cuda_cflags=None,
    extra_ldflags=None,
    extra_include_paths=None,
    idl_include_paths=None,
    build_directory=None,
    verbose=False,
):
    """Generates, compiles and loads IDL `idl` with the kernel files `sources`;
    returns the generated Python module (X_ops), its ops ready to call.

    name                the extension's name (an identifier): the library is
                        lib<name>.so, cached under <cache>/jit/<name>
    idl                 the NAME.ops.yaml file
    sources             C++ (.cpp, .cc, .cxx) and CUDA (.cu, compiled by nvcc)
                        files with the kernels; they include "X.ops.h"
    extra_cflags        more flags for the C++ compiler ($CXX, else c++)
    extra_cuda_cflags   more flags for nvcc (e.g. -arch=sm_80)
    extra_ldflags       more flags for the link
    extra_include_paths folders for the sources' own #includes
    idl_include_paths   structopc -I folders, for the IDL's `include:` files
    build_directory     a folder instead of <cache>/<torch>/jit/<name>
    verbose             print what is built and the commands

    Raises structop.IDLError when structopc rejects the IDL (its diagnostic is
    the message), structop.BuildError when compiling or linking fails.
    """
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"structop.load: name {name!r} must be an identifier (letters, digits, _)")
    if isinstance(sources, (str, os.PathLike)):
        sources = [sources]
    idl = os.path.abspath(os.fspath(idl))
    stem = _stem(idl)
    sources = [os.path.abspath(os.fspath(s)) for s in sources]
    for path in [idl] + sources:
        if not os.path.isfile(path):
            raise FileNotFoundError(f"structop.load: no file {path}")
    has_cuda = any(s.endswith(_build.CUDA_SUFFIXES) for s in sources)

    with _LOCK:
        cuda_home = _build.find_cuda_home() if has_cuda else None
        if has_cuda and cuda_home is None:
            raise BuildError(
                "structop.load: a source is CUDA (.cu) but no CUDA toolkit was "
                "found: set CUDA_HOME, or put nvcc on PATH"
            )
        request = _Request(
            name=name,
            idl=idl,
            stem=stem,
            sources=sources,
            name_dir=(
                os.path.abspath(build_directory)
                if build_directory
                else os.path.join(_runtime.toolchain_dir(), "jit", name)
            ),
            nvcc=os.path.join(cuda_home, "bin", "nvcc") if cuda_home else None,
            extra_cflags=list(extra_cflags or ()),
            extra_cuda_cflags=list(extra_cuda_cflags or ()),
            extra_ldflags=list(extra_ldflags or ()),
            extra_include_paths=[os.path.abspath(p) for p in extra_include_paths or ()],
            idl_include_paths=[os.path.abspath(p) for p in idl_include_paths or ()],
            verbose=verbose,
        )
        return _import(name, _cached_or_built(request), verbose)


@dataclasses.dataclass(frozen=True)
class _Request:
    """One structop.load call, its arguments checked and made absolute."""

    name: str
    idl: str
    stem: str
    sources: typing.List[str]
    name_dir: str  # <cache>/<torch>/jit/<name>, or build_directory
    nvcc: typing.Optional[str]  # when a source is CUDA
    extra_cflags: typing.List[str]
    extra_cuda_cflags: typing.List[str]
    extra_ldflags: typing.List[str]
    extra_include_paths: typing.List[str]
    idl_include_paths: typing.List[str]
    verbose: bool

    def key_parts(self):
        """What goes into the key besides the files: versions, compiler, flags."""
        return [
            __version__,
            self.name,
            self.stem,
            _runtime.runtime_key(),
            " ".join(_cache.cxx_command()),
            repr(self.extra_cflags),
            repr(self.extra_cuda_cflags),
            repr(self.extra_ldflags),
            repr(self.extra_include_paths),
            repr(self.idl_include_paths),
            self.nvcc or "",
        ]


def _cached_or_built(request):
    """The published folder for these inputs: found in the cache (or in this
    process), else built and published under the lock of request.name_dir."""
    name, name_dir, verbose = request.name, request.name_dir, request.verbose
    parts = request.key_parts()
    with tempfile.TemporaryDirectory(prefix="structop-gen-") as gen:
        idl_files = _generate(request.idl, gen, request.idl_include_paths, "h,cpp,py")
        key = _key(parts, gen, idl_files, request.sources, _read_headers(name_dir))
        final = os.path.join(name_dir, key)
        if key in _LOADED:
            _log(verbose, f"{name} is loaded already ({final})")
            return final
        os.makedirs(name_dir, exist_ok=True)
        if _cache.is_published(final):
            _log(verbose, f"loading {name} from the cache ({final})")
            return final
        with _cache.locked(name_dir):
            # Another process may have built meanwhile, and recorded other
            # headers for this name: the key again, as it is now.
            key = _key(parts, gen, idl_files, request.sources, _read_headers(name_dir))
            final = os.path.join(name_dir, key)
            if _cache.is_published(final):
                _log(verbose, f"loading {name} from the cache ({final}), built by another process")
                return final
            return _build_and_publish(request, gen, idl_files, parts)


def _build_and_publish(request, gen, idl_files, parts):
    """Builds request (generated into gen, reading idl_files) under the lock of
    its name_dir; returns the published folder."""
    verbose = request.verbose
    _log(verbose, f"building {request.name} from {request.idl} in {request.name_dir}")
    # On first use (once per torch and compiler) the runtime library is
    # compiled while this build compiles its sources: only the link needs it.
    runtime_library, runtime_ready = _runtime.runtime_library_path()
    if runtime_ready:
        return _build_with(request, gen, idl_files, parts, runtime_library, None)
    # (Leaving the block waits for the runtime's build: no build outlives the
    # call, a failed one neither.)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        runtime = pool.submit(_runtime.runtime_library, verbose)
        return _build_with(request, gen, idl_files, parts, runtime_library, runtime)


def _build_with(request, gen, idl_files, parts, runtime_library, runtime):
    """The build of _build_and_publish, linked with runtime_library (built by
    `runtime`, a Future of _runtime.runtime_library, when it is not None)."""
    name, stem, idl, sources = request.name, request.stem, request.idl, request.sources
    name_dir, nvcc, verbose = request.name_dir, request.nvcc, request.verbose
    build_dir = os.path.join(name_dir, "build")
    gen_dir = os.path.join(build_dir, "gen")
    cfg = _runtime.config()
    with _build.build_folder(build_dir):
        os.makedirs(gen_dir, exist_ok=True)
        for entry in os.listdir(gen):
            _copy_if_changed(os.path.join(gen, entry), os.path.join(gen_dir, entry))
        # The included IDLs' headers and modules (their records and enums), beside.
        for path in idl_files:
            if path != idl:
                _generate(path, gen_dir, request.idl_include_paths, "h,py")

        includes = ["-I" + gen_dir] + ["-I" + d for d in request.extra_include_paths]
        cxxflags = (
            list(_runtime.RUNTIME_CXXFLAGS)
            + includes
            + _runtime.compile_args()
            + request.extra_cflags
        )
        ldflags = cfg.link_args()
        cuda_flags = []
        if nvcc:
            cuda_flags = (
                ["-std=c++17", "-O2", "-Xcompiler", "-fPIC"]
                + includes
                + _runtime.compile_args(joined=False)
                + request.extra_cuda_cflags
            )
            cuda_lib = os.path.join(os.path.dirname(os.path.dirname(nvcc)), "lib64")
            ldflags += ["-L" + cuda_lib, "-Wl,-rpath," + cuda_lib, "-lcudart"]
            for lib in ("c10_cuda", "torch_cuda"):
                if os.path.exists(os.path.join(cfg.libdir, f"lib{lib}.so")):
                    ldflags.append("-l" + lib)
        ldflags += request.extra_ldflags
        library = f"lib{name}.so"
        _build.write_ninja(
            build_dir,
            cxx=_cache.cxx_build_command(),
            cxxflags=cxxflags,
            sources=[os.path.join(gen_dir, f"{stem}.ops.cpp")] + sources,
            output=library,
            kind="shared",
            ldflags=ldflags,
            nvcc=nvcc,
            cuda_flags=cuda_flags,
            link_inputs=[runtime_library],
        )
        if runtime is not None:
            # Niced: the runtime library's longest translation unit is the
            # first build's critical path; these take the CPU it leaves.
            _build.run_ninja(
                build_dir, verbose, what=f"building {name}", targets=["objects"], nice=True
            )
            runtime.result()  # (raises the runtime build's error)
        _build.run_ninja(build_dir, verbose, what=f"building {name}")

    # The headers this build included (the user's), for the key of later calls.
    cuda = [os.path.dirname(os.path.dirname(nvcc))] if nvcc else []
    headers = [
        h
        for h in _user_headers(
            build_dir, list(cfg.include_dirs) + [get_include(), gen_dir, "/usr"] + cuda
        )
        if h not in sources
    ]  # the sources are in the key already
    _cache.write_if_changed(
        os.path.join(name_dir, "headers.json"), json.dumps(headers, indent=1) + "\n"
    )
    key = _key(parts, gen, idl_files, sources, headers)
    package = f"_structop_jit_{name}_{key[:12]}"
    modules = sorted(e for e in os.listdir(gen_dir) if e.endswith("_ops.py"))

    def fill(staging):
        shutil.copyfile(os.path.join(build_dir, library), os.path.join(staging, library))
        package_dir = os.path.join(staging, "python", package)
        os.makedirs(package_dir)
        with open(os.path.join(package_dir, "__init__.py"), "w", encoding="utf-8") as f:
            f.write(
                f'"""Generated modules of structop.load({name!r}, {os.path.basename(idl)!r})."""\n'
            )
        for module in modules:
            shutil.copyfile(os.path.join(gen_dir, module), os.path.join(package_dir, module))

    manifest = {
        "name": name,
        "idl": idl,
        "module": f"{stem}_ops",
        "package": package,
        "library": library,
        "sources": sources,
        "torch": cfg.version,
        "structop": __version__,
    }
    final = _cache.publish(name_dir, key, fill, json.dumps(manifest, indent=1) + "\n")
    _log(verbose, f"built {name}: {final}")
    return final


def _import(name, final, verbose):
    key = os.path.basename(final)
    if key in _LOADED:
        return _LOADED[key]
    with open(os.path.join(final, _cache.COMPLETE), encoding="utf-8") as f:
        manifest = json.load(f)
    loaded = _LOADED_NAMES.get(name)
    if loaded is not None and loaded != key:
        raise RuntimeError(
            f"structop.load: {name} was loaded in this process from other inputs "
            f"({os.path.join(os.path.dirname(final), loaded)}); the new build is cached in "
            f"{final}, but torch cannot replace ops it has registered: load it in a new process"
        )
    package = manifest["package"]
    package_dir = os.path.join(final, "python", package)
    spec = importlib.util.spec_from_file_location(
        package, os.path.join(package_dir, "__init__.py"), submodule_search_locations=[package_dir]
    )
    package_module = importlib.util.module_from_spec(spec)
    sys.modules[package] = package_module
    spec.loader.exec_module(package_module)
    module = importlib.import_module(f"{package}.{manifest['module']}")
    module.load_library(os.path.join(final, manifest["library"]))
    _LOADED[key] = module
    _LOADED_NAMES[name] = key
    _log(verbose, f"loaded {name}: {module.__name__} ({final})")
    return module


__all__ = ["load", "BuildError", "IDLError"]

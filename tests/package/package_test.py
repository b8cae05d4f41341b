#!/usr/bin/env python3
"""structop as a pip package (issue 27), tested the way a user gets it.

Stages, in order; one wheel serves them all:

  venv    a new virtual environment, WORK_DIR/venv, with torch==2.13.0 (the
          pins of tools/requirements/main.txt). --venv reuse (the default):
          made without pip, it sees the packages of BASE_PYTHON's environment
          (.venv-torch, which scripts/pip-torch.sh made from the same pins)
          through a .pth file: torch, numpy, pip and setuptools come from
          there, in 2 s instead of the minute a torch install takes here, and
          pip sees them as installed, as it would see its own. structop and
          everything the test installs go into the new environment only.
          --venv fresh: `python -m venv` and `pip install -r main.txt`, the
          full user path (about 65 s here; kept in WORK_DIR/venv while the
          pins do not change, with structop uninstalled first).
          --venv system: `python -m venv --system-site-packages` of
          BASE_PYTHON, a distribution's Python with its torch (the distro
          leg, with --wheel-dir).
  wheel   the release artifacts of tools/release.py (scripts/release.sh):
          the sdist of SOURCE_ROOT's tracked files, the wheel pip builds from
          it (meson-python, in pip's isolated build environment, which needs
          no torch), repaired by auditwheel: tagged cpXY-abi3 (the runtime's
          C module uses the limited API) and manylinux_2_N, the tag
          `auditwheel show` names; the sdist's PKG-INFO and meson.build say
          the version of the wheel's name; the wheel holds structopc, the
          packages structop_runtime and structop and nothing else (no tests,
          benchmarks, examples). --wheel-dir DIR: instead, the manylinux
          wheel in DIR, built on another machine ($STRUCTOP_HOST_WHEEL_DIR
          overrides DIR).
  install `pip install` of the wheel: structopc on the environment's PATH,
          `structopc --version` is the package version, `python -m structop`
          answers; an op of structop.register_custom_op runs, and the module
          structopc generated for it, the installed metadata and
          structop.__version__ say the same version; no installed file (nor
          the wheel or the sdist) names a path of this machine (source,
          build and work folders, home, pip's build environment).
  a       the Meson consumer (idl_examples/consumer, copied out of the
          repository) built against the installed package through
          PKG_CONFIG_PATH=$(python -m structop --pkgconfig-dir), no subproject;
          its C++ and Python tests run, the Python one importing
          structop_runtime from the environment (no PYTHONPATH for it).
  b       structop.load on idl_examples/jit (copied out): build (behind
          ccache when it is on PATH), call, gradients, gradcheck, opcheck; cached reloads (their times are
          printed, not judged); a changed IDL rebuilds; a broken IDL raises
          structop.IDLError with structopc's diagnostic; four processes at
          once after a source edit build once and all load; an edit of a
          header the source includes starts a build, which, killed halfway,
          publishes nothing, and the next call builds; a .cu source goes
          through nvcc (when nvcc is there). Stage b1 is its first call only.
  c       idl_examples/setuptools_example: pip install --no-build-isolation,
          then its test, importing the installed package.
  d       idl_examples/cmake_consumer configured with
          -Dstructop_DIR=$(python -m structop --cmakedir) and the machine's
          cmake, the environment's bin/ not on PATH (the config finds the
          interpreter itself); built; ctest runs its C++ and Python tests.

Every command runs without PYTHONPATH, PKG_CONFIG_PATH or CMAKE_PREFIX_PATH
and with STRUCTOP_CACHE_DIR=WORK_DIR/cache, emptied first: the runtime
library is compiled once, by stage a, and reused by b, c and d.

Usage: package_test.py SOURCE_ROOT WORK_DIR BASE_PYTHON [--venv
reuse|fresh|system] [--wheel-dir DIR] [--stages a,b,...] (venv, wheel and
install always run first). BASE_PYTHON is a virtual environment's Python
with torch==2.13.0 (reuse), any Python whose base interpreter makes the
environment (fresh), or a distribution's Python with torch (system); it runs
tools/release.py, so it needs tools/requirements/release.txt (the tests'
requirements include it) unless --wheel-dir is given.
"""

import argparse
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
import tarfile
import time
import zipfile

FAILURES = []
TIMES = []


class StageFailed(Exception):
    pass


def fail(message):
    raise StageFailed(message)


def run(cmd, env, cwd=None, check=True, tail=8000):
    print("$", " ".join(cmd), flush=True)
    result = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if check and result.returncode != 0:
        sys.stdout.write(result.stdout[-tail:])
        sys.stdout.write(result.stderr[-tail:])
        fail(f"exit {result.returncode}: {' '.join(cmd)}")
    return result


def copy_example(source, dest):
    if os.path.exists(dest):
        shutil.rmtree(dest)
    shutil.copytree(
        source,
        dest,
        ignore=shutil.ignore_patterns(
            "subprojects", "build", "build-*", "*.egg-info", "*_ops.py", "__pycache__"
        ),
    )
    return dest


class Context:
    def __init__(self, source_root, work, base_python, venv_mode):
        self.venv_mode = venv_mode
        self.source_root = os.path.realpath(source_root)
        self.work = os.path.abspath(work)
        self.base_python = base_python
        self.venv = os.path.join(self.work, "venv")
        self.python = os.path.join(self.venv, "bin", "python")
        self.cache = os.path.join(self.work, "cache")
        self.version = None
        env = {
            k: v
            for k, v in os.environ.items()
            if k
            not in (
                "PYTHONPATH",
                "PYTHONHOME",
                "PKG_CONFIG_PATH",
                "CMAKE_PREFIX_PATH",
                "structop_DIR",
                "VIRTUAL_ENV",
                "STRUCTOP_CACHE_DIR",
                "STRUCTOPC",
                "CXX",
                "MESON_BUILD_ROOT",
                "MESON_SOURCE_ROOT",
            )
        }
        env["STRUCTOP_CACHE_DIR"] = self.cache
        self.path_without_venv = env.get("PATH", "/usr/bin:/bin")
        env["PATH"] = os.path.join(self.venv, "bin") + os.pathsep + self.path_without_venv
        self.env = env

    def site_packages(self):
        return run(
            [self.python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], self.env
        ).stdout.strip()

    def structop(self, *options):
        return run([self.python, "-m", "structop", *options], self.env).stdout.strip()


def stage(name, function, ctx):
    print(f"\n== stage {name}", flush=True)
    start = time.monotonic()
    try:
        function(ctx)
        status = "ok"
    except StageFailed as e:
        status = "FAILED"
        FAILURES.append(f"{name}: {e}")
        print(f"FAIL ({name}): {e}", flush=True)
    elapsed = time.monotonic() - start
    TIMES.append((name, elapsed, status))
    print(f"== stage {name}: {status}, {elapsed:.0f} s", flush=True)
    return status == "ok"


# --- venv, wheel, install ---------------------------------------------------


def stage_venv(ctx):
    requirements = os.path.join(ctx.source_root, "tools", "requirements", "main.txt")
    base = run(
        [
            ctx.base_python,
            "-c",
            "import sys; print(getattr(sys, '_base_executable', sys.executable))",
        ],
        ctx.env,
    ).stdout.strip()
    if ctx.venv_mode == "system":
        # The distribution's torch as it is: a user's `python3 -m venv
        # --system-site-packages` (pip from the distribution's python3-venv).
        if os.path.exists(ctx.venv):
            shutil.rmtree(ctx.venv)
        run([base, "-m", "venv", "--system-site-packages", ctx.venv], ctx.env)
        torch = run([ctx.python, "-c", "import torch; print(torch.__version__)"], ctx.env)
        print(f"{ctx.venv}: the system's torch {torch.stdout.strip()}")
        return
    if ctx.venv_mode == "reuse":
        with open(requirements, encoding="utf-8") as f:
            pin = re.search(r"^torch==(\S+)", f.read(), re.M).group(1)
        parent = run(
            [
                ctx.base_python,
                "-c",
                "import sysconfig, torch; "
                "print(torch.__version__); print(sysconfig.get_path('purelib'))",
            ],
            ctx.env,
        ).stdout.split()
        if parent[0].split("+")[0] != pin:
            fail(
                f"{ctx.base_python} has torch {parent[0]}, not the pinned {pin} (use --venv fresh)"
            )
        if os.path.exists(ctx.venv):
            shutil.rmtree(ctx.venv)
        run([base, "-m", "venv", "--without-pip", ctx.venv], ctx.env)
        site = ctx.site_packages()
        with open(os.path.join(site, "_structop_test_parent.pth"), "w", encoding="utf-8") as f:
            f.write(parent[1] + "\n")
        print(f"{ctx.venv}: torch {parent[0]}, pip and setuptools from {parent[1]}")
        return
    with open(requirements, encoding="utf-8") as f:
        want = f"{base}\n{f.read()}"
    stamp = os.path.join(ctx.venv, ".structop-package-test")
    if os.path.exists(stamp) and open(stamp, encoding="utf-8").read() == want:
        print("reusing", ctx.venv, "(same base interpreter and pins); uninstalling structop first")
        run(
            [ctx.python, "-m", "pip", "uninstall", "-y", "-q", "structop", "structop-example"],
            ctx.env,
        )
        return
    if os.path.exists(ctx.venv):
        shutil.rmtree(ctx.venv)
    run([base, "-m", "venv", ctx.venv], ctx.env)
    run([ctx.python, "-m", "pip", "install", "-q", "-r", requirements], ctx.env)
    with open(stamp, "w", encoding="utf-8") as f:
        f.write(want)


# structop-VERSION-PYTHON-abi3-PLATFORMS.whl (PLATFORMS: tags joined by dots).
WHEEL_NAME = re.compile(r"structop-([0-9][^-]*)-([a-z0-9]+)-abi3-([a-z0-9_.]+)\.whl")


def stage_wheel(ctx):
    """The release artifacts, as tools/release.py (scripts/release.sh) makes
    them: the sdist, the wheel built from it, repaired into a manylinux one;
    the later stages install that wheel."""
    dist = os.path.join(ctx.work, "dist")
    report = run(
        [
            ctx.base_python,
            os.path.join(ctx.source_root, "tools", "release.py"),
            ctx.source_root,
            dist,
            "--work",
            os.path.join(ctx.work, "release-work"),
        ],
        ctx.env,
    ).stdout
    print(report[-2000:])
    sdists = glob.glob(os.path.join(dist, "*.tar.gz"))
    wheels = glob.glob(os.path.join(dist, "*.whl"))
    if len(sdists) != 1 or len(wheels) != 1 or len(os.listdir(dist)) != 2:
        fail(f"expected one sdist and one wheel in {dist}, found {sorted(os.listdir(dist))}")
    wheel = wheels[0]
    # abi3: structop_runtime._native uses the limited API, from the Python
    # that built the wheel on; manylinux_2_N: auditwheel's tag (one or more,
    # joined by dots), the glibc the wheel needs at least.
    python_tag = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    match = WHEEL_NAME.fullmatch(os.path.basename(wheel))
    if not match:
        fail(
            f"unexpected wheel name {os.path.basename(wheel)} (want structop-VERSION-{python_tag}-abi3-PLATFORM.whl)"
        )
    ctx.version = match.group(1)
    if match.group(2) != python_tag:
        fail(f"the wheel is for {match.group(2)}, not the Python that built it ({python_tag})")
    machine = sysconfig.get_platform().split("-")[-1]
    tags = match.group(3).split(".")
    if not any(re.fullmatch(rf"manylinux_2_[0-9]+_{machine}", t) for t in tags):
        fail(f"the wheel is tagged {match.group(3)}, no manylinux_2_N_{machine} tag")
    shown = re.search(r'consistent with the following platform tag: "([^"]+)"', report)
    if not shown or shown.group(1) not in tags:
        fail(f"auditwheel show names no platform tag of the wheel's ({tags}):\n{report[-1500:]}")
    if os.path.basename(sdists[0]) != f"structop-{ctx.version}.tar.gz":
        fail(f"the sdist is {os.path.basename(sdists[0])}, not structop-{ctx.version}.tar.gz")
    check_sdist(ctx, sdists[0])
    ctx.wheel = wheel

    with zipfile.ZipFile(wheel) as z:
        infos = z.infolist()
        names = [i.filename for i in infos]
        data = f"structop-{ctx.version}.data/"
        # (Folders as entries of their own: auditwheel writes them.)
        allowed = (
            f"structop-{ctx.version}.dist-info/",
            data + "scripts/structopc",
            "structop_runtime/",
            data + "purelib/structop/",
        )
        stray = [n for n in names if not n.endswith("/") and not n.startswith(allowed)]
        if stray:
            fail(
                f"the wheel holds files outside structopc, structop_runtime and structop/: {stray}"
            )
        for required in (
            data + "scripts/structopc",
            "structop_runtime/__init__.py",
            "structop_runtime/_autograd.py",
            "structop_runtime/_checks.py",
            "structop_runtime/_dynamic.py",
            "structop_runtime/_kernels.py",
            "structop_runtime/_loading.py",
            "structop_runtime/_native.abi3.so",
            "structop_runtime/_pytree.py",
            "structop_runtime/_records.py",
            data + "purelib/structop/__init__.py",
            data + "purelib/structop/include/structop/runtime.h",
            data + "purelib/structop/include/structop/registration.h",
            data + "purelib/structop/runtime_src/autograd.cpp",
            data + "purelib/structop/cmake/structopConfig.cmake",
            data + "purelib/structop/cmake/structopConfigVersion.cmake",
        ):
            if required not in names:
                fail(f"the wheel has no {required}")
        check_no_machine_paths(ctx, {n: z.read(n) for n in names}, "the wheel")
    size = os.path.getsize(wheel)
    print(
        f"wheel: {os.path.basename(wheel)}, {size / 1e6:.2f} MB, {len(names)} files "
        f"({sum(i.file_size for i in infos) / 1e6:.2f} MB unpacked):"
    )
    for i in infos:
        print(f"  {i.file_size:>9}  {i.filename}")


def stage_wheel_from(ctx):
    """The wheel another machine built (--wheel-dir): a manylinux one."""
    wheels = glob.glob(os.path.join(ctx.wheel_dir, "*manylinux*.whl"))
    if len(wheels) != 1:
        fail(
            f"expected one manylinux wheel in {ctx.wheel_dir}, found {wheels} (the pip "
            "leg's package test makes it: bash scripts/test.sh pip)"
        )
    match = WHEEL_NAME.fullmatch(os.path.basename(wheels[0]))
    if not match:
        fail(f"unexpected wheel name {os.path.basename(wheels[0])}")
    ctx.version = match.group(1)
    ctx.wheel = wheels[0]
    print(f"wheel: {os.path.basename(ctx.wheel)}, built elsewhere")


def check_sdist(ctx, sdist):
    """The sdist builds structop (the wheel came from it) and says its version
    where the project states it (meson.build's project(), PKG-INFO)."""
    top = f"structop-{ctx.version}/"
    with tarfile.open(sdist) as tar:
        members = {m.name: m for m in tar.getmembers() if m.isfile()}
        for required in ("PKG-INFO", "pyproject.toml", "meson.build", "LICENSE", "README.md"):
            if top + required not in members:
                fail(f"the sdist has no {required}")
        files = {n: tar.extractfile(m).read() for n, m in members.items()}
    info = files[top + "PKG-INFO"].decode()
    if not re.search(rf"^Version: {re.escape(ctx.version)}$", info, re.M):
        fail(f"the sdist's PKG-INFO does not say Version: {ctx.version}")
    if f"version: '{ctx.version}'".encode() not in files[top + "meson.build"]:
        fail(f"the sdist's meson.build does not state version: '{ctx.version}'")
    check_no_machine_paths(ctx, files, "the sdist")


def machine_paths(ctx):
    """Byte strings that would tell where the wheel was built."""
    # (The last one spelt in two pieces: this file is in the sdist.)
    needles = {ctx.source_root, os.path.realpath(ctx.work), ctx.work, "pip-build-" + "env-"}
    home = os.path.expanduser("~")
    if home not in ("/", "") and len(home) > 1:
        needles.add(home.rstrip("/") + "/")
    return sorted(n.encode() for n in needles)


def check_no_machine_paths(ctx, files, what):
    needles = machine_paths(ctx)
    found = []
    for name, content in files.items():
        for needle in needles:
            if needle in content:
                found.append(f"{name}: {needle.decode()}")
    if found:
        fail(f"{what} names paths of this machine:\n  " + "\n  ".join(found))
    print(f"{what}: {len(files)} files, none names {', '.join(n.decode() for n in needles)}")


def stage_install(ctx):
    # A distribution's torch (--venv system) is installed with --no-deps, as
    # docs/install.md tells its users: Debian 13's torch 2.6 declares
    # sympy==1.13.1 beside Debian's sympy 1.13.3, so pip's resolver would
    # download sympy and another torch from PyPI.
    no_deps = ["--no-deps"] if ctx.venv_mode == "system" else []
    run([ctx.python, "-m", "pip", "install", "-q", *no_deps, ctx.wheel], ctx.env)
    structopc = shutil.which("structopc", path=ctx.env["PATH"])
    if structopc != os.path.join(ctx.venv, "bin", "structopc"):
        fail(f"structopc on PATH is {structopc}, not the environment's")
    version = run(["structopc", "--version"], ctx.env).stdout.strip()
    if version != f"structopc {ctx.version}":
        fail(f"structopc --version says {version!r}, the package is {ctx.version}")
    if ctx.structop("--version") != ctx.version:
        fail("python -m structop --version is not the package version")
    if ctx.structop("--structopc") != structopc:
        fail("python -m structop --structopc does not name the installed structopc")
    include = ctx.structop("--include-dir")
    if not os.path.exists(os.path.join(include, "structop", "runtime.h")):
        fail(f"--include-dir {include} has no structop/runtime.h")
    cmakedir = ctx.structop("--cmakedir")
    if not os.path.exists(os.path.join(cmakedir, "structopConfig.cmake")):
        fail(f"--cmakedir {cmakedir} has no structopConfig.cmake")
    # The runtime's C module imports (else the runtime would take its Python
    # loop, silently): record_columns comes from it.
    where = run(
        [
            ctx.python,
            "-c",
            "import structop_runtime; print(structop_runtime.record_columns.__module__)",
        ],
        ctx.env,
    ).stdout.strip()
    if where != "structop_runtime._native":
        fail(
            f"the installed structop_runtime.record_columns comes from {where!r}, not its C module"
        )

    # structop.register_custom_op from the installed package: the installed
    # structopc lowers the function's signature (no PYTHONPATH, no $STRUCTOPC;
    # the cache is the test's STRUCTOP_CACHE_DIR).
    decorated = run(
        [
            ctx.python,
            "-c",
            "import dataclasses, torch, structop\n"
            "@dataclasses.dataclass(frozen=True)\n"
            "class Cfg:\n"
            "    scale: float\n"
            "@structop.register_custom_op(name='pkgtest::scaled')\n"
            "def scaled(x: torch.Tensor, cfg: Cfg) -> torch.Tensor:\n"
            "    return x * cfg.scale\n"
            "print(scaled.schema, float(scaled(torch.ones(1), Cfg(3.0))))",
        ],
        ctx.env,
    ).stdout.strip()
    if decorated != "pkgtest::scaled(Tensor x, float cfg__scale) -> Tensor 3.0":
        fail(f"a decorated op from the installed package: {decorated!r}")
    # One version everywhere (meson.build's project() states it): the
    # wheel's name and metadata, structopc --version, structop.__version__
    # (above) and the header of what structopc generates.
    generated = glob.glob(os.path.join(ctx.cache, "decorated", "*", "scaled_ops.py"))
    if len(generated) != 1:
        fail(f"expected one generated module of pkgtest::scaled in the cache, found {generated}")
    with open(generated[0], encoding="utf-8") as f:
        header = f.readline()
    if f"Generated by structopc {ctx.version} " not in header:
        fail(f"the generated module's header is {header!r}, not of structopc {ctx.version}")
    metadata = run(
        [ctx.python, "-c", "import importlib.metadata as m; print(m.version('structop'))"],
        ctx.env,
    ).stdout.strip()
    if metadata != ctx.version:
        fail(f"the installed metadata says version {metadata}, the wheel {ctx.version}")

    # The installed files, as pip recorded them. Left out: the .pyc files pip
    # compiles at install time (they name where they were installed) and
    # direct_url.json (pip's note of the wheel file installed).
    listing = run(
        [
            ctx.python,
            "-c",
            "import importlib.metadata as m; d = m.distribution('structop'); "
            "print('\\n'.join(str(d.locate_file(f)) for f in d.files))",
        ],
        ctx.env,
    ).stdout.split()
    files = {}
    for path in listing:
        if path.endswith(".pyc") or os.path.basename(path) == "direct_url.json":
            continue
        with open(path, "rb") as f:
            files[os.path.relpath(path, ctx.venv)] = f.read()
    check_no_machine_paths(ctx, files, "the installed files")


# --- a: Meson through pkg-config ---------------------------------------------


def stage_meson(ctx):
    project = copy_example(
        os.path.join(ctx.source_root, "idl_examples", "consumer"),
        os.path.join(ctx.work, "a", "consumer"),
    )
    start = time.monotonic()
    pcdir = ctx.structop("--pkgconfig-dir")
    print(
        f"--pkgconfig-dir: {pcdir} ({time.monotonic() - start:.0f} s, the runtime library compiled)"
    )
    if not os.path.exists(os.path.join(pcdir, "structop.pc")):
        fail(f"{pcdir} has no structop.pc")
    env = dict(ctx.env, PKG_CONFIG_PATH=pcdir)
    build = os.path.join(project, "build")
    setup = run(["meson", "setup", build, project, "--wrap-mode=nofallback"], env)
    if "structop found: YES" not in setup.stdout:
        fail(f"dependency('structop') was not found through pkg-config:\n{setup.stdout}")
    run(["ninja", "-C", build], env)
    with open(os.path.join(build, "meson-logs", "meson-log.txt"), encoding="utf-8") as f:
        if os.path.join(ctx.venv, "bin", "structopc") not in f.read():
            fail("the consumer did not use the installed structopc")
    run(["meson", "test", "-C", build, "--print-errorlogs"], env)
    site = ctx.site_packages()
    with open(os.path.join(build, "meson-logs", "testlog.txt"), encoding="utf-8") as f:
        used = [
            line.split(": ", 1)[1].strip() for line in f if line.startswith("structop_runtime: ")
        ]
    if used != [os.path.join(site, "structop_runtime", "__init__.py")]:
        fail(f"the consumer's Python test imported structop_runtime from {used}, not from {site}")
    # The Python test's PYTHONPATH is the consumer's own build folder only.
    import json

    tests = json.loads(run(["meson", "introspect", "--tests", build], env).stdout)
    python_test = [t for t in tests if t["name"] == "consumer-python"]
    pythonpath = python_test[0]["env"].get("PYTHONPATH", "") if python_test else None
    if pythonpath != build:
        fail(f"the consumer's Python test runs with PYTHONPATH={pythonpath!r}, want only {build}")


# --- b: structop.load ---------------------------------------------------------


def jit_run(ctx, folder, *args, check=True):
    return run(
        [ctx.python, os.path.join(folder, "run_jit.py"), "--verbose", *args],
        ctx.env,
        cwd=ctx.work,
        check=check,
    )


def jit_start(ctx, folder, *args, **popen):
    """run_jit.py started, not waited for (as jit_run runs it); stdout is a pipe.
    The compiler runs without ccache: these builds must take their time (a
    warm ccache would finish them before the other processes or the kill)."""
    return subprocess.Popen(
        [ctx.python, os.path.join(folder, "run_jit.py"), "--verbose", *args],
        env=dict(ctx.env, STRUCTOP_NO_COMPILER_WRAPPER="1"),
        cwd=ctx.work,
        stdout=subprocess.PIPE,
        **popen,
    )


def load_time(result):
    match = re.search(r"structop\.load: ([0-9.]+) s", result.stdout)
    if not match:
        fail(f"no load time in the output:\n{result.stdout}")
    return float(match.group(1))


def published(name_dir):
    return sorted(
        os.path.dirname(p) for p in glob.glob(os.path.join(name_dir, "*", "complete.json"))
    )


def edit(path, old, new):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if old not in text:
        fail(f"{path} has no {old!r} to edit")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text.replace(old, new, 1))


def check_compiler_wrapper(ctx, name_dir):
    """structop.load compiles behind ccache (or sccache) when one is on PATH,
    as torch.utils.cpp_extension does, and directly with
    STRUCTOP_NO_COMPILER_WRAPPER set."""
    with open(os.path.join(name_dir, "build", "build.ninja"), encoding="utf-8") as f:
        command = next(line for line in f if line.startswith("  command = ")).split()
    wrapped = os.path.basename(command[2]) in ("ccache", "sccache")
    expected = not any(
        ctx.env.get(v) for v in ("STRUCTOP_NO_COMPILER_WRAPPER", "TORCH_NO_COMPILER_WRAPPER")
    ) and any(shutil.which(w, path=ctx.env["PATH"]) for w in ("ccache", "sccache"))
    if wrapped != expected:
        fail(f"compiler command {command[2:4]}: want a wrapper: {expected}")
    probe = "import structop._cache as c; print(c.cxx_build_command() == c.cxx_command())"
    off = run(
        [ctx.python, "-c", probe], dict(ctx.env, STRUCTOP_NO_COMPILER_WRAPPER="1"), cwd=ctx.work
    )
    if off.stdout.strip() != "True":
        fail(f"STRUCTOP_NO_COMPILER_WRAPPER=1 left a wrapper: {off.stdout}")
    print(f"compiler: {' '.join(command[2:4])} (a wrapper when ccache is on PATH)")


def first_load(ctx):
    """b1: the first structop.load of idl_examples/jit builds; the op, its
    gradients, gradcheck and opcheck. Returns (the example's copy, its
    per-torch cache folder, its build folder)."""
    folder = copy_example(
        os.path.join(ctx.source_root, "idl_examples", "jit"), os.path.join(ctx.work, "b", "jit")
    )
    first = jit_run(ctx, folder)
    if (
        "structop: building jit_demo" not in first.stderr
        or "ok (call, gradients" not in first.stdout
    ):
        fail(f"the first structop.load did not build and pass:\n{first.stdout}\n{first.stderr}")
    toolchain = glob.glob(os.path.join(ctx.cache, "torch-*"))
    if len(toolchain) != 1:
        fail(f"expected one per-torch cache folder in {ctx.cache}, found {toolchain}")
    name_dir = os.path.join(toolchain[0], "jit", "jit_demo")
    print(f"first structop.load (builds): {load_time(first):.1f} s")
    return folder, toolchain, name_dir


def stage_load(ctx):
    first_load(ctx)


def stage_jit(ctx):
    folder, toolchain, name_dir = first_load(ctx)
    idl = os.path.join(folder, "jit_demo.ops.yaml")
    kernels = os.path.join(folder, "jit_demo_kernels.cpp")
    check_compiler_wrapper(ctx, name_dir)

    # b2: unchanged inputs load the cached build (three times, in new processes).
    # (--skip-checks: one call each; the first run and the rebuild check the rest.)
    cached = []
    for _ in range(3):
        again = jit_run(ctx, folder, "--skip-checks")
        if (
            "loading jit_demo from the cache" not in again.stderr
            or "building" in again.stderr
            or "ok (call" not in again.stdout
        ):
            fail(
                f"a second structop.load with unchanged inputs did not load the cache:\n{again.stderr}"
            )
        cached.append(load_time(again))
    print(f"cached structop.load: {', '.join(f'{t * 1000:.0f} ms' for t in cached)}")
    if len(published(name_dir)) != 1:
        fail(f"expected one published build in {name_dir}: {published(name_dir)}")

    # b3: a changed IDL (the default of cfg.scale) rebuilds, and the op has the new default.
    edit(idl, "scale: float = 2.0", "scale: float = 3.0")
    changed = jit_run(ctx, folder, "--scale", "3.0")
    if "structop: building jit_demo" not in changed.stderr:
        fail(f"a changed IDL did not rebuild:\n{changed.stderr}")
    print(f"rebuild after an IDL edit: {load_time(changed):.1f} s")

    # b4: a broken IDL raises structop.IDLError with structopc's diagnostic.
    broken = os.path.join(folder, "broken.ops.yaml")
    with open(idl, encoding="utf-8") as f:
        text = f.read()
    with open(broken, "w", encoding="utf-8") as f:
        f.write(text.replace("affine: Affine", "affine: Afine"))
    result = run(
        [
            ctx.python,
            "-c",
            (
                "import sys, structop\n"
                "try:\n"
                "    structop.load('jit_broken', sys.argv[1], [sys.argv[2]])\n"
                "except structop.IDLError as e:\n"
                "    print(e)\n"
                "    sys.exit(0)\n"
                "sys.exit('no IDLError')\n"
            ),
            broken,
            kernels,
        ],
        ctx.env,
    )
    line = next((i + 1 for i, t in enumerate(text.splitlines()) if "affine: Affine" in t), 0)
    want = f"{broken}:{line}:"
    if (
        want not in result.stdout
        or ": error: " not in result.stdout
        or "Affine" not in result.stdout
    ):
        fail(
            f"the IDLError does not carry structopc's diagnostic ({want}..., a hint naming "
            f"Affine):\n{result.stdout}"
        )
    if glob.glob(os.path.join(toolchain[0], "jit", "jit_broken", "*", "complete.json")):
        fail("a broken IDL published a build")
    print("IDLError:\n" + result.stdout.rstrip())

    # b5: four processes at once after a source edit (it includes a header of
    # its own now): one builds, all load.
    header = os.path.join(folder, "jit_extra.h")
    with open(header, "w", encoding="utf-8") as f:
        f.write("// A header of the kernels' own (tests/package).\n#pragma once\n")
    edit(kernels, "namespace jit_demo {", '#include "jit_extra.h"\n\nnamespace jit_demo {')
    before = published(name_dir)
    start = time.monotonic()
    procs = [
        jit_start(ctx, folder, "--scale", "3.0", "--skip-checks", stderr=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    outputs = [p.communicate() for p in procs]
    print(f"four concurrent structop.load calls: {time.monotonic() - start:.1f} s")
    for p, (out, err) in zip(procs, outputs):
        if p.returncode != 0 or "ok (call" not in out:
            fail(f"one of four concurrent processes failed (exit {p.returncode}):\n{out}\n{err}")
    builds = sum(err.count("structop: building jit_demo") for _, err in outputs)
    waited = sum(err.count("built by another process") for _, err in outputs)
    if builds != 1 or waited != 3:
        fail(
            f"four concurrent processes: {builds} built, {waited} loaded the other's build "
            "(want 1 and 3):\n" + "\n".join(err for _, err in outputs)
        )
    if len(published(name_dir)) != len(before) + 1:
        fail(
            f"four concurrent processes published {len(published(name_dir)) - len(before)} builds, not 1"
        )

    # b6: an edit of that header alone makes a new build (the headers a build
    # included are part of the next key); killed halfway, it publishes
    # nothing, and the next call builds.
    edit(header, "#pragma once\n", "#pragma once\nconstexpr int jit_extra_edited = 1;\n")
    before = published(name_dir)
    marker = os.path.join(name_dir, "build", ".in-progress")
    proc = jit_start(
        ctx,
        folder,
        "--scale",
        "3.0",
        "--skip-checks",
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + 300
    while not os.path.exists(marker) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(2.0)  # the compilers are running
    if proc.poll() is not None:
        output = proc.stdout.read().decode()
        if "loading jit_demo from the cache" in output:
            fail(f"editing a header the kernels include did not start a build:\n{output}")
        fail(f"the build finished (exit {proc.returncode}) before it could be killed:\n{output}")
    os.killpg(proc.pid, signal.SIGKILL)  # python, ninja and the compilers
    proc.wait()
    proc.stdout.close()
    if published(name_dir) != before:
        fail(f"a killed build published {sorted(set(published(name_dir)) - set(before))}")
    if not os.path.exists(marker):
        fail("the killed build left no in-progress mark: it was not killed halfway")
    retry = jit_run(ctx, folder, "--scale", "3.0", "--skip-checks")
    if "structop: building jit_demo" not in retry.stderr or "ok (call" not in retry.stdout:
        fail(
            f"the call after a killed build did not build and pass:\n{retry.stdout}\n{retry.stderr}"
        )
    if os.path.exists(marker) or len(published(name_dir)) != len(before) + 1:
        fail("the build after a killed one did not finish cleanly")
    print("killed build: nothing published; the next call rebuilt from a clean folder")

    # b7: a CUDA source compiled by nvcc.
    if (
        shutil.which("nvcc", path=ctx.env["PATH"])
        or os.path.exists("/usr/local/cuda/bin/nvcc")
        or os.environ.get("CUDA_HOME")
    ):
        cuda = copy_example(
            os.path.join(ctx.source_root, "tests", "package", "cuda"),
            os.path.join(ctx.work, "b", "cuda"),
        )
        # run_cuda.py checks that the op has a CUDA kernel: the nvcc-compiled object's.
        result = run([ctx.python, os.path.join(cuda, "run_cuda.py"), cuda], ctx.env, cwd=ctx.work)
        print(result.stdout.strip().splitlines()[-1])
    else:
        print("NOT RUN: b7 (no nvcc on this machine)")


# --- c: setuptools -------------------------------------------------------------


def stage_setuptools(ctx):
    project = copy_example(
        os.path.join(ctx.source_root, "idl_examples", "setuptools_example"),
        os.path.join(ctx.work, "c", "setuptools_example"),
    )
    run(
        [ctx.python, "-m", "pip", "install", "--no-build-isolation", project], ctx.env, cwd=ctx.work
    )
    result = run(
        [ctx.python, os.path.join(project, "tests", "test_example.py")], ctx.env, cwd=ctx.work
    )
    if "structop_example.layer ok" not in result.stdout:
        fail(f"the example package's test did not pass:\n{result.stdout}")
    site = ctx.site_packages()
    if (
        f"structop_example: {os.path.join(site, 'structop_example', '__init__.py')}"
        not in result.stdout
    ):
        fail(f"the test did not import the installed package:\n{result.stdout}")


# --- d: CMake ------------------------------------------------------------------


def stage_cmake(ctx):
    project = copy_example(
        os.path.join(ctx.source_root, "idl_examples", "cmake_consumer"),
        os.path.join(ctx.work, "d", "cmake_consumer"),
    )
    if not shutil.which("cmake", path=ctx.path_without_venv):
        fail("cmake is not installed (Debian: apt install cmake)")
    cmakedir = ctx.structop("--cmakedir")
    # Without the environment's bin/ on PATH: the config finds the interpreter
    # that imports it (here: the environment's bin/python3 beside it).
    env = dict(ctx.env, PATH=ctx.path_without_venv)
    build = os.path.join(project, "build")
    args = ["cmake", "-S", project, "-B", build, "-G", "Ninja", "-Dstructop_DIR=" + cmakedir]
    # ccache as a CMake user turns it on (CMake, unlike Meson, does not by itself).
    ccache = shutil.which("ccache", path=ctx.path_without_venv)
    if ccache:
        args.append("-DCMAKE_CXX_COMPILER_LAUNCHER=" + ccache)
    configure = run(args, env)
    want = f"structop {ctx.version} for torch "
    if want not in configure.stdout or ctx.venv not in configure.stdout:
        fail(
            f"find_package(structop) did not report this environment's structop:\n{configure.stdout}"
        )
    run(["cmake", "--build", build], env)
    tests = run(["ctest", "--test-dir", build, "--output-on-failure", "-V"], env)
    if "100% tests passed, 0 tests failed out of 2" not in tests.stdout:
        fail(f"ctest:\n{tests.stdout}")
    site = ctx.site_packages()
    if (
        f"structop_runtime: {os.path.join(site, 'structop_runtime', '__init__.py')}"
        not in tests.stdout
    ):
        fail("the CMake consumer's Python test did not import the installed structop_runtime")


STAGES = {
    "a": stage_meson,
    "b": stage_jit,
    "b1": stage_load,
    "c": stage_setuptools,
    "d": stage_cmake,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("source_root")
    parser.add_argument("work")
    parser.add_argument("base_python")
    parser.add_argument("--venv", choices=("reuse", "fresh", "system"), default="reuse")
    parser.add_argument("--stages", default="a,b,c,d")
    parser.add_argument("--wheel-dir")
    args = parser.parse_args()
    ctx = Context(args.source_root, args.work, args.base_python, args.venv)
    ctx.wheel_dir = args.wheel_dir
    if ctx.wheel_dir and os.environ.get("STRUCTOP_HOST_WHEEL_DIR"):
        ctx.wheel_dir = os.environ["STRUCTOP_HOST_WHEEL_DIR"]  # (scripts/test.sh's)
    os.makedirs(ctx.work, exist_ok=True)
    if os.path.exists(ctx.cache):
        shutil.rmtree(ctx.cache)

    total = time.monotonic()
    ok = (
        stage("venv", stage_venv, ctx)
        and stage("wheel", stage_wheel_from if ctx.wheel_dir else stage_wheel, ctx)
        and stage("install", stage_install, ctx)
    )
    if ok:
        for name in args.stages.split(","):
            stage(name, STAGES[name], ctx)
    print("\n== times")
    for name, elapsed, status in TIMES:
        print(f"  {name:8} {elapsed:6.0f} s  {status}")
    print(f"  total    {time.monotonic() - total:6.0f} s")
    if FAILURES:
        print("\nFAILED:\n  " + "\n  ".join(FAILURES))
        return 1
    print(f"\npackage: {len(TIMES)} stages passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

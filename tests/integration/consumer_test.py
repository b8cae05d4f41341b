#!/usr/bin/env python3
"""Builds idl_examples/consumer the two ways a kernel author would use structop.

1. As a Meson subproject: configure and build the consumer from scratch in a
   temporary folder with subprojects/structop -> this source tree, run its
   tests: two IDLs that include a third, all generated and built into one
   extension, both ops called with one record of the shared IDL from C++ and
   from Python (test_consumer.py, through the generated modules, which import
   structop's Python runtime from the subproject's build folder).
   The subproject defines structopc and the runtime only: none of structop's
   tests, benchmarks or examples, even with its `tests` and `benchmarks`
   options turned on from the parent.
2. Rebuilds are exact: right after a build ninja has no work; touching the IDL
   without changing it regenerates but recompiles nothing; editing the
   included IDL regenerates and rebuilds; changing a record of the included
   IDL regenerates the headers of all three IDLs (each checks the
   fingerprint of the shared header), and the build still succeeds.
3. Installed: install structop (the build this test belongs to, staged with
   `meson install --destdir`, as a distribution packages it; its structop.pc
   is relocatable) and build the consumer against the installed pkg-config
   file (no subproject); its Python test imports the installed package
   structop_runtime.

Usage: consumer_test.py SOURCE_ROOT WORK_DIR PYTHON_WITH_TORCH STRUCTOP_BUILD
"""

import glob
import json
import os
import shutil
import subprocess
import sys
import time


def run(cmd, cwd=None, env=None, check=True):
    print("$", " ".join(cmd), flush=True)
    result = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if check and result.returncode != 0:
        sys.stdout.write(result.stdout[-6000:])
        sys.stdout.write(result.stderr[-6000:])
        raise SystemExit(f"FAILED ({result.returncode}): {' '.join(cmd)}")
    return result


def fail(message):
    raise SystemExit("FAIL: " + message)


def copy_consumer(source_root, dest):
    if os.path.exists(dest):
        shutil.rmtree(dest)
    shutil.copytree(
        os.path.join(source_root, "idl_examples", "consumer"),
        dest,
        ignore=shutil.ignore_patterns("subprojects", "build*"),
    )


def compile_commands(ninja_output):
    return [line for line in ninja_output.splitlines() if " -c " in line]


def structopc_runs(ninja_output):
    return [line for line in ninja_output.splitlines() if "structopc" in line and "--emit" in line]


def check_rebuilds(project, build):
    # Nothing to do right after a build.
    out = run(["ninja", "-C", build, "-v"]).stdout
    if "no work to do" not in out:
        fail(f"a second ninja run did work:\n{out}")

    # Touching the IDL (same content) reruns structopc, which rewrites nothing,
    # so nothing is recompiled (Meson's custom commands use restat).
    idl = os.path.join(project, "idl", "consumer.ops.yaml")
    time.sleep(1.1)
    os.utime(idl)
    out = run(["ninja", "-C", build, "-v"]).stdout
    if not structopc_runs(out):
        fail(f"touching the IDL did not rerun structopc:\n{out}")
    if compile_commands(out):
        fail(
            "touching the IDL without changing it recompiled:\n" + "\n".join(compile_commands(out))
        )
    out = run(["ninja", "-C", build, "-v"]).stdout
    if "no work to do" not in out:
        fail(f"ninja still had work after the touch:\n{out}")

    # Editing the included IDL (found through the depfile) regenerates and rebuilds.
    shared = os.path.join(project, "idl", "shared", "filters.ops.yaml")
    with open(shared, encoding="utf-8") as f:
        text = f.read()
    time.sleep(1.1)
    with open(shared, "w", encoding="utf-8") as f:
        f.write(
            text.replace(
                "A 1-d filter applied along the last dimension.",
                "A 1-d filter (edited by the rebuild test).",
            )
        )
    out = run(["ninja", "-C", build, "-v"]).stdout
    if not structopc_runs(out):
        fail(f"editing the included IDL did not rerun structopc:\n{out}")
    if not compile_commands(out):
        fail(f"editing the included IDL did not recompile:\n{out}")

    # A layout change of the shared record: all three IDLs read the file, so
    # all three are regenerated (no header is left with a stale fingerprint).
    with open(shared, encoding="utf-8") as f:
        text = f.read()
    time.sleep(1.1)
    with open(shared, "w", encoding="utf-8") as f:
        f.write(text.replace("gain: float = 1.0", "gain: float = 1.5"))
    out = run(["ninja", "-C", build, "-v"]).stdout
    runs = structopc_runs(out)
    if len(runs) != 3:
        fail(
            f"changing the shared record reran structopc {len(runs)} times, not 3 (filters, consumer, sharpen):\n{out}"
        )
    out = run(["ninja", "-C", build, "-v"]).stdout
    if "no work to do" not in out:
        fail(f"ninja still had work after changing the shared record:\n{out}")


def check_python_runtime_from(build, folder):
    """The consumer's Python test imported the package structop_runtime from `folder`."""
    with open(os.path.join(build, "meson-logs", "testlog.txt"), encoding="utf-8") as f:
        log = f.read()
    want = os.path.join(folder, "structop_runtime", "__init__.py")
    used = [
        line.split(": ", 1)[1].strip()
        for line in log.splitlines()
        if line.startswith("structop_runtime: ")
    ]
    if not used or not all(os.path.exists(u) and os.path.samefile(u, want) for u in used):
        fail(f"the consumer's Python test imported structop_runtime from {used}, not {want}")


def check_subproject_defines_only_the_compiler(build):
    """The structop subproject builds structopc, the runtime library and the Python
    runtime's C module (_native), nothing else (no tests, benchmarks or examples,
    whatever options are passed down)."""
    targets = json.loads(run(["meson", "introspect", "--targets", build]).stdout)
    sub = os.sep + os.path.join("subprojects", "structop") + os.sep
    compiler = sub + os.path.join("compiler", "meson.build")
    runtime = sub + os.path.join("runtime", "meson.build")
    python_runtime = sub + os.path.join("runtime", "python", "structop_runtime", "meson.build")
    from_structop = [t for t in targets if sub in t["defined_in"]]
    if not any(t["name"] == "structopc" and t["type"] == "executable" for t in from_structop):
        fail("the structop subproject does not define structopc")
    if not any(
        t["name"] == "structop_runtime" and t["type"] == "static library" for t in from_structop
    ):
        fail("the structop subproject does not define the runtime library structop_runtime")
    others = sorted(
        t["name"]
        for t in from_structop
        if not (
            t["defined_in"].endswith(compiler)
            or (
                t["defined_in"].endswith(runtime)
                # (structop_runtime_unity: the library's unity files, tools/unity.py)
                and t["name"] in ("structop_runtime", "structop_runtime_unity", "_native")
            )
            # The build folder's copy of the C module (runtime/meson.build's is installed).
            or (t["defined_in"].endswith(python_runtime) and t["name"] == "_native")
        )
    )
    if others:
        fail(
            "the structop subproject defines more than structopc, structop_runtime and "
            f"_native: {others}"
        )
    tests = json.loads(run(["meson", "introspect", "--tests", build]).stdout)
    names = sorted(t["name"] for t in tests)
    if names != ["consumer", "consumer-python"]:
        fail(f"the consumer build registers tests other than its own: {names}")


def main():
    source_root, work, python, structop_build = (os.path.abspath(a) for a in sys.argv[1:5])
    os.makedirs(work, exist_ok=True)
    env = dict(os.environ)

    # 1 + 2: structop as a subproject.
    project = os.path.join(work, "consumer-subproject")
    copy_consumer(source_root, project)
    os.makedirs(os.path.join(project, "subprojects"))
    os.symlink(source_root, os.path.join(project, "subprojects", "structop"))
    build = os.path.join(project, "build")
    run(
        [
            "meson",
            "setup",
            build,
            project,
            f"-Dstructop:python={python}",
            "-Dstructop:tests=true",
            "-Dstructop:benchmarks=enabled",
        ],
        env=env,
    )
    check_subproject_defines_only_the_compiler(build)
    run(["ninja", "-C", build])
    run(["meson", "test", "-C", build, "--print-errorlogs"])
    check_python_runtime_from(
        build, os.path.join(build, "subprojects", "structop", "runtime", "python")
    )
    check_rebuilds(project, build)
    run(["meson", "test", "-C", build, "--print-errorlogs"])
    print("subproject: ok")

    # 3: installed structop, found through pkg-config. The build this test is
    # part of is installed into a staging folder (it is built already: the
    # test builds structop once, as a subproject, not twice).
    prefix = os.path.join(work, "staged")
    if os.path.exists(prefix):
        shutil.rmtree(prefix)
    run(
        [
            "meson",
            "install",
            "-C",
            structop_build,
            "--no-rebuild",
            "--quiet",
            f"--destdir={prefix}",
        ],
        env=env,
    )
    pcs = glob.glob(os.path.join(prefix, "**", "structop.pc"), recursive=True)
    if len(pcs) != 1:
        fail(f"expected one installed structop.pc, found {pcs}")
    installed_structopc = glob.glob(os.path.join(prefix, "**", "bin", "structopc"), recursive=True)
    if len(installed_structopc) != 1 or not os.access(installed_structopc[0], os.X_OK):
        fail(f"structopc was not installed into bin/: {installed_structopc}")
    for header in ("runtime.h", "registration.h", "autograd_bridge.h", "convert.h"):
        if not glob.glob(os.path.join(prefix, "**", "include", "structop", header), recursive=True):
            fail(f"structop/{header} was not installed")
    # The runtime library (runtime/src), which generated X.ops.cpp files call,
    # is installed and named by structop.pc ahead of torch's libraries.
    libs = glob.glob(os.path.join(prefix, "**", "libstructop_runtime.a"), recursive=True)
    if len(libs) != 1:
        fail(f"expected one installed libstructop_runtime.a under {prefix}, found {libs}")
    pc_libs = [line for line in open(pcs[0], encoding="utf-8") if line.startswith("Libs:")]
    if (
        not pc_libs
        or "-lstructop_runtime" not in pc_libs[0]
        or pc_libs[0].index("-lstructop_runtime") > pc_libs[0].index("-ltorch")
    ):
        fail(f"structop.pc does not link -lstructop_runtime before torch: {pc_libs}")
    for header in ("autograd_node.h", "no_backward.h"):
        if glob.glob(os.path.join(prefix, "**", "include", "structop", header), recursive=True):
            fail(f"structop/{header} is internal to the runtime library but was installed")
    runtimes = glob.glob(
        os.path.join(prefix, "**", "structop_runtime", "__init__.py"), recursive=True
    )
    if len(runtimes) != 1:
        fail(f"expected one installed package structop_runtime under {prefix}, found {runtimes}")
    package = os.path.dirname(runtimes[0])
    for module in (
        "_autograd.py",
        "_checks.py",
        "_dynamic.py",
        "_kernels.py",
        "_loading.py",
        "_pytree.py",
        "_records.py",
    ):
        if not os.path.exists(os.path.join(package, module)):
            fail(f"the installed package structop_runtime has no {module}")

    installed = os.path.join(work, "consumer-installed")
    copy_consumer(source_root, installed)
    env_pc = dict(env, PKG_CONFIG_PATH=os.path.dirname(pcs[0]))
    ibuild = os.path.join(installed, "build")
    setup = run(["meson", "setup", ibuild, installed, "--wrap-mode=nofallback"], env=env_pc)
    if "structop found: YES" not in setup.stdout:
        fail(f"the installed structop was not found through pkg-config:\n{setup.stdout}")
    run(["ninja", "-C", ibuild], env=env_pc)
    # The .pc file is relocatable (${pcfiledir}/..): the path Meson ran
    # structopc by is the staged one, spelled through the pkgconfig folder.
    ninja_file = open(os.path.join(ibuild, "build.ninja"), encoding="utf-8").read()
    used = {
        os.path.realpath(token)
        for token in ninja_file.split()
        if token.endswith(os.sep + "structopc") and os.path.exists(token)
    }
    if used != {os.path.realpath(installed_structopc[0])}:
        fail(f"the consumer did not use the installed structopc {installed_structopc[0]}: {used}")
    run(["meson", "test", "-C", ibuild, "--print-errorlogs"], env=env_pc)
    check_python_runtime_from(ibuild, os.path.dirname(package))
    print("installed: ok")


if __name__ == "__main__":
    main()

"""python -m structop: where structop's files are, for build systems.

    python -m structop --version
    python -m structop --include-dir       the folder holding structop/runtime.h
    python -m structop --pkgconfig-dir     a folder with structop.pc (PKG_CONFIG_PATH)
    python -m structop --libdir            the folder of libstructop_runtime.a
    python -m structop --cmakedir          the folder of structopConfig.cmake (structop_DIR)
    python -m structop --structopc         the structopc executable
    python -m structop --cache-dir         the per-user build cache
    python -m structop idl MODULE[:FUNCTION] [-o NAME.ops.yaml]
                                           the IDL of ops decorated with register_custom_op

--pkgconfig-dir and --libdir compile the runtime library against this
interpreter's torch the first time (once per torch; cached), so the folder
they print always matches the torch `python` imports.
"""

import argparse
import sys

import structop


def idl_main(argv):
    """python -m structop idl MODULE[:FUNCTION] [-o FILE]: writes the IDL
    (structop.to_idl) of the ops a module decorates with register_custom_op."""
    parser = argparse.ArgumentParser(
        prog="python -m structop idl",
        description="Writes the .ops.yaml of ops decorated with structop.register_custom_op "
        "(imports MODULE; the current folder is on sys.path).",
    )
    parser.add_argument("target", metavar="MODULE[:FUNCTION]")
    parser.add_argument("-o", "--output", help="the file to write (default: standard output)")
    args = parser.parse_args(argv)
    import importlib
    import os

    module_name, _, function = args.target.partition(":")
    sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
        target = module
        if function:
            target = getattr(module, function, None)
            if target is None:
                print(f"structop: module {module_name} has no {function}", file=sys.stderr)
                return 1
        text = structop.to_idl(target)
    except (ImportError, TypeError, ValueError, RuntimeError) as e:
        print(f"structop: {e}", file=sys.stderr)
        return 1
    if args.output:
        from structop import _cache

        _cache.write_if_changed(os.path.abspath(args.output), text)
    else:
        sys.stdout.write(text)
    return 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["idl"]:
        return idl_main(argv[1:])
    parser = argparse.ArgumentParser(
        prog="python -m structop",
        description="Prints where structop's files are, for build systems (one line per option given).",
    )
    parser.add_argument("--version", action="store_true", help="the structop version")
    parser.add_argument(
        "--include-dir",
        "--includedir",
        action="store_true",
        help="the folder with structop/runtime.h (-I)",
    )
    parser.add_argument(
        "--pkgconfig-dir",
        "--pkgconfigdir",
        action="store_true",
        help="a folder with structop.pc for this interpreter's torch (PKG_CONFIG_PATH)",
    )
    parser.add_argument(
        "--libdir",
        "--lib-dir",
        action="store_true",
        help="the folder of libstructop_runtime.a for this interpreter's torch",
    )
    parser.add_argument(
        "--cmakedir",
        "--cmake-dir",
        action="store_true",
        help="the folder of structopConfig.cmake (structop_DIR)",
    )
    parser.add_argument("--structopc", action="store_true", help="the structopc executable")
    parser.add_argument("--cache-dir", action="store_true", help="the per-user build cache")
    parser.add_argument(
        "--cmake-vars",
        action="store_true",
        help="write the CMake variables for this interpreter's torch and print "
        "the file's path (structopConfig.cmake runs this)",
    )
    args = parser.parse_args(argv)

    answers = []
    try:
        # In the order of the options above, whatever order they were given in.
        if args.version:
            answers.append(structop.__version__)
        if args.include_dir:
            answers.append(structop.get_include())
        if args.pkgconfig_dir:
            answers.append(structop.get_pkgconfig_dir())
        if args.libdir:
            answers.append(structop.get_libdir())
        if args.cmakedir:
            answers.append(structop.get_cmake_dir())
        if args.structopc:
            answers.append(structop.get_structopc())
        if args.cache_dir:
            answers.append(structop.get_cache_dir())
        if args.cmake_vars:
            from structop import _runtime

            answers.append(_runtime.cmake_vars_file())
    except (RuntimeError, OSError) as e:
        print(f"structop: {e}", file=sys.stderr)
        return 1
    if not answers:
        parser.print_help(sys.stderr)
        return 2
    print("\n".join(answers))
    return 0


if __name__ == "__main__":
    sys.exit(main())

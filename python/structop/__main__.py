"""python -m structop: where structop's files are, for build systems.

    python -m structop --version
    python -m structop --include-dir       the folder holding structop/runtime.h
    python -m structop --pkgconfig-dir     a folder with structop.pc (PKG_CONFIG_PATH)
    python -m structop --libdir            the folder of libstructop_runtime.a
    python -m structop --cmakedir          the folder of structopConfig.cmake (structop_DIR)
    python -m structop --structopc         the structopc executable
    python -m structop --cache-dir         the per-user build cache

--pkgconfig-dir and --libdir compile the runtime library against this
interpreter's torch the first time (once per torch; cached), so the folder
they print always matches the torch `python` imports.
"""

import argparse
import sys

import structop


def main(argv=None):
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

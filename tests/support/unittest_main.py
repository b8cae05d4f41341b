"""Runs a test script's unittest cases the way the test suite counts them.

Exit status 0 when every case passed; 1 when a case failed or errored, or when
no case ran; 77 (Meson's "skipped") when none failed but some were skipped, so
that a skipped case is never counted as a pass: each skipped case is named
with its reason, and the last line says how many were skipped.

A test script calls it in place of unittest.main():

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
    import unittest_main
    ...
    if __name__ == "__main__":
        unittest_main.main(argv=[sys.argv[0]])
"""

import sys
import unittest

SKIPPED = 77


def main(argv, verbosity=2):
    program = unittest.main(module="__main__", argv=argv, verbosity=verbosity, exit=False)
    result = program.result
    if not result.wasSuccessful():
        sys.exit(1)
    if result.testsRun == 0:
        print("no test case ran")
        sys.exit(1)
    if result.skipped:
        for test, reason in result.skipped:
            print(f"skipped: {test.id()}: {reason}")
        print(
            f"{len(result.skipped)} of {result.testsRun} cases skipped "
            f"({', '.join(test.id().rsplit('.', 1)[-1] for test, _ in result.skipped)})"
        )
        sys.exit(SKIPPED)
    sys.exit(0)

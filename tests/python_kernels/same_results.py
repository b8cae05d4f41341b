#!/usr/bin/env python3
"""The same IDL with C++ kernels and with Python kernels gives the same results.

Runs every example op case of tests/pt2/test_pt2.py (CASES: every op of
idl_examples/) twice, in two fresh interpreters (a process
has one registration per op): once on the compiled examples library
(idl_examples/<stem>_kernels.cpp) and once on the Python kernels
(idl_examples/<stem>_kernels.py), on identical inputs. For each case it
compares the outputs, the inputs after the call (the mutation example writes
to them) and, for ops with `backward: true`, the gradients of every input
that requires grad.

Usage: same_results.py LIBSTRUCTOP_EXAMPLES.so KERNELS_DIR GENERATED_MODULE_DIR PT2_TEST
"""

import enum
import importlib.util
import os
import subprocess
import sys
import tempfile

import torch
from torch.utils import _pytree


def load_pt2(path):
    spec = importlib.util.spec_from_file_location("test_pt2", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def saved(leaf):
    """A leaf as torch.save keeps it for the parent, which does not import the
    generated modules: an enum member (an argument such as `then=[Reduce.mean]`)
    as its class name and value."""
    if isinstance(leaf, torch.Tensor):
        return leaf.detach()
    if isinstance(leaf, enum.Enum):
        return (type(leaf).__name__, leaf.value)
    return leaf


def child(source, module_dir, pt2_path, out_path):
    """Runs every case on one registration and saves the flat results."""
    pt2 = load_pt2(pt2_path)
    if source.endswith(".so"):
        pt2.LIBRARY = source
    else:
        pt2.KERNELS_DIR = source
    pt2.MODULE_DIR = module_dir
    pt2.load_modules()
    results = {}
    for case in pt2.CASES:
        fn = pt2.case_fn(case)
        args, kwargs = pt2.case_inputs(case, rg=case.backward, seed=7)
        out = fn(*args, **kwargs)
        grads = pt2.grads_of(out, (args, kwargs)) if case.backward else []
        leaves, spec = _pytree.tree_flatten((out, args, kwargs, grads))
        results[pt2.case_name(case)] = (str(spec), [saved(leaf) for leaf in leaves])
    torch.save(results, out_path)


def main():
    library, kernels_dir, module_dir, pt2_path = sys.argv[1:5]
    with tempfile.TemporaryDirectory() as tmp:
        runs = {}
        for label, source in (("C++", library), ("Python", kernels_dir)):
            path = os.path.join(tmp, label + ".pt")
            run = subprocess.run(
                [sys.executable, __file__, "--child", source, module_dir, pt2_path, path],
                capture_output=True,
                text=True,
                timeout=900,
            )
            if run.returncode != 0:
                sys.exit(f"FAIL the {label} run (exit {run.returncode}):\n{run.stdout}{run.stderr}")
            runs[label] = torch.load(path)
    cpp, python = runs["C++"], runs["Python"]
    if sorted(cpp) != sorted(python):
        sys.exit(f"FAIL different cases: {sorted(cpp)} vs {sorted(python)}")
    failures = []
    for name in sorted(cpp):
        (cpp_spec, cpp_leaves), (py_spec, py_leaves) = cpp[name], python[name]
        try:
            assert cpp_spec == py_spec, f"structure {cpp_spec} vs {py_spec}"
            for i, (a, b) in enumerate(zip(cpp_leaves, py_leaves)):
                if isinstance(a, torch.Tensor):
                    torch.testing.assert_close(b, a, msg=lambda m, i=i: f"leaf {i}: {m}")
                else:
                    assert a == b, f"leaf {i}: {a!r} vs {b!r}"
        except AssertionError as error:
            failures.append(f"{name}: {error}")
    for name in sorted(cpp):
        print(
            f"{'FAIL' if any(f.startswith(name + ':') for f in failures) else 'ok  '} {name} "
            f"({len(cpp[name][1])} values)"
        )
    if failures:
        sys.exit("FAIL C++ and Python kernels differ:\n" + "\n".join(failures))
    print(
        f"{len(cpp)} cases: C++ and Python kernels give the same outputs, written inputs and gradients"
    )


if __name__ == "__main__":
    if sys.argv[1] == "--child":
        child(*sys.argv[2:6])
    else:
        main()

#!/usr/bin/env python3
"""From a Python prototype to C++ kernels with the same schema (issue 42):
a model calling ops decorated with structop.register_custom_op
(proto_ops_module.py) is exported with torch.export (a dynamic batch) in
one process; another process, which never imports the prototype, loads the
library built from the exported IDL (`python -m structop idl`,
`structopc --emit h,cpp`) and proto_kernels.cpp, loads the saved program
and runs it: the same results. The library's registered schemas are the
Python ops' (compared as text).

Usage: export_to_cpp.py LIBRARY WORK_DIR (structop, structop_runtime and
this folder on PYTHONPATH)."""

import os
import subprocess
import sys
import textwrap

library, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
program = os.path.join(work, "proto.pt2")
expected = os.path.join(work, "expected.pt")

PROTOTYPE = """
import torch, proto_ops_module as P

class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.linspace(0.5, 1.5, 8))
        self.g = torch.nn.Parameter(torch.linspace(-1.0, 1.0, 8))

    def forward(self, x, bias):
        y = P.rms_norm(x, P.NormCfg(self.weight, eps=1e-5))
        return P.gate(y, P.Gate(self.g, bias), scale=0.5)

torch.manual_seed(0)
model = Model()
x, bias = torch.randn(4, 8), torch.randn(8)
batch = torch.export.Dim("batch", min=2)
ep = torch.export.export(model, (x, bias), dynamic_shapes=({{0: batch}}, None))
assert "torch.ops.proto.rms_norm.default" in ep.graph_module.code, ep.graph_module.code
torch.export.save(ep, {program!r})
x6 = torch.randn(6, 8)
torch.save({{"inputs": (x6, bias), "out": model(x6, bias).detach(),
             "schemas": [str(op.default._schema) for op in (torch.ops.proto.rms_norm,
                                                                 torch.ops.proto.gate)]}},
           {expected!r})
print("exported")
"""

DEPLOYED = """
import sys, torch
assert "proto_ops_module" not in sys.modules
torch.ops.load_library({library!r})
saved = torch.load({expected!r})
schemas = [str(op.default._schema) for op in (torch.ops.proto.rms_norm, torch.ops.proto.gate)]
assert schemas == saved["schemas"], (schemas, saved["schemas"])
ep = torch.export.load({program!r})
out = ep.module()(*saved["inputs"])
torch.testing.assert_close(out, saved["out"])
assert "proto_ops_module" not in sys.modules
print("same results from the C++ kernels; schemas:", *schemas, sep="\\n  ")
"""

for code in (PROTOTYPE, DEPLOYED):
    text = textwrap.dedent(code).format(program=program, expected=expected, library=library)
    result = subprocess.run([sys.executable, "-c", text], check=False)
    if result.returncode != 0:
        sys.exit(1)
print("ok")

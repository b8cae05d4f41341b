#!/usr/bin/env python3
"""Tests the installed structop_example package: forward with both
activations and with and without the optional bias, gradients into the
record's tensor fields (gradcheck), torch.library.opcheck.

Run from any folder but the package's source folder (this file's folder is
fine): the installed package must be the one imported.
"""

import os
import sys

import torch

import structop_example as ex

print("structop_example:", ex.__file__)
source_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if os.path.dirname(os.path.dirname(os.path.abspath(ex.__file__))) == source_dir:
    sys.exit("FAIL: imported structop_example from its source folder, not the installed package")

x = torch.tensor([-2.0, -0.5, 1.0, 3.0], dtype=torch.double)
w = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.double)
b = torch.tensor([0.5, 0.5, -4.0, 0.0], dtype=torch.double)
torch.testing.assert_close(
    ex.layer(x, ex.LayerCfg(lin=ex.Linear1d(weight=w, bias=b))), (x * w + b).relu()
)
torch.testing.assert_close(ex.layer(x, ex.LayerCfg(lin=ex.Linear1d(weight=w))), (x * w).relu())
torch.testing.assert_close(
    ex.layer(x, ex.LayerCfg(lin=ex.Linear1d(weight=w, bias=b), act=ex.Activation.identity)),
    x * w + b,
)
torch.testing.assert_close(
    ex.layer(x, ex.LayerCfg(lin=ex.Linear1d(weight=w), act="identity")), x * w
)

for act in ("relu", "identity"):
    assert torch.autograd.gradcheck(
        lambda x, w, b: ex.layer(x, ex.LayerCfg(lin=ex.Linear1d(weight=w, bias=b), act=act)),
        (x.clone().requires_grad_(), w.clone().requires_grad_(), b.clone().requires_grad_()),
    )
torch.library.opcheck(
    torch.ops.st_example.layer.default,
    (x.clone().requires_grad_(), w.clone().requires_grad_(), b.clone(), "relu"),
)
print("structop_example.layer ok (forward, gradcheck, opcheck)")

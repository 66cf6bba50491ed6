#!/usr/bin/env python3
"""Checks, with Python's torch.load, a state dict that the C++ side saved.

usage: check_state_dict.py FILE EXPECTED_JSON

FILE must load as a collections.OrderedDict holding exactly the tensors
EXPECTED_JSON (written by make_state_dict.py) lists, in its order, with the
same dtype, shape, requires_grad and values; the nn.Module's own entries must
load back into that module. Exits 0 when all holds, else prints the first
difference and exits 1.
"""
import collections
import json
import sys

import torch

from make_state_dict import Net


def fail(message):
    print(message, file=sys.stderr)
    sys.exit(1)


def main():
    path, expected_path = sys.argv[1], sys.argv[2]
    with open(expected_path, encoding="utf-8") as f:
        expected = json.load(f)
    sd = torch.load(path)
    if type(sd) is not collections.OrderedDict:
        fail(f"torch.load gave a {type(sd).__name__}, not an OrderedDict")
    names = [e["name"] for e in expected]
    if list(sd.keys()) != names:
        fail(f"names {list(sd.keys())} != {names}")
    for e in expected:
        t = sd[e["name"]]
        if not isinstance(t, torch.Tensor):
            fail(f"{e['name']}: a {type(t).__name__}, not a tensor")
        if str(t.dtype) != e["dtype"] or list(t.shape) != e["shape"]:
            fail(f"{e['name']}: {t.dtype}{list(t.shape)} != {e['dtype']}{e['shape']}")
        if t.requires_grad != e["requires_grad"]:
            fail(f"{e['name']}: requires_grad {t.requires_grad} != {e['requires_grad']}")
        values = t.detach().reshape(-1)
        if t.dtype in (torch.float16, torch.bfloat16):
            values = values.float()
        values = [int(v) if t.dtype == torch.bool else v for v in values.tolist()]
        if values != e["values"]:
            fail(f"{e['name']}: values {values} != {e['values']}")
    net = Net()
    own = {k: v for k, v in sd.items() if k.split(".")[0] in ("conv", "bn", "fc")}
    net.load_state_dict(own, strict=True)
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())

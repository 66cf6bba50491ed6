#!/usr/bin/env python3
"""Writes torch.save fixtures for the C++ checkpoint tests, with the values
the C++ loader must find in them.

usage: make_state_dict.py OUT_DIR

OUT_DIR/plain.pt            an nn.Module's state_dict() (an OrderedDict with
                            _metadata) plus one tensor of every supported
                            dtype, a 0-dim and an empty tensor, two tensors
                            sharing a storage (one a strided view at an
                            offset), a transposed view and an nn.Parameter
OUT_DIR/protocol4.pt        the same saved with pickle protocol 4 (FRAME,
                            MEMOIZE, STACK_GLOBAL, SHORT_BINUNICODE)
OUT_DIR/wrapped_model.pt    {"epoch", "args", "model": ..., "optimizer", ...}
OUT_DIR/wrapped_state_dict.pt  {"state_dict": ..., "hyper": [...], ...}
OUT_DIR/whole_module.pt     torch.save(module): not a state dict
OUT_DIR/not_tensor.pt       an OrderedDict with an int among the tensors
OUT_DIR/expected.json       for every tensor of plain.pt, in order: name,
                            dtype, shape, stride, storage offset,
                            requires_grad and the values in row-major order
"""
import argparse
import collections
import copy
import json
import os
import sys

import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3)
        self.bn = nn.BatchNorm2d(3)
        self.fc = nn.Linear(4, 2)


def make_state_dict():
    torch.manual_seed(0)
    net = Net()
    with torch.no_grad():
        net.bn.running_mean.uniform_(-1, 1)
        net.bn.running_var.uniform_(0.5, 2)
        net.bn.num_batches_tracked.fill_(12345678901)
    sd = net.state_dict()
    sd["extra.half"] = torch.randn(3, 2).half()
    sd["extra.bfloat16"] = torch.randn(5).to(torch.bfloat16)
    sd["extra.double"] = torch.randn(2, 2, dtype=torch.float64)
    sd["extra.long"] = torch.tensor([-(2**40), 0, 7, 2**62 + 1])
    sd["extra.int"] = torch.tensor([[-5, 2**31 - 1]], dtype=torch.int32)
    sd["extra.short"] = torch.tensor([-300, 300], dtype=torch.int16)
    sd["extra.char"] = torch.tensor([-128, 127], dtype=torch.int8)
    sd["extra.byte"] = torch.tensor([0, 255], dtype=torch.uint8)
    sd["extra.bool"] = torch.tensor([True, False, True])
    sd["extra.scalar"] = torch.tensor(3.5)
    sd["extra.empty"] = torch.zeros(0, 3)
    base = torch.arange(20.0).view(4, 5)
    sd["shared.base"] = base
    sd["shared.view"] = base[1:, 2:]  # offset 7, stride (5, 1), base's storage
    sd["transposed"] = torch.arange(6.0).view(2, 3).t()
    sd["parameter"] = nn.Parameter(torch.full((2,), 0.25))
    sd["unicode.gr\u00f6\u00dfe"] = torch.ones(1)
    return net, sd


def describe(t):
    values = t.detach().reshape(-1)
    if t.dtype in (torch.float16, torch.bfloat16):
        values = values.float()
    return {
        "dtype": str(t.dtype),
        "shape": list(t.shape),
        "stride": list(t.stride()),
        "offset": t.storage_offset(),
        "requires_grad": t.requires_grad,
        "values": [int(v) if t.dtype == torch.bool else v for v in values.tolist()],
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out_dir")
    out = parser.parse_args().out_dir
    net, sd = make_state_dict()
    torch.save(sd, os.path.join(out, "plain.pt"))
    torch.save(sd, os.path.join(out, "protocol4.pt"), pickle_protocol=4)

    # A step of a copy gives the optimizer momentum buffers (tensors outside
    # the state dict) without changing the state dict's tensors.
    trained = copy.deepcopy(net)
    optimizer = torch.optim.SGD(trained.parameters(), lr=0.02, momentum=0.9)
    loss = trained.fc(torch.ones(1, 4)).sum() + trained.conv(torch.ones(1, 2, 3, 3)).sum()
    loss.backward()
    optimizer.step()
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=3)
    torch.save(
        {
            "epoch": 3,
            "args": argparse.Namespace(lr=0.02, name="maskrcnn"),
            "model": sd,
            "optimizer": optimizer.state_dict(),
            "lr_scheduler": scheduler.state_dict(),
            "scale": 1.5,
            "nothing": None,
        },
        os.path.join(out, "wrapped_model.pt"),
    )
    torch.save(
        {"state_dict": sd, "hyper": [1, 2.0, "a", (3, 4)], "flags": {1: True}},
        os.path.join(out, "wrapped_state_dict.pt"),
    )
    torch.save(net, os.path.join(out, "whole_module.pt"))
    torch.save(
        collections.OrderedDict([("a", torch.ones(2)), ("count", 5)]),
        os.path.join(out, "not_tensor.pt"),
    )
    expected = [dict(name=name, **describe(t)) for name, t in sd.items()]
    with open(os.path.join(out, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(expected, f, ensure_ascii=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())

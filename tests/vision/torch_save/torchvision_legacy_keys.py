#!/usr/bin/env python3
"""Writes the state dict keys of torchvision's maskrcnn_resnet50_fpn under
their current names and under the names torchvision < 0.13 used, after
checking with torchvision itself that it accepts the legacy names.

usage: torchvision_legacy_keys.py OUT_DIR

OUT_DIR/modern_keys.txt  one key a line, model.state_dict() order
OUT_DIR/legacy_keys.txt  the same keys, legacy names where they differ

The legacy names are made by reversing the renames this repository's C++
helper performs; torchvision's own _load_from_state_dict hooks (which rename
legacy keys when the module version is missing) must then load them
strictly, so the test checks the helper against torchvision, not against
itself.
"""
import collections
import os
import re
import sys

import torch
from torchvision.models.detection import maskrcnn_resnet50_fpn

LEGACY = [
    (re.compile(r"^(backbone\.fpn\.(?:inner|layer)_blocks\.\d+)\.0\.(weight|bias)$"), lambda m: f"{m[1]}.{m[2]}"),
    (re.compile(r"^rpn\.head\.conv\.0\.0\.(weight|bias)$"), lambda m: f"rpn.head.conv.{m[1]}"),
    (
        re.compile(r"^roi_heads\.mask_head\.(\d+)\.0\.(weight|bias)$"),
        lambda m: f"roi_heads.mask_head.mask_fcn{int(m[1]) + 1}.{m[2]}",
    ),
]


def legacy_name(key):
    for pattern, rename in LEGACY:
        m = pattern.match(key)
        if m:
            return rename(m)
    return key


def main():
    out = sys.argv[1]
    model = maskrcnn_resnet50_fpn(weights=None, weights_backbone=None)
    modern = model.state_dict()
    # A plain OrderedDict has no _metadata: every module's version reads as
    # None, which is what makes torchvision apply its legacy renames.
    legacy = collections.OrderedDict((legacy_name(k), v) for k, v in modern.items())
    renamed = sum(1 for k in modern if legacy_name(k) != k)
    if renamed == 0:
        print("no key has a legacy name", file=sys.stderr)
        return 1
    model.load_state_dict(legacy, strict=True)
    with open(os.path.join(out, "modern_keys.txt"), "w") as f:
        f.write("".join(k + "\n" for k in modern))
    with open(os.path.join(out, "legacy_keys.txt"), "w") as f:
        f.write("".join(k + "\n" for k in legacy))
    return 0


if __name__ == "__main__":
    sys.exit(main())

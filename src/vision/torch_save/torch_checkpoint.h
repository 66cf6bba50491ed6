// Reading and writing PyTorch `torch.save` checkpoints (the zip format of
// PyTorch >= 1.6) that hold state dicts.
//
// LibTorch 1.13's torch::pickle_load cannot read the OrderedDict that
// nn.Module.state_dict() pickles to ("Expected GenericDict but got None"), and
// published torchvision weights are exactly that, so this layer carries its
// own small unpickler that understands what torch.save writes and nothing more.
#pragma once

#include <ATen/ATen.h>

#include <string>
#include <vector>

namespace dtrain::vision::torch_save {

struct NamedTensor {
  std::string name;
  at::Tensor tensor;
};

// In the order of the file (an OrderedDict keeps insertion order).
using StateDict = std::vector<NamedTensor>;

// Loads the state dict that `path` holds. Accepted layouts of the pickled root:
//   - a dict whose values are all tensors: the state dict itself;
//   - a wrapper dict with a key "model" (torchvision's reference scripts) or,
//     failing that, "state_dict" (PyTorch Lightning and others) whose value is
//     such a dict; the wrapper's other entries (epoch, optimizer, args, ...)
//     are skipped whatever they hold.
// Inside the state dict every value must be a tensor. Tensors come back on
// the CPU whatever device they were saved from, with their saved dtype,
// shape and strides; tensors that shared a storage in the file share it here
// too (as torch.load does). Parameters saved as nn.Parameter are plain tensors.
// Throws CheckpointError (a std::runtime_error), one line naming the file,
// for anything else: a missing file, a file that is not a zip archive or is
// truncated, an unsupported pickle opcode, an unknown global, a missing or
// short storage record, a tensor view outside its storage. Like torch.load it
// does not verify the zip's CRC-32s (LibTorch's zip reader skips them), so
// flipped bits inside tensor bytes go unnoticed; damage to the structure
// does not.
StateDict load_state_dict(const std::string& path);

// Writes `state` as torch.save(OrderedDict) of PyTorch 1.13 would, so that
// Python's torch.load returns an OrderedDict of the same names and tensors.
// Each tensor gets a storage of its own holding a contiguous CPU copy. No
// `_metadata` (per-module versions) is written: torchvision modules then treat
// the weights as unversioned and rename legacy keys, but only keys present
// under a legacy name, so modern names load unchanged in Python. The file is
// written to a temporary file next to `path`, flushed to disk and renamed over
// `path`: readers see the old file or the new one, never a partial one.
// Throws CheckpointError for a repeated or non-UTF-8 name, an undefined,
// sparse or quantized tensor, a dtype without a torch storage class, or a
// failed write.
void save_state_dict(const std::string& path, const StateDict& state);

}  // namespace dtrain::vision::torch_save

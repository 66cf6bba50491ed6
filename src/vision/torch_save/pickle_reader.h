// The unpickler for torch.save's data.pkl.
#pragma once

#include <cstddef>
#include <cstdint>

#include "vision/torch_save/pickle_value.h"

namespace dtrain::vision::torch_save {

// Runs the pickle machine over `size` bytes and returns the object graph it
// built. It models what torch.save pickles: dicts and OrderedDicts, lists,
// tuples, scalars, strings, persistent-id storages and the torch._utils
// functions that rebuild tensors and parameters (which only record their
// arguments; no bytes are read here). Calls of any other global yield an
// opaque kObject that swallows its items and state, so a checkpoint wrapper
// may carry objects (argparse.Namespace, a scheduler's state) that the caller
// never looks at. Every read is bounds-checked; a damaged pickle throws
// CheckpointError naming the opcode and its offset ("unsupported pickle opcode
// 0x63 at offset 12"), without a file name, which the caller adds.
PickleGraph read_pickle(const std::uint8_t* data, std::size_t size);

}  // namespace dtrain::vision::torch_save

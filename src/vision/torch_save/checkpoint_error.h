#pragma once

#include <stdexcept>
#include <string>

namespace dtrain::vision::torch_save {

// The one exception type of the checkpoint layer. The message is one line that
// names the file and what is wrong with it: "checkpoint 'r50.pth': missing
// storage record 'data/17'". A CLI prints it as it is.
class CheckpointError : public std::runtime_error {
 public:
  explicit CheckpointError(const std::string& message) : std::runtime_error(message) {}
};

// Throws the CheckpointError for `what` is wrong with the checkpoint at `path`.
[[noreturn]] inline void fail_checkpoint(const std::string& path, const std::string& what) {
  throw CheckpointError("checkpoint '" + path + "': " + what);
}

}  // namespace dtrain::vision::torch_save

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

}  // namespace dtrain::vision::torch_save

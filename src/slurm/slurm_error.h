#pragma once

#include <stdexcept>

namespace dtrain::slurm {

// What Slurm's variables or commands gave that dtrain cannot use; the message names it.
class SlurmError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace dtrain::slurm

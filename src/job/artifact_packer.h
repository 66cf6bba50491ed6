#pragma once

#include <cstdint>
#include <string>

namespace dtrain::job {

// Packs the contents of `dir` (not the directory itself, as SageMaker's
// model.tar.gz) into the gzip'd tar `archive`, with `tar`. An empty or
// missing directory gives an empty archive. Throws JobError on failure.
void pack_directory(const std::string& dir, const std::string& archive);

// Copies the tree under `from` into `to` (created), replacing files that
// exist. Returns the bytes copied. Throws JobError on failure.
uint64_t copy_tree(const std::string& from, const std::string& to);

}  // namespace dtrain::job

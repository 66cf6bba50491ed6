// Replays inputs through a fuzz target without libFuzzer (the GCC build, under ctest): every
// file named, and every file in every folder named, once. A crash, a sanitizer report or an
// escaped exception fails the run, as it would under libFuzzer; bench/fuzz/run does the fuzzing.
//
// With --mutate N, each input is also run N times damaged at random (bytes changed, 32-bit
// fields set to large values, the end cut off), for a target libFuzzer cannot build: a blind
// search, without libFuzzer's coverage guidance, best run in the sanitizer build. The input in
// flight is written to ./mutant-in-flight first, so a crash leaves it behind.
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_target.h"

namespace {

std::vector<std::filesystem::path> inputs_named(const std::vector<std::string>& names) {
  std::vector<std::filesystem::path> files;
  for (const std::string& name : names) {
    const std::filesystem::path path(name);
    if (std::filesystem::is_directory(path)) {
      for (const auto& entry : std::filesystem::directory_iterator(path)) {
        if (entry.is_regular_file()) files.push_back(entry.path());
      }
    } else {
      files.push_back(path);
    }
  }
  std::sort(files.begin(), files.end());  // the same order on every machine
  return files;
}

std::vector<std::uint8_t> mutated(std::vector<std::uint8_t> bytes, std::mt19937& random) {
  const int edits = 1 + static_cast<int>(random() % 4);
  for (int edit = 0; edit < edits && !bytes.empty(); ++edit) {
    const std::size_t at = random() % bytes.size();
    switch (random() % 4) {
      case 0: bytes[at] ^= static_cast<std::uint8_t>(1u << (random() % 8)); break;
      case 1: bytes[at] = static_cast<std::uint8_t>(random()); break;
      case 2: {  // a size or an offset gone wild
        const std::uint32_t value = random() % 2 ? 0xffffffffu : static_cast<std::uint32_t>(random());
        for (std::size_t i = 0; i < 4 && at + i < bytes.size(); ++i) bytes[at + i] = (value >> (8 * i)) & 0xff;
        break;
      }
      default: bytes.resize(at);
    }
  }
  return bytes;
}

void run_mutants(const std::vector<std::uint8_t>& bytes, int count, unsigned seed) {
  std::mt19937 random(seed);
  for (int i = 0; i < count; ++i) {
    const std::vector<std::uint8_t> mutant = mutated(bytes, random);
    std::ofstream("mutant-in-flight", std::ios::binary)
        .write(reinterpret_cast<const char*>(mutant.data()), static_cast<std::streamsize>(mutant.size()));
    LLVMFuzzerTestOneInput(mutant.data(), mutant.size());
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> names(argv + 1, argv + argc);
  int mutants = 0;
  if (names.size() >= 2 && names[0] == "--mutate") {
    const std::string& count = names[1];
    if (std::from_chars(count.data(), count.data() + count.size(), mutants).ptr != count.data() + count.size()) {
      mutants = -1;
    }
    names.erase(names.begin(), names.begin() + 2);
  }
  if (names.empty() || mutants < 0) {
    std::fprintf(stderr, "usage: %s [--mutate N] CORPUS_DIR_OR_FILE...\n", argv[0]);
    return 2;
  }
  const std::vector<std::filesystem::path> files = inputs_named(names);
  if (files.empty()) {
    std::fprintf(stderr, "%s: no inputs in the corpus named\n", argv[0]);
    return 1;
  }
  for (const auto& file : files) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "%s: cannot read %s\n", argv[0], file.c_str());
      return 1;
    }
    const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::fprintf(stderr, "replaying %s (%zu bytes)\n", file.c_str(), bytes.size());
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
    run_mutants(bytes, mutants, static_cast<unsigned>(&file - files.data()) + 1);
  }
  if (mutants > 0) std::filesystem::remove("mutant-in-flight");
  std::printf("replayed %zu inputs", files.size());
  if (mutants > 0) std::printf(" and %d mutants of each", mutants);
  std::printf("\n");
  return 0;
}

// MNIST's idx files (images and labels), as `--data-dir` or SM_CHANNEL_TRAINING hands them
// to dtrain-mnist and `dtrain data make-mnist-instances`.
#include "mnist/mnist_idx.h"
#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes = dtrain::fuzz::as_text(data, size);
  dtrain::fuzz::expect_clean_errors([&] {
    const dtrain::mnist::MnistImages images = dtrain::mnist::parse_mnist_images(bytes, "fuzz");
    // What a reader of the pixels relies on: the header's sizes describe exactly the pixels held.
    if (images.count * images.rows * images.cols != images.pixels.size()) __builtin_trap();
  });
  dtrain::fuzz::expect_clean_errors([&] { dtrain::mnist::parse_mnist_labels(bytes, "fuzz"); });
  return 0;
}

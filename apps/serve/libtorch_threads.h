#pragma once

namespace dtrain::serve {

// Sizes LibTorch's intra-op pool (and OpenBLAS's) for the whole process:
// every worker's operators share it, so workers x threads should not exceed
// the cores. Kept apart so that main.cc compiles without LibTorch's headers.
void use_libtorch_threads(int threads);

}  // namespace dtrain::serve

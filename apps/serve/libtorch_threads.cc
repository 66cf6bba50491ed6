#include "apps/serve/libtorch_threads.h"

#include "dtrain/torch_threads.h"

namespace dtrain::serve {

void use_libtorch_threads(int threads) { dtrain::libtorch::set_num_threads(threads); }

}  // namespace dtrain::serve

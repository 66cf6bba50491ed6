# The one place a target gets LibTorch (described by cmake/find_torch.cmake):
# `dtrain_link_torch(target)`. Only the targets that call it may include LibTorch headers
# (runtime/, launch/, job/ and the CLI never do).
#
# A precompiled <torch/torch.h> was tried here and measured slower on the project's 2-core
# machines (docs/performance.md, "Build time"): a 650 MB header image mapped by every
# compile costs more system time than the parsing it saves when two compiles run at once.
function(dtrain_link_torch target)
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "EXECUTABLE")
    target_link_libraries(${target} PRIVATE dtrain::libtorch)
  else()
    target_link_libraries(${target} PUBLIC dtrain::libtorch)
  endif()
endfunction()

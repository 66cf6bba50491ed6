# LibTorch's headers dominate the build: a translation unit that includes them spends
# 20-40 s of its compile (on the 2-core machines this project builds on) parsing the same
# few hundred thousand lines. Every target that compiles against LibTorch reuses one
# precompiled <torch/torch.h> instead (docs/performance.md, "Build time").
#
# GCC accepts a precompiled header only under the flags it was made with, and CMake
# compiles libraries with -fPIC but executables with -fPIE, so there are two: one made
# as a library object, one with the executables' flags. Turn them off with
# -DDTRAIN_PRECOMPILED_HEADERS=OFF (e.g. to check that every file includes what it uses).
option(DTRAIN_PRECOMPILED_HEADERS "Precompile LibTorch's headers once for every target that uses them" ON)

if(DTRAIN_PRECOMPILED_HEADERS)
  set(_dtrain_pch_source ${CMAKE_CURRENT_LIST_DIR}/torch_precompiled_header.cc)
  add_library(dtrain_torch_pch_pic OBJECT ${_dtrain_pch_source})
  target_link_libraries(dtrain_torch_pch_pic PRIVATE ${TORCH_LIBRARIES})
  target_precompile_headers(dtrain_torch_pch_pic PRIVATE <torch/torch.h>)

  add_library(dtrain_torch_pch_pie OBJECT ${_dtrain_pch_source})
  set_target_properties(dtrain_torch_pch_pie PROPERTIES POSITION_INDEPENDENT_CODE OFF)
  target_compile_options(dtrain_torch_pch_pie PRIVATE -fPIE)
  target_link_libraries(dtrain_torch_pch_pie PRIVATE ${TORCH_LIBRARIES})
  target_precompile_headers(dtrain_torch_pch_pie PRIVATE <torch/torch.h>)
endif()

# Links `target` against LibTorch and, when enabled, gives its sources the precompiled
# LibTorch headers.
function(dtrain_link_torch target)
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "EXECUTABLE")
    target_link_libraries(${target} PRIVATE ${TORCH_LIBRARIES})
  else()
    target_link_libraries(${target} PUBLIC ${TORCH_LIBRARIES})
  endif()
  if(DTRAIN_PRECOMPILED_HEADERS)
    if(type STREQUAL "EXECUTABLE")
      target_precompile_headers(${target} REUSE_FROM dtrain_torch_pch_pie)
    else()
      target_precompile_headers(${target} REUSE_FROM dtrain_torch_pch_pic)
    endif()
  endif()
endfunction()

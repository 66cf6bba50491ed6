# DTRAIN_CUDA=AUTO|ON|OFF: whether the runtime gets its GPU engines (NCCL, and staging CUDA
# tensors through host memory). AUTO turns them on when nvcc and NCCL are found, ON fails the
# configure without them, OFF never builds them. nvcc is looked for on the PATH, then in the
# CUDA toolkit of torch's environment (PyPI's nvidia wheels, nvidia/cu<major>/, which
# scripts/setup completes with nvcc), then at /usr/local/cuda; NCCL beside it or in
# nvidia/nccl/. Without them the runtime builds and works as before, and a CUDA tensor
# handed to it is an error that says the build has no CUDA.
# Sets DTRAIN_HAVE_CUDA, DTRAIN_TORCH_CUDA (LibTorch's CUDA API is usable: torch is a CUDA
# build and the toolkit is here), NCCL_INCLUDE_DIR and NCCL_LIBRARY.
set(DTRAIN_CUDA AUTO CACHE STRING "Build the GPU engines: AUTO (when CUDA and NCCL are found), ON or OFF")
set_property(CACHE DTRAIN_CUDA PROPERTY STRINGS AUTO ON OFF)
if(NOT DTRAIN_CUDA MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "DTRAIN_CUDA must be AUTO, ON or OFF (got '${DTRAIN_CUDA}')")
endif()

set(DTRAIN_HAVE_CUDA OFF)
set(DTRAIN_TORCH_CUDA OFF)
set(dtrain_cuda_missing "")
if(NOT DTRAIN_CUDA STREQUAL "OFF")
  get_filename_component(torch_site_packages "${DTRAIN_TORCH_DIR}" DIRECTORY)
  string(REGEX MATCH "^[0-9]+" torch_cuda_major "${DTRAIN_TORCH_CUDA_VERSION}")
  set(wheel_toolkit "${torch_site_packages}/nvidia/cu${torch_cuda_major}")
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
    find_program(nvcc_on_path nvcc)
    if(nvcc_on_path)
      set(CMAKE_CUDA_COMPILER "${nvcc_on_path}")
    elseif(torch_cuda_major AND EXISTS "${wheel_toolkit}/bin/nvcc" AND EXISTS "${wheel_toolkit}/lib64")
      set(CMAKE_CUDA_COMPILER "${wheel_toolkit}/bin/nvcc")
      set(CUDAToolkit_ROOT "${wheel_toolkit}")
    elseif(EXISTS /usr/local/cuda/bin/nvcc)
      set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
    endif()
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    get_filename_component(dtrain_cuda_root "${CMAKE_CUDA_COMPILER}" DIRECTORY)
    get_filename_component(dtrain_cuda_root "${dtrain_cuda_root}" DIRECTORY)
    set(nccl_hints ENV NCCL_HOME "${dtrain_cuda_root}" "${torch_site_packages}/nvidia/nccl")
    find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${nccl_hints} PATH_SUFFIXES include)
    # The wheel has libnccl.so.2 alone (no development link).
    find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2 HINTS ${nccl_hints} PATH_SUFFIXES lib64 lib)
    if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
      set(DTRAIN_HAVE_CUDA ON)
    else()
      set(dtrain_cuda_missing "NCCL (nccl.h and libnccl; set NCCL_HOME)")
    endif()
  else()
    set(dtrain_cuda_missing "a CUDA compiler (nvcc)")
  endif()
  if(NOT DTRAIN_HAVE_CUDA AND DTRAIN_CUDA STREQUAL "ON")
    message(FATAL_ERROR "DTRAIN_CUDA=ON but ${dtrain_cuda_missing} was not found")
  endif()
endif()

if(DTRAIN_HAVE_CUDA)
  # Ampere (A100) and Hopper (H100, H200) machine code, and PTX for later GPUs.
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 80-real 90)
  endif()
  # CMake 3.25 does not know that nvcc takes C++20; the CUDA sources keep to C++17.
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  enable_language(CUDA)
  # CMake 3.25's FindCUDAToolkit fails on a toolkit without the old nvToolsExt library
  # (CUDA 13 has none) when the project requires 3.25; it is read as a 3.24 project would.
  block(SCOPE_FOR VARIABLES PROPAGATE CUDAToolkit_FOUND CUDAToolkit_INCLUDE_DIRS CUDAToolkit_VERSION
                                      CUDAToolkit_LIBRARY_DIR CUDAToolkit_BIN_DIR)
    set(CMAKE_MINIMUM_REQUIRED_VERSION 3.24)
    find_package(CUDAToolkit REQUIRED)
  endblock()
  message(STATUS "dtrain: GPU engines on (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, NCCL ${NCCL_LIBRARY})")
  if(DTRAIN_TORCH_CUDA_VERSION)
    # LibTorch's CUDA API (streams of CUDA tensors): torch_cuda and c10_cuda, and the
    # toolkit's headers its headers include.
    set(DTRAIN_TORCH_CUDA ON)
    target_link_libraries(dtrain::libtorch INTERFACE
      "${DTRAIN_TORCH_DIR}/lib/libtorch_cuda.so" "${DTRAIN_TORCH_DIR}/lib/libc10_cuda.so")
    target_include_directories(dtrain::libtorch SYSTEM INTERFACE ${CUDAToolkit_INCLUDE_DIRS})
  endif()
elseif(DTRAIN_CUDA STREQUAL "OFF")
  message(STATUS "dtrain: GPU engines off (DTRAIN_CUDA=OFF)")
else()
  message(STATUS "dtrain: GPU engines off: ${dtrain_cuda_missing} not found")
endif()

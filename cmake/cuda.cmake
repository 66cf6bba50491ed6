# DTRAIN_CUDA=AUTO|ON|OFF: whether the runtime gets its GPU engines (NCCL, and staging CUDA
# tensors through host memory). AUTO turns them on when nvcc and NCCL are found (the CUDA
# toolkit at /usr/local/cuda is looked at when nvcc is not on the PATH), ON fails the
# configure without them, OFF never builds them. Without them the runtime builds and works
# as before, and a CUDA tensor handed to it is an error that says the build has no CUDA.
# Sets DTRAIN_HAVE_CUDA, NCCL_INCLUDE_DIR and NCCL_LIBRARY.
set(DTRAIN_CUDA AUTO CACHE STRING "Build the GPU engines: AUTO (when CUDA and NCCL are found), ON or OFF")
set_property(CACHE DTRAIN_CUDA PROPERTY STRINGS AUTO ON OFF)
if(NOT DTRAIN_CUDA MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "DTRAIN_CUDA must be AUTO, ON or OFF (got '${DTRAIN_CUDA}')")
endif()

set(DTRAIN_HAVE_CUDA OFF)
set(dtrain_cuda_missing "")
if(NOT DTRAIN_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    get_filename_component(dtrain_cuda_root "${CMAKE_CUDA_COMPILER}" DIRECTORY)
    get_filename_component(dtrain_cuda_root "${dtrain_cuda_root}" DIRECTORY)
    find_path(NCCL_INCLUDE_DIR nccl.h HINTS ENV NCCL_HOME "${dtrain_cuda_root}" PATH_SUFFIXES include)
    find_library(NCCL_LIBRARY nccl HINTS ENV NCCL_HOME "${dtrain_cuda_root}" PATH_SUFFIXES lib64 lib)
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
  find_package(CUDAToolkit REQUIRED)
  message(STATUS "dtrain: GPU engines on (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, NCCL ${NCCL_LIBRARY})")
elseif(DTRAIN_CUDA STREQUAL "OFF")
  message(STATUS "dtrain: GPU engines off (DTRAIN_CUDA=OFF)")
else()
  message(STATUS "dtrain: GPU engines off: ${dtrain_cuda_missing} not found")
endif()

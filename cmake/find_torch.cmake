# One torch for the whole build: the LibTorch inside the torch package of the Python that
# DTRAIN_PYTHON_EXECUTABLE names (scripts/setup's virtual environment, or the environment
# `pip install .` runs in). The C++ programs, the adapter and the Python extension all link
# it, so a checkpoint written in C++ loads in that Python and the reverse.
#
# LibTorch is described here from what torch itself reports (its folders, C++ ABI and CUDA),
# not through its TorchConfig.cmake: PyPI's torch is a CUDA build, and its CMake package fails
# unless a full CUDA toolkit is installed, which a CPU user's machine need not have.
# Sets DTRAIN_TORCH_VERSION, DTRAIN_TORCH_DIR, DTRAIN_TORCH_CUDA_VERSION ("" for a CPU torch)
# and the imported target dtrain::libtorch; cmake/link_torch.cmake hands it to targets.

# The torch releases dtrain builds against (checked again at import, python/dtrain/_version_check.py).
set(DTRAIN_TORCH_MIN_VERSION 2.11)
set(DTRAIN_TORCH_MAX_VERSION 2.14)

if(NOT DTRAIN_PYTHON_EXECUTABLE AND Python_EXECUTABLE)
  set(DTRAIN_PYTHON_EXECUTABLE "${Python_EXECUTABLE}")   # pip install: scikit-build-core's Python
elseif(NOT DTRAIN_PYTHON_EXECUTABLE)
  find_program(DTRAIN_PYTHON_EXECUTABLE NAMES python3 python)
endif()
set(DTRAIN_PYTHON_EXECUTABLE "${DTRAIN_PYTHON_EXECUTABLE}" CACHE FILEPATH
    "the Python whose torch dtrain builds against (scripts/setup's virtual environment)")

# Under pip's build isolation (SKBUILD), PYTHONPATH points at the isolated build environment,
# whose start-up hides the environment's own packages: torch is looked up without it, so the
# package builds against the torch it will run with, and no second torch is downloaded.
set(python_environment "")
if(SKBUILD)
  set(python_environment --unset=PYTHONPATH --unset=PYTHONNOUSERSITE)
endif()
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env ${python_environment} "${DTRAIN_PYTHON_EXECUTABLE}" -c [[
import os, torch
print(torch.__version__.split("+")[0])
print(os.path.dirname(torch.__file__))
print(int(torch._C._GLIBCXX_USE_CXX11_ABI))
print(torch.version.cuda or "")
]]
  OUTPUT_VARIABLE torch_facts ERROR_VARIABLE torch_error RESULT_VARIABLE torch_result
  OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT torch_result EQUAL 0)
  string(REGEX REPLACE ".*\n([^\n]+)\n*$" "\\1" torch_error "\n${torch_error}")
  message(FATAL_ERROR "dtrain needs torch in ${DTRAIN_PYTHON_EXECUTABLE} (${torch_error}): "
                      "run scripts/setup, or pip install torch in that environment")
endif()
string(REPLACE "\n" ";" torch_facts "${torch_facts}")
list(GET torch_facts 0 DTRAIN_TORCH_VERSION)
list(GET torch_facts 1 DTRAIN_TORCH_DIR)
list(GET torch_facts 2 torch_cxx11_abi)
list(LENGTH torch_facts torch_fact_count)
set(DTRAIN_TORCH_CUDA_VERSION "")
if(torch_fact_count GREATER 3)
  list(GET torch_facts 3 DTRAIN_TORCH_CUDA_VERSION)
endif()

string(REGEX MATCH "^[0-9]+\\.[0-9]+" torch_release "${DTRAIN_TORCH_VERSION}")
if(torch_release VERSION_LESS DTRAIN_TORCH_MIN_VERSION OR torch_release VERSION_GREATER DTRAIN_TORCH_MAX_VERSION)
  message(FATAL_ERROR "dtrain builds against torch ${DTRAIN_TORCH_MIN_VERSION} to ${DTRAIN_TORCH_MAX_VERSION}, "
                      "but ${DTRAIN_PYTHON_EXECUTABLE} has torch ${DTRAIN_TORCH_VERSION}")
endif()

set(torch_lib "${DTRAIN_TORCH_DIR}/lib")
add_library(dtrain::libtorch INTERFACE IMPORTED)
target_link_libraries(dtrain::libtorch INTERFACE
  "${torch_lib}/libtorch.so" "${torch_lib}/libtorch_cpu.so" "${torch_lib}/libc10.so")
# After the system's folders (-idirafter): torch's include folder also carries its own fmt,
# protobuf and pybind11, which must not shadow the Debian libraries dtrain links.
target_compile_options(dtrain::libtorch INTERFACE
  "$<$<COMPILE_LANGUAGE:CXX>:SHELL:-idirafter ${DTRAIN_TORCH_DIR}/include>"
  "$<$<COMPILE_LANGUAGE:CXX>:SHELL:-idirafter ${DTRAIN_TORCH_DIR}/include/torch/csrc/api/include>")
target_compile_definitions(dtrain::libtorch INTERFACE _GLIBCXX_USE_CXX11_ABI=${torch_cxx11_abi})
# (libtorch_cpu also exports a Gloo of its own: src/runtime/CMakeLists.txt links Debian's first.)

message(STATUS "dtrain: torch ${DTRAIN_TORCH_VERSION} (CUDA ${DTRAIN_TORCH_CUDA_VERSION}) from ${DTRAIN_TORCH_DIR}")

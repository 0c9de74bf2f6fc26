# LibTorch: PyTorch 2.x's, the one users have (docs/DESIGN.md section 7).
#
# Where it comes from, first match wins:
#   1. CMAKE_PREFIX_PATH (or Torch_DIR) given by the user;
#   2. the torch of OMNI_TORCH_PYTHON (default: the project's .venv that tools/install-deps.sh makes), through
#      torch.utils.cmake_prefix_path.
# A CUDA-enabled LibTorch turns the CUDA code on (OMNI_WITH_CUDA) and, with it, the NCCL backend, taking
# libnccl.so.2 and libcudart.so from the same wheel set as LibTorch so that the process loads one of each.

set(OMNI_TORCH_PYTHON "${PROJECT_SOURCE_DIR}/.venv/bin/python3" CACHE FILEPATH
    "Python whose torch package provides LibTorch (when CMAKE_PREFIX_PATH has none)")

set(OMNI_TORCH_SITE "")
if(EXISTS "${OMNI_TORCH_PYTHON}")
  execute_process(
    COMMAND "${OMNI_TORCH_PYTHON}" -c
            "import os, torch.utils; print(torch.utils.cmake_prefix_path); print(os.path.dirname(os.path.dirname(torch.__file__)))"
    OUTPUT_VARIABLE _omni_torch_out OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _omni_torch_rc ERROR_QUIET)
  if(_omni_torch_rc EQUAL 0)
    string(REPLACE "\n" ";" _omni_torch_out "${_omni_torch_out}")
    list(GET _omni_torch_out 0 _omni_torch_prefix)
    list(GET _omni_torch_out 1 OMNI_TORCH_SITE)
    # Appended: a prefix the user gave is searched first.
    list(APPEND CMAKE_PREFIX_PATH "${_omni_torch_prefix}")
  endif()
endif()

# Torch's CUDA branch runs enable_language(CUDA); find the toolkit's nvcc when it is not on PATH.
if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
  find_program(_omni_path_nvcc nvcc)
  if(NOT _omni_path_nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
endif()
if(NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
  # We build no kernels of our own; this only keeps Torch's CMake from probing for a GPU.
  set(ENV{TORCH_CUDA_ARCH_LIST} "8.0;9.0")
endif()

find_package(Torch CONFIG QUIET)
if(NOT Torch_FOUND)
  message(FATAL_ERROR
    "omni: no LibTorch found. Run 'bash tools/install-deps.sh' (it installs the pinned torch into "
    "${PROJECT_SOURCE_DIR}/.venv), or pass -DCMAKE_PREFIX_PATH=<dir with TorchConfig.cmake> "
    "(python3 -c 'import torch.utils; print(torch.utils.cmake_prefix_path)'), or -DOMNI_TORCH_PYTHON=<python with torch>.")
endif()
if(Torch_VERSION VERSION_LESS 2.4)
  message(FATAL_ERROR "omni: LibTorch ${Torch_VERSION} at ${Torch_DIR} is too old: omni-generate needs PyTorch 2.4 or "
                      "newer (fused attention that returns the log-sum-exp). Point CMAKE_PREFIX_PATH at a newer one.")
endif()

# The C++ ABI: every C++ library we link (yaml-cpp, GoogleTest, ...) is Debian's, built with the new
# (C++11) std::string ABI. A LibTorch built with the old one links, then fails on the first string that
# crosses the boundary; stop here instead.
if(TORCH_CXX_FLAGS MATCHES "_GLIBCXX_USE_CXX11_ABI=0")
  message(FATAL_ERROR
    "omni: the LibTorch at ${Torch_DIR} uses the pre-C++11 ABI (-D_GLIBCXX_USE_CXX11_ABI=0) but the system's C++ "
    "libraries use the C++11 ABI. Use a LibTorch built with -D_GLIBCXX_USE_CXX11_ABI=1 (every PyTorch >= 2.7 wheel, "
    "or the 'cxx11 ABI' LibTorch zip).")
endif()
set(CMAKE_CXX_FLAGS "${CMAKE_CXX_FLAGS} ${TORCH_CXX_FLAGS}")

# PyTorch's wheels link parts of a newer libstdc++ (std::filesystem, the tz database) statically into
# libtorch.so and export them. Listed first, libtorch.so would then serve the system libstdc++'s
# std::filesystem calls of our code, and crash (seen: std::filesystem::remove_all jumping to address 0).
# Naming libstdc++ before LibTorch makes the loader resolve those symbols in the system's libstdc++.so.6.
set(TORCH_LIBRARIES "-Wl,--push-state,--no-as-needed;stdc++;-Wl,--pop-state;${TORCH_LIBRARIES}")

# Torch's folder: <site>/torch/share/cmake/Torch -> <site>.
get_filename_component(_omni_torch_site "${Torch_DIR}/../../../.." ABSOLUTE)

set(_omni_cuda_default OFF)
if(TARGET torch_cuda)
  set(_omni_cuda_default ON)
endif()
option(OMNI_WITH_CUDA "LibTorch has CUDA: compile the CUDA code paths (NCCL, CUDA events, device checks)"
       ${_omni_cuda_default})
if(OMNI_WITH_CUDA AND NOT TARGET torch_cuda)
  message(FATAL_ERROR "omni: -DOMNI_WITH_CUDA=ON but the LibTorch at ${Torch_DIR} has no CUDA (no torch_cuda target).")
endif()

set(OMNI_WITH_NCCL OFF)
if(OMNI_WITH_CUDA)
  # NCCL and the CUDA runtime from LibTorch's own wheel set (nvidia-nccl-*, nvidia-cuda-runtime), else the
  # toolkit's. libtorch_cuda.so needs libnccl.so.2 and libcudart.so.N: linking the same files means one
  # copy of each in the process.
  find_path(NCCL_INCLUDE_DIR nccl.h NO_DEFAULT_PATH
            HINTS "${_omni_torch_site}/nvidia/nccl/include" ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
  find_library(NCCL_LIBRARY NAMES libnccl.so.2 nccl NO_DEFAULT_PATH
               HINTS "${_omni_torch_site}/nvidia/nccl/lib" ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64)
  # Torch's CMake links its CUDA libraries (CUDA::cudart, CUDA::nvrtc, ...) from the toolkit; point each
  # at the wheel's copy when there is one, so that every libX.so.N the process asks for resolves to the one
  # file libtorch_cuda.so was built and tested with (its RPATH names the wheels).
  set(OMNI_CUDART_LIBRARY CUDA::cudart)
  foreach(_lib cudart nvrtc cublas cublasLt cufft curand cusparse cusolver nvJitLink cupti)
    file(GLOB _omni_wheel_lib "${_omni_torch_site}/nvidia/cu*/lib/lib${_lib}.so.*"
         "${_omni_torch_site}/nvidia/*/lib/lib${_lib}.so.[0-9]*")
    if(_omni_wheel_lib AND TARGET CUDA::${_lib})
      list(GET _omni_wheel_lib 0 _omni_wheel_lib)
      set_target_properties(CUDA::${_lib} PROPERTIES IMPORTED_LOCATION "${_omni_wheel_lib}")
      if(_lib STREQUAL "cudart")
        set(OMNI_CUDART_LIBRARY "${_omni_wheel_lib}")
      endif()
    endif()
  endforeach()
  # TORCH_LIBRARIES also names the toolkit's libnvrtc.so by path; the same swap.
  set(_omni_torch_libs "")
  foreach(_l ${TORCH_LIBRARIES})
    if(_l MATCHES "^/.*/lib(nvrtc)\\.so$")
      file(GLOB _omni_wheel_lib "${_omni_torch_site}/nvidia/cu*/lib/lib${CMAKE_MATCH_1}.so.[0-9]*")
      if(_omni_wheel_lib)
        list(GET _omni_wheel_lib 0 _l)
      endif()
    endif()
    list(APPEND _omni_torch_libs "${_l}")
  endforeach()
  set(TORCH_LIBRARIES "${_omni_torch_libs}")
  if(NOT NCCL_INCLUDE_DIR OR NOT NCCL_LIBRARY)
    message(FATAL_ERROR "omni: LibTorch has CUDA but no NCCL was found (looked in ${_omni_torch_site}/nvidia/nccl and "
                        "the CUDA toolkit). Install the nvidia-nccl wheel that torch depends on, or set NCCL_LIBRARY.")
  endif()
  set(OMNI_WITH_NCCL ON)
endif()
message(STATUS "omni: LibTorch ${Torch_VERSION} (${Torch_DIR}); CUDA ${OMNI_WITH_CUDA}; NCCL ${OMNI_WITH_NCCL} "
               "${NCCL_LIBRARY}; CUDA runtime ${OMNI_CUDART_LIBRARY}")

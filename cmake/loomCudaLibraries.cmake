# cuDNN and NCCL as imported targets loom::cudnn and loom::nccl (CUDAToolkit must be found first).
# Used by loom's own build and again by the installed loomConfig.cmake, so an installed loom finds
# them on the consumer's machine, not at the paths of the machine that built it.
#
# Where, first found wins:
#   1. LOOM_CUDNN_ROOT / LOOM_NCCL_ROOT (CMake or environment variables): that folder only, its
#      lib/, lib64/ and include/; nothing else is searched when one is given;
#   2. NVIDIA's pip wheels (nvidia-cudnn-cu13, nvidia-nccl-cu13): site-packages/nvidia/<cudnn|nccl|cu13>
#      of the Python that LOOM_PYTHON names (default: Python3_EXECUTABLE, else python3 on PATH);
#   3. next to the CUDA toolkit, then the system's folders.
# By the unversioned name (libcudnn.so, a -dev package) or the versioned one (libcudnn.so.9,
# libnccl.so.2: all that the wheels and runtime-only packages ship).
set(LOOM_CUDNN_MAJOR 9)
set(LOOM_NCCL_MAJOR 2)

# The wheels' folders for `package` (cudnn, nccl) of the Python that LOOM_PYTHON names, in `out`.
function(loom_wheel_roots package out)
  set(python "${LOOM_PYTHON}")
  if(NOT python)
    set(python "${Python3_EXECUTABLE}")
  endif()
  if(NOT python)
    find_program(LOOM_WHEEL_PYTHON NAMES python3)
    set(python "${LOOM_WHEEL_PYTHON}")
  endif()
  set(${out} "" PARENT_SCOPE)
  if(NOT python)
    return()
  endif()
  execute_process(COMMAND "${python}" -c "import nvidia; print(';'.join(nvidia.__path__))"
                  OUTPUT_VARIABLE paths OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE failed)
  if(failed)
    return()
  endif()
  set(roots "")
  foreach(path ${paths})
    list(APPEND roots "${path}/${package}" "${path}/cu13")
  endforeach()
  set(${out} "${roots}" PARENT_SCOPE)
endfunction()

foreach(lib cudnn nccl)
  if(TARGET loom::${lib})
    continue()
  endif()
  string(TOUPPER ${lib} LIB)
  set(names ${lib} lib${lib}.so.${LOOM_${LIB}_MAJOR})
  set(root "${LOOM_${LIB}_ROOT}")
  if(NOT root)
    set(root "$ENV{LOOM_${LIB}_ROOT}")
  endif()
  if(root)
    find_library(LOOM_${lib}_LIBRARY NAMES ${names} NAMES_PER_DIR PATHS "${root}" PATH_SUFFIXES lib lib64 NO_DEFAULT_PATH)
    find_path(LOOM_${lib}_INCLUDE_DIR ${lib}.h PATHS "${root}" PATH_SUFFIXES include NO_DEFAULT_PATH)
    if(NOT LOOM_${lib}_LIBRARY OR NOT LOOM_${lib}_INCLUDE_DIR)
      message(WARNING "LOOM_${LIB}_ROOT=${root}: no ${lib}.h in include/ or no lib${lib}.so[.${LOOM_${LIB}_MAJOR}] "
                      "in lib/ or lib64/ there")
    endif()
  else()
    loom_wheel_roots(${lib} wheels)
    find_library(LOOM_${lib}_LIBRARY NAMES ${names} NAMES_PER_DIR HINTS ${wheels} ${CUDAToolkit_LIBRARY_DIR}
                 PATH_SUFFIXES lib lib64)
    find_path(LOOM_${lib}_INCLUDE_DIR ${lib}.h HINTS ${wheels} ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
  endif()
  if(LOOM_${lib}_LIBRARY AND LOOM_${lib}_INCLUDE_DIR)
    add_library(loom::${lib} UNKNOWN IMPORTED)
    set_target_properties(loom::${lib} PROPERTIES IMPORTED_LOCATION ${LOOM_${lib}_LIBRARY}
                          INTERFACE_INCLUDE_DIRECTORIES ${LOOM_${lib}_INCLUDE_DIR})
    message(STATUS "loom: ${lib} ${LOOM_${lib}_LIBRARY} (headers ${LOOM_${lib}_INCLUDE_DIR})")
  endif()
endforeach()

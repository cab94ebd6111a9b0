# cuDNN and NCCL as imported targets loom::cudnn and loom::nccl, found next to the CUDA toolkit
# (CUDAToolkit must be found first). Used by loom's own build and again by the installed
# loomConfig.cmake, so an installed loom finds them on the consumer's machine, not at the paths
# of the machine that built it.
foreach(lib cudnn nccl)
  if(NOT TARGET loom::${lib})
    find_library(LOOM_${lib}_LIBRARY ${lib} HINTS ${CUDAToolkit_LIBRARY_DIR})
    find_path(LOOM_${lib}_INCLUDE_DIR ${lib}.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
    if(LOOM_${lib}_LIBRARY AND LOOM_${lib}_INCLUDE_DIR)
      add_library(loom::${lib} UNKNOWN IMPORTED)
      set_target_properties(loom::${lib} PROPERTIES IMPORTED_LOCATION ${LOOM_${lib}_LIBRARY}
                            INTERFACE_INCLUDE_DIRECTORIES ${LOOM_${lib}_INCLUDE_DIR})
    endif()
  endif()
endforeach()

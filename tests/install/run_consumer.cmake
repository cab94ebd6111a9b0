# Installs loom from LOOM_BUILD_DIR into WORK_DIR/prefix, builds CONSUMER_SOURCE against it and runs
# its programs (consumer_trainer under MPIEXEC -n 2).
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)

function(run_step)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "step failed (${rc}): ${ARGV}\n${out}\n${err}")
  endif()
  message(STATUS "${out}")
endfunction()

run_step(${CMAKE_COMMAND} --install ${LOOM_BUILD_DIR} --prefix ${prefix})
run_step(${CMAKE_COMMAND} -S ${CONSUMER_SOURCE} -B ${WORK_DIR}/build -G ${GENERATOR}
         -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
run_step(${CMAKE_COMMAND} --build ${WORK_DIR}/build -j2)
if(NOT IS_DIRECTORY "${PROFILES_DIR}/dapple")
  message(FATAL_ERROR "the published profiles are missing: ${PROFILES_DIR}/dapple (data/profiles)")
endif()
run_step(${WORK_DIR}/build/consumer ${WORK_DIR} ${PROFILES_DIR})
run_step(${WORK_DIR}/build/consumer_umbrella)
separate_arguments(flags UNIX_COMMAND "${MPIEXEC_FLAGS}")
run_step(${MPIEXEC} ${flags} -n 2 ${WORK_DIR}/build/consumer_trainer)

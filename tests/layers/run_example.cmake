# Builds an example as an outside project against an installed loom and runs it:
# install LOOM_BUILD_DIR into WORK_DIR/prefix, configure EXAMPLE_SOURCE with find_package(loom),
# build it, run WORK_DIR/build/EXECUTABLE with ARGS (a ;-list). Any failing step fails the test.
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)

function(run_step)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message(STATUS "${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "step failed (${rc}): ${ARGV}\n${err}")
  endif()
endfunction()

run_step(${CMAKE_COMMAND} --install ${LOOM_BUILD_DIR} --prefix ${prefix})
run_step(${CMAKE_COMMAND} -S ${EXAMPLE_SOURCE} -B ${WORK_DIR}/build -G ${GENERATOR}
         -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
run_step(${CMAKE_COMMAND} --build ${WORK_DIR}/build -j2)
run_step(${WORK_DIR}/build/${EXECUTABLE} ${ARGS})

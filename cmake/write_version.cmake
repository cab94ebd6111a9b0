# Writes OUT (a header defining LOOM_GIT_DESCRIBE) from `git describe` of SOURCE_DIR at build time,
# only when the text changes, so a commit is seen without reconfiguring and no build redoes work.
execute_process(COMMAND git describe --always --dirty --tags WORKING_DIRECTORY "${SOURCE_DIR}"
                OUTPUT_VARIABLE describe OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE status)
if(NOT status EQUAL 0 OR describe STREQUAL "")
  set(describe "unknown")  # not a git checkout (a source tarball)
endif()
set(text "#define LOOM_GIT_DESCRIBE \"${describe}\"\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()

# `loom` under `taskset -c 0` (one core, as Open MPI binds a job of 1 or 2 ranks): the default is one
# thread and says so, and --threads 2 prints the one-line warning naming the count.
# Run as: cmake -DLOOM=<loom> -P thread_affinity.cmake
unset(ENV{LOOM_NUM_THREADS})
set(small_bench bench optimizer --width 16 --depth 1 --warmup 0 --repeats 1)

execute_process(COMMAND taskset -c 0 ${LOOM} ${small_bench} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "threads 1," OR "${out}${err}" MATCHES "warning")
  message(FATAL_ERROR "default threads on one core: exit ${rc}, expected 'threads 1,' and no warning:\n${out}${err}")
endif()

execute_process(COMMAND taskset -c 0 ${LOOM} ${small_bench} --threads 2 RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
string(REGEX MATCHALL "threads requested" warnings "${out}${err}")
list(LENGTH warnings count)
if(NOT rc EQUAL 0 OR NOT count EQUAL 1 OR NOT "${out}${err}" MATCHES "2 threads requested \\(--threads\\) but this process may run on 1 core")
  message(FATAL_ERROR "--threads 2 on one core: exit ${rc}, ${count} warnings, expected one naming 2 threads and 1 core:\n${out}${err}")
endif()

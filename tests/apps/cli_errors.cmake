# `loom train` with bad input under mpiexec: every case must end (no hang) with a non-zero exit
# and one "loom: error" line for the whole job naming the problem.
# A finished command failed cleanly: non-zero, not a hang, and one line of loom's own on stderr:
# "loom: error: SENTENCE" (or "loom: error (rank R): SENTENCE" where a rank failed alone),
# SENTENCE exactly `expected` (or `or_expected`, where two builds word it differently), with no
# source location (LOOM_DEBUG=1 adds those); nothing else but mpiexec's own notice that a process
# exited non-zero (a banner framed by lines of dashes; Open MPI's MPI_ABORT banner only where
# `fails_alone` is set: one rank fails while the others wait for it, and aborting ends them). stdout
# is the command's normal output (a header, a search's summary, printed before the failure) and
# is not checked.
function(check_failure rc out err expected what ranks)
  if(rc EQUAL 0)
    message(FATAL_ERROR "expected failure, got success: ${what}\n${out}\n${err}")
  endif()
  if(rc MATCHES "timeout")
    message(FATAL_ERROR "hang: ${what}")
  endif()
  set(copies 0)
  set(banner FALSE)
  set(rest "${err}")
  while(NOT rest STREQUAL "")  # line by line without lists: messages hold ';' and unpaired '['
    string(FIND "${rest}" "\n" end)
    if(end LESS 0)
      set(line "${rest}")
      set(rest "")
    else()
      string(SUBSTRING "${rest}" 0 ${end} line)
      math(EXPR end "${end} + 1")
      string(SUBSTRING "${rest}" ${end} -1 rest)
    endif()
    # mpiexec's notice that a process exited non-zero (framed by lines of dashes; "mpirun -q"
    # leaves it out), and its aggregation notes: Open MPI's, not loom's. Its MPI_ABORT banner
    # would mean a rank aborted the job instead of the ranks ending together.
    if(line MATCHES "^-+$")
      if(banner)
        set(banner FALSE)
      else()
        set(banner TRUE)
      endif()
    elseif(banner AND line MATCHES "MPI_ABORT" AND NOT fails_alone)
      message(FATAL_ERROR "for ${what}: Open MPI's abort banner (a rank aborted the job):\n${err}")
    elseif(banner OR line STREQUAL ""
           OR line MATCHES "^\\[[^]]+:[0-9]+\\] [0-9]+ more process(es)? ha(s|ve) sent help message "
           OR line MATCHES "^\\[[^]]+:[0-9]+\\] Set MCA parameter \"orte_base_help_aggregate\" to 0 ")
    elseif(fails_alone AND line MATCHES "^\\[[^]]+:[0-9]+\\] \\[\\[[0-9,]+\\],[0-9]+\\] ORTE_ERROR_LOG: .* in file [^ ]*show_help\\.c at line [0-9]+$")
      # What Open MPI's show_help.c prints when an abort's banners arrive together.
    elseif(line MATCHES "^loom: error( \\(rank [0-9]+\\))?: (.*)$")
      set(sentence "${CMAKE_MATCH_2}")
      if(NOT sentence STREQUAL expected AND NOT (DEFINED or_expected AND sentence STREQUAL or_expected))
        message(FATAL_ERROR "for ${what}: loom's error is\n  ${sentence}\nnot\n  ${expected}\nstderr:\n${err}")
      endif()
      math(EXPR copies "${copies} + 1")
    else()
      message(FATAL_ERROR "for ${what}: a line besides loom's one error line:\n  ${line}\nstderr:\n${err}")
    endif()
  endwhile()
  if(NOT copies EQUAL 1)
    message(FATAL_ERROR "for ${what}: ${copies} 'loom: error' lines for ${ranks} rank(s), expected 1:\n${out}\n${err}")
  endif()
  message(STATUS "ok (${rc}): ${expected}")
endfunction()

# One case as a test of its own (tests/schedule's schedule_cli_simulate_bad_microbatches):
#   cmake -DLOOM=... "-DEXPECTED=SENTENCE" -P cli_errors.cmake -- ARGS...   runs LOOM ARGS, one process.
if(DEFINED EXPECTED)
  set(args "")
  set(after FALSE)
  math(EXPR last "${CMAKE_ARGC} - 1")
  foreach(i RANGE 1 ${last})
    if(after)
      list(APPEND args "${CMAKE_ARGV${i}}")
    elseif(CMAKE_ARGV${i} STREQUAL "--")
      set(after TRUE)
    endif()
  endforeach()
  execute_process(COMMAND ${LOOM} ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
  check_failure("${rc}" "${out}" "${err}" "${EXPECTED}" "${args}" 1)
  return()
endif()

function(expect_failure expected)
  execute_process(COMMAND ${MPIEXEC} ${MPIEXEC_FLAGS} -n 2 ${LOOM} ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
  check_failure("${rc}" "${out}" "${err}" "${expected}" "${ARGN}" 2)
endfunction()

# Succeeds on 2 ranks and prints `expected`.
function(expect_success expected)
  execute_process(COMMAND ${MPIEXEC} ${MPIEXEC_FLAGS} -n 2 ${LOOM} ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 300)
  string(FIND "${out}" "${expected}" found)
  if(NOT rc EQUAL 0 OR found LESS 0)
    message(FATAL_ERROR "expected success printing '${expected}' for ${ARGN} on 2 ranks, got '${rc}':\n${out}\n${err}")
  endif()
  message(STATUS "ok: ${expected}")
endfunction()

file(WRITE ${WORK_DIR}/bad_plan.json "{\"stages\": [")
file(WRITE ${WORK_DIR}/other_plan.json
  "{\"format\": \"loom-plan\", \"version\": 1, \"model\": \"gpt\", \"global_batch\": 8, \"microbatches\": 2, \"schedule\": \"dapple\", \"stages\": [{\"layers\": [0, 1], \"ranks\": [0]}, {\"layers\": [2, 3], \"ranks\": [1]}]}")
file(WRITE ${WORK_DIR}/four_rank_plan.json
  "{\"format\": \"loom-plan\", \"version\": 1, \"model\": \"mlp\", \"global_batch\": 8, \"microbatches\": 2, \"schedule\": \"dapple\", \"stages\": [{\"layers\": [0, 0], \"ranks\": [0]}, {\"layers\": [1, 1], \"ranks\": [1]}, {\"layers\": [2, 2], \"ranks\": [2]}, {\"layers\": [3, 3], \"ranks\": [3]}]}")
# The header says what runs: the stages and their replicas, each stage's chunks, the plan, the
# optimizer and its rates, ZeRO-1, the threads.
file(WRITE ${WORK_DIR}/two_rank_plan.json
  "{\"format\": \"loom-plan\", \"version\": 1, \"model\": \"mlp\", \"global_batch\": 8, \"microbatches\": 2, \"schedule\": \"dapple\", \"stages\": [{\"layers\": [0, 1], \"ranks\": [0]}, {\"layers\": [2, 3], \"ranks\": [1]}]}")
expect_success("| 2 stages (stage 0: rank 0 | stage 1: rank 1) | plan ${WORK_DIR}/two_rank_plan.json | schedule dapple \
| M=2 | B=8 | 2 steps | sgd, lr 0.05 cosine over steps 1 to 2 | 1 thread" train --plan ${WORK_DIR}/two_rank_plan.json
               --size tiny --steps 2 --threads 1)
expect_success("| 1 stage x 2 replicas (stage 0: ranks 0 1, chunks 0 and 1) | schedule zb-v | M=4 | B=64 | 1 step \
| adam, lr 0.001 cosine over steps 1 to 1 | ZeRO-1 | 1 thread" train --model gpt --size tiny --set tie_embeddings=0
               --schedule zb-v --replicas 2 --optimizer adam --zero 1 --steps 1 --threads 1)
expect_failure("${WORK_DIR}/four_rank_plan.json: stage 2 uses rank 2, but this job has 2 ranks: the plan needs 4 \
(mpirun -np 4), or make a plan for 2 devices (loom plan --cluster ...)" train --plan ${WORK_DIR}/four_rank_plan.json --steps 1)
expect_failure("--stages 3 x --replicas 1 needs 3 ranks, but this job has 2: start it with mpirun -np 3 (or srun -n 3), \
or give --stages and --replicas whose product is 2" train --stages 3 --steps 1)
# An empty value ("") cannot travel through expect_failure's argument list: run it directly.
execute_process(COMMAND ${LOOM} train --steps 1 --checkpoint "" RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err TIMEOUT 60)
check_failure("${rc}" "${out}" "${err}" "--checkpoint: an empty path or name was given" "train --checkpoint \"\"" 1)
expect_failure("--microbatches must be at least 1, got 0" train --stages 2 --microbatches 0 --steps 1)
expect_failure("model mlp has 2 blocks, too few for 4 virtual stages (use --set to make it deeper, or fewer stages)"
               train --model mlp --set layers=2 --stages 2 --schedule interleaved --steps 1)
expect_failure("--global-batch 30 is not divisible by 4 micro-batches: use --global-batch 28 or 32, or --microbatches \
2, 3 or 5" train --stages 2 --global-batch 30 --steps 1)
expect_failure("unknown model 'resnet' (expected one of mlp, cnn, gpt, vgg16, vgg19, resnet50, gnmt8, gnmt16, bert24, \
bert48, xlnet36, xlnet24, amoebanet36, amoebanet18; `loom models` lists them)"
               train --model resnet --stages 2 --steps 1)
expect_failure("unknown dataset 'imagenet' (expected fashion-mnist, text:PATH or synthetic)"
               train --data imagenet --stages 2 --steps 1)
expect_failure("--schedule: unknown schedule '1f1b' (known: gpipe, dapple, pipedream, pipedream-2bw, interleaved, \
zb-h1, zb-h2, zb-v, v-half, v-min, looped-bfs, interleaved-zb, dualpipev)" train --schedule 1f1b --stages 2 --steps 1)
expect_failure("--precision must be fp32, bf16 or fp16, got 'fp8'" train --precision fp8 --stages 2 --steps 1)
expect_failure("--precision fp16 needs a synchronous schedule (gpipe, dapple, interleaved, zb-h1, zb-h2, zb-v, v-half, \
v-min, looped-bfs, interleaved-zb, dualpipev), not pipedream: its loss scaling skips whole steps on every rank (use \
--precision bf16)"
               train --precision fp16 --schedule pipedream --stages 2 --steps 1)
expect_failure("--loss-scale must be in [2^-24, 2^64], got 0"
               train --precision fp16 --loss-scale 0 --stages 2 --steps 1)
expect_failure("--loss-scale-window must be at least 1, got 0" train --precision fp16 --loss-scale-window 0 --stages 2
               --steps 1)
expect_failure("missing.txt: cannot open (no such file); --data text:missing.txt is read relative to ${WORK_DIR}, \
where loom started" train --model gpt --data text:missing.txt --stages 2 --steps 1)
expect_failure("/nonexistent/file.txt: cannot open (no such file); check --data text:/nonexistent/file.txt"
               train --model gpt --data text:/nonexistent/file.txt --stages 2 --steps 1)
expect_failure("${WORK_DIR}/bad_plan.json:1:13: invalid JSON: syntax error while parsing value - unexpected end of \
input; expected '[', '{', or a literal" train --plan ${WORK_DIR}/bad_plan.json --steps 1)
expect_failure("${WORK_DIR}/other_plan.json: the plan is for model 'gpt', not 'mlp'"
               train --model mlp --plan ${WORK_DIR}/other_plan.json --steps 1)
# A version-3 plan (issue 45): its optimizer is the run's default, a flag that says otherwise is an
# error naming both, its predicted peak per stage is checked before step 1 and against the run after it.
set(v3_head "{\"format\": \"loom-plan\", \"version\": 3, \"model\": \"mlp\", \"global_batch\": 8, \"microbatches\": 2, \"schedule\": \"dapple\", ")
set(v3_stages "\"stages\": [{\"layers\": [[0, 1]], \"ranks\": [0], \"predicted_peak_bytes\": PEAK}, {\"layers\": [[2, 3]], \"ranks\": [1], \"predicted_peak_bytes\": PEAK}], ")
set(v3_tail "\"assumptions\": {\"optimizer\": \"adam\", \"precision\": \"fp32\", \"device_memory_bytes\": 1e9}}")
string(REPLACE "PEAK" "6e5" stages "${v3_stages}")
file(WRITE ${WORK_DIR}/v3_plan.json "${v3_head}${stages}${v3_tail}")
string(REPLACE "PEAK" "1e11" stages "${v3_stages}")
file(WRITE ${WORK_DIR}/v3_huge_plan.json "${v3_head}${stages}${v3_tail}")
file(WRITE ${WORK_DIR}/v3_tp_plan.json "${v3_head}\"tensor_parallel\": 2, ${stages}${v3_tail}")
expect_success("against ${WORK_DIR}/v3_plan.json: stage 0 " train --plan ${WORK_DIR}/v3_plan.json --size tiny --steps 1
               --threads 1)
expect_success("| adam, lr 0.001 cosine over steps 1 to 1 |" train --plan ${WORK_DIR}/v3_plan.json --size tiny --steps 1
               --threads 1)
expect_failure("--optimizer sgd and ${WORK_DIR}/v3_plan.json's optimizer adam disagree: drop --optimizer (the plan \
says), or make a plan for it (loom plan --optimizer sgd)" train --plan ${WORK_DIR}/v3_plan.json --optimizer sgd --steps 1)
expect_failure("--stages 1 and ${WORK_DIR}/v3_plan.json's stages 2 disagree: drop --stages (the plan says), or make a \
plan for it (loom plan)" train --plan ${WORK_DIR}/v3_plan.json --stages 1 --steps 1)
expect_failure("--global-batch 16 and ${WORK_DIR}/v3_plan.json's global batch 8 disagree: drop --global-batch (the plan \
says), or make a plan for it (loom plan --global-batch 16)" train --plan ${WORK_DIR}/v3_plan.json --global-batch 16 --steps 1)
expect_failure("${WORK_DIR}/v3_tp_plan.json: tensor_parallel 2: this loom runs tensor_parallel 1 only; make the plan \
again with loom plan" train --plan ${WORK_DIR}/v3_tp_plan.json --steps 1)
# A plan for plain SGD counted no optimizer state: --momentum defaults to 0 under it (at loom
# train's 0.9 the run below would be refused), and a momentum that would keep a state is refused.
string(REPLACE "\"optimizer\": \"adam\"" "\"optimizer\": \"sgd\", \"optimizer_state_factor\": 0" sgd_tail "${v3_tail}")
string(REPLACE "PEAK" "6e5" sgd_stages "${v3_stages}")
file(WRITE ${WORK_DIR}/v3_sgd_plan.json "${v3_head}${sgd_stages}${sgd_tail}")
expect_success("| sgd, lr 0.05 cosine over steps 1 to 1 |" train --plan ${WORK_DIR}/v3_sgd_plan.json --size tiny
               --steps 1 --threads 1)
expect_failure("--optimizer sgd with --momentum 0.9 keeps 1 state tensor(s) per parameter, but \
${WORK_DIR}/v3_sgd_plan.json counted 0: give --momentum 0 (plain SGD, as the plan assumed), or make a plan for it \
(loom plan --optimizer momentum)" train --plan ${WORK_DIR}/v3_sgd_plan.json --momentum 0.9 --steps 1)
# A plan made from a loom profile records the model's size and settings: they are the run's
# defaults (no --size tiny here), and --size or --set that give another model are refused.
set(v3_model_tail "\"assumptions\": {\"optimizer\": \"adam\", \"precision\": \"fp32\", \"model_size\": \"tiny\", \"model_settings\": \"classes=4,hidden=24,input=16,layers=4\", \"device_memory_bytes\": 1e9}}")
string(REPLACE "PEAK" "6e5" model_stages "${v3_stages}")
file(WRITE ${WORK_DIR}/v3_model_plan.json "${v3_head}${model_stages}${v3_model_tail}")
expect_success("| adam, lr 0.001 cosine over steps 1 to 1 |" train --plan ${WORK_DIR}/v3_model_plan.json --steps 1
  --threads 1)
expect_failure("--size cpu and ${WORK_DIR}/v3_model_plan.json's model size tiny disagree: drop --size (the plan says), \
or profile that model and plan it (loom profile --size cpu, then loom plan)"
               train --plan ${WORK_DIR}/v3_model_plan.json --size cpu --steps 1)
expect_failure("--set classes=4,hidden=32,input=16,layers=4 and ${WORK_DIR}/v3_model_plan.json's model settings \
classes=4,hidden=24,input=16,layers=4 disagree: drop --set (the plan says), or profile that model and plan it (loom \
profile --set classes=4,hidden=32,input=16,layers=4, then loom plan)"
               train --plan ${WORK_DIR}/v3_model_plan.json --set hidden=32 --steps 1)
# A stage more than 5% over its prediction is a warning, one per stage, after step 1.
string(REPLACE "PEAK" "1e3" stages "${v3_stages}")
file(WRITE ${WORK_DIR}/v3_low_plan.json "${v3_head}${stages}${v3_tail}")
execute_process(COMMAND ${MPIEXEC} ${MPIEXEC_FLAGS} -n 2 ${LOOM} train --plan ${WORK_DIR}/v3_low_plan.json --size tiny
                        --steps 1 --threads 1 RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
string(REGEX MATCHALL "loom train: warning: stage [01] holds [^\n]* per rank after step 1, [^\n]* more than [^\n]*v3_low_plan.json predicts \\(1.0 KB\\)" warned "${err}")
list(LENGTH warned count)
if(NOT rc EQUAL 0 OR NOT count EQUAL 2)
  message(FATAL_ERROR "expected a warning for each of 2 stages over their predicted 1.0 KB, got ${count} (rc ${rc}):\n${out}\n${err}")
endif()
message(STATUS "ok: a warning per stage over its prediction")
set(ENV{LOOM_MEMORY_LIMIT_MB} 100)
expect_failure("${WORK_DIR}/v3_huge_plan.json predicts 100.00 GB per rank of stage 0 but 104.9 MB is available to rank 0 \
(LOOM_MEMORY_LIMIT_MB): make the plan for this memory (loom plan --cluster ...:mem=), or give the ranks more"
               train --plan ${WORK_DIR}/v3_huge_plan.json --steps 1)
unset(ENV{LOOM_MEMORY_LIMIT_MB})
# CLI11's parse errors: loom's one line too (CLI11's own print of them is not called), and for an
# unknown flag the nearest one, as a config file's keys get.
expect_failure("--steps excludes --epochs" train --stages 2 --steps 1 --epochs 1)
expect_failure("The following arguments were not expected: 3 --stepz (--stepz: did you mean --steps?)"
               train --stages 2 --stepz 3)
# Eight ranks failing alike: one line for the whole job on stderr, none on stdout, no abort banner.
execute_process(COMMAND ${MPIEXEC} ${MPIEXEC_FLAGS} -n 8 ${LOOM} train --stages 4 --replicas 2 --global-batch 30 --steps 1
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
check_failure("${rc}" "${out}" "${err}" "--global-batch 30 is not divisible by 4 micro-batches: use --global-batch 28 \
or 32, or --microbatches 2, 3 or 5" "train on 8 ranks" 8)
if(out MATCHES "loom: error")
  message(FATAL_ERROR "train on 8 ranks: an error line on stdout:\n${out}")
endif()

expect_failure("--checkpoint-every needs --checkpoint DIR" train --stages 2 --steps 1 --checkpoint-every 5)
expect_failure("/nonexistent/ckpt: cannot open the checkpoint directory (No such file or directory); give a directory \
that loom train --checkpoint wrote" train --stages 2
               --steps 1 --resume /nonexistent/ckpt)
expect_failure("--keep-checkpoints must be in [1, 1000000], got 0" train --stages 2 --steps 1 --checkpoint ${WORK_DIR}/k
               --keep-checkpoints 0)
# Out of device memory (issue 11): a 1 MiB sim device cannot hold stage 0's parameters and
# gradients. The up-front check refuses from the device's memory; past it (LOOM_MEMORY_LIMIT_MB
# says there is plenty), the allocation that does not fit is the error.
execute_process(COMMAND ${CMAKE_COMMAND} -E env LOOM_SIM_MEMORY_MB=1 ${MPIEXEC} ${MPIEXEC_FLAGS} -x LOOM_SIM_MEMORY_MB
                -n 2 ${LOOM} train --device sim --stages 2 --steps 1
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
check_failure("${rc}" "${out}" "${err}" "model mlp (paper size) needs at least 3.3 MB per rank of stage 0 (parameters \
and gradients 2.1 MB, optimizer state 1.1 MB, one micro-batch of activations 99.3 KB) but 1.0 MB is available to rank \
0 (sim:0: 1.0 MB free): use --size cpu, smaller --set values, more stages or a smaller batch"
              "train --device sim on a 1 MiB device" 2)
set(fails_alone TRUE)  # stage 0's allocation fails; rank 1 waits for its activations
execute_process(COMMAND ${CMAKE_COMMAND} -E env LOOM_SIM_MEMORY_MB=1 LOOM_MEMORY_LIMIT_MB=100000 ${MPIEXEC} ${MPIEXEC_FLAGS}
                -x LOOM_SIM_MEMORY_MB -x LOOM_MEMORY_LIMIT_MB -n 2 ${LOOM} train --device sim --stages 2 --steps 1
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
check_failure("${rc}" "${out}" "${err}" "out of memory on sim:0: 802816 bytes (0.8 MiB) for gradients did not fit; \
loom's tensors there hold 0.8 MiB (parameters 0.8 MiB) and the device has 0.2 MiB free of 1.0 MiB: use more stages, \
fewer or smaller micro-batches, --recompute or a smaller model"
              "train --device sim on a 1 MiB device past the up-front check" 2)
set(fails_alone FALSE)
file(MAKE_DIRECTORY ${WORK_DIR}/ckpt)
file(WRITE ${WORK_DIR}/ckpt/manifest.json "{\"format\": \"loom-train-checkpoint/1\", \"step\": 1,")
expect_failure("${WORK_DIR}/ckpt/manifest.json: not valid JSON ([json.exception.parse_error.101] parse error at line \
1, column 49: syntax error while parsing object key - unexpected end of input; expected string literal)"
               train --stages 2 --steps 1 --resume ${WORK_DIR}/ckpt)

# `loom plan`, `loom simulate` and `loom bench` with hostile input (issue 15): one process, no
# mpiexec; the same rules (non-zero exit, one "loom: error" line naming the problem, no hang).
function(expect_single_failure expected)
  execute_process(COMMAND ${LOOM} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
  if(rc MATCHES "Child aborted|exception")
    message(FATAL_ERROR "expected a clean failure, got '${rc}': ${ARGN}\n${out}\n${err}")
  endif()
  string(LENGTH "${err}" length)
  if(length GREATER 2000)
    message(FATAL_ERROR "the error echoes too much (${length} characters) for ${ARGN}")
  endif()
  check_failure("${rc}" "${out}" "${err}" "${expected}" "${ARGN}" 1)
endfunction()

# Succeeds (exit 0) and prints `expected`.
function(expect_single_success expected)
  execute_process(COMMAND ${LOOM} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 300)
  string(FIND "${out}" "${expected}" found)
  if(NOT rc EQUAL 0 OR found LESS 0)
    message(FATAL_ERROR "expected success printing '${expected}' for ${ARGN}, got '${rc}':\n${out}\n${err}")
  endif()
  message(STATUS "ok: ${expected}")
endfunction()

set(layer "{\"forward_ms\": 1, \"backward_ms\": 2, \"activation_bytes\": 1, \"parameter_bytes\": 1000}")
set(profile_head "{\"format\": \"loom-profile\", \"version\": 1, \"microbatch\": 1, \"layers\": ")
file(WRITE ${WORK_DIR}/two_layers.json "${profile_head}[${layer}, ${layer}]}")
file(WRITE ${WORK_DIR}/huge_cost.json
  "${profile_head}[${layer}, {\"forward_ms\": 1e308, \"backward_ms\": 2, \"activation_bytes\": 1, \"parameter_bytes\": 0}]}")
file(WRITE ${WORK_DIR}/array_layer.json "${profile_head}[[1, 2]]}")
file(WRITE ${WORK_DIR}/overflow.json "${profile_head}[\n{\"forward_ms\": 1e400, \"backward_ms\": 2, \"activation_bytes\": 1, \"parameter_bytes\": 0}]}")
file(WRITE ${WORK_DIR}/wide_cluster.json "{\"nodes\": 4294967297, \"devices_per_node\": 8}")
string(REPEAT "x" 100000 long_value)
# loom quotes at most 80 characters of a value, then "...".
string(SUBSTRING "${long_value}" 0 80 x80)
string(SUBSTRING "1x2:${long_value}" 0 80 spec80)
string(SUBSTRING "F0${long_value}" 0 80 token80)
# Only regular files are read as plans, profiles and clusters: a FIFO would block the open for ever.
# Precision is the profile's: a measured profile is fp32, and a plan for another precision than the
# profile records is refused (issue 45).
expect_single_failure("--precision bf16: loom profile measures blocks in fp32; estimate bf16 with --device-model (a \
roofline), or drop --precision" profile --model mlp --size tiny --precision bf16)
file(WRITE ${WORK_DIR}/fp32_profile.json "{\"format\": \"loom-profile\", \"version\": 2, \"model\": \"mlp\", \"precision\": \"fp32\", \"microbatch\": 4, \"layers\": [{\"forward_ms\": 1, \"backward_ms\": 2, \"activation_bytes\": 100, \"parameter_bytes\": 1000}]}")
expect_single_failure("--precision bf16 and ${WORK_DIR}/fp32_profile.json's precision fp32 disagree: its times are for \
fp32; drop --precision, or profile at bf16 (loom profile --precision bf16)"
                      plan --profile ${WORK_DIR}/fp32_profile.json --cluster 1x2 --global-batch 8 --precision bf16)
file(REMOVE ${WORK_DIR}/fifo_profile.json)
execute_process(COMMAND mkfifo ${WORK_DIR}/fifo_profile.json)
expect_single_failure("${WORK_DIR}/fifo_profile.json: a profile file must be a regular file, but this is a FIFO"
                      plan --profile ${WORK_DIR}/fifo_profile.json --cluster 1x2 --global-batch 8)
expect_single_failure("${WORK_DIR}/ckpt: a profile file must be a regular file, but this is a directory"
                      plan --profile ${WORK_DIR}/ckpt --cluster 1x2 --global-batch 8)
# A given partition under a schedule kind (issue 28): evaluated, or refused in one line.
expect_single_success("predicted step" plan --profile ${WORK_DIR}/two_layers.json --cluster 1x2 --global-batch 8
                      --microbatches 4 --partition 0-0,1-1 --schedule zb-h1)
expect_single_failure("partition: the ranges end at layer 0, but the profile has 2 layers"
                      plan --profile ${WORK_DIR}/two_layers.json --cluster 1x2 --global-batch 8 --partition 0-0)
expect_single_failure("--partition: '1' is not a layer range FIRST-LAST (0 <= FIRST <= LAST)"
                      plan --profile ${WORK_DIR}/two_layers.json --cluster 1x2 --global-batch 8 --partition 0-0,1)
expect_single_failure("--also-at: micro-batch 4 is given twice (or equals --microbatch)"
                      profile --model mlp --size tiny --microbatch 4 --also-at 2,4)
expect_single_failure("--also-at: a micro-batch size must be in [1, 2^20], got 0"
                      profile --model mlp --size tiny --microbatch 4 --also-at 0)
expect_single_failure("--microbatches: give one count with --partition, got '2,4'"
                      plan --profile ${WORK_DIR}/two_layers.json --cluster 1x2 --global-batch 8 --partition 0-0,1-1
                      --microbatches 2,4)
expect_single_failure("--partition evaluates a given partition: --out and --planner belong to the search"
                      plan --profile ${WORK_DIR}/two_layers.json --cluster 1x2 --global-batch 8 --partition 0-0,1-1
                      --out ${WORK_DIR}/never.json)
# The joint search (issue 29): a plan with its kind (a version-2 plan file holds any kind); a
# cluster with no room for the weights finds nothing.
expect_single_success("joint: exact search" plan --profile ${WORK_DIR}/two_layers.json --cluster 1x2
                      --global-batch 8 --planner joint)
expect_single_success("each schedule kind's best plan" plan --profile ${WORK_DIR}/two_layers.json --cluster 1x2
                      --global-batch 8 --planner joint --explain)
expect_single_failure("--explain belongs to --planner joint"
                      plan --profile ${WORK_DIR}/two_layers.json --cluster 1x2 --global-batch 8 --explain)
expect_single_failure("no plan fits in device memory; nothing written to ${WORK_DIR}/never.json (give the devices \
more memory with --cluster ...:mem=, more devices, a smaller --global-batch, or --optimizer sgd, whose state is smallest)"
                      plan --profile ${WORK_DIR}/two_layers.json --cluster 1x2:mem=1B --global-batch 8
                      --planner joint --out ${WORK_DIR}/never.json)
# Defect 4: the micro-batch candidate loop overflowed an int and divided by zero (SIGFPE).
expect_single_success("dapple" plan --profile ${WORK_DIR}/two_layers.json --cluster 1x2 --global-batch 2147483647)
# Defects 9, 17, 7 and 18 through `loom plan`.
expect_single_failure("${WORK_DIR}/huge_cost.json: layer 1 (layer1): forward_ms is 1e+308; it must be finite, \
non-negative and at most 1e+07 ms" plan --profile ${WORK_DIR}/huge_cost.json --cluster 1x2 --global-batch 8)
expect_single_failure("${WORK_DIR}/array_layer.json: layers[0] must be a JSON object"
                      plan --profile ${WORK_DIR}/array_layer.json --cluster 1x2 --global-batch 8)
expect_single_failure("${WORK_DIR}/overflow.json:2:16: invalid JSON: number overflow parsing '1e400'"
                      plan --profile ${WORK_DIR}/overflow.json --cluster 1x2 --global-batch 8)
expect_single_failure("${WORK_DIR}/wide_cluster.json: nodes must be an integer in [1, 4096], got 4294967297"
                      plan --profile ${WORK_DIR}/two_layers.json --cluster ${WORK_DIR}/wide_cluster.json --global-batch 8)
expect_single_failure("cluster spec '1x4096': devices_per_node must be in [1, 1024], got 4096"
                      plan --profile ${WORK_DIR}/two_layers.json --cluster 1x4096 --global-batch 4096)
expect_single_failure("--time-limit must be in [0, 86400] seconds (0: no limit), got inf"
                      plan --profile ${WORK_DIR}/two_layers.json --cluster 1x2 --global-batch 8 --time-limit inf)
expect_single_failure("--profile-batch must be in [0.001, 1e+09] (or 0: from the file name), got -3"
                      plan --profile ${WORK_DIR}/two_layers.json --cluster 1x2 --global-batch 8 --profile-batch -3)
expect_single_failure("--simulate-candidates must be in [0, 1000], got 1000000000"
                      plan --profile ${WORK_DIR}/two_layers.json --cluster 1x2 --global-batch 8
                      --simulate-candidates 1000000000)
expect_single_failure("cluster spec '${spec80}...': expected key=value, got '${x80}...'"
                      plan --profile ${WORK_DIR}/two_layers.json --cluster 1x2:${long_value} --global-batch 8)
# Defects 7 and 18 through `loom simulate`.
file(WRITE ${WORK_DIR}/s37.txt "stage 0: F99999999 B99999999 AR STEP\n")
file(WRITE ${WORK_DIR}/no_backward.txt "stage 0: F0 AR STEP\n")
file(WRITE ${WORK_DIR}/long_token.txt "stage 0: F0${long_value}\n")
expect_single_failure("${WORK_DIR}/s37.txt:1:10: bad action 'F99999999' (token 1 of stage 0): micro-batch 99999999 is \
beyond the largest a schedule may have (65535)" simulate --from ${WORK_DIR}/s37.txt)
expect_single_failure("${WORK_DIR}/no_backward.txt: invalid schedule 'custom': stage 0: B0 is missing (or BI and BW)"
                      simulate --from ${WORK_DIR}/no_backward.txt)
expect_single_failure("${WORK_DIR}/long_token.txt:1:10: bad action '${token80}...' (token 1 of stage 0): unexpected \
'${x80}...' (the form is OPmicrobatch[cCHUNK][@VERSION])" simulate --from ${WORK_DIR}/long_token.txt)
expect_single_failure("--stages must be in [1, 1024], got 100000" simulate --stages 100000)
expect_single_failure("--forward-ms must be a finite number in [0, 1e+07], got inf" simulate --forward-ms inf)
expect_single_failure("--link-gb-per-s must be positive (leave it out for free communication), got 0"
                      simulate --link-gb-per-s 0)
# Defect 18 through `loom bench allreduce`: explicit zeros were taken silently.
expect_single_failure("--iterations: Value 0 not in range 1 to 1000000" bench allreduce --iterations 0)
expect_single_failure("--shape-intra-gbps: Value 0 not in range 0.000001 to 1000000.000000"
                      bench allreduce --shape-intra-gbps 0 --shape-inter-gbps 1)
expect_single_failure("unknown communication backend 'gloo' (expected mpi or nccl)" bench allreduce --backend gloo)
if(NOT EXISTS /dev/nvidiactl)  # no GPU driver here: NCCL has nothing to run on
  # A build with the CUDA backend finds no GPU; one without says so (or_expected).
  set(or_expected "--backend nccl: no CUDA device is visible (this build of loom has no CUDA backend)")
  expect_single_failure("--backend nccl: no CUDA device is visible" bench allreduce --backend nccl)
  set(or_expected "--device cuda: this build of loom has no CUDA backend (configure with -DLOOM_CUDA=ON)")
  expect_single_failure("--device cuda: no CUDA device is visible (check CUDA_VISIBLE_DEVICES and the driver)"
                        bench gemm --device cuda --dtype bf16)
  expect_single_failure("--device cuda: no CUDA device is visible (check CUDA_VISIBLE_DEVICES and the driver)"
                        bench layers --device cuda)
  unset(or_expected)
endif()
expect_single_failure("bench gemm --dtype bf16: the CPU comparison is f32 only (use --device cuda)"
                      bench gemm --dtype bf16)
expect_single_failure("bench layers: the PyTorch side stopped; it needs /nonexistent/python3 with torch (Debian's \
python3-torch for /usr/bin/python3; CUDA support for --device cuda)" bench layers --quick --python /nonexistent/python3)
# Bounded planning: a time limit that expires returns the best plan so far and says so.
expect_single_success("dapple: time-limited" plan --profile ${WORK_DIR}/two_layers.json --cluster 2x8 --global-batch 64
                      --planner dapple --time-limit 0.000001)
# Bad values of the environment variables loom reads: one line naming the variable, every rank non-zero.
# (NAME=VALUE|SENTENCE: a SENTENCE holds ';', so no list splits them.)
set(pause_at "LOOM_TEST_PAUSE_AT: expected PHASE:RANK[:N] (PHASE warmup, steady or allreduce; RANK >= 0; N >= 1), got")
set(slow_rank "LOOM_TEST_SLOW_RANK: expected RANK:MS (RANK >= 0, MS in [0, 60000] milliseconds), got")
foreach(case "LOOM_TEST_PAUSE_AT=bogus:1|${pause_at} 'bogus:1'"
             "LOOM_TEST_PAUSE_AT=steady:-1|${pause_at} 'steady:-1'"
             "LOOM_TEST_PAUSE_AT=warmup:1:0|${pause_at} 'warmup:1:0'"
             "LOOM_TEST_SLOW_RANK=1|${slow_rank} '1'"
             "LOOM_TEST_SLOW_RANK=x:5|${slow_rank} 'x:5'"
             "LOOM_TEST_SLOW_RANK=0:5ms|${slow_rank} '0:5ms'"
             "LOOM_RING_SEGMENT_KB=4abc|environment variable LOOM_RING_SEGMENT_KB='4abc' is not a count (an integer \
in [0, 4194304])"
             "LOOM_MEMORY_LIMIT_MB=-3|environment variable LOOM_MEMORY_LIMIT_MB='-3' is not a positive number")
  string(REGEX MATCH "^([A-Z_]+)=([^|]*)[|](.*)$" parsed "${case}")
  set(name "${CMAKE_MATCH_1}")
  set(ENV{${name}} "${CMAKE_MATCH_2}")
  expect_failure("${CMAKE_MATCH_3}" train --stages 2 --steps 1)
  unset(ENV{${name}})
endforeach()

# JSON nested 100,000 levels deep (it parsed, then overflowed the stack: SIGSEGV): refused while
# parsing, by file and position, for clusters and profiles (`loom plan`) and plans (`loom train --plan`).
string(REPEAT "[" 100000 deep_open)
string(REPEAT "]" 100000 deep_close)
file(WRITE ${WORK_DIR}/deep_cluster.json "{\"nodes\": 1, \"devices_per_node\": ${deep_open}${deep_close}}")
file(WRITE ${WORK_DIR}/deep_profile.json "${profile_head}[${layer}, ${deep_open}${deep_close}]}")
file(WRITE ${WORK_DIR}/deep_plan.json "{\"format\": \"loom-plan\", \"version\": ${deep_open}${deep_close}}")
expect_single_failure("${WORK_DIR}/deep_cluster.json:1:545: JSON nested deeper than 512 levels"
                      plan --profile ${WORK_DIR}/two_layers.json --cluster ${WORK_DIR}/deep_cluster.json --global-batch 8)
expect_single_failure("${WORK_DIR}/deep_profile.json:1:665: JSON nested deeper than 512 levels"
                      plan --profile ${WORK_DIR}/deep_profile.json --cluster 1x2 --global-batch 8)
expect_failure("${WORK_DIR}/deep_plan.json:1:547: JSON nested deeper than 512 levels"
               train --plan ${WORK_DIR}/deep_plan.json --steps 1)

# --config FILE is strict (every command): keys at the top level or in a section named after the
# command run; an unknown key (with the closest one), a value of the wrong type or another command's
# section is an error naming FILE:LINE, on every rank under mpiexec (parsing is before MPI starts).
# The file `loom train --metrics` writes (.options.toml) reads back.
set(config_dir ${WORK_DIR}/config_files)
file(MAKE_DIRECTORY ${config_dir})
set(tiny_run "model = \"mlp\"\nsize = \"tiny\"\ndata = \"synthetic\"\nsteps = 2\n")
file(WRITE ${config_dir}/top.toml "# a tiny run, keys at the top level\n${tiny_run}")
file(WRITE ${config_dir}/section.toml "[train]\n${tiny_run}")
file(WRITE ${config_dir}/typo.toml "[train]\nmodel = \"mlp\"\nstepz = 2\n")
file(WRITE ${config_dir}/type.toml "model = \"mlp\"\n\nsteps = abc\n")
file(WRITE ${config_dir}/other.toml "[profile]\nsteps = 2\n")
file(WRITE ${config_dir}/simulate.toml "[simulate]\nstages = 2\nmicrobatchez = 4\n")
expect_single_success("done: 2 steps" train --config ${config_dir}/top.toml)
expect_single_success("done: 2 steps" train --config ${config_dir}/section.toml)
expect_single_success("done: 3 steps" train --config ${config_dir}/top.toml --steps 3)  # the command line wins
# A resumed run's done line counts the steps this process ran, and says which of the run's they were.
file(REMOVE_RECURSE ${WORK_DIR}/resume_ck)
expect_single_success("done: 4 steps, 256 samples" train --model mlp --size tiny --steps 4 --checkpoint
                      ${WORK_DIR}/resume_ck --checkpoint-every 2)
expect_single_success("done: 2 steps (steps 3 to 4 of 4), 128 samples" train --model mlp --size tiny --steps 4
                      --resume ${WORK_DIR}/resume_ck/step-000002)
# A finished run goes on: more steps stretch its cosine (the 6-step run's rate at step 6), another
# --lr-schedule and --lr start at the checkpoint's step, no --lr keeps the checkpoint's; another
# optimizer is refused.
expect_single_success("| 6 steps | sgd, lr 0.05 cosine over steps 1 to 6 |"
                      train --model mlp --size tiny --steps 6 --resume ${WORK_DIR}/resume_ck)
expect_single_success("| lr 0.003349 |" train --model mlp --size tiny --steps 6 --resume ${WORK_DIR}/resume_ck)
expect_single_success("| lr 0.01 |" train --model mlp --size tiny --steps 6 --lr-schedule linear --lr 0.02
                      --resume ${WORK_DIR}/resume_ck)
file(REMOVE_RECURSE ${WORK_DIR}/resume_lr)
expect_single_success("done: 2 steps" train --model mlp --size tiny --steps 2 --lr 0.02 --lr-schedule constant
                      --checkpoint ${WORK_DIR}/resume_lr)
expect_single_success("| 3 steps | sgd, lr 0.02 constant |" train --model mlp --size tiny --steps 3 --lr-schedule constant
                      --resume ${WORK_DIR}/resume_lr)
expect_single_failure("${WORK_DIR}/resume_ck/step-000004/manifest.json: the checkpoint was trained with --optimizer sgd, \
this run has --optimizer adam (resume with the same --optimizer: its state does not carry over)"
                      train --model mlp --size tiny --steps 6 --optimizer adam --resume ${WORK_DIR}/resume_ck)
expect_single_failure("${config_dir}/typo.toml:3: unknown key 'stepz' (did you mean 'steps'?)"
                      train --config ${config_dir}/typo.toml)
expect_single_failure("${config_dir}/type.toml:3: steps: 'abc' is not an integer"
                      train --config ${config_dir}/type.toml)
expect_single_failure("${config_dir}/other.toml:1: section [profile] is not a subcommand of this command \
(loom train reads keys at the top of the file or in a [train] section)" train --config ${config_dir}/other.toml)
expect_single_failure("${config_dir}/simulate.toml:3: unknown key 'microbatchez' (did you mean \
'microbatches'?)" simulate --config ${config_dir}/simulate.toml)
expect_failure("${config_dir}/typo.toml:3: unknown key 'stepz' (did you mean 'steps'?)"
               train --config ${config_dir}/typo.toml)
# Every rank exits with status 1 and the job prints one line (a shell around each rank, so mpiexec
# kills none early).
execute_process(COMMAND ${MPIEXEC} ${MPIEXEC_FLAGS} -n 2 sh -c "\"$0\" train --config \"$1\"; echo \"exit $?\"" ${LOOM}
                        ${config_dir}/type.toml
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
string(REGEX MATCHALL "loom: error: [^\n]*type.toml:3: steps: 'abc' is not an integer" lines "${err}")
string(REGEX MATCHALL "exit 1" exits "${out}")
list(LENGTH lines line_count)
list(LENGTH exits exit_count)
if(NOT line_count EQUAL 1 OR NOT exit_count EQUAL 2)
  message(FATAL_ERROR "expected one error line for the job and both ranks to exit 1, got:\n${out}\n${err}")
endif()
message(STATUS "ok: one line, both ranks exit 1: type.toml:3: steps: 'abc' is not an integer")
# A run's own .options.toml repeats it, also on 2 stages (the command line wins over the file).
execute_process(COMMAND ${LOOM} train --model mlp --size tiny --data synthetic --steps 2 --quiet
                        --metrics ${config_dir}/written.jsonl
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
if(NOT rc EQUAL 0 OR NOT EXISTS ${config_dir}/written.options.toml)
  message(FATAL_ERROR "loom train --metrics wrote no .options.toml ('${rc}'):\n${out}\n${err}")
endif()
expect_single_success("done: 2 steps" train --config ${config_dir}/written.options.toml --quiet=false)
expect_success("2 stages" train --config ${config_dir}/written.options.toml --stages 2 --quiet=false)

# Typed configuration (issue 27): names are parsed once, at the edge, before any communicator;
# PipeDream has no micro-batches, so an explicit --microbatches is an error, and the options file a
# pipedream run writes (without --microbatches) repeats it through --config.
expect_failure("--allreduce: unknown allreduce algorithm 'bogus' (expected mpi, ring or hierarchical)"
               train --stages 2 --steps 1 --allreduce bogus)
expect_failure("--reduce-backend 'gloo': expected auto, mpi or nccl" train --stages 2 --steps 1 --reduce-backend gloo)
expect_failure("--microbatches 4 with --schedule pipedream: PipeDream runs whole minibatches, one at a time (no \
micro-batches); drop --microbatches, or use --schedule pipedream-2bw"
               train --model mlp --size tiny --stages 2 --steps 2 --schedule pipedream --microbatches 4)
execute_process(COMMAND ${MPIEXEC} ${MPIEXEC_FLAGS} -n 2 ${LOOM} train --model mlp --size tiny --stages 2 --steps 2
                        --schedule pipedream --threads 1 --metrics ${WORK_DIR}/pipedream.jsonl
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
if(NOT rc EQUAL 0 OR NOT out MATCHES "schedule pipedream [|] whole minibatches [(]no micro-batches[)]")
  message(FATAL_ERROR "a pipedream run failed or its header does not say what it runs (${rc}):\n${out}\n${err}")
endif()
file(READ ${WORK_DIR}/pipedream.options.toml options)
if(options MATCHES "microbatches|chunks|loss-scale")
  message(FATAL_ERROR "pipedream.options.toml holds options the run does not use:\n${options}")
endif()
execute_process(COMMAND ${MPIEXEC} ${MPIEXEC_FLAGS} -n 2 ${LOOM} train --config ${WORK_DIR}/pipedream.options.toml
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
if(NOT rc EQUAL 0 OR NOT out MATCHES "done: 2 steps")
  message(FATAL_ERROR "--config pipedream.options.toml did not repeat the run (${rc}):\n${out}\n${err}")
endif()
message(STATUS "ok: --config pipedream.options.toml repeats the pipedream run")

# Schedule files (issue 28): a PyTorch CSV that cannot run gives one line naming the file, the rank
# and the cell; a schedule exported as CSV (and as loom's text) simulates, sizes from the file.
file(WRITE ${WORK_DIR}/bad.csv "0F0,0B1,0F1,0B0\r\n1F0,1B0,1F1,1B1\r\n")
expect_single_failure("${WORK_DIR}/bad.csv: rank 0, step 2: '0B1': backward B with no forward before it on this rank \
(a backward needs its forward's activations) (stage 0, micro-batch 1)" simulate --schedule-file ${WORK_DIR}/bad.csv)
file(WRITE ${WORK_DIR}/overlap.csv "0F0,0F1,(0B0;0F2)OVERLAP_F_B,0B1,0B2\r\n")
expect_single_failure("${WORK_DIR}/overlap.csv: rank 0, step 3: '(0B0;0F2)OVERLAP_F_B': an overlapped pair runs a \
forward F and then a full backward B (e.g. (0F7;7B3)OVERLAP_F_B)" simulate --schedule-file ${WORK_DIR}/overlap.csv)
expect_single_failure("--format: unknown schedule file format 'json' (expected loom or csv)"
                      schedule export --schedule dapple --stages 2 --microbatches 4 --format json)
expect_single_failure("--format csv: 'pipedream' is asynchronous (weight versions, a STEP per minibatch) and PyTorch's \
CSV holds synchronous schedules only; use --format loom"
                      schedule export --schedule pipedream --stages 2 --microbatches 4 --format csv)
expect_single_success("wrote ${WORK_DIR}/zb-h1.csv" schedule export --schedule zb-h1 --stages 4 --microbatches 8
                      --format csv --out ${WORK_DIR}/zb-h1.csv)
expect_single_success("S=4 stages, M=8 micro-batches" simulate --schedule-file ${WORK_DIR}/zb-h1.csv)
expect_single_success("S=4 stages, M=8 micro-batches" simulate --schedule-file ${WORK_DIR}/zb-h1.csv --stages 4
                      --microbatches 8 --schedule zb-h1)
expect_single_failure("--stages 2 does not match ${WORK_DIR}/zb-h1.csv, which has 4 stages (leave --stages out: the \
file sets it)" simulate --schedule-file ${WORK_DIR}/zb-h1.csv --stages 2)
expect_single_success("wrote ${WORK_DIR}/interleaved.txt" schedule export --schedule interleaved --stages 2
                      --microbatches 4 --chunks 2 --format loom --out ${WORK_DIR}/interleaved.txt)
# loom train --help in groups, every flag in one (the ungrouped "Options" hold --help alone), with
# the presets' settings behind loom describe --settings.
expect_single_success("Options:\n  -h,--help                   Print this help message and exit\n\n\nRun (give --steps or \
--epochs):\n  --model" train --help)
expect_single_success("\n\nCheckpoints:\n  --checkpoint TEXT" train --help)
expect_single_success("The presets' settings for --set: loom describe --settings" train --help)
expect_single_success("  mlp: multilayer perceptron" describe --settings)
# simulate shows peak activation bytes only when given the bytes (else they would read 0 B).
expect_single_success("peak act (mb) versions\n    0" simulate --schedule dapple --stages 2 --microbatches 4)
expect_single_success("peak act (mb) versions  peak act bytes\n    0" simulate --schedule dapple --stages 2
                      --microbatches 4 --activation-bytes 1000)
expect_single_success("v=2 chunks per stage" simulate --schedule-file ${WORK_DIR}/interleaved.txt)
# A schedule-file run's options file repeats it: the stages, chunks and M it did not give are the file's.
expect_success("| schedule file ${WORK_DIR}/interleaved.txt |" train --model mlp --size tiny --steps 2
               --schedule-file ${WORK_DIR}/interleaved.txt --metrics ${WORK_DIR}/from_file.jsonl --threads 1)
expect_success("done: 2 steps" train --config ${WORK_DIR}/from_file.options.toml)
expect_single_failure("--schedule zb-h2 does not match ${WORK_DIR}/zb-h1.csv: the file is not zb-h2's schedule for \
S=4, M=8, v=1 (stage 0 differs); leave --schedule out to use the file as it is"
                      simulate --schedule-file ${WORK_DIR}/zb-h1.csv --schedule zb-h2)
expect_single_failure("--schedule zb-h2 does not match ${WORK_DIR}/zb-h1.csv: the file is not zb-h2's schedule for \
S=4, M=8, v=1 (stage 0 differs); leave --schedule out to use the file as it is"
                      train --model mlp --schedule-file ${WORK_DIR}/zb-h1.csv --schedule zb-h2 --steps 1)
expect_single_failure("--stages 2 does not match ${WORK_DIR}/zb-h1.csv, which has 4 stages (leave --stages out: the \
file sets it)" train --model mlp --schedule-file ${WORK_DIR}/zb-h1.csv --stages 2 --steps 1)
expect_single_success("interleaved-zb  --chunks  synchronous   split" schedule list)

# `loom --version`: one line naming the commit, the build type, the backends and the compiled ISA.
execute_process(COMMAND ${LOOM} --version RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 60)
if(NOT rc EQUAL 0 OR NOT err STREQUAL "" OR NOT out MATCHES
   "^loom [^ ]+ \\([A-Za-z]+ build, CUDA (on|off), oneDNN (on|off), CPU ISA [^()]+( \\(-march=native\\))?\\)\n$")
  message(FATAL_ERROR "loom --version printed (exit ${rc}):\n${out}${err}")
endif()
message(STATUS "ok: ${out}")

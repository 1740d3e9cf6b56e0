# ctest -P script: a 3-stage pipeline whose middle (or first) stage is killed mid-run and
# resumed from its checkpoint ends with the same logits, bit for bit, as the
# uninterrupted pipeline (itself checked against the full model in-process).
#
#   -DWORKER=<worker> -DHELPER=<worker_restart_stage> -DMODEL=<gguf>
#   -DWORK_DIR=<dir> -DSTEPS=<n> -DKILL_AT=<step> -DWHICH=<middle|first>
#   [-DN_GPU_LAYERS=<a,b,c>]: each stage's --n-gpu-layers (the uninterrupted
#   run's --check-local then uses the full model with the same placement)

file(MAKE_DIRECTORY "${WORK_DIR}")
set(resumed "${WORK_DIR}/resumed-${WHICH}.bin")
set(reference "${WORK_DIR}/uninterrupted.bin")
file(REMOVE "${resumed}" "${reference}")

set(gpu_args)
set(helper_gpu)
if(DEFINED N_GPU_LAYERS AND NOT N_GPU_LAYERS STREQUAL "")
  set(gpu_args --n-gpu-layers "${N_GPU_LAYERS}")
  set(helper_gpu "${N_GPU_LAYERS}")
endif()
execute_process(COMMAND "${HELPER}" "${WORKER}" "${MODEL}" "${MODEL}" "${WORK_DIR}"
    restart "${STEPS}" "${KILL_AT}" "${resumed}" "${WHICH}" ${helper_gpu}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 150)
message(STATUS "${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the restarted pipeline failed (${rc})")
endif()
if(NOT out MATCHES "killed the ${WHICH} stage \\[[0-9], [0-9]\\) after its checkpoint of step ([0-9]+)")
  message(FATAL_ERROR "the ${WHICH} stage was not killed mid-run")
endif()
if(CMAKE_MATCH_1 GREATER_EQUAL STEPS)
  message(FATAL_ERROR "the kill came after the last step (${CMAKE_MATCH_1}): nothing was resumed")
endif()
if(WHICH STREQUAL "first")
  if(NOT out MATCHES "driver exit 0, reconnects 1")
    message(FATAL_ERROR "the driver did not reconnect to the restarted first stage")
  endif()
elseif(NOT out MATCHES "\"reconnects\": 1")
  message(FATAL_ERROR "no neighbour reconnected to the restarted stage")
endif()

include("${CMAKE_CURRENT_LIST_DIR}/PipelineRun.cmake")
worker_drive("${reference}" --split 0:1,1:3,3:4 --steps "${STEPS}" ${gpu_args} --check-local)
message(STATUS "${drive_output}")
worker_require_same("${reference}" "${resumed}"
  "the resumed run's logits differ from the uninterrupted run's")
file(SIZE "${resumed}" size)
message(STATUS "resumed from a checkpoint: ${size} bytes of logits bit-identical to the "
  "uninterrupted run")

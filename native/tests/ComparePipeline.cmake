# ctest -P script: the logits of a pipeline of worker processes, written to a
# file, are the same bytes as those of the full model in one process.
#
#   -DWORKER=<worker> -DMODEL=<gguf> -DSPLIT=<A:B,B:C,...> -DSTEPS=<n>
#   -DWORK_DIR=<dir> -DN_VOCAB=<n> -DPROMPT=<n>
#
# Independent of the driver's own --check-local: two runs, two files,
# `cmake -E compare_files`, and the file size checked against the shape.

file(MAKE_DIRECTORY "${WORK_DIR}")
string(REPLACE "," "_" tag "${SPLIT}")
string(REPLACE ":" "-" tag "${tag}")
set(local "${WORK_DIR}/local-${STEPS}.bin")
set(piped "${WORK_DIR}/split-${tag}-${STEPS}.bin")

include("${CMAKE_CURRENT_LIST_DIR}/PipelineRun.cmake")
worker_drive("${local}" --local --prompt "${PROMPT}" --steps "${STEPS}")
worker_drive("${piped}" --split "${SPLIT}" --prompt "${PROMPT}" --steps "${STEPS}" --check-local)
message(STATUS "${drive_output}")

math(EXPR expected "(${PROMPT} + ${STEPS}) * ${N_VOCAB} * 4")
file(SIZE "${piped}" size)
if(NOT size EQUAL expected)
  message(FATAL_ERROR "${piped} has ${size} bytes, expected ${expected}")
endif()
worker_require_same("${local}" "${piped}" "the logits of ${SPLIT} differ from the full model's")
file(SHA256 "${piped}" digest)
message(STATUS "pipeline ${SPLIT}: ${PROMPT} tokens + ${STEPS} steps, ${size} bytes of logits "
  "bit-identical to the full model (sha256 ${digest})")

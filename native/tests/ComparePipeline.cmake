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

execute_process(COMMAND "${WORKER}" --drive --model "${MODEL}" --local
    --prompt "${PROMPT}" --steps "${STEPS}" --logits-out "${local}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the full model failed (${rc}): ${err}")
endif()
execute_process(COMMAND "${WORKER}" --drive --model "${MODEL}" --split "${SPLIT}"
    --prompt "${PROMPT}" --steps "${STEPS}" --check-local --logits-out "${piped}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the pipeline ${SPLIT} failed (${rc}): ${err}")
endif()
message(STATUS "${out}")

math(EXPR expected "(${PROMPT} + ${STEPS}) * ${N_VOCAB} * 4")
file(SIZE "${piped}" size)
if(NOT size EQUAL expected)
  message(FATAL_ERROR "${piped} has ${size} bytes, expected ${expected}")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" -E compare_files "${local}" "${piped}"
  RESULT_VARIABLE same)
if(NOT same EQUAL 0)
  message(FATAL_ERROR "the logits of ${SPLIT} differ from the full model's")
endif()
file(SHA256 "${piped}" digest)
message(STATUS "pipeline ${SPLIT}: ${PROMPT} tokens + ${STEPS} steps, ${size} bytes of logits "
  "bit-identical to the full model (sha256 ${digest})")

# Helpers of the pipeline -P scripts (ComparePipeline, RestartPipeline).

# worker_drive(<logits file> <args>...): `worker --drive --model MODEL <args>`
# writing every logit to the file; a failure stops the script with its stderr.
# The driver's stdout is left in drive_output.
function(worker_drive logits)
  execute_process(COMMAND "${WORKER}" --drive --model "${MODEL}" ${ARGN} --logits-out "${logits}"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "worker --drive ${ARGN} failed (${rc}): ${err}")
  endif()
  set(drive_output "${out}" PARENT_SCOPE)
endfunction()

# worker_require_same(<file a> <file b> <what>): the same bytes, or stop.
function(worker_require_same a b what)
  execute_process(COMMAND "${CMAKE_COMMAND}" -E compare_files "${a}" "${b}" RESULT_VARIABLE same)
  if(NOT same EQUAL 0)
    message(FATAL_ERROR "${what}")
  endif()
endfunction()

# CTest script: `worker --capabilities --json` lists capabilities from
# exactly the accepted certification records, and when there are none says
# why. Run with cmake -P; EXPECT_RECORDS is the configure-time count.

cmake_minimum_required(VERSION 3.21)  # script mode: set policies (IN_LIST, ...)

execute_process(COMMAND "${WORKER}" --capabilities --json
  OUTPUT_VARIABLE json ERROR_VARIABLE stderr RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "`worker --capabilities --json` exited ${rc}: ${stderr}")
endif()
string(JSON count LENGTH "${json}" capabilities)
string(JSON notes GET "${json}" notes)

if(EXPECT_RECORDS EQUAL 0)
  if(NOT count EQUAL 0)
    message(FATAL_ERROR "no record was accepted, yet the worker advertises "
      "${count} capabilities:\n${json}")
  endif()
  string(JSON certification GET "${json}" certification)
  if(NOT certification STREQUAL "uncertified")
    message(FATAL_ERROR "certification is `${certification}`, expected uncertified")
  endif()
  if(NOT notes MATCHES "no certification record matches fingerprint ${EXPECT_SHORT}")
    message(FATAL_ERROR "the notes do not say why nothing is advertised:\n${json}")
  endif()
  execute_process(COMMAND "${WORKER}" --capabilities OUTPUT_VARIABLE text)
  if(NOT text MATCHES "^capabilities: none\n")
    message(FATAL_ERROR "`worker --capabilities` does not say none:\n${text}")
  endif()
elseif(count LESS EXPECT_RECORDS)
  # Each accepted record carries at least one capability.
  message(FATAL_ERROR "${EXPECT_RECORDS} records accepted, only ${count} capabilities listed:\n${json}")
endif()
message(STATUS "capabilities: ${count} listed, ${EXPECT_RECORDS} record(s) accepted")

# CTest script: `worker --version --json` is well-formed JSON and matches the
# stack lock field by field. Run with cmake -P and the -D values set in
# tests/CMakeLists.txt.

cmake_minimum_required(VERSION 3.21)  # script mode: set policies (IN_LIST, ...)

include("${MODULE_DIR}/StackLock.cmake")
worker_read_stack_lock("${STACK_LOCK}" LOCK)

execute_process(COMMAND "${WORKER}" --version --json
  OUTPUT_VARIABLE json ERROR_VARIABLE stderr RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "`worker --version --json` exited ${rc}: ${stderr}")
endif()

set(problems "")

# expect_json(<expected> <key>...): the value at the path equals <expected>.
# string(JSON) parses the whole document on every call, so a malformed
# document fails the first one.
function(expect_json expected)
  string(JSON actual ERROR_VARIABLE error GET "${json}" ${ARGN})
  if(error)
    list(APPEND problems "${ARGN}: ${error}")
  elseif(NOT actual STREQUAL expected)
    list(APPEND problems "${ARGN}: `${actual}`, expected `${expected}`")
  endif()
  set(problems "${problems}" PARENT_SCOPE)
endfunction()

function(expect_type expected)
  string(JSON actual ERROR_VARIABLE error TYPE "${json}" ${ARGN})
  if(error OR NOT actual STREQUAL expected)
    list(APPEND problems "${ARGN}: type ${actual}${error}, expected ${expected}")
  endif()
  set(problems "${problems}" PARENT_SCOPE)
endfunction()

expect_type(OBJECT)
expect_type(NUMBER protocol_version)
expect_json("${EXPECT_ENGINE_VERSION}" engine_version)

expect_json("${LOCK_ALGORITHM}" stack algorithm)
expect_json("${LOCK_NAME}" stack name)
expect_json("${LOCK_PIN}" stack pin)
expect_json("${LOCK_FINGERPRINT}" stack fingerprint)
expect_json("${LOCK_SHORT}" stack short)
expect_type(ARRAY stack patches)
string(JSON patch_count ERROR_VARIABLE error LENGTH "${json}" stack patches)
if(NOT patch_count EQUAL LOCK_PATCH_COUNT)
  list(APPEND problems "stack patches: ${patch_count} entries, the lock has ${LOCK_PATCH_COUNT}")
elseif(patch_count GREATER 0)
  math(EXPR last "${patch_count} - 1")
  foreach(i RANGE ${last})
    list(GET LOCK_PATCH_FILES ${i} file)
    list(GET LOCK_PATCH_STRIPS ${i} strip)
    list(GET LOCK_PATCH_DIGESTS ${i} digest)
    expect_json("${file}" stack patches ${i} file)
    expect_type(NUMBER stack patches ${i} strip)
    expect_json("${strip}" stack patches ${i} strip)
    expect_json("${digest}" stack patches ${i} digest)
  endforeach()
endif()

expect_json("${EXPECT_COMPILER_ID}" compiler id)
expect_json("${EXPECT_COMPILER_VERSION}" compiler version)
expect_json("${EXPECT_CMAKE_VERSION}" cmake_version)
expect_json("${EXPECT_BUILD_TYPE}" build_type)
expect_json("${EXPECT_CERTIFICATION}" certification)
if(EXPECT_UPSTREAM_TREE STREQUAL "")
  expect_type(NULL upstream_build)
else()
  expect_json("${EXPECT_UPSTREAM_TREE}" upstream_build tree)
endif()

if(problems)
  list(JOIN problems "\n  " text)
  message(FATAL_ERROR "worker --version --json does not match ${STACK_LOCK}:\n  ${text}\n--- output ---\n${json}")
endif()
message(STATUS "identity matches ${STACK_LOCK} (fingerprint ${LOCK_SHORT}, ${LOCK_PATCH_COUNT} patch(es))")

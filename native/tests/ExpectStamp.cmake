# CTest script: configure native/ against a fixture upstream tree and expect
# the stamp gate's verdict. MODE is one of
#   missing      the tree has no .patchctl-stamp           -> refused
#   fingerprint  the stamp is for another stack            -> refused
#   edited       a byte changed after stamping             -> refused
#   accepts      an intact tree stamped for this lock      -> configures
# The fixture has a symlink and a `[id]` directory (as llama.cpp does) so the
# manifest's link and glob-escaping rules are exercised too.

cmake_minimum_required(VERSION 3.21)  # script mode: set policies (IN_LIST, ...)

include("${SOURCE_DIR}/cmake/StackLock.cmake")
include("${SOURCE_DIR}/cmake/Stamp.cmake")
worker_read_stack_lock("${STACK_LOCK}" LOCK)

set(tree "${WORK_DIR}/tree")
set(build "${WORK_DIR}/build")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${tree}/src" "${tree}/routes/[id]")
file(WRITE "${tree}/CMakeLists.txt"
  "add_library(fixture_upstream INTERFACE)\n")
file(WRITE "${tree}/src/fixture.c" "int fixture(void) { return 42; }\n")
file(WRITE "${tree}/routes/[id]/page.txt" "route\n")
file(CREATE_LINK "src/fixture.c" "${tree}/fixture-link.c" SYMBOLIC
  RESULT link_result)  # not fatal where links are unsupported

if(NOT MODE STREQUAL "missing")
  worker_tree_manifest("${tree}" manifest)
  set(fingerprint "${LOCK_FINGERPRINT}")
  if(MODE STREQUAL "fingerprint")
    string(REPEAT "0" 64 fingerprint)
  endif()
  file(WRITE "${tree}/.patchctl-stamp"
    "# patchctl apply stamp: written by native/tests/ExpectStamp.cmake\n"
    "format = 1\n"
    "algorithm = \"${LOCK_ALGORITHM}\"\n"
    "name = \"${LOCK_NAME}\"\n"
    "pin = \"${LOCK_PIN}\"\n"
    "fingerprint = \"${fingerprint}\"\n"
    "tree = \"4b825dc642cb6eb9a060e54bf8d69288fbee4904\"\n"
    "manifest = \"${manifest}\"\n"
    "patches = []\n")
endif()
if(MODE STREQUAL "edited")
  file(WRITE "${tree}/src/fixture.c" "int fixture(void) { return 43; }\n")
endif()

set(fix "patchctl apply --into ${tree} --force")
if(MODE STREQUAL "missing")
  set(expect "has no \\.patchctl-stamp")
elseif(MODE STREQUAL "fingerprint")
  string(REPEAT "0" 64 zeros)
  set(expect "does not match the stack lock.*fingerprint ${zeros}.*fingerprint ${LOCK_FINGERPRINT}")
elseif(MODE STREQUAL "edited")
  set(expect "was edited after `patchctl apply` stamped it")
elseif(MODE STREQUAL "accepts")
  set(expect "upstream tree [^\n]* matches the lock")
else()
  message(FATAL_ERROR "unknown MODE `${MODE}`")
endif()

set(args -S "${SOURCE_DIR}" -B "${build}" -G "${GENERATOR}"
  "-DWORKER_STACK_LOCK=${STACK_LOCK}"
  "-DWORKER_UPSTREAM_DIR=${tree}"
  "-DWORKER_UPSTREAM_TARGET=fixture_upstream")
if(MAKE_PROGRAM)
  list(APPEND args "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()
if(CXX_COMPILER)
  list(APPEND args "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" ${args}
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
# CMake wraps long messages; undo that before matching.
string(REGEX REPLACE "\n  " " " log "${out}${err}")

set(verdict_ok FALSE)
if(MODE STREQUAL "accepts")
  if(rc EQUAL 0)
    set(verdict_ok TRUE)
  endif()
else()
  # A refusal must also name the command that fixes it, unbroken on a line
  # of its own (a literal search: the path may hold regex characters).
  string(FIND "${out}${err}" "\n    ${fix}\n" at)
  if(NOT rc EQUAL 0 AND at GREATER -1)
    set(verdict_ok TRUE)
  endif()
endif()
if(NOT verdict_ok OR NOT log MATCHES "${expect}")
  message(FATAL_ERROR "stamp ${MODE}: configure exited ${rc}; expected "
    "output matching `${expect}`.\n--- configure output ---\n${out}${err}")
endif()
message(STATUS "stamp ${MODE}: configure exited ${rc} as expected")

# Reads stack/stack.lock (docs/FORMATS.md, "stack/stack.lock"): the pin and
# stack fingerprint that the worker embeds and that an upstream tree's stamp
# must match. Usable in project and script (-P) mode.
#
#   worker_read_stack_lock(<path> <prefix>)
#
# stops with FATAL_ERROR unless the lock is present and well-formed, else sets
#   <prefix>_ALGORITHM <prefix>_NAME <prefix>_PIN
#   <prefix>_FINGERPRINT <prefix>_SHORT (first 16 hex)
#   <prefix>_PATCH_COUNT and the parallel lists
#   <prefix>_PATCH_FILES <prefix>_PATCH_STRIPS <prefix>_PATCH_DIGESTS

include_guard(GLOBAL)
include("${CMAKE_CURRENT_LIST_DIR}/FlatToml.cmake")

# CMake regular expressions have no {n} repetition.
string(REPEAT "[0-9a-f]" 40 WORKER_HEX40)
string(REPEAT "[0-9a-f]" 64 WORKER_HEX64)

function(worker_read_stack_lock path prefix)
  # Commands on their own indented lines: CMake does not reflow those.
  set(fix "Write a current one at the repository root with\n  patchctl lock\n\
or point the build at one with\n  -DWORKER_STACK_LOCK=<path>")
  if(NOT EXISTS "${path}")
    message(FATAL_ERROR "worker: stack lock ${path} not found.\n${fix}")
  endif()

  worker_read_flat_toml("${path}" lock error)
  if(error STREQUAL "" AND DEFINED lock_format AND lock_format MATCHES "^[0-9]+$"
     AND NOT lock_format EQUAL 1)
    set(error "format ${lock_format} is not supported (this build reads \
format 1); a newer patchctl wrote it")
  endif()
  worker_toml_require(lock format "^1$" "1" error)
  worker_toml_require(lock algorithm "^pcfp2$"
    "a known algorithm (pcfp2; rewrite an older lock with `patchctl lock`)" error)
  worker_toml_require(lock name "^[^ \t]" "an upstream name" error)
  worker_toml_require(lock pin "^${WORKER_HEX40}$" "a 40-hex commit" error)
  worker_toml_require(lock fingerprint "^${WORKER_HEX64}$" "a 64-hex sha256"
    error)

  set(files "")
  set(strips "")
  set(digests "")
  set(count 0)
  if(DEFINED lock_patch_COUNT)
    set(count "${lock_patch_COUNT}")
  endif()
  foreach(n RANGE 1 ${count})
    if(count EQUAL 0)
      break()
    endif()
    # A file name with `/` or `"` cannot come from stack/series.
    worker_toml_require(lock patch_${n}_file "^[^/\"]+$"
      "a patch file name ([[patch]] table ${n})" error)
    worker_toml_require(lock patch_${n}_strip "^[0-9]+$"
      "a strip level ([[patch]] table ${n})" error)
    worker_toml_require(lock patch_${n}_digest "^${WORKER_HEX64}$"
      "a 64-hex digest ([[patch]] table ${n})" error)
    list(APPEND files "${lock_patch_${n}_file}")
    list(APPEND strips "${lock_patch_${n}_strip}")
    list(APPEND digests "${lock_patch_${n}_digest}")
  endforeach()

  if(NOT error STREQUAL "")
    message(FATAL_ERROR
      "worker: stack lock ${path} is malformed: ${error}.\n${fix}")
  endif()

  set(${prefix}_ALGORITHM "${lock_algorithm}" PARENT_SCOPE)
  set(${prefix}_NAME "${lock_name}" PARENT_SCOPE)
  set(${prefix}_PIN "${lock_pin}" PARENT_SCOPE)
  set(${prefix}_FINGERPRINT "${lock_fingerprint}" PARENT_SCOPE)
  string(SUBSTRING "${lock_fingerprint}" 0 16 short)
  set(${prefix}_SHORT "${short}" PARENT_SCOPE)
  set(${prefix}_PATCH_COUNT "${count}" PARENT_SCOPE)
  set(${prefix}_PATCH_FILES "${files}" PARENT_SCOPE)
  set(${prefix}_PATCH_STRIPS "${strips}" PARENT_SCOPE)
  set(${prefix}_PATCH_DIGESTS "${digests}" PARENT_SCOPE)
endfunction()

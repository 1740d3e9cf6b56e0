# The consumer path's gate: a tree made by `patchctl apply --into DIR` carries
# DIR/.patchctl-stamp (docs/FORMATS.md, "The apply stamp"). We build against
# it only when the stamp is for the stack in the lock AND the files are still
# the ones that were stamped. Usable in project and script (-P) mode.

include_guard(GLOBAL)
include("${CMAKE_CURRENT_LIST_DIR}/FlatToml.cmake")
include("${CMAKE_CURRENT_LIST_DIR}/StackLock.cmake")

set(WORKER_STAMP_NAME ".patchctl-stamp")

# file(GLOB) treats [ ] * ? as pattern characters even in the directory part,
# and llama.cpp has directories named like `[id]`.
function(_worker_glob_escape text out_var)
  string(REPLACE "[" "[[]" text "${text}")
  string(REPLACE "*" "[*]" text "${text}")
  string(REPLACE "?" "[?]" text "${text}")
  set(${out_var} "${text}" PARENT_SCOPE)
endfunction()

# worker_tree_files(<dir> <out_var>)
# The paths (relative, `/`-separated, sorted by byte order) the manifest
# covers: every regular file and every symbolic link under <dir>, except the
# top-level .patchctl-stamp and the top-level .git directory.
function(worker_tree_files dir out_var)
  _worker_glob_escape("${dir}" pattern_dir)
  # Walk the top level by hand so a --commits tree's .git/ (often larger than
  # the sources) is never listed at all.
  file(GLOB top LIST_DIRECTORIES true RELATIVE "${dir}" "${pattern_dir}/*")
  set(paths "")
  foreach(entry IN LISTS top)
    set(full "${dir}/${entry}")
    if(entry STREQUAL WORKER_STAMP_NAME
       OR (entry STREQUAL ".git" AND IS_DIRECTORY "${full}"))
      continue()
    endif()
    if(IS_SYMLINK "${full}" OR NOT IS_DIRECTORY "${full}")
      list(APPEND paths "${entry}")
    else()
      # With CMP0009 NEW (no FOLLOW_SYMLINKS) a link to a directory is listed
      # as an entry, not descended: it counts as a link, as the format says.
      _worker_glob_escape("${entry}" pattern_entry)
      file(GLOB_RECURSE below LIST_DIRECTORIES false RELATIVE "${dir}"
        "${pattern_dir}/${pattern_entry}/*")
      list(APPEND paths ${below})
    endif()
  endforeach()
  list(SORT paths COMPARE STRING)
  set(${out_var} "${paths}" PARENT_SCOPE)
endfunction()

# worker_tree_manifest(<dir> <out_var> [<files_out_var>])
# sha256 of the lines "<sha256 of the bytes>  <path>\n" over
# worker_tree_files(); a link's bytes are its target string.
function(worker_tree_manifest dir out_var)
  worker_tree_files("${dir}" paths)
  set(text "")
  foreach(path IN LISTS paths)
    set(full "${dir}/${path}")
    if(IS_SYMLINK "${full}")
      file(READ_SYMLINK "${full}" target)
      string(SHA256 digest "${target}")
    else()
      file(SHA256 "${full}" digest)
    endif()
    string(APPEND text "${digest}  ${path}\n")
  endforeach()
  string(SHA256 manifest "${text}")
  set(${out_var} "${manifest}" PARENT_SCOPE)
  if(ARGC GREATER 2)
    set(${ARGV2} "${paths}" PARENT_SCOPE)
  endif()
endfunction()

# Wall clock in microseconds; %f needs CMake 3.23, older ones get whole seconds.
function(_worker_now_micros out_var)
  if(CMAKE_VERSION VERSION_LESS 3.23)
    string(TIMESTAMP now "%s")
    string(APPEND now "000000")
  else()
    string(TIMESTAMP now "%s%f")  # seconds, then 6 digits of microseconds
  endif()
  set(${out_var} "${now}" PARENT_SCOPE)
endfunction()

# worker_check_upstream_stamp(<dir> <lock_prefix> <lock_path> <prefix>)
# FATAL_ERROR unless <dir> holds a stamp for the lock's fingerprint and its
# files are unchanged since stamping. On success sets
#   <prefix>_TREE        the stamp's git tree id
#   <prefix>_MANIFEST    the recomputed manifest
#   <prefix>_FILES       absolute paths of the covered files
#   <prefix>_FILE_COUNT  how many
#   <prefix>_MILLIS      how long the manifest took (for the status line)
function(worker_check_upstream_stamp dir lock_prefix lock_path prefix)
  set(stamp "${dir}/${WORKER_STAMP_NAME}")
  # The fixing command goes on its own indented line: CMake reflows other
  # lines, which would split it where it cannot be copied.
  set(fix "  patchctl apply --into ${dir} --force")
  if(NOT IS_DIRECTORY "${dir}")
    message(FATAL_ERROR "worker: WORKER_UPSTREAM_DIR ${dir} is not a "
      "directory. Make it with:\n  patchctl apply --into ${dir}")
  endif()
  if(NOT EXISTS "${stamp}")
    message(FATAL_ERROR "worker: ${dir} has no ${WORKER_STAMP_NAME}, so it "
      "was not made (or not finished) by `patchctl apply --into`; building "
      "against it could embed a fingerprint that does not describe it. "
      "Materialize the stack there (this replaces the directory):\n${fix}")
  endif()

  worker_read_flat_toml("${stamp}" st error)
  worker_toml_require(st format "^1$" "1" error)
  worker_toml_require(st algorithm "^[a-z0-9]+$" "an algorithm name" error)
  worker_toml_require(st pin "^${WORKER_HEX40}$" "a 40-hex commit" error)
  worker_toml_require(st fingerprint "^${WORKER_HEX64}$" "a 64-hex sha256"
    error)
  worker_toml_require(st tree "^(${WORKER_HEX40}|${WORKER_HEX64})$"
    "a git tree id" error)
  worker_toml_require(st manifest "^${WORKER_HEX64}$" "a 64-hex sha256" error)
  if(NOT error STREQUAL "")
    message(FATAL_ERROR "worker: stamp ${stamp} is malformed: ${error}. "
      "Re-materialize the tree:\n${fix}")
  endif()

  set(lock_fp "${${lock_prefix}_FINGERPRINT}")
  if(NOT st_algorithm STREQUAL ${lock_prefix}_ALGORITHM
     OR NOT st_fingerprint STREQUAL lock_fp)
    string(SUBSTRING "${st_pin}" 0 12 stamp_pin)
    string(SUBSTRING "${${lock_prefix}_PIN}" 0 12 lock_pin)
    message(FATAL_ERROR
      "worker: upstream tree ${dir} does not match the stack lock.\n"
      "  stamp ${stamp}: fingerprint ${st_fingerprint} "
      "(${st_algorithm}, pin ${stamp_pin})\n"
      "  lock  ${lock_path}: fingerprint ${lock_fp} "
      "(${${lock_prefix}_ALGORITHM}, pin ${lock_pin})\n"
      "The tree was made for another pin or patch stack. Re-materialize it "
      "for the lock:\n${fix}")
  endif()

  _worker_now_micros(started)
  worker_tree_manifest("${dir}" manifest files)
  _worker_now_micros(finished)
  list(LENGTH files count)
  if(NOT manifest STREQUAL st_manifest)
    message(FATAL_ERROR
      "worker: upstream tree ${dir} was edited after `patchctl apply` "
      "stamped it: the manifest of its ${count} files is ${manifest}, the "
      "stamp says ${st_manifest}. Re-materialize it (this discards the "
      "edits; to keep a change, add it to the stack as a patch):\n${fix}")
  endif()

  math(EXPR millis "(${finished} - ${started}) / 1000")
  list(TRANSFORM files PREPEND "${dir}/")
  set(${prefix}_TREE "${st_tree}" PARENT_SCOPE)
  set(${prefix}_MANIFEST "${manifest}" PARENT_SCOPE)
  set(${prefix}_FILES "${files}" PARENT_SCOPE)
  set(${prefix}_FILE_COUNT "${count}" PARENT_SCOPE)
  set(${prefix}_MILLIS "${millis}" PARENT_SCOPE)
endfunction()

# The consumer path: build the upstream library from a stamped
# `patchctl apply --into` tree (already checked by Stamp.cmake) as part of
# this project, and hand back the target the worker links.

include_guard(GLOBAL)

# worker_add_upstream(<dir> <target> [FLAGS <flag>...] [OPTIONS <option>...])
# FLAGS (the lane's instruction-set flags) reach the upstream's C and C++
# only: they are set in this function's scope, which add_subdirectory()
# inherits and the worker's own targets do not. OPTIONS are upstream cache
# options the lane switches on (ggml's GGML_AVX2, ...).
function(worker_add_upstream dir target)
  cmake_parse_arguments(PARSE_ARGV 2 arg "" "" "FLAGS;OPTIONS")
  list(JOIN arg_FLAGS " " lane_flags)
  string(APPEND CMAKE_C_FLAGS " ${lane_flags}")
  string(APPEND CMAKE_CXX_FLAGS " ${lane_flags}")
  foreach(option IN LISTS arg_OPTIONS)
    set(${option} ON CACHE BOOL "set by native/ for the worker's lane")
  endforeach()
  # llama.cpp (and most upstreams) are C and C++; a C-only library whose
  # CMakeLists has no project() would otherwise fail with "cannot determine
  # link language".
  enable_language(C)

  # Only the library: no tests, examples, tools or server, and no tuning for
  # this machine's CPU (GGML_NATIVE would make the binary and its results
  # depend on where it was built). These are cache defaults, so -D on the
  # command line still wins.
  foreach(option
      LLAMA_BUILD_TESTS LLAMA_BUILD_EXAMPLES LLAMA_BUILD_TOOLS
      LLAMA_BUILD_SERVER LLAMA_BUILD_COMMON LLAMA_TOOLS_INSTALL
      LLAMA_TESTS_INSTALL GGML_BUILD_TESTS GGML_BUILD_EXAMPLES GGML_NATIVE)
    set(${option} OFF CACHE BOOL "set by native/ for the worker's consumer build")
  endforeach()
  # One self-contained worker binary rather than a set of shared libraries
  # that must travel with it.
  set(BUILD_SHARED_LIBS OFF CACHE BOOL "set by native/ for the worker's consumer build")

  # EXCLUDE_FROM_ALL: build only what the worker links, not every upstream
  # target (a full llama.cpp build is several times larger).
  add_subdirectory("${dir}" "${PROJECT_BINARY_DIR}/upstream" EXCLUDE_FROM_ALL)

  if(NOT TARGET "${target}")
    get_property(defined DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
    message(FATAL_ERROR "worker: ${dir} defines no target `${target}` "
      "(its top-level CMakeLists.txt defines: ${defined}).\n"
      "Name the library to link with -DWORKER_UPSTREAM_TARGET=<target>.")
  endif()

  # The upstream's headers are not ours to keep warning-free under our flags
  # (-Wshadow): our targets see them as system headers.
  foreach(t IN ITEMS "${target}" ggml ggml-base)
    if(TARGET "${t}")
      get_target_property(dirs "${t}" INTERFACE_INCLUDE_DIRECTORIES)
      if(dirs)
        set_property(TARGET "${t}" APPEND PROPERTY INTERFACE_SYSTEM_INCLUDE_DIRECTORIES ${dirs})
      endif()
    endif()
  endforeach()
endfunction()

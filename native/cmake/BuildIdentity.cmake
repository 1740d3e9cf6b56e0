# Generates worker/build_identity.hpp in the build directory: the stack,
# toolchain, certification and upstream build this configure saw, as C++
# initializers. configure_file() rewrites it only when the text changes, so
# an unchanged lock does not rebuild the worker.

include_guard(GLOBAL)

# A C++ string literal for any text: escapes \ and " and line breaks.
function(worker_cxx_string value out_var)
  string(REPLACE "\\" "\\\\" value "${value}")
  string(REPLACE "\"" "\\\"" value "${value}")
  string(REPLACE "\n" "\\n" value "${value}")
  string(REPLACE "\r" "\\r" value "${value}")
  set(${out_var} "\"${value}\"" PARENT_SCOPE)
endfunction()

# "a", "b", ... for a CMake list.
function(worker_cxx_string_list list_var out_var)
  set(items "")
  foreach(item IN LISTS ${list_var})
    worker_cxx_string("${item}" quoted)
    list(APPEND items "${quoted}")
  endforeach()
  list(JOIN items ", " joined)
  set(${out_var} "${joined}" PARENT_SCOPE)
endfunction()

# worker_generate_build_identity(<output> LOCK <prefix> CERT <prefix>
#                                [UPSTREAM_DIR <dir> UPSTREAM_TARGET <t>
#                                 UPSTREAM_TREE <tree>]
#                                LANE <name> LANE_ARCH <arch>
#                                LANE_FEATURES <list> RELEASE <bool>
#                                BACKEND <cpu|vulkan> [BACKEND_LOADER <version>
#                                BACKEND_HEADERS <version>]
#                                LIBRARIES <name> <version> <license> <linkage>...)
function(worker_generate_build_identity output)
  cmake_parse_arguments(PARSE_ARGV 1 arg ""
    "LOCK;CERT;UPSTREAM_DIR;UPSTREAM_TARGET;UPSTREAM_TREE;LANE;LANE_ARCH;RELEASE;BACKEND;BACKEND_LOADER;BACKEND_HEADERS"
    "LANE_FEATURES;LIBRARIES")
  set(lock "${arg_LOCK}")
  set(cert "${arg_CERT}")

  worker_cxx_string("${PROJECT_VERSION}" WORKER_CXX_ENGINE_VERSION)
  worker_cxx_string("${${lock}_ALGORITHM}" WORKER_CXX_ALGORITHM)
  worker_cxx_string("${${lock}_NAME}" WORKER_CXX_UPSTREAM_NAME)
  worker_cxx_string("${${lock}_PIN}" WORKER_CXX_UPSTREAM_PIN)
  worker_cxx_string("${${lock}_FINGERPRINT}" WORKER_CXX_FINGERPRINT)
  worker_cxx_string("${CMAKE_CXX_COMPILER_ID}" WORKER_CXX_COMPILER_ID)
  worker_cxx_string("${CMAKE_CXX_COMPILER_VERSION}" WORKER_CXX_COMPILER_VERSION)
  worker_cxx_string("${CMAKE_VERSION}" WORKER_CXX_CMAKE_VERSION)
  worker_cxx_string("${${cert}_FINGERPRINT}" WORKER_CXX_CERTIFICATION)

  set(WORKER_CXX_PATCHES "")
  if(${lock}_PATCH_COUNT GREATER 0)
    math(EXPR last "${${lock}_PATCH_COUNT} - 1")
    foreach(i RANGE ${last})
      list(GET ${lock}_PATCH_FILES ${i} file)
      list(GET ${lock}_PATCH_STRIPS ${i} strip)
      list(GET ${lock}_PATCH_DIGESTS ${i} digest)
      worker_cxx_string("${file}" file)
      string(APPEND WORKER_CXX_PATCHES
        "\n      {${file}, ${strip}, \"${digest}\"},")
    endforeach()
  endif()

  set(WORKER_CXX_CERTIFICATIONS "")
  if(${cert}_COUNT GREATER 0)
    foreach(i RANGE 1 ${${cert}_COUNT})
      set(fields "")
      foreach(key RECORD BACKEND MODEL RECIPE EVIDENCE EVIDENCE_SHA256)
        worker_cxx_string("${${cert}_${i}_${key}}" quoted)
        string(APPEND fields "${quoted}, ")
      endforeach()
      worker_cxx_string_list(${cert}_${i}_CAPABILITIES capabilities)
      string(APPEND WORKER_CXX_CERTIFICATIONS
        "\n      {${fields}{${capabilities}}},")
    endforeach()
  endif()

  set(WORKER_CXX_CERTIFICATION_NOTES "")
  foreach(note IN LISTS ${cert}_NOTES)
    worker_cxx_string("${note}" quoted)
    string(APPEND WORKER_CXX_CERTIFICATION_NOTES "\n      ${quoted},")
  endforeach()

  set(WORKER_CXX_UPSTREAM_BUILD "  // Standalone: no upstream library linked.")
  if(NOT "${arg_UPSTREAM_DIR}" STREQUAL "")
    worker_cxx_string("${arg_UPSTREAM_DIR}" dir)
    worker_cxx_string("${arg_UPSTREAM_TARGET}" target)
    worker_cxx_string("${arg_UPSTREAM_TREE}" tree)
    set(WORKER_CXX_UPSTREAM_BUILD
      "  id.upstream_build = UpstreamBuild{${dir}, ${target}, ${tree}};")
  endif()

  worker_cxx_string("${arg_LANE}" WORKER_CXX_LANE)
  worker_cxx_string("${arg_LANE_ARCH}" WORKER_CXX_LANE_ARCH)
  worker_cxx_string_list(arg_LANE_FEATURES WORKER_CXX_LANE_FEATURES)
  if(arg_RELEASE)
    set(WORKER_CXX_RELEASE true)
  else()
    set(WORKER_CXX_RELEASE false)
  endif()

  if("${arg_BACKEND}" STREQUAL "")
    set(arg_BACKEND cpu)
  endif()
  worker_cxx_string("${arg_BACKEND}" WORKER_CXX_BACKEND)
  worker_cxx_string("${arg_BACKEND_LOADER}" WORKER_CXX_BACKEND_LOADER)
  worker_cxx_string("${arg_BACKEND_HEADERS}" WORKER_CXX_BACKEND_HEADERS)

  set(WORKER_CXX_LIBRARIES "")
  set(library "")
  foreach(field IN LISTS arg_LIBRARIES)
    worker_cxx_string("${field}" quoted)
    list(APPEND library "${quoted}")
    list(LENGTH library n)
    if(n EQUAL 4)
      list(JOIN library ", " fields)
      string(APPEND WORKER_CXX_LIBRARIES "\n      {${fields}},")
      set(library "")
    endif()
  endforeach()

  configure_file("${PROJECT_SOURCE_DIR}/src/worker/build_identity.hpp.in"
    "${output}" @ONLY)
endfunction()

# The Vulkan backend's build-time facts (the vulkan lane, or any consumer
# build with -DGGML_VULKAN=ON): the loader the worker links and the headers
# it is compiled with, found on the build machine, never downloaded. Their
# versions go into the build identity and from there into a release's
# manifest and SBOM.
#
# The headers directory can be passed as -DVulkan_INCLUDE_DIR=<dir> or, for
# `patchctl release build` (which passes no -D of its own for it), as the
# environment variable Vulkan_INCLUDE_DIR: a Debian 12 machine needs newer
# headers than its libvulkan-dev has (native/ci/vulkan-headers-check.sh).

include_guard(GLOBAL)

# worker_require_vulkan(<libraries_var> <loader_var> <headers_var>) finds the
# loader and headers or stops configure. Appends to <libraries_var> the
# identity's entries (name, version, SPDX license, linkage) for the loader
# and the headers; sets <loader_var> and <headers_var> to their versions.
function(worker_require_vulkan libraries_var loader_var headers_var)
  if(NOT Vulkan_INCLUDE_DIR AND DEFINED ENV{Vulkan_INCLUDE_DIR})
    set(Vulkan_INCLUDE_DIR "$ENV{Vulkan_INCLUDE_DIR}" CACHE PATH
      "Vulkan headers (from the environment's Vulkan_INCLUDE_DIR)")
  endif()
  find_package(Vulkan QUIET)
  if(NOT Vulkan_FOUND OR NOT TARGET Vulkan::Vulkan)
    worker_library_fail("the Vulkan loader or headers not found"
      "headers: ${Vulkan_INCLUDE_DIR}; loader: ${Vulkan_LIBRARY}"
      "libvulkan (the Vulkan loader, Apache-2.0) and the Vulkan headers"
      "Install them and configure again:\n  apt-get install libvulkan-dev glslc spirv-headers mesa-vulkan-drivers    # Debian/Ubuntu\nor set Vulkan_INCLUDE_DIR (as -D or in the environment) to a Vulkan-Headers include directory.")
  endif()

  # The headers: VK_HEADER_VERSION_COMPLETE and their SPDX line, as written in vulkan_core.h.
  set(core "${Vulkan_INCLUDE_DIR}/vulkan/vulkan_core.h")
  file(STRINGS "${core}" lines REGEX
    "^#define VK_HEADER_VERSION(_COMPLETE)? |SPDX-License-Identifier:")
  set(patch "")
  set(major_minor "")
  set(headers_license NOASSERTION)
  foreach(line IN LISTS lines)
    if(line MATCHES "^#define VK_HEADER_VERSION ([0-9]+)")
      set(patch "${CMAKE_MATCH_1}")
    elseif(line MATCHES "VK_MAKE_API_VERSION\\(0, ([0-9]+), ([0-9]+), VK_HEADER_VERSION\\)")
      set(major_minor "${CMAKE_MATCH_1}.${CMAKE_MATCH_2}")
    elseif(line MATCHES "SPDX-License-Identifier: *(.*[^ ]) *$")
      set(headers_license "${CMAKE_MATCH_1}")
    endif()
  endforeach()
  if(patch STREQUAL "" OR major_minor STREQUAL "")
    worker_library_fail("cannot read the Vulkan headers' version"
      "${core} (no VK_HEADER_VERSION / VK_HEADER_VERSION_COMPLETE)"
      "Vulkan-Headers with vulkan/vulkan_core.h"
      "Set Vulkan_INCLUDE_DIR to a Vulkan-Headers include directory.")
  endif()
  set(headers "${major_minor}.${patch}")

  # The loader: the version in the name of the file the link resolves to
  # (libvulkan.so -> libvulkan.so.1 -> libvulkan.so.1.3.239).
  get_filename_component(real "${Vulkan_LIBRARY}" REALPATH)
  get_filename_component(real_name "${real}" NAME)
  set(loader "unknown")
  if(real_name MATCHES "^libvulkan\\.so\\.([0-9]+\\.[0-9]+\\.[0-9]+)$")
    set(loader "${CMAKE_MATCH_1}")
  elseif(real_name MATCHES "^libvulkan\\.([0-9]+\\.[0-9]+\\.[0-9]+)\\.dylib$")
    set(loader "${CMAKE_MATCH_1}")
  endif()

  message(STATUS "worker: Vulkan loader ${loader} (${real}), headers ${headers} "
    "(${Vulkan_INCLUDE_DIR})")
  set(${libraries_var} ${${libraries_var}}
    Vulkan-Loader "${loader}" Apache-2.0 shared
    Vulkan-Headers "${headers}" "${headers_license}" header-only
    PARENT_SCOPE)
  set(${loader_var} "${loader}" PARENT_SCOPE)
  set(${headers_var} "${headers}" PARENT_SCOPE)
endfunction()

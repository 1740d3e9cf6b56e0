# Hardware lanes: what a release package is built for and what the CPU that
# runs it must have. The worker embeds its lane and checks the CPU at start
# (src/core/startup.cpp); `patchctl release verify` checks it against the
# host. Feature names are GCC's __builtin_cpu_supports() names, which are
# also the flags Linux lists in /proc/cpuinfo (sse4.2 there is sse4_2).
#
#   dev       not a release (WORKER_RELEASE_LANE empty): no package check
#   cpu       the architecture's baseline: x86-64 (SSE2) or any other CPU
#   cpu-avx2  x86-64 with AVX2, FMA, F16C and BMI2 (Haswell, Zen and later)
#   vulkan    the architecture's baseline CPU, and the upstream's Vulkan
#             backend (-DGGML_VULKAN=ON): needs a Vulkan device at run time,
#             which the worker checks at start (src/backend/vulkan_device.cpp)
#
# A lane's instruction-set flags go to the upstream library only (ggml is
# where SIMD matters); the worker's own code stays at the baseline so the
# start-up check runs before any lane instruction can.

include_guard(GLOBAL)

set(WORKER_LANES cpu cpu-avx2 vulkan)

# worker_resolve_lane(<name> <prefix>) sets
#   <prefix>_ARCH      x86_64, aarch64, ... (CMAKE_SYSTEM_PROCESSOR, normalized)
#   <prefix>_FEATURES  CPU features the lane needs
#   <prefix>_FLAGS     compiler flags for the upstream's C and C++
#   <prefix>_OPTIONS   upstream cache options (ggml's instruction-set switches,
#                      GGML_VULKAN)
#   <prefix>_BACKEND   the compute backend the lane ships: cpu or vulkan
function(worker_resolve_lane name prefix)
  string(TOLOWER "${CMAKE_SYSTEM_PROCESSOR}" arch)
  if(arch MATCHES "^(x86_64|amd64|x64)$")
    set(arch x86_64)
  elseif(arch MATCHES "^(aarch64|arm64)$")
    set(arch aarch64)
  endif()
  set(features "")
  set(flags "")
  set(options "")
  set(backend cpu)
  if(name STREQUAL "dev")
  elseif(name STREQUAL "cpu" OR name STREQUAL "vulkan")
    if(name STREQUAL "vulkan")
      set(backend vulkan)
      set(options GGML_VULKAN)
    endif()
    if(arch STREQUAL "x86_64")
      set(features sse2)
    endif()
  elseif(name STREQUAL "cpu-avx2")
    if(NOT arch STREQUAL "x86_64")
      message(FATAL_ERROR "worker: lane cpu-avx2 is for x86_64; this build targets "
        "${arch}. Use -DWORKER_RELEASE_LANE=cpu.")
    endif()
    set(features avx avx2 fma f16c bmi2)
    if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
      set(flags -mavx -mavx2 -mfma -mf16c -mbmi2)
    endif()
    set(options GGML_AVX GGML_AVX2 GGML_FMA GGML_F16C GGML_BMI2)
  else()
    list(JOIN WORKER_LANES ", " known)
    message(FATAL_ERROR "worker: unknown lane `${name}`; known lanes: ${known}. "
      "Configure with -DWORKER_RELEASE_LANE=<lane>.")
  endif()
  set(${prefix}_ARCH "${arch}" PARENT_SCOPE)
  set(${prefix}_FEATURES "${features}" PARENT_SCOPE)
  set(${prefix}_FLAGS "${flags}" PARENT_SCOPE)
  set(${prefix}_OPTIONS "${options}" PARENT_SCOPE)
  set(${prefix}_BACKEND "${backend}" PARENT_SCOPE)
endfunction()

# worker_reproducible_paths(<map_var> PATH NAME [PATH NAME ...])
# Builds the path -> name map that a release build applies: to the compiler
# (-ffile-prefix-map, so __FILE__ and debug info name no build machine path)
# and to the strings the identity embeds (worker_unmap_paths).
function(worker_reproducible_paths map_var)
  set(map "")
  set(args ${ARGN})
  while(args)
    list(POP_FRONT args path name)
    if(NOT path STREQUAL "")
      list(APPEND map "${path}=${name}")
      if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
        add_compile_options("-ffile-prefix-map=${path}=${name}")
      endif()
    endif()
  endwhile()
  set(${map_var} "${map}" PARENT_SCOPE)
endfunction()

# worker_unmap_paths(<var> <map_var>): each mapped path in <var>'s value (a
# string or list) replaced by its name.
function(worker_unmap_paths var map_var)
  set(value "${${var}}")
  foreach(pair IN LISTS ${map_var})
    string(FIND "${pair}" "=" eq REVERSE)
    string(SUBSTRING "${pair}" 0 ${eq} path)
    math(EXPR after "${eq} + 1")
    string(SUBSTRING "${pair}" ${after} -1 name)
    string(REPLACE "${path}" "${name}" value "${value}")
  endforeach()
  set(${var} "${value}" PARENT_SCOPE)
endfunction()

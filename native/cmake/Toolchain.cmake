# Toolchain and layout checks for the worker build.
#
# Each check stops configure with ONE message that says what was found, what
# is needed and how to get it. CMake's own failures for the same problems come
# later, name internals ("CMAKE_MAKE_PROGRAM is not set") and do not say where
# to get a tool, so everything that can run before project() does.
#
# This file is included BEFORE cmake_minimum_required() so that an old CMake
# reaches worker_require_cmake() instead of failing on a newer command.
# Everything at file scope and in worker_require_cmake() must therefore parse
# and run on CMake 3.0; the other functions are only called after
# cmake_minimum_required(3.21) and may use newer commands.

set(WORKER_MIN_CMAKE "3.21")
# Ninja 1.10 added dyndep, which CMake's Ninja generator uses for Fortran and
# C++20 modules; older releases are not tested with this lane.
set(WORKER_MIN_NINJA "1.10")
# C++17 with a complete library (<charconv>, <optional>, <string_view>,
# structured bindings): GCC 9, Clang 10, Xcode 12, Visual Studio 2019.
set(WORKER_MIN_CXX_GNU "9")
set(WORKER_MIN_CXX_Clang "10")
set(WORKER_MIN_CXX_AppleClang "12")
set(WORKER_MIN_CXX_MSVC "19.20")
set(WORKER_CXX_NEED
  "a C++17 compiler: GCC >= 9, Clang >= 10, AppleClang >= 12 or MSVC >= 19.20")
# Commands sit on their own indented lines: CMake reflows the other lines of
# a message, which would break a command where it cannot be copied.
set(WORKER_CXX_HOW
  "Install one and configure a fresh build directory (naming the compiler with -DCMAKE_CXX_COMPILER=<path> if it is not the default):\n  apt-get install g++          # Debian/Ubuntu\n  dnf install gcc-c++          # Fedora\n  xcode-select --install       # macOS\nor Visual Studio 2019 or later on Windows.")
set(WORKER_TOOLS_HOW
  "Get current ones (the PyPI wheels) and configure from that environment:\n  python -m pip install cmake ninja\n  cmake --preset cpu")

# The one message shape for toolchain problems. Its first line is what a CI
# log summary shows, so it says on its own what is wrong.
function(worker_toolchain_fail what found needed how)
  message(FATAL_ERROR
    "worker toolchain: ${what}.\n"
    "Found: ${found}\n"
    "Needed: ${needed}\n"
    "${how}")
endfunction()

# Takes the version as an argument (not CMAKE_VERSION) so a script test can
# show the message without an old CMake at hand.
function(worker_require_cmake found)
  if(found VERSION_LESS WORKER_MIN_CMAKE)
    worker_toolchain_fail("CMake ${found} is too old"
      "CMake ${found} (${CMAKE_COMMAND})"
      "CMake >= ${WORKER_MIN_CMAKE}"
      "${WORKER_TOOLS_HOW}")
  endif()
endfunction()

# An in-source build would scatter CMakeCache.txt, CMakeFiles/ and the
# generated identity header through native/, where git and the next preset
# build would trip over them. The presets put binaries in ../build/.
function(worker_require_out_of_source)
  file(REAL_PATH "${CMAKE_SOURCE_DIR}" source_dir)
  file(REAL_PATH "${CMAKE_BINARY_DIR}" binary_dir)
  cmake_path(IS_PREFIX source_dir "${binary_dir}" NORMALIZE inside)
  if(inside)
    message(FATAL_ERROR
      "worker: in-source build refused: the binary directory ${binary_dir} "
      "is inside the source tree ${source_dir}.\n"
      "Configure with a preset instead, from ${source_dir} (binaries go to "
      "build/native-cpu at the repository root):\n"
      "  cmake --preset cpu\n"
      "or pass a -B directory outside ${source_dir}. Then delete the "
      "CMakeCache.txt and CMakeFiles/ this attempt left in ${binary_dir}.")
  endif()
endfunction()

# CMake looks for Ninja itself during project(); looking first, with the same
# search (names and cache variable), lets us say where to get one and check
# its version, and project() then reuses the cached result.
function(worker_require_ninja)
  if(NOT CMAKE_GENERATOR MATCHES "^Ninja")
    return()
  endif()
  if(CMAKE_MAKE_PROGRAM AND NOT IS_ABSOLUTE "${CMAKE_MAKE_PROGRAM}")
    find_program(ninja_path NAMES "${CMAKE_MAKE_PROGRAM}" NO_CACHE)
    if(ninja_path)
      set(CMAKE_MAKE_PROGRAM "${ninja_path}" CACHE FILEPATH
        "Program used to build from build.ninja files." FORCE)
    endif()
  endif()
  find_program(CMAKE_MAKE_PROGRAM NAMES ninja-build ninja samu
    DOC "Program used to build from build.ninja files.")
  if(NOT CMAKE_MAKE_PROGRAM OR NOT EXISTS "${CMAKE_MAKE_PROGRAM}"
     OR IS_DIRECTORY "${CMAKE_MAKE_PROGRAM}")
    if(CMAKE_MAKE_PROGRAM)
      set(found "CMAKE_MAKE_PROGRAM=${CMAKE_MAKE_PROGRAM}, which does not exist")
    else()
      set(found "no ninja, ninja-build or samu on PATH")
    endif()
    worker_toolchain_fail("the ${CMAKE_GENERATOR} generator needs Ninja"
      "${found}"
      "Ninja >= ${WORKER_MIN_NINJA}"
      "${WORKER_TOOLS_HOW}\nor install your distribution's ninja-build package.")
  endif()
  execute_process(COMMAND "${CMAKE_MAKE_PROGRAM}" --version
    OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc
    OUTPUT_STRIP_TRAILING_WHITESPACE)
  # Kitware's wheel says e.g. "1.13.2.git.kitware.jobserver-pipe-1".
  string(REGEX MATCH "^[0-9]+\\.[0-9]+(\\.[0-9]+)?" version "${out}")
  if(NOT rc EQUAL 0 OR version STREQUAL "" OR version VERSION_LESS WORKER_MIN_NINJA)
    if(NOT rc EQUAL 0 OR version STREQUAL "")
      set(what "`${CMAKE_MAKE_PROGRAM} --version` did not report a version")
      set(found "${CMAKE_MAKE_PROGRAM} (exit ${rc}: ${out}${err})")
    else()
      set(what "Ninja ${version} is too old")
      set(found "Ninja ${version} (${CMAKE_MAKE_PROGRAM})")
    endif()
    worker_toolchain_fail("${what}" "${found}"
      "Ninja >= ${WORKER_MIN_NINJA}"
      "${WORKER_TOOLS_HOW}\nin a fresh build directory, or pass -DCMAKE_MAKE_PROGRAM=<path to the new ninja>.")
  endif()
  set(WORKER_NINJA_VERSION "${version}" PARENT_SCOPE)
endfunction()

# A compiler path that does not exist otherwise fails inside project() with
# a message about CMAKE_CXX_COMPILER that does not say what to install.
function(worker_require_compiler_path)
  if(DEFINED CMAKE_CXX_COMPILER AND NOT CMAKE_CXX_COMPILER STREQUAL "")
    set(requested "${CMAKE_CXX_COMPILER}")
    set(origin "CMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER}")
  elseif(NOT "$ENV{CXX}" STREQUAL "")
    # CXX may carry flags ("g++ -m64"); CMake runs its first word.
    separate_arguments(words NATIVE_COMMAND "$ENV{CXX}")
    list(GET words 0 requested)
    set(origin "the CXX environment variable (${requested})")
  else()
    return()  # project() searches the usual names; it fails clearly if none
  endif()
  if(IS_ABSOLUTE "${requested}")
    if(EXISTS "${requested}" AND NOT IS_DIRECTORY "${requested}")
      return()
    endif()
  else()
    find_program(compiler_path NAMES "${requested}" NO_CACHE)
    if(compiler_path)
      return()
    endif()
  endif()
  worker_toolchain_fail("the C++ compiler does not exist"
    "${origin}: no such file"
    "${WORKER_CXX_NEED}"
    "${WORKER_CXX_HOW}")
endfunction()

# After project(): the identified compiler must meet the version floor and
# actually compile C++17, since a wrapper or an old -std default can defeat
# the version number.
function(worker_require_cxx17)
  set(id "${CMAKE_CXX_COMPILER_ID}")
  set(version "${CMAKE_CXX_COMPILER_VERSION}")
  set(found "${id} ${version} (${CMAKE_CXX_COMPILER})")
  if(DEFINED WORKER_MIN_CXX_${id})
    if(version VERSION_LESS WORKER_MIN_CXX_${id})
      worker_toolchain_fail("${id} ${version} is too old for C++17"
        "${found}" "${WORKER_CXX_NEED}" "${WORKER_CXX_HOW}")
    endif()
  else()
    message(STATUS "worker: compiler ${id} has no known version floor; "
      "relying on the C++17 feature check")
  endif()

  include(CheckCXXSourceCompiles)
  # CMAKE_CXX_STANDARD 17 (set by the caller) is honoured here (CMP0067), so
  # this compiles with the same -std flag the targets get. The features are
  # the ones worker_core uses.
  set(CMAKE_REQUIRED_QUIET ON)
  check_cxx_source_compiles([=[
    #include <charconv>
    #include <cstdint>
    #include <optional>
    #include <string_view>
    #include <utility>
    template <typename... T> constexpr auto sum(T... v) { return (v + ... + 0); }
    inline constexpr std::string_view kName = "worker";
    int main() {
      auto [a, b] = std::pair<int, int>{1, 2};
      std::optional<std::uint64_t> o;
      if constexpr (sum(1, 2) == 3) { o = 7; }
      int parsed = 0;
      const char text[] = "42";
      std::from_chars(text, text + 2, parsed);
      return static_cast<int>(kName.size() + *o) + a + b + parsed == 0;
    }
  ]=] WORKER_COMPILER_HAS_CXX17)
  if(NOT WORKER_COMPILER_HAS_CXX17)
    # The cached result would otherwise make a fixed compiler look broken.
    unset(WORKER_COMPILER_HAS_CXX17 CACHE)
    if(NOT CMAKE_CXX_FLAGS STREQUAL "")
      string(APPEND found ", CMAKE_CXX_FLAGS: ${CMAKE_CXX_FLAGS}")
    endif()
    # A new enough compiler that fails here is usually handed an older -std
    # (CXXFLAGS, a wrapper script), which is worth saying.
    worker_toolchain_fail("${id} ${version} cannot compile C++17 (is an older -std forced by CXXFLAGS or a wrapper?)"
      "${found}"
      "${WORKER_CXX_NEED}"
      "${WORKER_CXX_HOW}\nThe compiler's output is in ${CMAKE_BINARY_DIR}/CMakeFiles/ (CMakeConfigureLog.yaml or CMakeError.log).")
  endif()
endfunction()

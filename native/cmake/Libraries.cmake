# The third-party libraries the worker links, found on the build machine
# (never vendored or downloaded): nlohmann/json for JSON and OpenSSL's
# libcrypto for SHA-256. Their versions go into the build identity, and from
# there into a release's SBOM.

include_guard(GLOBAL)

set(WORKER_MIN_NLOHMANN_JSON "3.10")
set(WORKER_MIN_OPENSSL "3.0")

# The one message shape for a missing library, as worker_toolchain_fail's:
# its first line says on its own what is wrong; commands on their own lines.
function(worker_library_fail what found needed how)
  message(FATAL_ERROR
    "worker: ${what}.\n"
    "Found: ${found}\n"
    "Needed: ${needed}\n"
    "${how}")
endfunction()

# worker_require_libraries(<out_var>): finds both or stops configure, and
# sets <out_var> to the identity's library list: name, version, SPDX
# license and linkage, four items per library.
function(worker_require_libraries out_var)
  worker_require_nlohmann_json(json)
  worker_require_openssl(openssl)
  set(${out_var} ${json} ${openssl} PARENT_SCOPE)
endfunction()

# One function per library, each one's whole check: the test suite runs each
# on its own to tell which library a machine lacks (tests/system_packages.py).
function(worker_require_nlohmann_json out_var)
  find_package(nlohmann_json ${WORKER_MIN_NLOHMANN_JSON} CONFIG QUIET)
  if(NOT nlohmann_json_FOUND)
    set(what "nlohmann_json not found")
    set(found "none (nlohmann_jsonConfig.cmake is not in CMAKE_PREFIX_PATH or the system prefixes)")
    if(nlohmann_json_CONSIDERED_VERSIONS)
      list(JOIN nlohmann_json_CONSIDERED_VERSIONS ", " versions)
      list(JOIN nlohmann_json_CONSIDERED_CONFIGS ", " configs)
      set(what "nlohmann_json ${versions} is too old")
      set(found "nlohmann_json ${versions} (${configs})")
    endif()
    worker_library_fail("${what}"
      "${found}"
      "nlohmann_json >= ${WORKER_MIN_NLOHMANN_JSON} (JSON for Modern C++, header-only, MIT)"
      "Install its development package and configure again:\n  apt-get install nlohmann-json3-dev    # Debian/Ubuntu\n  dnf install json-devel                # Fedora\n  brew install nlohmann-json            # macOS\nor set nlohmann_json_DIR to the directory that holds its nlohmann_jsonConfig.cmake.")
  endif()
  message(STATUS "worker: nlohmann_json ${nlohmann_json_VERSION} (${nlohmann_json_DIR})")
  set(${out_var} nlohmann_json "${nlohmann_json_VERSION}" MIT header-only PARENT_SCOPE)
endfunction()

function(worker_require_openssl out_var)
  # libssl too: the stage mode's links are TLS 1.3 with a pre-shared key.
  find_package(OpenSSL ${WORKER_MIN_OPENSSL} QUIET COMPONENTS Crypto SSL)
  if(NOT OpenSSL_FOUND OR NOT TARGET OpenSSL::Crypto OR NOT TARGET OpenSSL::SSL)
    set(what "OpenSSL (libcrypto) not found")
    set(found "none (no OpenSSL headers and libcrypto in the system prefixes or OPENSSL_ROOT_DIR)")
    if(OPENSSL_VERSION)
      set(found "OpenSSL ${OPENSSL_VERSION} (headers ${OPENSSL_INCLUDE_DIR}, libcrypto ${OPENSSL_CRYPTO_LIBRARY})")
      if(OPENSSL_VERSION VERSION_LESS WORKER_MIN_OPENSSL)
        set(what "OpenSSL ${OPENSSL_VERSION} is too old")
      endif()
    endif()
    worker_library_fail("${what}"
      "${found}"
      "OpenSSL >= ${WORKER_MIN_OPENSSL}: its libcrypto and headers (Apache-2.0)"
      "Install its development package and configure again:\n  apt-get install libssl-dev            # Debian/Ubuntu\n  dnf install openssl-devel             # Fedora\n  brew install openssl@3                # macOS, with -DOPENSSL_ROOT_DIR=$(brew --prefix openssl@3)\nor set OPENSSL_ROOT_DIR to an OpenSSL 3 installation.")
  endif()
  set(openssl_linkage shared)
  if(OPENSSL_USE_STATIC_LIBS)
    set(openssl_linkage static)
  endif()
  message(STATUS "worker: OpenSSL ${OPENSSL_VERSION} libcrypto (${OPENSSL_CRYPTO_LIBRARY}), libssl (${OPENSSL_SSL_LIBRARY})")
  set(${out_var} OpenSSL "${OPENSSL_VERSION}" Apache-2.0 ${openssl_linkage} PARENT_SCOPE)
endfunction()

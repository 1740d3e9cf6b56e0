# Certification records: the only way a capability gets advertised.
#
# A build that compiles proves nothing about what the worker can serve. A
# record (native/README.md, "Certification records") names the stack
# fingerprint it certifies and the evidence file it rests on, by sha256. A
# record counts only when both hold for THIS configure: its fingerprint is
# the lock's and the evidence file is present with that sha256. Project mode
# only (it registers configure dependencies).
#
#   worker_load_certifications(<records_dir> <evidence_root> <lock_prefix>
#                              <prefix>)
#
# sets
#   <prefix>_COUNT         number of accepted records
#   <prefix>_<i>_RECORD, _BACKEND, _MODEL, _RECIPE, _EVIDENCE,
#   <prefix>_<i>_EVIDENCE_SHA256, _CAPABILITIES   for i in 1.._COUNT
#   <prefix>_FINGERPRINT   sha256 over the accepted records, or "uncertified"
#   <prefix>_NOTES         why records (or all of them) were not accepted

include_guard(GLOBAL)
include("${CMAKE_CURRENT_LIST_DIR}/FlatToml.cmake")
include("${CMAKE_CURRENT_LIST_DIR}/StackLock.cmake")

function(worker_load_certifications records_dir evidence_root lock_prefix prefix)
  set(lock_fp "${${lock_prefix}_FINGERPRINT}")
  set(lock_short "${${lock_prefix}_SHORT}")
  # CONFIGURE_DEPENDS: adding or removing a record re-runs configure.
  file(GLOB records CONFIGURE_DEPENDS "${records_dir}/*.toml")
  list(SORT records COMPARE STRING)

  set(count 0)
  set(notes "")
  set(lines "")  # input to the certification fingerprint
  set(slug "^[A-Za-z0-9][A-Za-z0-9._+-]*$")
  foreach(record IN LISTS records)
    get_filename_component(name "${record}" NAME)
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${record}")
    # Forget the previous record's keys so a missing key is seen as missing.
    foreach(key IN LISTS rec_KEYS)
      unset(rec_${key})
    endforeach()
    worker_read_flat_toml("${record}" rec error)
    worker_toml_require(rec format "^1$" "1" error)
    worker_toml_require(rec backend "${slug}" "a backend name" error)
    worker_toml_require(rec model "${slug}" "a model name" error)
    worker_toml_require(rec recipe "${slug}" "a recipe name" error)
    worker_toml_require(rec fingerprint "^${WORKER_HEX64}$"
      "a 64-hex stack fingerprint" error)
    # Evidence lives in the repository's evidence/ (written by commands,
    # never by hand); `..` could point a record at anything.
    worker_toml_require(rec evidence "^evidence/" "a path under evidence/"
      error)
    if(error STREQUAL "" AND rec_evidence MATCHES "(^|/)\\.\\.(/|$)")
      set(error "`evidence = ${rec_evidence}` leaves evidence/")
    endif()
    worker_toml_require(rec evidence_sha256 "^${WORKER_HEX64}$"
      "a 64-hex sha256" error)
    worker_toml_require(rec capabilities "." "a non-empty list" error)
    if(error STREQUAL "")
      foreach(capability IN LISTS rec_capabilities)
        if(NOT capability MATCHES "${slug}")
          set(error "capability `${capability}` is not a plain name")
        endif()
      endforeach()
    endif()
    if(NOT error STREQUAL "")
      # A broken record is a repository defect, not a missing certification:
      # stop rather than quietly advertise less than intended.
      message(FATAL_ERROR "worker: certification record ${record} is "
        "malformed: ${error}.\nFix or remove it; the format is in "
        "native/README.md (\"Certification records\").")
    endif()

    if(NOT rec_fingerprint STREQUAL lock_fp)
      string(SUBSTRING "${rec_fingerprint}" 0 16 rec_short)
      list(APPEND notes "${name}: certifies fingerprint ${rec_short}, not ${lock_short}")
      continue()
    endif()
    set(evidence "${evidence_root}/${rec_evidence}")
    if(NOT EXISTS "${evidence}" OR IS_DIRECTORY "${evidence}")
      set(why "${name}: evidence ${rec_evidence} not found under ${evidence_root}")
      message(WARNING "worker: certification record ${record} not accepted: "
        "its evidence ${evidence} is missing.")
      list(APPEND notes "${why}")
      continue()
    endif()
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${evidence}")
    file(SHA256 "${evidence}" actual)
    if(NOT actual STREQUAL rec_evidence_sha256)
      message(WARNING "worker: certification record ${record} not accepted: "
        "evidence ${evidence} has sha256 ${actual}, the record says "
        "${rec_evidence_sha256}.")
      list(APPEND notes "${name}: evidence ${rec_evidence} has sha256 ${actual}, not ${rec_evidence_sha256}")
      continue()
    endif()

    math(EXPR count "${count} + 1")
    set(${prefix}_${count}_RECORD "${name}" PARENT_SCOPE)
    foreach(key backend model recipe evidence evidence_sha256 capabilities)
      string(TOUPPER "${key}" upper)
      set(${prefix}_${count}_${upper} "${rec_${key}}" PARENT_SCOPE)
    endforeach()
    file(SHA256 "${record}" record_sha)
    string(APPEND lines "${record_sha}  ${name}\n")
  endforeach()

  if(count EQUAL 0)
    list(LENGTH records considered)
    list(INSERT notes 0
      "no certification record matches fingerprint ${lock_short} (${considered} record(s) in ${records_dir})")
    set(fingerprint "uncertified")
  else()
    string(SHA256 fingerprint "${lines}")
  endif()
  set(${prefix}_COUNT "${count}" PARENT_SCOPE)
  set(${prefix}_FINGERPRINT "${fingerprint}" PARENT_SCOPE)
  set(${prefix}_NOTES "${notes}" PARENT_SCOPE)
endfunction()

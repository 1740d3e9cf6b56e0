# ctest -P script: a fresh pre-shared key for the TLS CTests:
# 64 random hex digits in -DKEY=<file>, mode 0600 (the worker refuses a key
# that group or others may read).
string(RANDOM LENGTH 64 ALPHABET 0123456789abcdef key)
get_filename_component(dir "${KEY}" DIRECTORY)
file(MAKE_DIRECTORY "${dir}")
file(REMOVE "${KEY}")
file(WRITE "${KEY}" "${key}\n")
file(CHMOD "${KEY}" PERMISSIONS OWNER_READ OWNER_WRITE)

# Reads the line-oriented TOML subset that patchctl writes (docs/FORMATS.md)
# and that certification records use: one `key = value` per line, `[table]`
# and `[[table]]` headers, `#` comments. A value is a "string" without
# escapes, an integer, true/false, or a one-line array of such strings.
# Anything else is reported, not guessed at: these files gate what the worker
# is built against.
#
# Usable in project and script (-P) mode alike, after
# cmake_minimum_required(VERSION 3.21) (IN_LIST needs its policies).
#
#   worker_read_flat_toml(<path> <prefix> <error_var>)
#
# sets in the caller's scope
#   <prefix>_<key>              for each top-level key
#   <prefix>_KEYS               the top-level keys, in file order
#   <prefix>_<t>_<key>          for keys of a [t] table
#   <prefix>_<t>_COUNT          number of [[t]] tables (unset when none)
#   <prefix>_<t>_<n>_<key>      key of the n-th [[t]] table (n from 1)
# and <error_var> to "" on success, or to a one-line reason (naming the
# offending line) when the file is not in the subset.

function(worker_read_flat_toml path prefix error_var)
  set(${error_var} "" PARENT_SCOPE)
  if(NOT EXISTS "${path}" OR IS_DIRECTORY "${path}")
    set(${error_var} "file not found" PARENT_SCOPE)
    return()
  endif()
  # Every line that is neither blank nor a comment; LENGTH_MINIMUM 1 because
  # file(STRINGS) drops lines under 4 characters by default.
  file(STRINGS "${path}" lines REGEX "^[ \t]*[^ \t\r#]"
    LENGTH_MINIMUM 1 NO_HEX_CONVERSION ENCODING UTF-8)

  set(names "")        # every variable to hand back to the caller
  set(keys "")         # top-level keys in order
  set(seen "")         # "<section>.<key>" to reject duplicates
  set(section "")      # "" (top level), "<t>" or "<t>_<n>"
  set(tables "")       # names of [[t]] tables seen
  set(ident "[A-Za-z0-9_-]+")
  set(comment "[ \t]*(#.*)?$")

  foreach(raw IN LISTS lines)
    string(REGEX REPLACE "\r$" "" line "${raw}")
    if(line MATCHES "^[ \t]*\\[\\[[ \t]*(${ident})[ \t]*\\]\\]${comment}")
      set(table "${CMAKE_MATCH_1}")
      if(NOT DEFINED count_${table})
        set(count_${table} 0)
        list(APPEND tables "${table}")
      endif()
      math(EXPR count_${table} "${count_${table}} + 1")
      set(section "${table}_${count_${table}}")
      continue()
    endif()
    if(line MATCHES "^[ \t]*\\[[ \t]*(${ident})[ \t]*\\]${comment}")
      set(section "${CMAKE_MATCH_1}")
      continue()
    endif()
    if(NOT line MATCHES "^[ \t]*(${ident})[ \t]*=[ \t]*(.*)$")
      set(${error_var} "unexpected line `${line}`" PARENT_SCOPE)
      return()
    endif()
    set(key "${CMAKE_MATCH_1}")
    set(rest "${CMAKE_MATCH_2}")
    if(rest MATCHES "\\\\")
      set(${error_var} "unsupported escape in `${line}`" PARENT_SCOPE)
      return()
    endif()
    if(rest MATCHES "^\"([^\"]*)\"${comment}")
      set(value "${CMAKE_MATCH_1}")
    elseif(rest MATCHES "^(-?[0-9]+|true|false)${comment}")
      set(value "${CMAKE_MATCH_1}")
    elseif(rest MATCHES "^\\[([^]#]*)\\]${comment}")
      set(inner "${CMAKE_MATCH_1}")
      set(item "\"[^\"]*\"")
      if(NOT inner MATCHES
         "^[ \t]*(${item}[ \t]*(,[ \t]*${item}[ \t]*)*,?)?[ \t]*$")
        set(${error_var} "array is not a one-line list of strings: `${line}`"
          PARENT_SCOPE)
        return()
      endif()
      string(REGEX MATCHALL "${item}" quoted "${inner}")
      set(value "")
      foreach(q IN LISTS quoted)
        string(REGEX REPLACE "^\"(.*)\"$" "\\1" q "${q}")
        list(APPEND value "${q}")
      endforeach()
    else()
      set(${error_var} "unsupported value in `${line}`" PARENT_SCOPE)
      return()
    endif()

    if("${section}.${key}" IN_LIST seen)
      set(${error_var} "duplicate key `${key}`" PARENT_SCOPE)
      return()
    endif()
    list(APPEND seen "${section}.${key}")
    if(section STREQUAL "")
      set(name "${prefix}_${key}")
      list(APPEND keys "${key}")
    else()
      set(name "${prefix}_${section}_${key}")
    endif()
    set(${name} "${value}")
    list(APPEND names "${name}")
  endforeach()

  foreach(name IN LISTS names)
    set(${name} "${${name}}" PARENT_SCOPE)
  endforeach()
  set(${prefix}_KEYS "${keys}" PARENT_SCOPE)
  foreach(table IN LISTS tables)
    set(${prefix}_${table}_COUNT "${count_${table}}" PARENT_SCOPE)
  endforeach()
endfunction()

# worker_toml_require(<prefix> <key> <regex> <what> <error_var>)
# Sets <error_var> when <prefix>_<key> is missing or does not match <regex>;
# leaves it alone otherwise, so several checks can run and the first failure
# is the one reported.
function(worker_toml_require prefix key regex what error_var)
  if(NOT "${${error_var}}" STREQUAL "")
    return()
  endif()
  if(NOT DEFINED ${prefix}_${key})
    set(${error_var} "missing `${key}` (${what})" PARENT_SCOPE)
  elseif(NOT "${${prefix}_${key}}" MATCHES "${regex}")
    set(${error_var} "`${key} = ${${prefix}_${key}}` is not ${what}" PARENT_SCOPE)
  endif()
endfunction()

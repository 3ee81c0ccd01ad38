# capi/abi/check_symbols.cmake — checks that a shared library exports exactly
# the symbols listed in mulligan.symbols (and each at its "since" version).
#
#   cmake -DLIBRARY=libmulligan.so -DSYMBOLS=mulligan.symbols -DNM=nm -P check_symbols.cmake
#
# Reads `nm -D --defined-only`. Version-definition entries (type A, named
# MULLIGAN_<since>) are the version nodes of the linker script, not symbols;
# anything else that is not listed (a C++ symbol, libstdc++, libcurl) fails.
cmake_minimum_required(VERSION 3.18)
foreach(_var LIBRARY SYMBOLS NM)
  if(NOT DEFINED ${_var})
    message(FATAL_ERROR "check_symbols.cmake: -D${_var}=... is required")
  endif()
endforeach()

file(STRINGS ${SYMBOLS} _lines ENCODING UTF-8)
set(_expected "")
set(_versions "")
foreach(_line IN LISTS _lines)
  string(STRIP "${_line}" _line)
  if(_line STREQUAL "" OR _line MATCHES "^#")
    continue()
  endif()
  if(NOT _line MATCHES "^([A-Za-z0-9_]+)[ \t]+([0-9]+\\.[0-9]+)$")
    message(FATAL_ERROR "${SYMBOLS}: bad line \"${_line}\"")
  endif()
  list(APPEND _expected ${CMAKE_MATCH_1})
  set(_since_${CMAKE_MATCH_1} ${CMAKE_MATCH_2})
  list(APPEND _versions "MULLIGAN_${CMAKE_MATCH_2}")
endforeach()

execute_process(COMMAND ${NM} -D --defined-only ${LIBRARY}
  OUTPUT_VARIABLE _nm RESULT_VARIABLE _rc ERROR_VARIABLE _err)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "${NM} -D --defined-only ${LIBRARY} failed: ${_err}")
endif()
string(REPLACE "\n" ";" _nm_lines "${_nm}")
set(_actual "")
set(_problems "")
foreach(_line IN LISTS _nm_lines)
  if(NOT _line MATCHES "^[0-9a-fA-F]* *([A-Za-z]) (.+)$")
    continue()
  endif()
  set(_type ${CMAKE_MATCH_1})
  set(_full ${CMAKE_MATCH_2})
  if(_type STREQUAL "A" AND _full IN_LIST _versions)
    continue()  # A version node such as MULLIGAN_0.1.
  endif()
  set(_name ${_full})
  set(_version "")
  if(_full MATCHES "^([^@]+)@@?(.*)$")
    set(_name ${CMAKE_MATCH_1})
    set(_version ${CMAKE_MATCH_2})
  endif()
  list(APPEND _actual ${_name})
  if(DEFINED _since_${_name} AND NOT _version STREQUAL ""
     AND NOT _version STREQUAL "MULLIGAN_${_since_${_name}}")
    list(APPEND _problems "${_name} has version ${_version}, expected MULLIGAN_${_since_${_name}}")
  endif()
endforeach()

foreach(_name IN LISTS _actual)
  if(NOT _name IN_LIST _expected)
    list(APPEND _problems "exported but not listed in mulligan.symbols: ${_name}")
  endif()
endforeach()
foreach(_name IN LISTS _expected)
  if(NOT _name IN_LIST _actual)
    list(APPEND _problems "listed in mulligan.symbols but not exported: ${_name}")
  endif()
endforeach()

list(LENGTH _expected _n_expected)
list(LENGTH _actual _n_actual)
if(_problems)
  string(REPLACE ";" "\n  " _text "${_problems}")
  message(FATAL_ERROR "ABI check of ${LIBRARY} failed:\n  ${_text}")
endif()
message(STATUS "ABI check: ${_n_actual} exported symbols == ${_n_expected} listed in mulligan.symbols")

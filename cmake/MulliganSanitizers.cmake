# cmake/MulliganSanitizers.cmake — sanitizer and fuzzer instrumentation for
# every target of the build (included once by the top-level CMakeLists.txt,
# before any target is defined, so the engine, the C ABI and the tests are
# all built the same way).
#
#   MULLIGAN_SANITIZE (string, default "": off) — a comma-separated list
#   handed to -fsanitize=. Accepted values:
#     ""                    no sanitizer
#     "address"             AddressSanitizer (with LeakSanitizer on Linux)
#     "undefined"           UndefinedBehaviorSanitizer
#     "address,undefined"   both (what scripts/test.sh runs)
#     "thread"              ThreadSanitizer (what scripts/test.sh runs)
#     "thread,undefined"    ThreadSanitizer and UBSan
#     "leak"                LeakSanitizer alone
#   Any other value is a configure error. Whenever "undefined" is in the
#   list, -fno-sanitize-recover=all makes every finding fatal: a UBSan report
#   then ends the program with a non-zero status instead of printing and
#   carrying on, so a test cannot pass over undefined behaviour.
#
#   MULLIGAN_BUILD_FUZZERS (bool) — when ON (clang only) every target is
#   compiled with -fsanitize=fuzzer-no-link so libFuzzer sees the coverage of
#   the engine, and tests/fuzz/ links each harness with -fsanitize=fuzzer.
#
# GCC and Clang only: another compiler with a sanitizer or fuzzers asked for
# is a configure error rather than a build without them.

set(_mulligan_sanitize_values "" address undefined "address,undefined" thread
    "thread,undefined" leak)
set_property(CACHE MULLIGAN_SANITIZE PROPERTY STRINGS ${_mulligan_sanitize_values})

# Validates MULLIGAN_SANITIZE against the documented list (order-insensitive:
# "undefined,address" is "address,undefined").
function(_mulligan_check_sanitize value)
  string(REPLACE "," ";" items "${value}")
  set(seen "")
  foreach(item IN LISTS items)
    if(NOT item MATCHES "^(address|undefined|thread|leak)$")
      message(FATAL_ERROR
        "MULLIGAN_SANITIZE=\"${value}\": unknown sanitizer \"${item}\"; expected a "
        "comma-separated list of address, undefined, thread, leak (for example "
        "\"address,undefined\" or \"thread\"), or \"\" for none")
    endif()
    if(item IN_LIST seen)
      message(FATAL_ERROR "MULLIGAN_SANITIZE=\"${value}\": \"${item}\" is listed twice")
    endif()
    list(APPEND seen ${item})
  endforeach()
  if("thread" IN_LIST seen AND ("address" IN_LIST seen OR "leak" IN_LIST seen))
    message(FATAL_ERROR
      "MULLIGAN_SANITIZE=\"${value}\": thread cannot be combined with address or leak "
      "(the runtimes exclude each other); build them in separate build directories")
  endif()
  if("leak" IN_LIST seen AND "address" IN_LIST seen)
    message(FATAL_ERROR
      "MULLIGAN_SANITIZE=\"${value}\": address already includes leak; list one of them")
  endif()
endfunction()

if(NOT MULLIGAN_SANITIZE STREQUAL "")
  _mulligan_check_sanitize("${MULLIGAN_SANITIZE}")
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    message(FATAL_ERROR "MULLIGAN_SANITIZE needs GCC or Clang, not ${CMAKE_CXX_COMPILER_ID}")
  endif()
  set(_mulligan_sanitize_flags -fsanitize=${MULLIGAN_SANITIZE} -fno-omit-frame-pointer)
  if("${MULLIGAN_SANITIZE}" MATCHES "(^|,)undefined(,|$)")
    list(APPEND _mulligan_sanitize_flags -fno-sanitize-recover=all)
  endif()
  add_compile_options(${_mulligan_sanitize_flags})
  add_link_options(${_mulligan_sanitize_flags})
  message(STATUS "mulligan: sanitizers ${MULLIGAN_SANITIZE} (${_mulligan_sanitize_flags})")
endif()

if(MULLIGAN_BUILD_FUZZERS)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR
      "MULLIGAN_BUILD_FUZZERS needs clang (libFuzzer), not ${CMAKE_CXX_COMPILER_ID}: configure "
      "with -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 (scripts/fuzz.sh does)")
  endif()
  if(MULLIGAN_SANITIZE STREQUAL "")
    message(WARNING "MULLIGAN_BUILD_FUZZERS without MULLIGAN_SANITIZE finds only crashes; "
                    "use -DMULLIGAN_SANITIZE=address,undefined")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()

# tests/capi/install_check.cmake — installs the build into a scratch prefix and
# proves the installed package works: the expected files (every C header, and
# no C++ core header), each installed header compiling on its own
# (headers_check.cmake), a find_package(mulligan) consumer, a pkg-config
# consumer, and the README's C quick start built against the install.
#
#   cmake -DBUILD_DIR=... -DWORK_DIR=... -DCONSUMER_DIR=... -DC_COMPILER=...
#         -DCXX_COMPILER=... -DHEADERS_CHECK=... -DSYMBOLS=... -DREADME=...
#         -DGENERATOR=... -DPKG_CONFIG=... -DEXPECTED_VERSION=...
#         [-DSANITIZE=address,undefined] -P install_check.cmake
#
# SANITIZE is the build's MULLIGAN_SANITIZE. A library built with sanitizers
# calls into their runtime, which must be the first library the program
# loads (ASan aborts with "ASan runtime does not come first in initial
# library list" otherwise): every program that links an instrumented
# libmulligan must itself be linked with the same -fsanitize= flags. So the
# consumers are then built with them, exactly as a user testing against a
# sanitized build would; the check itself (files, package config, pkg-config,
# a working retry session) stays the same.
cmake_minimum_required(VERSION 3.18)

set(sanitize_flags "")
if(SANITIZE)
  set(sanitize_flags -fsanitize=${SANITIZE} -fno-omit-frame-pointer)
  message(STATUS "consumers are linked with ${sanitize_flags} (the library is sanitized)")
endif()
string(REPLACE ";" " " sanitize_flags_string "${sanitize_flags}")

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "failed (${rc}): ${cmd}\n${out}\n${err}")
  endif()
  set(run_output "${out}" PARENT_SCOPE)
endfunction()

set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})

# --- What got installed --------------------------------------------------------
foreach(header mulligan.h mulligan_export.h mulligan_version.h mulligan_status.h
               mulligan_retry.h mulligan_pipeline.h mulligan_breaker.h
               mulligan_idempotency.h mulligan_config.h mulligan_metrics.h mulligan_http.h
               mulligan_hedging.h)
  if(NOT EXISTS ${prefix}/include/${header})
    message(FATAL_ERROR "not installed: include/${header}")
  endif()
endforeach()
# Each installed header alone (C99 and C++17), the umbrella, the declarations.
run(${CMAKE_COMMAND} -DHEADERS_DIR=${prefix}/include -DINCLUDE_DIRS=${prefix}/include
    -DC_COMPILER=${C_COMPILER} -DCXX_COMPILER=${CXX_COMPILER} -DSYMBOLS=${SYMBOLS}
    -DWORK_DIR=${WORK_DIR}/headers -P ${HEADERS_CHECK})
if(EXISTS ${prefix}/include/mulligan)
  message(FATAL_ERROR "the C++ core headers must not be installed (include/mulligan/)")
endif()
file(GLOB_RECURSE libs LIST_DIRECTORIES false RELATIVE ${prefix} ${prefix}/lib*/libmulligan.so*)
list(SORT libs)
message(STATUS "installed libraries: ${libs}")
set(found_so FALSE)
set(found_soname FALSE)
foreach(lib IN LISTS libs)
  if(lib MATCHES "libmulligan\\.so$")
    set(found_so TRUE)
    get_filename_component(libdir ${prefix}/${lib} DIRECTORY)
  elseif(lib MATCHES "libmulligan\\.so\\.[0-9]+$")
    set(found_soname TRUE)
  endif()
endforeach()
if(NOT found_so OR NOT found_soname)
  message(FATAL_ERROR "expected libmulligan.so and libmulligan.so.<major>, got: ${libs}")
endif()
file(GLOB pcs ${prefix}/lib*/pkgconfig/mulligan.pc ${prefix}/lib/*/pkgconfig/mulligan.pc)
file(GLOB configs ${prefix}/lib*/cmake/mulligan/mulligan-config.cmake
                  ${prefix}/lib/*/cmake/mulligan/mulligan-config.cmake)
if(NOT pcs OR NOT configs)
  message(FATAL_ERROR "mulligan.pc (${pcs}) or mulligan-config.cmake (${configs}) missing")
endif()
list(GET pcs 0 pc)
file(READ ${pc} pc_text)
if(NOT pc_text MATCHES "prefix=${prefix}\n")
  message(FATAL_ERROR "${pc} does not point at the install prefix ${prefix}:\n${pc_text}")
endif()

# --- find_package(mulligan) consumer -------------------------------------------
run(${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${WORK_DIR}/cmake-consumer -G ${GENERATOR}
    -DCMAKE_C_COMPILER=${C_COMPILER} -DCMAKE_PREFIX_PATH=${prefix}
    -DCMAKE_BUILD_TYPE=Release "-DCMAKE_C_FLAGS=${sanitize_flags_string}"
    "-DCMAKE_EXE_LINKER_FLAGS=${sanitize_flags_string}")
run(${CMAKE_COMMAND} --build ${WORK_DIR}/cmake-consumer)
run(${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${libdir} ${WORK_DIR}/cmake-consumer/consumer)
message(STATUS "find_package consumer: ${run_output}")
if(NOT run_output MATCHES "mulligan ${EXPECTED_VERSION}:")
  message(FATAL_ERROR "unexpected consumer output: ${run_output}")
endif()

# --- pkg-config consumer -------------------------------------------------------
if(NOT PKG_CONFIG)
  message(STATUS "pkg-config not found: skipping the pkg-config consumer")
  return()
endif()
get_filename_component(pcdir ${pc} DIRECTORY)
execute_process(COMMAND ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${pcdir}
                        ${PKG_CONFIG} --cflags --libs mulligan
                RESULT_VARIABLE rc OUTPUT_VARIABLE flags ERROR_VARIABLE err
                OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pkg-config --cflags --libs mulligan failed: ${err}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${pcdir}
                        ${PKG_CONFIG} --modversion mulligan
                OUTPUT_VARIABLE pc_version OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT pc_version STREQUAL EXPECTED_VERSION)
  message(FATAL_ERROR "pkg-config version ${pc_version} != ${EXPECTED_VERSION}")
endif()
separate_arguments(flag_list UNIX_COMMAND "${flags}")
run(${C_COMPILER} -std=c99 -pedantic -Wall -Werror ${sanitize_flags} ${CONSUMER_DIR}/consumer.c
    ${flag_list} -o ${WORK_DIR}/pc-consumer)
run(${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${libdir} ${WORK_DIR}/pc-consumer)
message(STATUS "pkg-config consumer (${flags}): ${run_output}")

# --- The README's C quick start, against the installed headers ---------------------
# The first ```c block after "## Quick start: C", built (not run: it needs a
# server on port 8080) as the README says: cc app.c $(pkg-config ...).
file(READ ${README} readme)
string(FIND "${readme}" "## Quick start: C\n" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${README}: no \"## Quick start: C\" section")
endif()
string(SUBSTRING "${readme}" ${at} -1 readme)
string(FIND "${readme}" "```c\n" begin)
string(FIND "${readme}" "\n```\n" end)
if(begin EQUAL -1 OR end LESS begin)
  message(FATAL_ERROR "${README}: no ```c block in the C quick start")
endif()
math(EXPR begin "${begin} + 5")
math(EXPR length "${end} + 1 - ${begin}")
string(SUBSTRING "${readme}" ${begin} ${length} quickstart)
file(WRITE ${WORK_DIR}/readme_quickstart.c "${quickstart}")
run(${C_COMPILER} -std=c99 -pedantic -Wall -Wextra -Werror ${sanitize_flags} ${WORK_DIR}/readme_quickstart.c
    ${flag_list} -o ${WORK_DIR}/readme-quickstart)
message(STATUS "README C quick start: built against ${prefix}")

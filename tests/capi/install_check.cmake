# tests/capi/install_check.cmake — installs the build into a scratch prefix and
# proves the installed package works: the expected files (and no C++ core
# headers), a find_package(mulligan) consumer, and a pkg-config consumer.
#
#   cmake -DBUILD_DIR=... -DWORK_DIR=... -DCONSUMER_DIR=... -DC_COMPILER=...
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
foreach(header mulligan.h mulligan_export.h mulligan_version.h)
  if(NOT EXISTS ${prefix}/include/${header})
    message(FATAL_ERROR "not installed: include/${header}")
  endif()
endforeach()
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

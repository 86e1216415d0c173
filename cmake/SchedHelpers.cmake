# Helpers that keep every library and test declared the same way.

# sched_add_library(<name> SOURCES ... [PUBLIC_DEPS ...] [PRIVATE_DEPS ...] [PRECOMPILE <header>...])
# Defines target sched_<name> with alias sched::<name>; headers live in include/sched/<name>/.
# With SCHED_PCH (the dev preset, which the quick start builds cold) the PRECOMPILE headers, the
# heavy ones most of the library's translation units include, are parsed once per library.
# The client SDK's libraries (SCHED_SDK_LIBS) are position-independent, so that a service can
# link them into a shared library of its own, and shared libraries with SCHED_SDK_SHARED=ON.
function(sched_add_library name)
    cmake_parse_arguments(ARG "" "" "SOURCES;PUBLIC_DEPS;PRIVATE_DEPS;PRECOMPILE" ${ARGN})
    set(type "")
    if(name IN_LIST SCHED_SDK_LIBS AND SCHED_SDK_SHARED)
        set(type SHARED)
    endif()
    add_library(sched_${name} ${type} ${ARG_SOURCES})
    if(name IN_LIST SCHED_SDK_LIBS)
        set_target_properties(sched_${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
        if(SCHED_SDK_SHARED)
            set_target_properties(sched_${name} PROPERTIES
                VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}
                # Installed side by side, they find each other wherever the prefix is. No
                # <target>_EXPORTS define (nothing uses it): the objects then equal the static
                # build's, so ccache serves both.
                INSTALL_RPATH "$ORIGIN" DEFINE_SYMBOL "")
        endif()
    endif()
    add_library(sched::${name} ALIAS sched_${name})
    target_include_directories(sched_${name} PUBLIC
        $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
        $<INSTALL_INTERFACE:include>)
    target_link_libraries(sched_${name} PUBLIC ${ARG_PUBLIC_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
    target_compile_features(sched_${name} PUBLIC cxx_std_20)
    if(SCHED_PCH AND ARG_PRECOMPILE)
        target_precompile_headers(sched_${name} PRIVATE ${ARG_PRECOMPILE})
    endif()
endfunction()

# sched_add_test(<name> SOURCES ... [LIBS ...] [LABELS ...] [TIMEOUT s])
# One executable, one ctest entry (labels default to "unit").
function(sched_add_test name)
    cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
    add_executable(${name} ${ARG_SOURCES})
    target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main)
    if(NOT ARG_LABELS)
        set(ARG_LABELS unit)
    endif()
    if(NOT ARG_TIMEOUT)
        set(ARG_TIMEOUT 300)
    endif()
    add_test(NAME ${name} COMMAND ${name})
    set_tests_properties(${name} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT})
    sched_note_in_process_test(${name} "${ARG_LABELS}")
    sched_note_tsan_test(${name} ${name})
endfunction()

# Tests that run in one process (labels unit, sqlite, mysql only; no real binaries, servers or
# browsers) are collected in the global property SCHED_IN_PROCESS_TEST_TARGETS; the top-level
# CMakeLists makes the target `in_process_tests` from it, which the ASan stage of
# scripts/test.sh builds instead of everything.
function(sched_note_in_process_test name labels)
    foreach(label IN LISTS labels)
        if(label AND NOT label MATCHES "^(unit|sqlite|mysql|fuzz)$")
            return()
        endif()
    endforeach()
    set_property(GLOBAL APPEND PROPERTY SCHED_IN_PROCESS_TEST_TARGETS ${name})
endfunction()

# The test binaries named in SCHED_TSAN_TESTS (top-level CMakeLists) label their ctest entries
# "tsan": the ThreadSanitizer stage of scripts/test.sh runs `ctest -L tsan`.
function(sched_note_tsan_test name)
    if(name IN_LIST SCHED_TSAN_TESTS)
        set_property(TEST ${ARGN} APPEND PROPERTY LABELS tsan)
    endif()
endfunction()

# sched_add_db_test(<name> SOURCES ... [LIBS ...] [LABELS ...] [TIMEOUT s])
# A test binary whose cases are parameterised over the backends (instances named Sqlite and
# MySql, see sched/db/testing/test_database.hpp). Registered twice: <name>.sqlite (label "unit")
# and <name>.mysql (label "mysql"), so `ctest -L mysql` runs only the MariaDB cases. LABELS are
# added to both (e.g. "process" for a test that starts the apps).
function(sched_add_db_test name)
    cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
    add_executable(${name} ${ARG_SOURCES})
    target_link_libraries(${name} PRIVATE ${ARG_LIBS} sched::db_testing GTest::gtest GTest::gtest_main)
    if(NOT ARG_TIMEOUT)
        set(ARG_TIMEOUT 300)
    endif()
    add_test(NAME ${name}.sqlite COMMAND ${name} --gtest_filter=-*MySql*)
    set_tests_properties(${name}.sqlite PROPERTIES LABELS "unit;sqlite;${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT})
    add_test(NAME ${name}.mysql COMMAND ${name} --gtest_filter=*MySql*)
    set_tests_properties(${name}.mysql PROPERTIES LABELS "mysql;${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT})
    sched_note_in_process_test(${name} "unit;sqlite;mysql;${ARG_LABELS}")
    sched_note_tsan_test(${name} ${name}.sqlite ${name}.mysql)
endfunction()

# sched_add_fuzz(<name> ENTRY <fuzz/x_fuzz.cpp> LIB <target> [LIBFUZZER ON|OFF] [SOURCES ...]
#                [DEPENDS ...] [DEFINES ...] [INCLUDES ...] [LINK ...] [RUN_ARGS ...])
# A fuzz entry point (LLVMFuzzerTestOneInput in ENTRY) run two ways:
# - always, <name>_fuzz_replay: ENTRY with fuzz/replay_main.cpp built by the project's compiler,
#   linked to LIB, replaying fuzz/corpus and deterministic mutations of it (label "unit;fuzz", so
#   the ASan stage builds it too);
# - when clang++ is installed and LIBFUZZER is on, the target named after ENTRY (cron_parser_fuzz):
#   one clang++ invocation, outside the g++ toolchain, with libFuzzer, ASan and UBSan, of ENTRY,
#   SOURCES (absolute paths: the library's own sources) and LINK (files), with DEFINES (-D...),
#   include/, INCLUDES (absolute) and sched_common's include/; rebuilt when DEPENDS change. It is
#   fuzzed as the ctest <name>_fuzz (label "fuzz") with RUN_ARGS, the dictionary fuzz/<name>.dict,
#   the seed corpus and the new inputs and crashes kept under <build>/fuzz.
# Without the libFuzzer binary, the replay's ctest is named <name>_fuzz.
function(sched_add_fuzz name)
    cmake_parse_arguments(ARG "" "ENTRY;LIB;LIBFUZZER" "SOURCES;DEPENDS;DEFINES;INCLUDES;LINK;RUN_ARGS" ${ARGN})
    set(fuzz_dir ${CMAKE_CURRENT_BINARY_DIR}/fuzz)
    file(MAKE_DIRECTORY ${fuzz_dir}/corpus ${fuzz_dir}/artifacts)
    add_executable(${name}_fuzz_replay ${ARG_ENTRY} fuzz/replay_main.cpp)
    target_link_libraries(${name}_fuzz_replay PRIVATE ${ARG_LIB})

    find_program(SCHED_CLANGXX NAMES clang++ clang++-14 clang++-15 clang++-16)
    if(SCHED_CLANGXX AND ARG_LIBFUZZER)
        get_filename_component(fuzz_target ${ARG_ENTRY} NAME_WE)
        set(fuzz_bin ${fuzz_dir}/${fuzz_target})
        list(TRANSFORM ARG_INCLUDES PREPEND -I OUTPUT_VARIABLE includes)
        add_custom_command(
            OUTPUT ${fuzz_bin}
            COMMAND ${SCHED_CLANGXX} -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined
                    -fno-sanitize-recover=undefined -pthread ${ARG_DEFINES}
                    -I${CMAKE_CURRENT_SOURCE_DIR}/include ${includes}
                    -I$<TARGET_PROPERTY:sched_common,SOURCE_DIR>/include
                    ${CMAKE_CURRENT_SOURCE_DIR}/${ARG_ENTRY} ${ARG_SOURCES}
                    $<TARGET_FILE:sched_common> ${ARG_LINK} -o ${fuzz_bin}
            DEPENDS ${ARG_ENTRY} ${ARG_SOURCES} ${ARG_DEPENDS} sched_common
            COMMENT "Building ${fuzz_target} with ${SCHED_CLANGXX} (libFuzzer, ASan, UBSan)"
            COMMAND_EXPAND_LISTS VERBATIM)
        add_custom_target(${fuzz_target} ALL DEPENDS ${fuzz_bin})
        add_test(NAME ${name}_fuzz
            COMMAND ${fuzz_bin} ${ARG_RUN_ARGS} -print_final_stats=1
                    -dict=${CMAKE_CURRENT_SOURCE_DIR}/fuzz/${name}.dict -artifact_prefix=${fuzz_dir}/artifacts/
                    ${fuzz_dir}/corpus ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus)
        set_tests_properties(${name}_fuzz PROPERTIES LABELS "fuzz" TIMEOUT 90)
        set(replay_test ${name}_fuzz_replay)
    else()
        set(replay_test ${name}_fuzz)
    endif()
    add_test(NAME ${replay_test} COMMAND ${name}_fuzz_replay ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus)
    set_tests_properties(${replay_test} PROPERTIES LABELS "unit;fuzz" TIMEOUT 120)
    sched_note_in_process_test(${name}_fuzz_replay "unit;fuzz")
endfunction()

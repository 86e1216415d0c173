# Helpers that keep every library and test declared the same way.

# sched_add_library(<name> SOURCES ... [PUBLIC_DEPS ...] [PRIVATE_DEPS ...])
# Defines target sched_<name> with alias sched::<name>; headers live in include/sched/<name>/.
# The client SDK's libraries (SCHED_SDK_LIBS) are position-independent, so that a service can
# link them into a shared library of its own, and shared libraries with SCHED_SDK_SHARED=ON.
function(sched_add_library name)
    cmake_parse_arguments(ARG "" "" "SOURCES;PUBLIC_DEPS;PRIVATE_DEPS" ${ARGN})
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

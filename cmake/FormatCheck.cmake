# Script mode: cmake -DSOURCE_DIR=... -DCLANG_FORMAT=... -P FormatCheck.cmake
# Fails listing every C++ file under apps/, libs/ and tests/ that clang-format would change.
file(GLOB_RECURSE files
    "${SOURCE_DIR}/apps/*.cpp" "${SOURCE_DIR}/apps/*.hpp"
    "${SOURCE_DIR}/libs/*.cpp" "${SOURCE_DIR}/libs/*.hpp"
    "${SOURCE_DIR}/tests/*.cpp" "${SOURCE_DIR}/tests/*.hpp")
set(bad "")
foreach(f IN LISTS files)
    execute_process(COMMAND "${CLANG_FORMAT}" --dry-run --Werror "${f}"
                    RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
    if(NOT rc EQUAL 0)
        list(APPEND bad "${f}")
    endif()
endforeach()
if(bad)
    list(JOIN bad "\n  " listing)
    message(FATAL_ERROR "clang-format would change these files (run clang-format -i):\n  ${listing}")
endif()
list(LENGTH files n)
message(STATUS "format_check: ${n} files formatted")

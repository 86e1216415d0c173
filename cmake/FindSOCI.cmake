# Debian's libsoci-dev ships no CMake package config; this finds the core library and the two
# backends we use and exposes them as imported targets:
#   SOCI::core, SOCI::mysql, SOCI::sqlite3
# The MySQL backend header includes <mysql.h>, which Debian keeps in the MariaDB client folder.
find_path(SOCI_INCLUDE_DIR soci/soci.h)
find_library(SOCI_CORE_LIBRARY NAMES soci_core)
find_library(SOCI_MYSQL_LIBRARY NAMES soci_mysql)
find_library(SOCI_SQLITE3_LIBRARY NAMES soci_sqlite3)
find_path(SOCI_MARIADB_INCLUDE_DIR mysql.h PATH_SUFFIXES mariadb mysql)
find_library(SOCI_MARIADB_LIBRARY NAMES mariadb mariadbclient mysqlclient)
find_package(SQLite3 QUIET)

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(SOCI
    REQUIRED_VARS SOCI_INCLUDE_DIR SOCI_CORE_LIBRARY SOCI_MYSQL_LIBRARY SOCI_SQLITE3_LIBRARY
                  SOCI_MARIADB_INCLUDE_DIR SOCI_MARIADB_LIBRARY)

if(SOCI_FOUND AND NOT TARGET SOCI::core)
    add_library(SOCI::core UNKNOWN IMPORTED)
    set_target_properties(SOCI::core PROPERTIES
        IMPORTED_LOCATION "${SOCI_CORE_LIBRARY}"
        INTERFACE_INCLUDE_DIRECTORIES "${SOCI_INCLUDE_DIR}"
        INTERFACE_LINK_LIBRARIES "${CMAKE_DL_LIBS}")
    add_library(SOCI::mysql UNKNOWN IMPORTED)
    set_target_properties(SOCI::mysql PROPERTIES
        IMPORTED_LOCATION "${SOCI_MYSQL_LIBRARY}"
        INTERFACE_INCLUDE_DIRECTORIES "${SOCI_MARIADB_INCLUDE_DIR}"
        INTERFACE_LINK_LIBRARIES "SOCI::core;${SOCI_MARIADB_LIBRARY}")
    add_library(SOCI::sqlite3 UNKNOWN IMPORTED)
    set_target_properties(SOCI::sqlite3 PROPERTIES
        IMPORTED_LOCATION "${SOCI_SQLITE3_LIBRARY}"
        INTERFACE_LINK_LIBRARIES "SOCI::core")
    if(TARGET SQLite::SQLite3)
        set_property(TARGET SOCI::sqlite3 APPEND PROPERTY INTERFACE_LINK_LIBRARIES SQLite::SQLite3)
    endif()
endif()
mark_as_advanced(SOCI_INCLUDE_DIR SOCI_CORE_LIBRARY SOCI_MYSQL_LIBRARY SOCI_SQLITE3_LIBRARY
                 SOCI_MARIADB_INCLUDE_DIR SOCI_MARIADB_LIBRARY)

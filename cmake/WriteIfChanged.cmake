# sched_write_if_changed(<file> <content>): writes <content> to <file> unless the file already
# holds exactly that, so a generated source that did not change keeps its timestamp and nothing
# that depends on it is rebuilt. For the generators run in script mode (cmake -P).
function(sched_write_if_changed file content)
    set(old "")
    if(EXISTS "${file}")
        file(READ "${file}" old)
    endif()
    if(NOT "${old}" STREQUAL "${content}")
        file(WRITE "${file}" "${content}")
    endif()
endfunction()

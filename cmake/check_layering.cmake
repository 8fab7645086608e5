# The layering, checked on every build (cmake -P, from the `kblaster_layering` target that every
# library depends on): each folder may include only the folders listed for it. A violation stops
# the build with the file, the line and the rule. A file is checked by the most specific rule
# whose folder holds it (engine/profile/ by its own, not by engine/'s). docs/architecture.md
# explains the layers.
#   cmake -DROOT=<source dir> -DSTAMP=<file> -P check_layering.cmake
set(rules
  "support:support"
  "protocol:protocol,support"
  "kb:kb,support"
  "engine/task:engine/task,support"
  "engine/profile:engine/profile,engine/toolchain,support"
  "engine:engine,kb,support"
  "server:server,protocol,engine,kb,support"
  "cli:cli,server,protocol,engine,kb,support"
  "harness:harness,engine/task,support"
  "capture:capture")
set(folders "")
foreach(rule IN LISTS rules)
  string(REGEX REPLACE ":.*$" "" folder "${rule}")
  list(APPEND folders "${folder}")
endforeach()
set(violations "")
foreach(rule IN LISTS rules)
  string(REPLACE ":" ";" parts "${rule}")
  list(GET parts 0 folder)
  list(GET parts 1 allowed)
  string(REPLACE "," ";" allowed "${allowed}")
  file(GLOB_RECURSE files "${ROOT}/${folder}/*.h" "${ROOT}/${folder}/*.cpp")
  foreach(f IN LISTS files)
    file(RELATIVE_PATH rel "${ROOT}" "${f}")
    # A file belongs to the most specific rule: engine/task/ and engine/profile/ files answer to
    # their own rules, not to engine/'s.
    set(narrower FALSE)
    foreach(other IN LISTS folders)
      string(FIND "${other}" "${folder}/" under_this)
      string(FIND "${rel}" "${other}/" in_other)
      if(under_this EQUAL 0 AND in_other EQUAL 0)
        set(narrower TRUE)
      endif()
    endforeach()
    if(narrower)
      continue()
    endif()
    file(STRINGS "${f}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"[^\"]+/[^\"]+\"")
    foreach(line IN LISTS lines)
      string(REGEX REPLACE "^[^\"]*\"([^\"]+)\".*$" "\\1" inc "${line}")
      set(ok FALSE)
      foreach(a IN LISTS allowed)
        string(LENGTH "${a}/" n)
        string(SUBSTRING "${inc}" 0 ${n} head)
        if(head STREQUAL "${a}/")
          set(ok TRUE)
        endif()
      endforeach()
      if(NOT ok)
        string(APPEND violations "\n  ${rel}: #include \"${inc}\" (${folder}/ may include only: ${allowed})")
      endif()
    endforeach()
  endforeach()
endforeach()
if(violations)
  message(FATAL_ERROR "layering violated:${violations}\nSee docs/architecture.md, 'Who may depend on whom'.")
endif()
file(WRITE "${STAMP}" "ok\n")

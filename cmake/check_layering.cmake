# The layering, checked on every build (cmake -P, from the `kblaster_layering` target that every
# library depends on): each folder may include only the folders listed for it. A violation stops
# the build with the file, the line and the rule. A file is checked by the most specific rule
# whose folder holds it (engine/profile/ by its own, not by engine/'s). docs/architecture.md
# explains the layers. An allowed folder written "!folder" is refused even where a wider one is
# allowed: the engine's lower layers may include engine/ but not engine/optimize/, which only the
# layers that drive the loop (engine/optimize/, engine/program/, engine/bench/) include.
#   cmake -DROOT=<source dir> -DSTAMP=<file> -P check_layering.cmake
set(rules
  "support:support"
  "protocol:protocol,support"
  "kb:kb,support"
  "engine/task:engine/task,support"
  "engine/profile:engine/profile,engine/toolchain,support"
  "engine/optimize:engine,kb,support"
  "engine/program:engine,kb,support"
  "engine/bench:engine,kb,support"
  "engine:engine,kb,support,!engine/optimize"
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
      set(refused FALSE)
      foreach(a IN LISTS allowed)
        string(REGEX REPLACE "^!" "" prefix "${a}")
        string(LENGTH "${prefix}/" n)
        string(SUBSTRING "${inc}" 0 ${n} head)
        if(head STREQUAL "${prefix}/")
          if(a MATCHES "^!")
            set(refused TRUE)
          else()
            set(ok TRUE)
          endif()
        endif()
      endforeach()
      if(refused OR NOT ok)
        string(REPLACE ";" ", " readable "${allowed}")
        string(REPLACE "!" "never " readable "${readable}")
        string(APPEND violations "\n  ${rel}: #include \"${inc}\" (${folder}/ may include only: ${readable})")
      endif()
    endforeach()
  endforeach()
endforeach()
if(violations)
  message(FATAL_ERROR "layering violated:${violations}\nSee docs/architecture.md, 'Who may depend on whom'.")
endif()
file(WRITE "${STAMP}" "ok\n")

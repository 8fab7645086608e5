# Shared helpers for KernelBlaster's targets.

# Warnings on for our own code; kept clean (CI builds with -Werror via KBLASTER_WERROR).
option(KBLASTER_WERROR "Treat warnings as errors" OFF)
function(kblaster_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow
    -Wnon-virtual-dtor -Wold-style-cast -Wcast-align -Wunused -Woverloaded-virtual
    -Wimplicit-fallthrough)
  if(KBLASTER_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# One library per folder: every .cpp in the folder (not in subfolders named tests/data).
# Globbing with CONFIGURE_DEPENDS so that adding a file needs no CMake edit.
# Subfolders named in EXCLUDE are libraries of their own (with their own CMakeLists.txt).
function(kblaster_folder_library name)
  cmake_parse_arguments(ARG "" "" "DEPS;PRIVATE_DEPS;EXCLUDE" ${ARGN})
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  foreach(sub IN LISTS ARG_EXCLUDE)
    list(FILTER sources EXCLUDE REGEX "^${CMAKE_CURRENT_SOURCE_DIR}/${sub}/")
  endforeach()
  if(NOT sources)
    # A layer whose issue has not landed yet: headers only.
    add_library(${name} INTERFACE)
    target_include_directories(${name} INTERFACE ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/generated)
    target_link_libraries(${name} INTERFACE ${ARG_DEPS})
    return()
  endif()
  add_library(${name} STATIC ${sources})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/generated)
  target_link_libraries(${name} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  kblaster_warnings(${name})
endfunction()

# Reuse objects across the several build directories developers keep, when ccache is there.
find_program(KBLASTER_CCACHE ccache)
if(KBLASTER_CCACHE)
  set(CMAKE_CXX_COMPILER_LAUNCHER ${KBLASTER_CCACHE})
endif()

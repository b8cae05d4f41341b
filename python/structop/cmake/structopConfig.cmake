# structop's CMake package, installed by `pip install structop`:
#
#   cmake -Dstructop_DIR="$(python -m structop --cmakedir)" ...
#   find_package(structop CONFIG REQUIRED)
#
# defines
#
#   structop::runtime     an imported static library: libstructop_runtime.a
#                         compiled for the torch of the Python environment
#                         this package is installed in, with the runtime
#                         headers, torch's include folders, its
#                         _GLIBCXX_USE_CXX11_ABI value, C++17 and torch's
#                         libraries in its usage requirements
#   structop::structopc   the compiler (imported executable)
#   structop_generate(IDL [EMIT h,cpp,py] [OUTPUT_DIR dir] [INCLUDE_DIRS dir...]
#                     [OUTPUTS var])
#                         a custom command that runs structopc on IDL with a
#                         depfile (an edit of an included IDL regenerates);
#                         var receives the generated files (OUTPUT_DIR
#                         defaults to the current binary folder)
#   structop_VERSION, structop_PYTHON (the interpreter), structop_TORCH_VERSION
#
# The flags come from a Python interpreter that imports this very package:
# structop_PYTHON if set, else Python_EXECUTABLE or Python3_EXECUTABLE, else
# the environment's bin/python3 next to this folder, else python3 on PATH.
# It writes the variables for its torch (compiling the runtime library on
# first use, once per torch) with `python -m structop --cmake-vars`.
if(CMAKE_VERSION VERSION_LESS 3.20)  # add_custom_command(DEPFILE) for every generator
  set(${CMAKE_FIND_PACKAGE_NAME}_FOUND FALSE)
  set(${CMAKE_FIND_PACKAGE_NAME}_NOT_FOUND_MESSAGE "structop needs CMake 3.20 or later")
  return()
endif()

get_filename_component(_structop_package_dir "${CMAKE_CURRENT_LIST_DIR}/.." REALPATH)

set(_structop_candidates)
foreach(_var structop_PYTHON Python_EXECUTABLE Python3_EXECUTABLE)
  if(DEFINED ${_var} AND NOT "${${_var}}" STREQUAL "")
    list(APPEND _structop_candidates "${${_var}}")
  endif()
endforeach()
# <prefix>/lib/pythonX.Y/site-packages/structop -> <prefix>/bin/python3
get_filename_component(_structop_prefix "${_structop_package_dir}/../../../.." REALPATH)
list(APPEND _structop_candidates "${_structop_prefix}/bin/python3" "${_structop_prefix}/bin/python")
find_program(structop_PATH_PYTHON NAMES python3 python)
mark_as_advanced(structop_PATH_PYTHON)
if(structop_PATH_PYTHON)
  list(APPEND _structop_candidates "${structop_PATH_PYTHON}")
endif()

set(_structop_vars_file "")
set(_structop_tried "")
foreach(_python IN LISTS _structop_candidates)
  if(NOT EXISTS "${_python}")
    continue()
  endif()
  execute_process(
    COMMAND "${_python}" -c "import os, structop; print(os.path.realpath(os.path.dirname(structop.__file__)))"
    OUTPUT_VARIABLE _structop_found_dir OUTPUT_STRIP_TRAILING_WHITESPACE
    RESULT_VARIABLE _structop_rc ERROR_QUIET)
  if(NOT _structop_rc EQUAL 0 OR NOT _structop_found_dir STREQUAL _structop_package_dir)
    string(APPEND _structop_tried "\n  ${_python}")
    continue()
  endif()
  execute_process(
    COMMAND "${_python}" -m structop --cmake-vars
    OUTPUT_VARIABLE _structop_vars_file OUTPUT_STRIP_TRAILING_WHITESPACE
    ERROR_VARIABLE _structop_error
    RESULT_VARIABLE _structop_rc)
  if(NOT _structop_rc EQUAL 0)
    set(${CMAKE_FIND_PACKAGE_NAME}_FOUND FALSE)
    set(${CMAKE_FIND_PACKAGE_NAME}_NOT_FOUND_MESSAGE
        "`${_python} -m structop --cmake-vars` failed:\n${_structop_error}")
    return()
  endif()
  break()
endforeach()

if(_structop_vars_file STREQUAL "")
  set(${CMAKE_FIND_PACKAGE_NAME}_FOUND FALSE)
  set(${CMAKE_FIND_PACKAGE_NAME}_NOT_FOUND_MESSAGE
      "no Python interpreter imports the structop package in ${_structop_package_dir} "
      "(tried:${_structop_tried}); pass -Dstructop_PYTHON=/path/to/python of the environment "
      "structop is installed in")
  return()
endif()

include("${_structop_vars_file}")

if(NOT TARGET structop::runtime)
  add_library(structop::runtime STATIC IMPORTED)
  set_target_properties(structop::runtime PROPERTIES
    IMPORTED_LOCATION "${structop_RUNTIME_LIBRARY}"
    IMPORTED_LINK_INTERFACE_LANGUAGES CXX
    # (An imported target's include folders are system folders to its users:
    # -Wall -Wextra stay quiet about torch's headers.)
    INTERFACE_INCLUDE_DIRECTORIES "${structop_INCLUDE_DIR};${structop_TORCH_INCLUDE_DIRS}"
    INTERFACE_COMPILE_DEFINITIONS "${structop_TORCH_DEFINITIONS}"
    INTERFACE_COMPILE_FEATURES cxx_std_17
    INTERFACE_LINK_LIBRARIES "${structop_TORCH_LIBRARIES}")
  find_package(Threads REQUIRED)
  set_property(TARGET structop::runtime APPEND PROPERTY INTERFACE_LINK_LIBRARIES Threads::Threads)
endif()

if(NOT TARGET structop::structopc)
  add_executable(structop::structopc IMPORTED)
  set_target_properties(structop::structopc PROPERTIES IMPORTED_LOCATION "${structop_STRUCTOPC}")
endif()

# structop_generate(IDL [EMIT h,cpp,py] [OUTPUT_DIR dir] [INCLUDE_DIRS dir...] [OUTPUTS var])
function(structop_generate idl)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "EMIT;OUTPUT_DIR;OUTPUTS" "INCLUDE_DIRS")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "structop_generate: unknown arguments: ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT ARG_EMIT)
    set(ARG_EMIT "h,cpp,py")
  endif()
  if(NOT ARG_OUTPUT_DIR)
    set(ARG_OUTPUT_DIR "${CMAKE_CURRENT_BINARY_DIR}")
  endif()
  get_filename_component(idl "${idl}" ABSOLUTE)
  get_filename_component(name "${idl}" NAME)
  if(NOT name MATCHES "^(.+)\\.ops\\.yaml$")
    message(FATAL_ERROR "structop_generate: ${idl}: an IDL file's name ends in .ops.yaml")
  endif()
  set(stem "${CMAKE_MATCH_1}")
  # The files structopc writes for each --emit kind (fixed names per input).
  set(outputs)
  string(REPLACE "," ";" kinds "${ARG_EMIT}")
  foreach(kind IN LISTS kinds)
    if(kind STREQUAL "h")
      list(APPEND outputs "${ARG_OUTPUT_DIR}/${stem}.ops.h")
    elseif(kind STREQUAL "cpp")
      list(APPEND outputs "${ARG_OUTPUT_DIR}/${stem}.ops.cpp")
    elseif(kind STREQUAL "py")
      list(APPEND outputs "${ARG_OUTPUT_DIR}/${stem}_ops.py")
    elseif(kind STREQUAL "json")
      list(APPEND outputs "${ARG_OUTPUT_DIR}/${stem}.ops.json")
    elseif(kind STREQUAL "stubs")
      list(APPEND outputs "${ARG_OUTPUT_DIR}/${stem}.ops.stubs.cpp")
    else()
      message(FATAL_ERROR "structop_generate: EMIT ${ARG_EMIT}: unknown kind ${kind} "
                          "(h, cpp, py, json, stubs)")
    endif()
  endforeach()
  set(include_args)
  foreach(dir IN LISTS ARG_INCLUDE_DIRS)
    get_filename_component(dir "${dir}" ABSOLUTE)
    list(APPEND include_args -I "${dir}")
  endforeach()
  set(depfile "${ARG_OUTPUT_DIR}/${stem}.ops.d")
  add_custom_command(
    OUTPUT ${outputs}
    COMMAND structop::structopc --emit "${ARG_EMIT}" -o "${ARG_OUTPUT_DIR}"
            --depfile "${depfile}" ${include_args} "${idl}"
    DEPENDS "${idl}"
    DEPFILE "${depfile}"
    COMMENT "structopc ${name}"
    VERBATIM)
  if(ARG_OUTPUTS)
    set(${ARG_OUTPUTS} ${outputs} PARENT_SCOPE)
  endif()
endfunction()

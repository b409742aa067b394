# passrun_add_golden_tests(FOLDER [PREFIX NAME] [PLUGINS PLUGIN...] [ARGS ARG...]
#                          [LABELS LABEL...])
#
# One CTest test per FOLDER/*.pg: passrun-lit runs the file's RUN lines and
# checks its expectations (docs/golden-tests.md). A test is named
# PREFIX/FILE (PREFIX defaults to the folder's name) and runs in FOLDER, so
# that a RUN line may name a pipeline or a program beside it. PLUGINS are
# given to every run as --plugin: a target of this project (its .so) or a
# path. ARGS are more passrun-lit options. Tests are labelled "golden" and
# LABELS.
#
# It runs PASSRUN_LIT_EXECUTABLE on PASSRUN_EXECUTABLE: passrun's package
# sets both to the installed tools; passrun's own build sets them to the
# tools it builds, so that its tests go through the same function.
function(passrun_add_golden_tests folder)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "PREFIX" "PLUGINS;ARGS;LABELS")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "passrun_add_golden_tests: unknown arguments ${arg_UNPARSED_ARGUMENTS}")
  endif()
  foreach(var PASSRUN_EXECUTABLE PASSRUN_LIT_EXECUTABLE)
    if(NOT ${var})
      message(FATAL_ERROR "passrun_add_golden_tests: ${var} is not set (find_package(passrun) sets it)")
    endif()
  endforeach()
  get_filename_component(dir "${folder}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  if(NOT IS_DIRECTORY "${dir}")
    message(FATAL_ERROR "passrun_add_golden_tests: ${dir} is not a folder")
  endif()
  file(GLOB cases CONFIGURE_DEPENDS "${dir}/*.pg")
  if(NOT cases)
    message(FATAL_ERROR "passrun_add_golden_tests: no .pg file in ${dir}")
  endif()
  if(NOT arg_PREFIX)
    get_filename_component(arg_PREFIX "${dir}" NAME)
  endif()
  set(plugin_args "")
  foreach(plugin IN LISTS arg_PLUGINS)
    if(TARGET ${plugin})
      list(APPEND plugin_args --plugin "$<TARGET_FILE:${plugin}>")
    else()
      get_filename_component(plugin "${plugin}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
      list(APPEND plugin_args --plugin "${plugin}")
    endif()
  endforeach()
  set(labels golden ${arg_LABELS})
  foreach(case IN LISTS cases)
    get_filename_component(name "${case}" NAME_WE)
    add_test(NAME ${arg_PREFIX}/${name}
      COMMAND "${PASSRUN_LIT_EXECUTABLE}" --passrun "${PASSRUN_EXECUTABLE}" ${plugin_args}
              ${arg_ARGS} "${case}")
    set_tests_properties(${arg_PREFIX}/${name} PROPERTIES WORKING_DIRECTORY "${dir}"
      LABELS "${labels}")
  endforeach()
endfunction()

# vigil_service.cmake - the build of one service, in the shape every
# service shares:
#   <PREFIX>_core         static library of src/core/*.c: the pure decision
#                         core (no I/O), linking CORE_LIBS only
#                         (default: json-c, vigil_text, libm);
#   <NAME>                the executable of src/*.c (less EXCLUDE, plus
#                         EXTRA_SOURCES): adapter and main on libshared's
#                         runtime, linking the core, LIBS, vigil_shared (and
#                         Threads with THREADS); installed to bin;
#   <PREFIX>_test_<x>     with VIGIL_TESTS, one cmocka executable per
#                         tests/test_<x>.c linking the core alone, run as the
#                         ctest `unit.<PREFIX>.test_<x>` (label unit, 60 s).
# The test names made are left in VIGIL_SERVICE_TESTS (test_<x>, ...) for a
# service to add what its own tests need.
#
#   vigil_add_service(NAME <binary> PREFIX <short>
#                     [THREADS] [CORE_LIBS lib...] [LIBS lib...]
#                     [EXCLUDE src/file.c...] [EXTRA_SOURCES file...])
function(vigil_add_service)
  cmake_parse_arguments(S "THREADS" "NAME;PREFIX" "CORE_LIBS;LIBS;EXCLUDE;EXTRA_SOURCES" ${ARGN})
  if(NOT S_NAME OR NOT S_PREFIX)
    message(FATAL_ERROR "vigil_add_service: NAME and PREFIX are required")
  endif()
  if(NOT S_CORE_LIBS)
    set(S_CORE_LIBS PkgConfig::JSONC vigil_text m)
  endif()
  set(dir ${CMAKE_CURRENT_SOURCE_DIR})

  file(GLOB core_sources CONFIGURE_DEPENDS ${dir}/src/core/*.c)
  add_library(${S_PREFIX}_core STATIC ${core_sources})
  target_include_directories(${S_PREFIX}_core PUBLIC ${dir}/src/core)
  target_link_libraries(${S_PREFIX}_core PUBLIC ${S_CORE_LIBS})

  file(GLOB shell_sources CONFIGURE_DEPENDS ${dir}/src/*.c)
  foreach(x ${S_EXCLUDE})
    list(REMOVE_ITEM shell_sources ${dir}/${x})
  endforeach()
  if(shell_sources)
    add_executable(${S_NAME} ${shell_sources} ${S_EXTRA_SOURCES})
    target_link_libraries(${S_NAME} PRIVATE ${S_PREFIX}_core ${S_LIBS} vigil_shared)
    if(S_THREADS)
      target_link_libraries(${S_NAME} PRIVATE Threads::Threads)
    endif()
    install(TARGETS ${S_NAME} RUNTIME DESTINATION bin)
  endif()

  set(made "")
  if(VIGIL_TESTS)
    file(GLOB tests CONFIGURE_DEPENDS ${dir}/tests/test_*.c)
    foreach(src ${tests})
      get_filename_component(name ${src} NAME_WE)
      add_executable(${S_PREFIX}_${name} ${src})
      # Core tests link the core alone (plus cmocka); no broker, no Redis.
      target_link_libraries(${S_PREFIX}_${name} PRIVATE ${S_PREFIX}_core PkgConfig::CMOCKA)
      add_test(NAME unit.${S_PREFIX}.${name} COMMAND ${S_PREFIX}_${name})
      set_tests_properties(unit.${S_PREFIX}.${name} PROPERTIES TIMEOUT 60 LABELS unit)
      list(APPEND made ${name})
    endforeach()
  endif()
  set(VIGIL_SERVICE_TESTS ${made} PARENT_SCOPE)
endfunction()

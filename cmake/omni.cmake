# omni_add_layer(NAME DEPS...): one static library per lib/ folder, its sources globbed so that a new
# file pair needs no CMake edit. Layers link only the layers below them (docs/DESIGN.md section 1).
function(omni_add_layer name)
  file(GLOB _srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  if(NOT _srcs)
    # A layer with no sources yet still carries its dependencies upward.
    set(_srcs ${CMAKE_CURRENT_BINARY_DIR}/omni_${name}_empty.cpp)
    file(WRITE ${_srcs} "// layer ${name} has no sources yet\n")
  endif()
  add_library(omni_${name} STATIC ${_srcs})
  target_include_directories(omni_${name} PUBLIC ${PROJECT_SOURCE_DIR}/lib)
  target_link_libraries(omni_${name} PUBLIC ${ARGN})
  target_compile_options(omni_${name} PRIVATE -Wall -Wextra -Wno-unused-parameter)
endfunction()

# omni_add_gtest(NAME SOURCES... LIBS ...): a GoogleTest executable registered with ctest.
function(omni_add_gtest name)
  cmake_parse_arguments(A "" "" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${A_SOURCES})
  target_link_libraries(${name} PRIVATE ${A_LIBS} GTest::gtest GTest::gtest_main)
  target_compile_definitions(${name} PRIVATE
    OMNI_TEST_DATA_DIR="${PROJECT_SOURCE_DIR}/tests/data"
    OMNI_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "OMP_NUM_THREADS=2")
  if(A_LABELS)
    set_tests_properties(${name} PROPERTIES LABELS "${A_LABELS}")
  endif()
endfunction()

# omni_add_mpi_test(NAME NP EXE ARGS...): run EXE under mpirun with NP ranks (oversubscribed, 1 thread each).
function(omni_add_mpi_test name np)
  add_test(NAME ${name}
    COMMAND ${MPIEXEC_EXECUTABLE} --oversubscribe --allow-run-as-root -np ${np}
            -x OMP_NUM_THREADS=1 ${ARGN})
  set_tests_properties(${name} PROPERTIES ENVIRONMENT
    "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMP_NUM_THREADS=1" TIMEOUT 600)
endfunction()

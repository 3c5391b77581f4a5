# vgpu_add_gtest(<name> SOURCES <files...> LIBS <targets...>)
# One test binary per component keeps a broken component from blocking the others' tests.
function(vgpu_add_gtest name)
  cmake_parse_arguments(T "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest_main GTest::gmock)
  target_compile_definitions(${name} PRIVATE
    VGPU_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    VGPU_DATA_DIR="${PROJECT_SOURCE_DIR}/data"
    VGPU_BINARY_DIR="${PROJECT_BINARY_DIR}")
  vgpu_set_warnings(${name})
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 120 PROPERTIES LABELS unit)
endfunction()

# rapidcheck ships only a static library and headers on Debian 12.
find_library(RAPIDCHECK_LIBRARY rapidcheck REQUIRED)
add_library(rapidcheck_lib INTERFACE)
target_link_libraries(rapidcheck_lib INTERFACE ${RAPIDCHECK_LIBRARY})

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

# Test clusters side by side. A test that starts Slurm daemons, a libvirt guest or packs the build
# into packages takes one of VGPU_TEST_CLUSTER_LANES lanes (RESOURCE_GROUPS "cluster:1",
# ${vgpu_one_lane}); one that needs the host to itself (dpkg -i into the system's paths) takes all
# of them (${vgpu_all_lanes}). A cluster keeps its daemons waiting on Slurm's and the planner's timers most
# of the time (e2e.lifecycle: 0.66 of a core over its 92 s), so two share this 2-core machine; each
# has its own munge, ports (tests/cluster/lib.sh keeps a host-wide record) and run directory.
# Plain `ctest` reads the lanes from this build's resource file (CTEST_RESOURCE_SPEC_FILE).
set(VGPU_TEST_CLUSTER_LANES 2 CACHE STRING "Test clusters (Slurm daemons, libvirt guests) run side by side")
file(WRITE ${PROJECT_BINARY_DIR}/ctest-resources.json
  "{\"version\": {\"major\": 1, \"minor\": 0}, \"local\": [{\"cluster\": [{\"id\": \"lanes\", \"slots\": ${VGPU_TEST_CLUSTER_LANES}}]}]}\n")
set(CTEST_RESOURCE_SPEC_FILE ${PROJECT_BINARY_DIR}/ctest-resources.json)
set(vgpu_one_lane "cluster:1")
set(vgpu_all_lanes "cluster:${VGPU_TEST_CLUSTER_LANES}")

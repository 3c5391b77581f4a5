# Cluster integration tests: a real slurmctld + three slurmd on this host running the built
# gres_vgpu.so. Included from gres_plugin/CMakeLists.txt (they need the plugin target); include
# it from anywhere else too, the guard keeps the tests single.
include_guard(GLOBAL)
if(NOT TARGET gres_vgpu)  # built without the plugin (VGPU_BUILD_SLURM_PLUGIN=OFF): nothing to test
  return()
endif()

set(vgpu_cluster_dir ${CMAKE_CURRENT_LIST_DIR})
file(GLOB vgpu_cluster_scenarios CONFIGURE_DEPENDS ${vgpu_cluster_dir}/scenarios/*.sh)
foreach(scenario ${vgpu_cluster_scenarios})
  get_filename_component(name ${scenario} NAME_WE)
  add_test(NAME cluster.${name} COMMAND bash ${scenario})
  set_tests_properties(cluster.${name} PROPERTIES
    LABELS cluster
    # Daemons on this host share munge, ports and slurm commands' SLURM_CONF: one at a time.
    RESOURCE_LOCK "slurm_cluster;heavy"
    TIMEOUT 240
    FAIL_REGULAR_EXPRESSION "FAIL:"
    ENVIRONMENT "VC_PLUGIN_DIR=$<TARGET_FILE_DIR:gres_vgpu>")
endforeach()

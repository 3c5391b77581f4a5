// vgpu-epilog: what slurmd runs as Epilog. Hands the job to the node's planner, or executes
// vgpu-epilog-work (work_main.cpp) beside it (nodeagent/hook_socket/front_end.h).
#include "front_end.h"

int main(int argc, char** argv) { return vgpu::agent::run_front_end(vgpu::contract::HookKind::epilog, argc, argv); }

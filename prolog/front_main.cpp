// vgpu-prolog: what slurmd runs as Prolog. Hands the job to the node's planner, or executes
// vgpu-prolog-work (work_main.cpp) beside it (nodeagent/hook_socket/front_end.h).
#include "front_end.h"

int main(int argc, char** argv) { return vgpu::agent::run_front_end(vgpu::contract::HookKind::prolog, argc, argv); }

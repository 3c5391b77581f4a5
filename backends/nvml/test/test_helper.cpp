// A second process for the NVML tests: it loads the fake through the production backend (the
// environment, inherited from the test, names the fake, fixture and state file) and does one thing.
//   create <gpu> <profile_id> <start> <size>   prints "gi <id> ci <id> <mig uuid>"
//   destroy <gpu> <gi>
//   list <gpu>                                 prints "gi <id> profile <p> {s,n} <mig uuid>" per line
//   fill <gpu> <profile_id>                    tries every legal placement once, prints "created <n>"
//   hold <gpu> <gi> <seconds>                  a CUDA program's context on that instance (the fake's
//                                              vgpuFakeOpenComputeContext): prints "holding <pid>", sleeps
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "nvml_backend.h"

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  std::string cmd = argv[1];
  int gpu = std::atoi(argv[2]);
  auto backend = vgpu::nvml::Backend::open();
  auto report = [](const vgpu::Error& e) {
    std::fprintf(stderr, "%s\n", e.message.c_str());
    return 1;
  };
  if (cmd == "create" && argc == 6) {
    auto r = backend->create_instance(gpu, std::atoi(argv[3]), {std::atoi(argv[4]), std::atoi(argv[5])});
    if (!r) return report(r.error());
    std::printf("gi %d ci %d %s\n", r->gi_id, r->ci_id.value_or(-1), r->mig_uuid.c_str());
    return 0;
  }
  if (cmd == "destroy" && argc == 4) {
    auto r = backend->destroy_instance(gpu, std::atoi(argv[3]));
    return r ? 0 : report(r.error());
  }
  if (cmd == "list" && argc == 3) {
    auto r = backend->list_instances(gpu);
    if (!r) return report(r.error());
    for (const auto& i : *r)
      std::printf("gi %d profile %d {%d,%d} %s\n", i.gi_id, i.profile_id, i.placement.start, i.placement.size,
                  i.mig_uuid.c_str());
    return 0;
  }
  if (cmd == "fill" && argc == 4) {
    int profile_id = std::atoi(argv[3]);
    auto model = backend->read_catalog(gpu);
    if (!model) return report(model.error());
    const auto* p = model->find_profile_by_nvml_id(profile_id);
    if (!p) return 2;
    int created = 0;
    for (const auto& pl : p->placements)
      if (backend->create_instance(gpu, profile_id, pl)) ++created;
    std::printf("created %d\n", created);
    return 0;
  }
  if (cmd == "hold" && argc == 5) {
    auto& reader = backend->reader();
    auto open_context = reader.library()->symbol<nvmlReturn_t(nvmlDevice_t)>("vgpuFakeOpenComputeContext");
    auto dev = reader.device(gpu);
    if (!open_context) return report(open_context.error());
    if (!dev) return report(dev.error());
    unsigned max = 0;
    if (reader.api().device_get_max_mig_device_count(*dev, &max) != NVML_SUCCESS) return 1;
    for (unsigned m = 0; m < max; ++m) {
      nvmlDevice_t mig = nullptr;
      unsigned gi = 0;
      if (reader.api().device_get_mig_device_handle_by_index(*dev, m, &mig) != NVML_SUCCESS ||
          reader.api().device_get_gpu_instance_id(mig, &gi) != NVML_SUCCESS ||
          gi != static_cast<unsigned>(std::atoi(argv[3])))
        continue;
      if ((*open_context)(mig) != NVML_SUCCESS) return 1;
      std::printf("holding %d\n", static_cast<int>(::getpid()));
      std::fflush(stdout);
      ::sleep(static_cast<unsigned>(std::atoi(argv[4])));
      return 0;
    }
    return 1;
  }
  return 2;
}

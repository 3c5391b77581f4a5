// The plugin's compiled-in profile list must cover the catalog, or a profile dropped while slurmd
// was down could keep a stale count in slurmctld (see contract/known_profiles.h).
#include "contract/known_profiles.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "vgpu/catalog.h"

TEST(KnownProfiles, CoverEveryProfileOfTheBuiltinCatalog) {
  for (const auto& model : vgpu::Catalog::builtin().models()) {
    for (const auto& profile : model.profiles) {
      EXPECT_NE(std::find(vgpu::gres::kKnownProfiles.begin(), vgpu::gres::kKnownProfiles.end(), profile.name),
                vgpu::gres::kKnownProfiles.end())
          << model.name << " profile " << profile.name << " is missing from gres_plugin/contract/known_profiles.h";
    }
  }
}

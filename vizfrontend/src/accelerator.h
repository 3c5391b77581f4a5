// Which accelerator runs a session's guest. KVM whenever the hypervisor offers it and a guest
// really starts with it; TCG (QEMU's emulator, far slower) otherwise, with the reason, so a site
// sees why its desktops are slow and a machine without KVM (ours) still runs them.
#pragma once

#include <string>
#include <string_view>

namespace vgpu::viz {

enum class Accelerator { tcg, kvm };

// libvirt's <domain type=...> for it: "kvm" or "qemu" (TCG).
std::string_view domain_type(Accelerator accelerator);

struct AcceleratorChoice {
  Accelerator accelerator = Accelerator::tcg;
  std::string reason;  // "KVM" or "TCG: KVM is not usable here: ..."; one line for the log
};

// The choice from the two trials: whether the hypervisor offers KVM for the emulator (empty
// `kvm_offer_error`: it does), and, when it did, whether the guest started under it (empty
// `kvm_start_error`: it did).
AcceleratorChoice choose_accelerator(std::string_view kvm_offer_error, std::string_view kvm_start_error);

}  // namespace vgpu::viz

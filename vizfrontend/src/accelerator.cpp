#include "accelerator.h"

#include <fmt/format.h>

namespace vgpu::viz {

std::string_view domain_type(Accelerator accelerator) { return accelerator == Accelerator::kvm ? "kvm" : "qemu"; }

AcceleratorChoice choose_accelerator(std::string_view kvm_offer_error, std::string_view kvm_start_error) {
  if (!kvm_offer_error.empty())
    return {Accelerator::tcg,
            fmt::format("TCG (the guest is emulated, far slower): KVM is not offered here: {}", kvm_offer_error)};
  if (!kvm_start_error.empty())
    return {Accelerator::tcg, fmt::format("TCG (the guest is emulated, far slower): KVM is offered, but the guest "
                                          "did not start with it: {}",
                                          kvm_start_error)};
  return {Accelerator::kvm, "KVM"};
}

}  // namespace vgpu::viz

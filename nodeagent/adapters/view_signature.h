// Ed25519 signatures over the cluster view (contract/cluster_view.h), over OpenSSL's libcrypto:
// the controller's publisher signs with a private key only root there can read, every node checks
// with the public key. A view is then genuine however it arrived: over the network from the
// publisher, or in a file that NFS root squash made someone else's.
//
//   vgpu-planner --make-view-key /etc/slurm-vgpu/cluster-view.key /etc/slurm-vgpu/cluster-view.pub
//
// The private key (PEM, PKCS#8) must be a regular file owned by root (or the publisher's own user)
// that no one else can read or write; the public key one that no one else can write.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <string_view>

#include "vgpu/base/error.h"

namespace vgpu::agent {

class ViewSigner {
 public:
  static Result<ViewSigner> from_private_key_file(const std::string& path);
  // The 64 signature bytes over `body`.
  [[nodiscard]] Result<std::string> sign(std::string_view body) const;

 private:
  std::shared_ptr<void> key_;  // EVP_PKEY, freed with EVP_PKEY_free
};

class ViewVerifier {
 public:
  static Result<ViewVerifier> from_public_key_file(const std::string& path);
  [[nodiscard]] bool verify(std::string_view body, std::string_view signature) const;

 private:
  std::shared_ptr<void> key_;
};

// A new key pair: the private key written 0600, the public key 0644; refuses to overwrite.
Result<void> make_view_key_pair(const std::string& private_path, const std::string& public_path);

}  // namespace vgpu::agent

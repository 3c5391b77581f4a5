#include "view_signature.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "vgpu/contract/guarded_read.h"
#include "vgpu/contract/file_system.h"

namespace vgpu::agent {
namespace {

std::string openssl_error() {
  const unsigned long code = ERR_get_error();
  if (code == 0) return "no detail from OpenSSL";
  char text[256];
  ERR_error_string_n(code, text, sizeof text);
  ERR_clear_error();
  return text;
}

std::shared_ptr<void> own(EVP_PKEY* key) {
  return {key, [](void* k) { EVP_PKEY_free(static_cast<EVP_PKEY*>(k)); }};
}

Result<std::string> read_key_file(const std::string& path, std::string_view what, bool secret) {
  contract::GuardedRead rule{.what = what, .max_bytes = 16 * 1024, .owners = {}, .any_owner = false};
  auto text = contract::read_guarded(posix_file_system(), path, rule);
  if (!text) return std::unexpected(text.error());
  if (secret && (text->info.mode & 044))
    return fail(ErrorCode::unavailable,
                fmt::format("{} {}: refused: mode {:04o} lets others read a private key (chmod 0600)", what, path,
                            text->info.mode & 07777));
  return std::move(text->text);
}

Result<std::shared_ptr<void>> parse_key(const std::string& pem, const std::string& path, std::string_view what,
                                        bool secret) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), BIO_free);
  if (!bio) return fail(ErrorCode::io, fmt::format("{} {}: {}", what, path, openssl_error()));
  EVP_PKEY* key = secret ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr)
                         : PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr);
  if (key == nullptr)
    return fail(ErrorCode::corrupt,
                fmt::format("{} {}: not a PEM {} key: {}", what, path, secret ? "private" : "public", openssl_error()));
  auto owned = own(key);
  if (EVP_PKEY_get_id(key) != EVP_PKEY_ED25519)
    return fail(ErrorCode::corrupt, fmt::format("{} {}: not an ed25519 key", what, path));
  return owned;
}

// A key file read with the guards above and parsed: the one path of both kinds of key.
Result<std::shared_ptr<void>> load_key(const std::string& path, std::string_view what, bool secret) {
  auto pem = read_key_file(path, what, secret);
  if (!pem) return std::unexpected(pem.error());
  return parse_key(*pem, path, what, secret);
}

Result<void> write_pem(const std::string& path, mode_t mode, EVP_PKEY* key, bool secret) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) return fail(ErrorCode::io, fmt::format("{}: {}", path, std::strerror(errno)));
  FILE* out = ::fdopen(fd, "w");
  if (out == nullptr) {
    ::close(fd);
    return fail(ErrorCode::io, fmt::format("{}: fdopen failed", path));
  }
  const int ok =
      secret ? PEM_write_PrivateKey(out, key, nullptr, nullptr, 0, nullptr, nullptr) : PEM_write_PUBKEY(out, key);
  const bool flushed = std::fflush(out) == 0 && ::fsync(fd) == 0;
  ::fchmod(fd, mode);  // whatever the umask
  std::fclose(out);
  if (ok != 1 || !flushed) return fail(ErrorCode::io, fmt::format("{}: could not write the key", path));
  return {};
}

}  // namespace

Result<ViewSigner> ViewSigner::from_private_key_file(const std::string& path) {
  auto key = load_key(path, "cluster view private key", true);
  if (!key) return std::unexpected(key.error());
  ViewSigner s;
  s.key_ = std::move(*key);
  return s;
}

Result<std::string> ViewSigner::sign(std::string_view body) const {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  std::string signature(64, '\0');
  std::size_t length = signature.size();
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, static_cast<EVP_PKEY*>(key_.get())) != 1 ||
      EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(signature.data()), &length,
                     reinterpret_cast<const unsigned char*>(body.data()), body.size()) != 1 ||
      length != 64)
    return fail(ErrorCode::io, "cluster view: signing failed: " + openssl_error());
  return signature;
}

Result<ViewVerifier> ViewVerifier::from_public_key_file(const std::string& path) {
  auto key = load_key(path, "cluster view public key", false);
  if (!key) return std::unexpected(key.error());
  ViewVerifier v;
  v.key_ = std::move(*key);
  return v;
}

bool ViewVerifier::verify(std::string_view body, std::string_view signature) const {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  const bool ok =
      ctx && EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, static_cast<EVP_PKEY*>(key_.get())) == 1 &&
      EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
                       reinterpret_cast<const unsigned char*>(body.data()), body.size()) == 1;
  ERR_clear_error();
  return ok;
}

Result<void> make_view_key_pair(const std::string& private_path, const std::string& public_path) {
  EVP_PKEY* raw = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
  if (raw == nullptr) return fail(ErrorCode::io, "cluster view key: generation failed: " + openssl_error());
  auto key = own(raw);
  if (auto ok = write_pem(private_path, 0600, raw, true); !ok) return ok;
  return write_pem(public_path, 0644, raw, false);
}

}  // namespace vgpu::agent

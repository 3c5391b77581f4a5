// Every string the viz frontend takes from a user, Slurm or sysfs (vizfrontend/src/validate.h,
// xml_escape.h, gpu_attach.h): job ids, geometries, pool/image names, cpusets, PCI addresses,
// UUIDs, free-text labels, domain names, mdev UUIDs and NVIDIA's creatable_vgpu_types listing.
// These values end up in libvirt XML, file names, a token file and a URL, so the properties are
// about the alphabet of what is accepted, and round trips through the matching printers.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "gpu_attach.h"
#include "validate.h"
#include "xml_escape.h"

namespace {

bool only(std::string_view s, std::string_view alphabet) {
  for (char c : s) {
    bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!alnum && alphabet.find(c) == std::string_view::npos) return false;
  }
  return true;
}

// The escaper's promise: no raw markup character survives, every '&' starts one of the five
// entities, no control character (XML 1.0 forbids those below 0x20 but tab, LF and CR; DEL is
// replaced as well), and unescaping gives the input back with those controls as '?'.
void check_xml_escape(std::string_view text) {
  const std::string out = vgpu::viz::xml_escape(text);
  std::string back;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const char c = out[i];
    FUZZ_CHECK(c != '<' && c != '>' && c != '"' && c != '\'');
    const auto u = static_cast<unsigned char>(c);
    FUZZ_CHECK((u >= 0x20 && u != 0x7f) || c == '\t' || c == '\n' || c == '\r');
    if (c != '&') {
      back += c;
      continue;
    }
    bool known = false;
    for (auto [entity, plain] :
         {std::pair{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}}) {
      if (std::string_view(out).substr(i).starts_with(entity)) {
        back += plain;
        i += std::string_view(entity).size() - 1;
        known = true;
        break;
      }
    }
    FUZZ_CHECK(known);
  }
  std::string expected;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    expected += ((u < 0x20 || u == 0x7f) && c != '\t' && c != '\n' && c != '\r') ? '?' : c;
  }
  FUZZ_CHECK(back == expected);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  namespace viz = vgpu::viz;

  check_xml_escape(text);

  const std::string label = viz::printable_label(text);
  FUZZ_CHECK(label.size() <= 128);
  for (char c : label) FUZZ_CHECK(c >= 0x20 && c < 0x7f);

  if (auto job = viz::parse_job_id(text); job) {
    FUZZ_CHECK(*job != 0);
    FUZZ_CHECK(std::to_string(*job) == text);  // no sign, no leading zero, no spaces
    auto back = viz::job_of_domain(viz::domain_name(*job));
    FUZZ_CHECK(back.has_value() && *back == *job);
    auto mdev = viz::job_of_mdev_uuid(viz::mdev_uuid_for_job(*job));
    FUZZ_CHECK(mdev.has_value() && *mdev == *job);
    FUZZ_CHECK(viz::check_uuid(viz::mdev_uuid_for_job(*job)).has_value());
  }
  if (auto job = viz::job_of_domain(text); job) FUZZ_CHECK(viz::domain_name(*job) == text);
  if (auto job = viz::job_of_mdev_uuid(text); job) FUZZ_CHECK(viz::mdev_uuid_for_job(*job) == text);

  if (auto g = viz::parse_geometry(text); g) {
    FUZZ_CHECK(g->width >= 64 && g->width <= 16384 && g->height >= 64 && g->height <= 16384);
    FUZZ_CHECK(std::to_string(g->width) + "x" + std::to_string(g->height) == text);
  }
  if (auto name = viz::check_name("pool", text); name) {
    FUZZ_CHECK(*name == text);
    FUZZ_CHECK(!name->empty() && name->size() <= 64 && *name != "." && *name != "..");
    FUZZ_CHECK(only(*name, "._-"));
  }
  if (auto cpus = viz::check_cpuset(text); cpus) {
    FUZZ_CHECK(!cpus->empty() && only(*cpus, ",-"));
  }
  if (auto pci = viz::check_pci_address(text); pci) {
    FUZZ_CHECK(pci->size() == 12 && only(*pci, ":."));
    for (char c : *pci) FUZZ_CHECK(!(c >= 'A' && c <= 'Z'));
  }
  if (auto uuid = viz::check_uuid(text); uuid) {
    FUZZ_CHECK(uuid->size() == 36 && only(*uuid, "-"));
    for (std::size_t dash : {8, 13, 18, 23}) FUZZ_CHECK((*uuid)[dash] == '-');
  }

  if (auto types = viz::parse_creatable_vgpu_types(text, "fuzz"); types) {
    for (const auto& t : *types) FUZZ_CHECK(!t.id.empty());
  } else {
    FUZZ_CHECK(!types.error().message.empty());
  }
  return 0;
}

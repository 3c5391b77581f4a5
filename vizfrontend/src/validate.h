// Validation of every string that reaches the viz frontend from a user or the environment.
// Each check accepts a deliberately small alphabet: these values end up in libvirt XML, file
// names under the state directory, a websockify token file and a URL, so anything that could
// be a path separator, quote, shell metacharacter or newline is refused rather than escaped.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "vgpu/base/error.h"

namespace vgpu::viz {

struct Geometry {
  unsigned width = 0;
  unsigned height = 0;
  friend bool operator==(const Geometry&, const Geometry&) = default;
};

// Slurm job ids are uint32 and never 0; only plain decimal digits, no sign, no leading zero.
Result<std::uint32_t> parse_job_id(std::string_view text);

// "WxH", each side 64..16384 with no leading zero.
Result<Geometry> parse_geometry(std::string_view text);

// Names of pools and images: [A-Za-z0-9][A-Za-z0-9._-]{0,63}, and never "." or "..".
Result<std::string> check_name(std::string_view what, std::string_view text);

// A cpuset list as the kernel and libvirt write it: "0-3,8,10-11". Ranges must be ascending.
Result<std::string> check_cpuset(std::string_view text);

// A PCI address in sysfs form: "0000:3b:00.0" (lower-case hex).
Result<std::string> check_pci_address(std::string_view text);

// A canonical lower-case UUID "8-4-4-4-12".
Result<std::string> check_uuid(std::string_view text);

// Free text (job name, user name) is not refused but made harmless for display and XML:
// printable ASCII only, at most 128 bytes. The XML escaper still runs over the result.
std::string printable_label(std::string_view text);

// The libvirt domain name of a job's session: "vgpu-viz-<jobid>".
std::string domain_name(std::uint32_t job_id);
inline constexpr std::string_view kDomainPrefix = "vgpu-viz-";
// The inverse; fails for names that are not exactly a prefix plus a valid job id.
Result<std::uint32_t> job_of_domain(std::string_view name);

}  // namespace vgpu::viz

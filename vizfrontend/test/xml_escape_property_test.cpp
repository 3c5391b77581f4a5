// Properties of the escaper over arbitrary byte strings: whatever a user types, the escaped
// text cannot contain markup, and decoding it gives back the (printable) input.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "validate.h"
#include "xml_escape.h"

namespace vgpu::viz {
namespace {

// Decodes the five entities xml_escape produces; anything else is left as is.
std::string unescape(std::string_view s) {
  static const std::pair<std::string_view, char> entities[] = {
      {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&apos;", '\''}, {"&quot;", '"'}};
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    bool matched = false;
    for (const auto& [entity, c] : entities) {
      if (s.substr(i).starts_with(entity)) {
        out += c;
        i += entity.size();
        matched = true;
        break;
      }
    }
    if (!matched) out += s[i++];
  }
  return out;
}

RC_GTEST_PROP(XmlEscapeProperty, OutputNeverContainsMarkupCharacters, (const std::string& input)) {
  const std::string out = xml_escape(input);
  RC_ASSERT(out.find_first_of("<>'\"") == std::string::npos);
  for (std::size_t at = out.find('&'); at != std::string::npos; at = out.find('&', at + 1)) {
    const auto rest = std::string_view(out).substr(at);
    RC_ASSERT(rest.starts_with("&amp;") || rest.starts_with("&lt;") || rest.starts_with("&gt;") ||
              rest.starts_with("&apos;") || rest.starts_with("&quot;"));
  }
}

RC_GTEST_PROP(XmlEscapeProperty, PrintableInputRoundTrips, (const std::string& input)) {
  const std::string printable = printable_label(input);
  RC_ASSERT(unescape(xml_escape(printable)) == printable);
}

RC_GTEST_PROP(ValidationProperty, AcceptedNamesAreSafeAsPathComponents, (const std::string& input)) {
  if (auto name = check_name("image", input)) {
    RC_ASSERT(name->find('/') == std::string::npos);
    RC_ASSERT(*name != "." && *name != "..");
    RC_ASSERT(xml_escape(*name) == *name);
  }
}

RC_GTEST_PROP(ValidationProperty, JobIdsRoundTripThroughDomainNames, (std::uint32_t job)) {
  RC_PRE(job != 0U);
  RC_ASSERT(job_of_domain(domain_name(job)).value() == job);
  RC_ASSERT(parse_job_id(std::to_string(job)).value() == job);
}

}  // namespace
}  // namespace vgpu::viz

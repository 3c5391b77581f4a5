#include "vgpu/contract/advertisement.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace vgpu::contract;
using ::testing::HasSubstr;

namespace {
const char* kGood = R"({"format":"slurm-vgpu-advertisement","version":1,"node":"n1","generation":7,
  "counts":{"1g.10gb":4,"3g.40gb":1}})";

std::string error_of(std::string_view text, std::string_view node = "n1") {
  auto adv = parse_advertisement(text, node);
  EXPECT_FALSE(adv.has_value()) << text;
  return adv ? "" : adv.error().message;
}
}  // namespace

TEST(Advertisement, ParsesTheDocumentedExample) {
  auto adv = parse_advertisement(kGood, "n1");
  ASSERT_TRUE(adv) << adv.error().message;
  EXPECT_EQ(adv->node, "n1");
  EXPECT_EQ(adv->generation, 7U);
  ASSERT_EQ(adv->counts.size(), 2U);
  EXPECT_EQ(adv->counts.at("1g.10gb"), 4U);
  EXPECT_EQ(adv->counts.at("3g.40gb"), 1U);
}

TEST(Advertisement, EmptyCountsMeanNothingPlaceable) {
  auto adv = parse_advertisement(R"({"format":"slurm-vgpu-advertisement","version":1,"node":"n1",
    "generation":0,"counts":{}})",
                                 "n1");
  ASSERT_TRUE(adv);
  EXPECT_TRUE(adv->counts.empty());
}

TEST(Advertisement, RefusesAnotherNodesFile) {
  EXPECT_THAT(error_of(kGood, "n2"), HasSubstr("'n1' but this is node 'n2'"));
}

TEST(Advertisement, RefusesTruncatedJson) {
  EXPECT_THAT(error_of(R"({"format":"slurm-vgpu-advertisement","version":1,"node":"n1")"), HasSubstr("not valid JSON"));
  EXPECT_THAT(error_of(""), HasSubstr("not valid JSON"));
}

TEST(Advertisement, RefusesWrongFormatOrVersion) {
  EXPECT_THAT(error_of(R"({"format":"slurm-vgpu-job","version":1,"node":"n1","generation":1,"counts":{}})"),
              HasSubstr("format is 'slurm-vgpu-job'"));
  EXPECT_THAT(error_of(R"({"format":"slurm-vgpu-advertisement","version":2,"node":"n1","generation":1,"counts":{}})"),
              HasSubstr("unsupported version 2"));
}

TEST(Advertisement, RefusesMissingUnknownAndDuplicateFields) {
  EXPECT_THAT(error_of(R"({"format":"slurm-vgpu-advertisement","version":1,"node":"n1","counts":{}})"),
              HasSubstr("generation: required field missing"));
  EXPECT_THAT(error_of(R"({"format":"slurm-vgpu-advertisement","version":1,"node":"n1","generation":1,
    "counts":{},"extra":1})"),
              HasSubstr("extra: unknown field (known here: format, version, node, generation, counts)"));
  EXPECT_THAT(error_of(R"({"format":"slurm-vgpu-advertisement","version":1,"node":"n1","generation":1,
    "counts":{"1g.10gb":1,"1g.10gb":2}})"),
              HasSubstr("duplicate key '1g.10gb'"));
}

TEST(Advertisement, RefusesBadCounts) {
  auto with_counts = [](std::string counts) {
    return R"({"format":"slurm-vgpu-advertisement","version":1,"node":"n1","generation":1,"counts":)" + counts + "}";
  };
  EXPECT_THAT(error_of(with_counts(R"({"1g.10gb":-1})")), HasSubstr("counts '1g.10gb': count must be a non-negative"));
  EXPECT_THAT(error_of(with_counts(R"({"1g.10gb":1.5})")), HasSubstr("non-negative integer"));
  EXPECT_THAT(error_of(with_counts(R"({"1g.10gb":"2"})")), HasSubstr("non-negative integer"));
  EXPECT_THAT(error_of(with_counts(R"({"free":3})")), HasSubstr("reserved type name"));
  EXPECT_THAT(error_of(with_counts(R"({"never":0})")), HasSubstr("reserved type name"));
  EXPECT_THAT(error_of(with_counts(R"({"3g:40gb":1})")), HasSubstr("not a valid profile name"));
  EXPECT_THAT(error_of(with_counts(R"({"1g.10gb,2":1})")), HasSubstr("not a valid profile name"));
  EXPECT_THAT(error_of(with_counts("[]")), HasSubstr("'counts' must be an object"));
}

TEST(Advertisement, RefusesNegativeGeneration) {
  EXPECT_THAT(error_of(R"({"format":"slurm-vgpu-advertisement","version":1,"node":"n1","generation":-1,"counts":{}})"),
              HasSubstr("'generation' must be a non-negative integer"));
}

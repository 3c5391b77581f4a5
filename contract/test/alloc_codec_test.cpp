#include "vgpu/contract/alloc_codec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace vgpu::contract;
using ::testing::HasSubstr;

TEST(AllocCodec, TypeNamesSurviveTheBitmapRoundTrip) {
  for (std::string_view type : {"1g.10gb", "3g.40gb", "7g.80gb", "1g.10gb+me", "free", "4g.47gb"}) {
    auto bits = encode_type_bits(type);
    EXPECT_EQ(bits.size(), type.size() * 8);
    auto back = decode_type_bits(bits);
    ASSERT_TRUE(back) << type;
    EXPECT_EQ(*back, type);
  }
}

TEST(AllocCodec, PartialBytesAreRefused) {
  auto bits = encode_type_bits("3g.40gb");
  bits.pop_back();
  auto back = decode_type_bits(bits);
  ASSERT_FALSE(back);
  EXPECT_THAT(back.error().message, HasSubstr("55 bits"));
  EXPECT_FALSE(decode_type_bits({}));
}

TEST(AllocCodec, BitmapsThatSpellNoProfileAreRefused) {
  // An index-style bitmap as another plugin would send (bit 3 of 6) is not a name.
  std::vector<bool> index_style(8, false);
  index_style[3] = true;
  auto back = decode_type_bits(index_style);
  ASSERT_FALSE(back);
  EXPECT_THAT(back.error().message, HasSubstr("does not spell a profile name"));
}

TEST(AllocCodec, AppendsOneItemPerTypedAllocation) {
  std::string v = append_alloc_item("", "1g.10gb", 2);
  EXPECT_EQ(v, "1g.10gb:2");
  v = append_alloc_item(v, "7g.80gb", 1);
  EXPECT_EQ(v, "1g.10gb:2,7g.80gb:1");
}

namespace vgpu::contract {
namespace {

TEST(AllocCodec, WhatThePluginWritesTheHooksRead) {
  std::string alloc = append_alloc_item("", "1g.10gb", 2);
  alloc = append_alloc_item(alloc, "viz-small", 1);
  alloc = append_alloc_item(alloc, kUntypedAlloc, 3);
  auto items = parse_alloc(alloc);
  ASSERT_TRUE(items) << items.error().message;
  EXPECT_EQ(*items, (std::vector<AllocItem>{{"1g.10gb", 2}, {"viz-small", 1}, {"any", 3}}));
  EXPECT_TRUE(parse_alloc("")->empty());
}

TEST(AllocCodec, ReadingIsStrict) {
  for (const auto& [text, why] : std::vector<std::pair<std::string, std::string>>{
           {"1g.10gb", "expected <type>:<count>"},
           {"1g.10gb:1:2", "expected <type>:<count>"},
           {"1g.10gb:0", "count must be a whole number from 1 to 4096"},
           {"1g.10gb:4097", "count must be a whole number"},
           {"1g.10gb:+1", "count must be a whole number"},
           {"../x:1", "type is not a vgpu type name"},
           {"1g.10gb:1,", "expected <type>:<count>"},
           {"1g.10gb:2,1g.10gb:3", "type 1g.10gb is named twice"},
       }) {
    auto r = parse_alloc(text);
    ASSERT_FALSE(r) << text;
    EXPECT_NE(r.error().message.find(why), std::string::npos) << r.error().message;
  }
}

}  // namespace
}  // namespace vgpu::contract

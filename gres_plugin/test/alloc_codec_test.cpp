#include "contract/alloc_codec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace vgpu::gres;
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

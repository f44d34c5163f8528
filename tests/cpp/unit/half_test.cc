#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "common/half.h"

namespace kolo {
namespace {

TEST(Float16, EveryValueRoundTrips) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = fp16_to_float(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(fp16_to_float(float_to_fp16(f)))) << std::hex << h;
    } else {
      EXPECT_EQ(float_to_fp16(f), h) << std::hex << h;
    }
  }
}

TEST(Float16, KnownValues) {
  EXPECT_EQ(float_to_fp16(1.0f), 0x3c00);
  EXPECT_EQ(float_to_fp16(-2.0f), 0xc000);
  EXPECT_EQ(float_to_fp16(0.0f), 0x0000);
  EXPECT_EQ(float_to_fp16(-0.0f), 0x8000);
  EXPECT_EQ(float_to_fp16(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_fp16(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(fp16_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(fp16_to_float(0x03ff), std::ldexp(1023.0f, -24));
  EXPECT_EQ(fp16_to_float(0x0400), std::ldexp(1.0f, -14));
  EXPECT_TRUE(std::isnan(fp16_to_float(float_to_fp16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(Float16, RoundsToNearestEven) {
  EXPECT_EQ(float_to_fp16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);      // tie, 1.0 is even
  EXPECT_EQ(float_to_fp16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie, rounds up to even
  EXPECT_EQ(float_to_fp16(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3c01);  // past the tie
  EXPECT_EQ(float_to_fp16(65519.0f), 0x7bff);  // below the midpoint to infinity
  EXPECT_EQ(float_to_fp16(65520.0f), 0x7c00);  // the midpoint rounds to even: infinity
  EXPECT_EQ(float_to_fp16(std::ldexp(1.0f, -25)), 0x0000);       // tie with zero, zero is even
  EXPECT_EQ(float_to_fp16(3 * std::ldexp(1.0f, -26)), 0x0001);   // above the tie
  EXPECT_EQ(float_to_fp16(3 * std::ldexp(1.0f, -25)), 0x0002);   // subnormal tie 1.5 ulp -> 2
  EXPECT_EQ(float_to_fp16(std::ldexp(1.0f, -30)), 0x0000);
}

TEST(BFloat16, EveryValueRoundTrips) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = bf16_to_float(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(f)))) << std::hex << h;
    } else {
      EXPECT_EQ(float_to_bf16(f), h) << std::hex << h;
    }
  }
}

TEST(BFloat16, RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16(bits_float(0x3f808000)), 0x3f80);  // tie, even stays
  EXPECT_EQ(float_to_bf16(bits_float(0x3f818000)), 0x3f82);  // tie, odd rounds up
  EXPECT_EQ(float_to_bf16(bits_float(0x3f808001)), 0x3f81);  // past the tie
  EXPECT_EQ(float_to_bf16(bits_float(0x7f7fffff)), 0x7f80);  // largest float rounds to infinity
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(bits_float(0x7f800001)))));  // NaN not turned into inf
}

}  // namespace
}  // namespace kolo

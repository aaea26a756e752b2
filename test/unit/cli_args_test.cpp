// The tools' strict numeric option values (runtime/cli/Args.h): digits only, the whole argument,
// no wrap-around at the limit.
#include "runtime/cli/Args.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace glm5rt::cli {
namespace {

TEST(CliArgs, AcceptsDecimalDigitsUpToMax) {
  uint64_t v = 7;
  EXPECT_TRUE(parseUnsigned("0", 10, &v));
  EXPECT_EQ(v, 0u);
  EXPECT_TRUE(parseUnsigned("10", 10, &v));
  EXPECT_EQ(v, 10u);
  EXPECT_TRUE(parseUnsigned("007", 10, &v)); // leading zeros are still the number
  EXPECT_EQ(v, 7u);
  EXPECT_TRUE(parseUnsigned("18446744073709551615", UINT64_MAX, &v));
  EXPECT_EQ(v, UINT64_MAX);
  EXPECT_TRUE(parseUnsigned("2147483647", INT32_MAX, &v));
  EXPECT_EQ(v, uint64_t(INT32_MAX));
}

TEST(CliArgs, RefusesAnythingElseAndLeavesTheOutput) {
  for (const char *bad : {"", "11", "-1", "+1", " 1", "1 ", "1x", "2.5", "1e3", "0x10", "nan",
                          "inf", "\xd9\xa1" /* an Arabic-Indic one */}) {
    uint64_t v = 42;
    EXPECT_FALSE(parseUnsigned(bad, 10, &v)) << "'" << bad << "'";
    EXPECT_EQ(v, 42u) << "'" << bad << "'";
  }
  uint64_t v = 42;
  EXPECT_FALSE(parseUnsigned(nullptr, 10, &v));
  EXPECT_FALSE(parseUnsigned("18446744073709551616", UINT64_MAX, &v)); // 2^64: no wrap to 0
  EXPECT_FALSE(parseUnsigned("99999999999999999999999", UINT64_MAX, &v));
  EXPECT_FALSE(parseUnsigned("2147483648", INT32_MAX, &v));
  EXPECT_EQ(v, 42u);
}

// A limit below 9: a single digit above it is refused too (max - digit must not wrap).
TEST(CliArgs, SmallLimits) {
  uint64_t v = 42;
  EXPECT_TRUE(parseUnsigned("8", 8, &v));
  EXPECT_EQ(v, 8u);
  for (const char *bad : {"9", "09", "10", "19"}) {
    v = 42;
    EXPECT_FALSE(parseUnsigned(bad, 8, &v)) << "'" << bad << "'";
    EXPECT_EQ(v, 42u) << "'" << bad << "'";
  }
  EXPECT_TRUE(parseUnsigned("0", 0, &v));
  EXPECT_EQ(v, 0u);
  EXPECT_FALSE(parseUnsigned("1", 0, &v));
}

// With a lower bound: [lo, max], anything else refused and the output left.
TEST(CliArgs, LowerBound) {
  uint64_t v = 42;
  EXPECT_FALSE(parseUnsigned("0", 1, 8, &v));
  EXPECT_FALSE(parseUnsigned("9", 1, 8, &v));
  EXPECT_FALSE(parseUnsigned("x", 1, 8, &v));
  EXPECT_EQ(v, 42u);
  EXPECT_TRUE(parseUnsigned("1", 1, 8, &v));
  EXPECT_EQ(v, 1u);
}

} // namespace
} // namespace glm5rt::cli

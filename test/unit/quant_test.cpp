// Tests for runtime/gguf/quant: hand-built blocks against hand-derived floats, quantize round
// trips with per-type error bounds, and argument validation.
#include "runtime/gguf/quant.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

using glm5rt::Status;
using glm5rt::StatusCode;
using glm5rt::gguf::canDequantize;
using glm5rt::gguf::canQuantize;
using glm5rt::gguf::dequantizeRow;
using glm5rt::gguf::ggmlRowBytes;
using glm5rt::gguf::GgmlType;
using glm5rt::gguf::ggmlTypeName;
using glm5rt::gguf::quantizeRow;

namespace {

using Bytes = std::vector<uint8_t>;

void put16(Bytes &b, size_t off, uint16_t v) {
  b[off] = static_cast<uint8_t>(v);
  b[off + 1] = static_cast<uint8_t>(v >> 8);
}

// Dequantizes a whole buffer of `n` elements, checking success and finiteness.
std::vector<float> dequant(GgmlType type, const Bytes &b, uint64_t n) {
  std::vector<float> y(n, 12345.0f);
  Status s = dequantizeRow(type, b.data(), b.size(), y.data(), n);
  EXPECT_TRUE(s.isOk()) << s.toString();
  for (uint64_t i = 0; i < n; ++i)
    EXPECT_TRUE(std::isfinite(y[i])) << ggmlTypeName(type) << " element " << i;
  return y;
}

// Half bit patterns used as scales below.
constexpr uint16_t kH1 = 0x3C00;    // 1.0
constexpr uint16_t kH2 = 0x4000;    // 2.0
constexpr uint16_t kHHalf = 0x3800; // 0.5
constexpr uint16_t kHQtr = 0x3400;  // 0.25
constexpr uint16_t kHNeg1 = 0xBC00; // -1.0

} // namespace

// ---------------------------------------------------------------------------------------------
// Hand-built blocks.

TEST(QuantDequant, F32) {
  Bytes b = {0x00, 0x00, 0xC0, 0x3F, 0x00, 0x00, 0x10, 0xC0}; // 1.5f, -2.25f
  std::vector<float> y = dequant(GgmlType::F32, b, 2);
  EXPECT_EQ(y[0], 1.5f);
  EXPECT_EQ(y[1], -2.25f);
}

TEST(QuantDequant, F16) {
  Bytes b(10);
  put16(b, 0, 0x3C00); // 1.0
  put16(b, 2, 0xC000); // -2.0
  put16(b, 4, 0x3555); // 2^-2 * (1 + 341/1024)
  put16(b, 6, 0x0001); // smallest subnormal, 2^-24
  put16(b, 8, 0x7BFF); // largest finite
  std::vector<float> y = dequant(GgmlType::F16, b, 5);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], -2.0f);
  EXPECT_EQ(y[2], 0.333251953125f);
  EXPECT_EQ(y[3], 5.9604644775390625e-08f);
  EXPECT_EQ(y[4], 65504.0f);
}

TEST(QuantDequant, BF16) {
  Bytes b(8);
  put16(b, 0, 0x3F80); // 1.0
  put16(b, 2, 0xC0A0); // -5.0
  put16(b, 4, 0x3E20); // 2^-3 * 1.25
  put16(b, 6, 0x4049); // 2 * (1 + 0x49/128)
  std::vector<float> y = dequant(GgmlType::BF16, b, 4);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], -5.0f);
  EXPECT_EQ(y[2], 0.15625f);
  EXPECT_EQ(y[3], 3.140625f);
}

TEST(QuantDequant, Q8_0) {
  Bytes b(34, 0);
  put16(b, 0, kHHalf);
  b[2 + 0] = 3;
  b[2 + 1] = 0x80; // -128
  b[2 + 5] = 0xFF; // -1
  b[2 + 31] = 127;
  std::vector<float> y = dequant(GgmlType::Q8_0, b, 32);
  EXPECT_EQ(y[0], 1.5f);
  EXPECT_EQ(y[1], -64.0f);
  EXPECT_EQ(y[2], 0.0f);
  EXPECT_EQ(y[5], -0.5f);
  EXPECT_EQ(y[31], 63.5f);
}

TEST(QuantDequant, Q4_0) {
  Bytes b(18, 0x88); // every nibble 8: value 0
  put16(b, 0, kH2);
  b[2 + 0] = 0x1F;
  b[2 + 3] = 0x80;
  std::vector<float> y = dequant(GgmlType::Q4_0, b, 32);
  EXPECT_EQ(y[0], 14.0f);   // 2 * (15 - 8)
  EXPECT_EQ(y[16], -14.0f); // 2 * (1 - 8)
  EXPECT_EQ(y[3], -16.0f);  // 2 * (0 - 8)
  EXPECT_EQ(y[19], 0.0f);
  EXPECT_EQ(y[7], 0.0f);
}

TEST(QuantDequant, Q4_1) {
  Bytes b(20, 0);
  put16(b, 0, kHHalf); // d
  put16(b, 2, kHNeg1); // m
  b[4 + 0] = 0x3A;
  b[4 + 15] = 0xF0;
  std::vector<float> y = dequant(GgmlType::Q4_1, b, 32);
  EXPECT_EQ(y[0], 4.0f);  // 10 * 0.5 - 1
  EXPECT_EQ(y[16], 0.5f); // 3 * 0.5 - 1
  EXPECT_EQ(y[15], -1.0f);
  EXPECT_EQ(y[31], 6.5f); // 15 * 0.5 - 1
  EXPECT_EQ(y[5], -1.0f);
}

// qh = 0x80010001: fifth bits of elements 0 (bit 0), 16 (bit 16) and 31 (bit 31).
static Bytes q5Block(bool withMin, uint16_t d, uint16_t m) {
  const size_t qh = withMin ? 4 : 2;
  Bytes b(qh + 4 + 16, 0);
  put16(b, 0, d);
  if (withMin)
    put16(b, 2, m);
  b[qh + 0] = 0x01;
  b[qh + 2] = 0x01;
  b[qh + 3] = 0x80;
  b[qh + 4 + 0] = 0x21;
  b[qh + 4 + 1] = 0x0F;
  b[qh + 4 + 15] = 0xF0;
  return b;
}

TEST(QuantDequant, Q5_0) {
  std::vector<float> y = dequant(GgmlType::Q5_0, q5Block(false, kH1, 0), 32);
  EXPECT_EQ(y[0], 1.0f);    // (1 | 16) - 16
  EXPECT_EQ(y[16], 2.0f);   // (2 | 16) - 16
  EXPECT_EQ(y[1], -1.0f);   // 15 - 16
  EXPECT_EQ(y[17], -16.0f); // 0 - 16
  EXPECT_EQ(y[15], -16.0f);
  EXPECT_EQ(y[31], 15.0f); // (15 | 16) - 16
}

TEST(QuantDequant, Q5_1) {
  std::vector<float> y = dequant(GgmlType::Q5_1, q5Block(true, kHQtr, kH2), 32);
  EXPECT_EQ(y[0], 6.25f); // 17 * 0.25 + 2
  EXPECT_EQ(y[16], 6.5f); // 18 * 0.25 + 2
  EXPECT_EQ(y[1], 5.75f); // 15 * 0.25 + 2
  EXPECT_EQ(y[17], 2.0f); // 0 * 0.25 + 2
  EXPECT_EQ(y[15], 2.0f);
  EXPECT_EQ(y[31], 9.75f); // 31 * 0.25 + 2
}

TEST(QuantDequant, Q2_K) {
  // {scales[16] @0, qs[64] @16, d @80, dmin @82}; d = 1, dmin = 0.5.
  Bytes b(84, 0);
  put16(b, 80, kH1);
  put16(b, 82, kHHalf);
  b[0] = 0x21;       // sub-block 0: scale 1, min 2 * 0.5
  b[1] = 0x03;       // sub-block 1: scale 3, min 0
  b[2] = 0x10;       // sub-block 2: scale 0, min 0.5
  b[4] = 0x45;       // sub-block 4: scale 5, min 2
  b[6] = 0x11;       // sub-block 6: scale 1, min 0.5
  b[15] = 0xF2;      // sub-block 15: scale 2, min 7.5
  b[16 + 0] = 0xE4;  // elements 0, 32, 64, 96: quants 0, 1, 2, 3
  b[16 + 16] = 0x03; // element 16: quant 3
  b[16 + 63] = 0xC0; // element 255: quant 3
  std::vector<float> y = dequant(GgmlType::Q2_K, b, 256);
  EXPECT_EQ(y[0], -1.0f);   // 1 * 0 - 1
  EXPECT_EQ(y[16], 9.0f);   // 3 * 3 - 0
  EXPECT_EQ(y[32], -0.5f);  // 0 * 1 - 0.5
  EXPECT_EQ(y[64], 8.0f);   // 5 * 2 - 2
  EXPECT_EQ(y[96], 2.5f);   // 1 * 3 - 0.5
  EXPECT_EQ(y[255], -1.5f); // 2 * 3 - 7.5
  EXPECT_EQ(y[200], 0.0f);
}

TEST(QuantDequant, Q3_K) {
  // {hmask[32] @0, qs[64] @32, scales[12] @96, d @108}; d = 0.5. Sub-scale k is its 6-bit code
  // minus 32; code 32 (low nibble 0, high bits 2) everywhere except:
  //   k=0: 33 -> +1, k=5: 20 -> -12, k=8: 63 -> +31, k=15: 0 -> -32.
  Bytes b(110, 0);
  put16(b, 108, kHHalf);
  uint8_t *sc = b.data() + 96;
  sc[0] = 0xF1; // k=0 low 1, k=8 low 15
  sc[5] = 0x04; // k=5 low 4
  sc[8] = 0xBA; // k=0,4,8,12 high bits: 2, 2, 3, 2
  sc[9] = 0xA6; // k=1,5,9,13: 2, 1, 2, 2
  sc[10] = 0xAA;
  sc[11] = 0x2A; // k=3,7,11,15: 2, 2, 2, 0
  uint8_t *hm = b.data();
  uint8_t *qs = b.data() + 32;
  qs[0] = 0x03;  // element 0: low bits 3
  hm[0] = 0x11;  // elements 0 and 128 have the high bit
  qs[32] = 0x02; // element 128: low bits 2
  qs[63] = 0x40; // element 255: low bits 1, no high bit
  qs[16] = 0x30; // element 80: low bits 3
  hm[16] = 0x04; // element 80 has the high bit
  std::vector<float> y = dequant(GgmlType::Q3_K, b, 256);
  EXPECT_EQ(y[0], 1.5f);    // 0.5 * 1 * 3
  EXPECT_EQ(y[1], -2.0f);   // 0.5 * 1 * (0 - 4)
  EXPECT_EQ(y[16], 0.0f);   // sub-scale 0
  EXPECT_EQ(y[80], -18.0f); // 0.5 * -12 * 3
  EXPECT_EQ(y[128], 31.0f); // 0.5 * 31 * 2
  EXPECT_EQ(y[255], 48.0f); // 0.5 * -32 * (1 - 4)
}

// Scales bytes with 6-bit (scale, min) pairs: 0: (2, 3), 1: (1, 0), 2: (10, 4), 3: (5, 1),
// 4..6: (0, 0), 7: (33, 63).
static void putK4Scales(uint8_t *s) {
  const uint8_t bytes[12] = {0x02, 0x01, 0x0A, 0x85, 0x03, 0x00, 0x04, 0xC1, 0, 0, 0, 0xF1};
  std::memcpy(s, bytes, 12);
}

TEST(QuantDequant, Q4_K) {
  // {d @0, dmin @2, scales[12] @4, qs[128] @16}; d = 1, dmin = 0.5.
  Bytes b(144, 0);
  put16(b, 0, kH1);
  put16(b, 2, kHHalf);
  putK4Scales(b.data() + 4);
  uint8_t *qs = b.data() + 16;
  qs[0] = 0x7F;   // element 0: 15, element 32: 7
  qs[1] = 0x30;   // element 33: 3
  qs[32] = 0x09;  // element 64: 9, element 96: 0
  qs[127] = 0xC0; // element 255: 12
  std::vector<float> y = dequant(GgmlType::Q4_K, b, 256);
  EXPECT_EQ(y[0], 28.5f); // 2 * 15 - 0.5 * 3
  EXPECT_EQ(y[32], 7.0f); // 1 * 7 - 0
  EXPECT_EQ(y[33], 3.0f);
  EXPECT_EQ(y[64], 88.0f); // 10 * 9 - 0.5 * 4
  EXPECT_EQ(y[96], -0.5f); // 5 * 0 - 0.5 * 1
  EXPECT_EQ(y[200], 0.0f);
  EXPECT_EQ(y[255], 364.5f); // 33 * 12 - 0.5 * 63
}

TEST(QuantDequant, Q5_K) {
  // {d @0, dmin @2, scales[12] @4, qh[32] @16, qs[128] @48}; d = 0.5, dmin = 1.
  Bytes b(176, 0);
  put16(b, 0, kHHalf);
  put16(b, 2, kH1);
  putK4Scales(b.data() + 4);
  uint8_t *qh = b.data() + 16;
  uint8_t *qs = b.data() + 48;
  qs[0] = 0x0F;
  qh[0] = 0x03;   // elements 0 and 32 get +16
  qs[32] = 0x02;  // element 64: 2
  qs[36] = 0x10;  // element 100: 1
  qh[4] = 0x08;   // element 100 (bit 3) gets +16
  qs[127] = 0x50; // element 255: 5
  qh[31] = 0x80;  // element 255 (bit 7) gets +16
  std::vector<float> y = dequant(GgmlType::Q5_K, b, 256);
  EXPECT_EQ(y[0], 28.0f);    // (0.5 * 2) * 31 - 3
  EXPECT_EQ(y[32], 8.0f);    // (0.5 * 1) * 16 - 0
  EXPECT_EQ(y[64], 6.0f);    // (0.5 * 10) * 2 - 4
  EXPECT_EQ(y[100], 41.5f);  // (0.5 * 5) * 17 - 1
  EXPECT_EQ(y[255], 283.5f); // (0.5 * 33) * 21 - 63
  EXPECT_EQ(y[1], -3.0f);
}

TEST(QuantDequant, Q6_K) {
  // {ql[128] @0, qh[64] @128, scales[16] @192, d @208}; d = 0.25.
  Bytes b(210, 0);
  put16(b, 208, kHQtr);
  int8_t scales[16] = {4, -2, 0, 0, 1, 0, 0, 100, 0, 0, 0, 0, 0, 0, 0, -128};
  std::memcpy(b.data() + 192, scales, 16);
  uint8_t *ql = b.data();
  uint8_t *qh = b.data() + 128;
  ql[0] = 0x3A;  // element 0 low nibble 10, element 64 low nibble 3
  qh[0] = 0x32;  // element 0 top bits 2, element 64 top bits 3
  ql[63] = 0xF0; // element 127: low nibble 15
  qh[31] = 0xC0; // element 127: top bits 3
  std::vector<float> y = dequant(GgmlType::Q6_K, b, 256);
  EXPECT_EQ(y[0], 10.0f);    // 0.25 * 4 * (42 - 32)
  EXPECT_EQ(y[16], 16.0f);   // 0.25 * -2 * (0 - 32)
  EXPECT_EQ(y[64], 4.75f);   // 0.25 * 1 * (51 - 32)
  EXPECT_EQ(y[127], 775.0f); // 0.25 * 100 * (63 - 32)
  EXPECT_EQ(y[160], 0.0f);
  EXPECT_EQ(y[255], 1024.0f); // 0.25 * -128 * (0 - 32)
}

TEST(QuantDequant, IQ4_NL) {
  Bytes b(18, 0x88); // index 8: table value 1
  put16(b, 0, kHHalf);
  b[2 + 0] = 0xF0;
  b[2 + 7] = 0x98;
  std::vector<float> y = dequant(GgmlType::IQ4_NL, b, 32);
  EXPECT_EQ(y[0], -63.5f); // 0.5 * -127
  EXPECT_EQ(y[16], 56.5f); // 0.5 * 113
  EXPECT_EQ(y[7], 0.5f);   // 0.5 * 1
  EXPECT_EQ(y[23], 6.5f);  // 0.5 * 13
  EXPECT_EQ(y[1], 0.5f);
}

TEST(QuantDequant, IQ4_XS) {
  // {d @0, scales_h @2, scales_l[4] @4, qs[128] @8}; d = 0.25. 6-bit codes ls: sub-block 0: 33,
  // 1: 0, 2..6: 32, 7: 63; the sub-block scale is d * (ls - 32).
  Bytes b(136, 0);
  put16(b, 0, kHQtr);
  put16(b, 2, 0xEAA2); // high bits per sub-block: 2, 0, 2, 2, 2, 2, 2, 3
  b[4 + 0] = 0x01;     // low nibbles of sub-blocks 0, 1
  b[4 + 3] = 0xF0;     // low nibbles of sub-blocks 6, 7
  uint8_t *qs = b.data() + 8;
  qs[0] = 0x0F;   // element 0: 113, element 16: -127
  qs[16] = 0x08;  // element 32: 1, element 48: -127
  qs[127] = 0x30; // element 255: -65
  std::vector<float> y = dequant(GgmlType::IQ4_XS, b, 256);
  EXPECT_EQ(y[0], 28.25f);   // 0.25 * 113
  EXPECT_EQ(y[16], -31.75f); // 0.25 * -127
  EXPECT_EQ(y[32], -8.0f);   // (0.25 * -32) * 1
  EXPECT_EQ(y[48], 1016.0f); // (0.25 * -32) * -127
  EXPECT_EQ(y[100], 0.0f);
  EXPECT_EQ(y[255], -503.75f); // (0.25 * 31) * -65
}

// ---------------------------------------------------------------------------------------------
// Round trips.

namespace {

struct XorShift {
  uint64_t s;
  uint64_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
  float uniform() { return static_cast<float>(next() >> 40) * (1.0f / 16777216.0f); }
  // Sum of four uniforms: mean 0, variance 1/3.
  float gaussish() { return uniform() + uniform() + uniform() + uniform() - 2.0f; }
};

struct RoundTripCase {
  GgmlType type;
  double bound; // on ||y - x|| / ||x||
};

// Bounds sit 10-25% above what the quantizers measure on testData() (see the printed values).
// Symmetric types (Q4_0, Q5_0) spend half their codes on the sign the positive-only blocks lack.
const RoundTripCase kCases[] = {
    {GgmlType::F32, 0.0},     {GgmlType::F16, 2.5e-4},  {GgmlType::BF16, 2e-3},
    {GgmlType::Q8_0, 6.5e-3}, {GgmlType::Q6_K, 2.1e-2}, {GgmlType::Q5_0, 5e-2},
    {GgmlType::Q5_1, 3.7e-2}, {GgmlType::Q5_K, 3.9e-2}, {GgmlType::Q4_0, 9.5e-2},
    {GgmlType::Q4_1, 7.7e-2}, {GgmlType::Q4_K, 8e-2},   {GgmlType::IQ4_NL, 9e-2},
    {GgmlType::IQ4_XS, 9e-2}, {GgmlType::Q3_K, 0.175},  {GgmlType::Q2_K, 0.33},
};

// Gaussian-ish weights whose magnitude drifts from block to block, with occasional outliers and
// a positive-only stretch (exercises the min <= 0 clamp).
std::vector<float> testData(size_t n, uint64_t seed) {
  XorShift rng{seed};
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) {
    const float blockScale = 0.01f + 0.05f * static_cast<float>((i / 256) % 7);
    float v = rng.gaussish() * blockScale;
    if (rng.next() % 397 == 0)
      v *= 6.0f;
    if (i / 256 % 11 == 5)
      v = std::fabs(v) + blockScale;
    x[i] = v;
  }
  return x;
}

double relError(const std::vector<float> &x, const std::vector<float> &y) {
  double num = 0, den = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    num += (static_cast<double>(y[i]) - x[i]) * (static_cast<double>(y[i]) - x[i]);
    den += static_cast<double>(x[i]) * x[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

std::vector<float> roundTrip(GgmlType type, const std::vector<float> &x) {
  Bytes q(*ggmlRowBytes(type, x.size()), 0xA5);
  Status s = quantizeRow(type, x.data(), x.size(), q.data(), q.size());
  EXPECT_TRUE(s.isOk()) << s.toString();
  return dequant(type, q, x.size());
}

} // namespace

TEST(QuantRoundTrip, RandomRowsWithinBound) {
  const std::vector<float> x = testData(256 * 64, 0x9E3779B97F4A7C15ull);
  for (const RoundTripCase &c : kCases) {
    SCOPED_TRACE(ggmlTypeName(c.type));
    ASSERT_TRUE(canQuantize(c.type));
    ASSERT_TRUE(canDequantize(c.type));
    const double err = relError(x, roundTrip(c.type, x));
    std::printf("round trip %-7s rel err %.6g (bound %g)\n", ggmlTypeName(c.type), err, c.bound);
    EXPECT_LE(err, c.bound);
  }
}

TEST(QuantRoundTrip, Deterministic) {
  const std::vector<float> x = testData(256 * 4, 7);
  for (const RoundTripCase &c : kCases) {
    SCOPED_TRACE(ggmlTypeName(c.type));
    const size_t bytes = *ggmlRowBytes(c.type, x.size());
    Bytes a(bytes, 0x00), b(bytes, 0xFF); // different garbage: every byte must be written
    ASSERT_TRUE(quantizeRow(c.type, x.data(), x.size(), a.data(), a.size()).isOk());
    ASSERT_TRUE(quantizeRow(c.type, x.data(), x.size(), b.data(), b.size()).isOk());
    EXPECT_EQ(a, b);
  }
}

TEST(QuantRoundTrip, ConstantAndZeroBlocks) {
  for (const RoundTripCase &c : kCases) {
    SCOPED_TRACE(ggmlTypeName(c.type));
    const std::vector<float> zeros(256, 0.0f);
    for (float y : roundTrip(c.type, zeros))
      EXPECT_EQ(y, 0.0f);
    for (float v : {0.7f, -0.3f, 0.05f}) {
      const std::vector<float> same(256, v);
      const std::vector<float> y = roundTrip(c.type, same);
      // A constant is representable up to the rounding of a half scale or of a bfloat16.
      EXPECT_LE(relError(same, y), 4e-3) << v;
    }
  }
}

TEST(QuantRoundTrip, ExtremeMagnitudesStayFinite) {
  for (const RoundTripCase &c : kCases) {
    if (c.type == GgmlType::F32 || c.type == GgmlType::F16 || c.type == GgmlType::BF16)
      continue; // plain types keep their own range (F16 overflows to inf by definition)
    SCOPED_TRACE(ggmlTypeName(c.type));
    std::vector<float> x = testData(256, 3);
    for (float &v : x)
      v *= 1e12f; // block scales saturate at the largest half
    roundTrip(c.type, x);
    for (float &v : x)
      v *= 1e-40f; // block scales flush to zero
    for (float y : roundTrip(c.type, x))
      EXPECT_EQ(y, 0.0f);
  }
}

// ---------------------------------------------------------------------------------------------
// Argument errors.

TEST(QuantErrors, PartialBlock) {
  Bytes b(1024, 0);
  std::vector<float> y(64);
  Status s = dequantizeRow(GgmlType::Q4_0, b.data(), b.size(), y.data(), 33);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("33"), std::string::npos) << s.message();
  s = quantizeRow(GgmlType::Q4_K, y.data(), 64, b.data(), b.size());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("Q4_K"), std::string::npos) << s.message();
}

TEST(QuantErrors, ShortBuffer) {
  Bytes b(143, 0); // one Q4_K block needs 144
  std::vector<float> y(256);
  Status s = dequantizeRow(GgmlType::Q4_K, b.data(), b.size(), y.data(), 256);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("143"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("144"), std::string::npos) << s.message();
  s = quantizeRow(GgmlType::Q4_K, y.data(), 256, b.data(), b.size());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  s = dequantizeRow(GgmlType::F32, b.data(), 7, y.data(), 2);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
}

TEST(QuantErrors, UnsupportedType) {
  Bytes b(4096, 0);
  std::vector<float> y(256);
  for (GgmlType t : {GgmlType::IQ2_XXS, GgmlType::Q8_K, GgmlType::I32, GgmlType::MXFP4}) {
    EXPECT_FALSE(canDequantize(t));
    EXPECT_FALSE(canQuantize(t));
    Status s = dequantizeRow(t, b.data(), b.size(), y.data(), 256);
    EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
    EXPECT_NE(s.message().find(ggmlTypeName(t)), std::string::npos) << s.message();
    s = quantizeRow(t, y.data(), 256, b.data(), b.size());
    EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  }
}

TEST(QuantErrors, EmptyRowIsFine) {
  EXPECT_TRUE(dequantizeRow(GgmlType::Q6_K, nullptr, 0, nullptr, 0).isOk());
  EXPECT_TRUE(quantizeRow(GgmlType::Q6_K, nullptr, 0, nullptr, 0).isOk());
}

// Tests for the host reference kernels (runtime/host/ops.h) against naive loops written here,
// known values, and the identities docs/model.md states (absorbed MLA == naive MLA).
#include "runtime/host/ops.h"

#include "runtime/gguf/quant.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

using namespace glm5rt;
using namespace glm5rt::host;
using glm5rt::gguf::GgmlType;

namespace {

using Vec = std::vector<float>;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Small portable xorshift64 generator (no std:: distributions, docs/conventions.md "Fixtures").
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 1) {}
  uint64_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
  // Uniform in [lo, hi), never exactly 0.
  float uniform(float lo = -1.0f, float hi = 1.0f) {
    for (;;) {
      float u = static_cast<float>(next() >> 40) / static_cast<float>(1 << 24);
      float v = lo + (hi - lo) * u;
      if (v != 0.0f)
        return v;
    }
  }
  Vec vec(size_t n, float lo = -1.0f, float hi = 1.0f) {
    Vec v(n);
    for (float &x : v)
      x = uniform(lo, hi);
    return v;
  }
};

Weight f32(const Vec &v, std::initializer_list<uint64_t> ne) {
  return makeWeight(GgmlType::F32, v.data(), ne);
}

// Quantizes rows of `ne0` floats to Q8_0 bytes.
std::vector<uint8_t> quantizeQ8(const Vec &v, uint64_t ne0) {
  uint64_t rowBytes = *gguf::ggmlRowBytes(GgmlType::Q8_0, ne0);
  uint64_t rows = v.size() / ne0;
  std::vector<uint8_t> out(rows * rowBytes);
  for (uint64_t r = 0; r < rows; ++r) {
    Status s = gguf::quantizeRow(GgmlType::Q8_0, v.data() + r * ne0, ne0, out.data() + r * rowBytes,
                                 rowBytes);
    EXPECT_TRUE(s.isOk()) << s.toString();
  }
  return out;
}

// Dequantizes Q8_0 rows with the gguf library directly: the weights a correct kernel must use.
Vec dequantizeQ8(const std::vector<uint8_t> &b, uint64_t ne0, uint64_t rows) {
  uint64_t rowBytes = *gguf::ggmlRowBytes(GgmlType::Q8_0, ne0);
  Vec out(rows * ne0);
  for (uint64_t r = 0; r < rows; ++r) {
    Status s = gguf::dequantizeRow(GgmlType::Q8_0, b.data() + r * rowBytes, rowBytes,
                                   out.data() + r * ne0, ne0);
    EXPECT_TRUE(s.isOk()) << s.toString();
  }
  return out;
}

// ‖out − ref‖ / ‖ref‖; NaN or a size mismatch gives +inf, so it never passes.
double relErr(const Vec &out, const Vec &ref) {
  if (out.size() != ref.size())
    return INFINITY;
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < out.size(); ++i) {
    if (!std::isfinite(out[i]))
      return INFINITY;
    double d = static_cast<double>(out[i]) - ref[i];
    num += d * d;
    den += static_cast<double>(ref[i]) * ref[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

Vec poisoned(size_t n) { return Vec(n, kNaN); }

void expectError(const Status &s, const std::string &needle) {
  ASSERT_FALSE(s.isOk()) << "expected an error containing: " << needle;
  EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
}

// y[t][n] = sum_k W[n][k] x[t][k], W row-major [N][K].
Vec naiveLinear(const Vec &x, int64_t T, int64_t K, const Vec &W, int64_t N) {
  Vec y(T * N);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t n = 0; n < N; ++n) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k)
        acc += static_cast<double>(W[n * K + k]) * x[t * K + k];
      y[t * N + n] = static_cast<float>(acc);
    }
  return y;
}

// Per-head reference: W is [H][b][a]; see ops.h for the two orientations.
Vec naiveHeadLinear(const Vec &x, int64_t T, bool shared, const Vec &W, int64_t a, int64_t b,
                    int64_t H, bool transpose) {
  const int64_t in = transpose ? b : a, out = transpose ? a : b;
  Vec y(T * H * out);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < H; ++h) {
      const float *xi = shared ? &x[t * in] : &x[(t * H + h) * in];
      for (int64_t o = 0; o < out; ++o) {
        double acc = 0;
        for (int64_t i = 0; i < in; ++i) {
          // element W[h][j][i'] with (j, i') = (o, i) or, transposed, (i, o)
          float w = transpose ? W[(h * b + i) * a + o] : W[(h * b + o) * a + i];
          acc += static_cast<double>(w) * xi[i];
        }
        y[(t * H + h) * out + o] = static_cast<float>(acc);
      }
    }
  return y;
}

Vec naiveSwiglu(const Vec &x, int64_t T, int64_t Hd, int64_t F, const Vec &gate, const Vec &up,
                const Vec &down) {
  Vec g = naiveLinear(x, T, Hd, gate, F), u = naiveLinear(x, T, Hd, up, F);
  for (size_t i = 0; i < g.size(); ++i) {
    double z = g[i];
    g[i] = static_cast<float>(z * (1.0 / (1.0 + std::exp(-z))) * u[i]);
  }
  return naiveLinear(g, T, F, down, Hd);
}

// ---------------------------------------------------------------- weights, linear

TEST(HostLinear, MatchesNaiveF32) {
  Rng rng(1);
  const int64_t T = 3, K = 24, N = 10;
  Vec x = rng.vec(T * K), W = rng.vec(N * K);
  Vec y = poisoned(T * N);
  ASSERT_TRUE(linear(x.data(), T, f32(W, {K, N}), y.data()).isOk());
  EXPECT_LE(relErr(y, naiveLinear(x, T, K, W, N)), 1e-7);
  Vec y2 = poisoned(T * N);
  ASSERT_TRUE(linear(x.data(), T, K, f32(W, {K, N}), y2.data()).isOk());
  EXPECT_EQ(y, y2);
}

TEST(HostLinear, Q8_0WeightIsDequantized) {
  Rng rng(2);
  const int64_t T = 2, K = 64, N = 6;
  Vec x = rng.vec(T * K), W = rng.vec(N * K);
  std::vector<uint8_t> q = quantizeQ8(W, K);
  Vec Wq = dequantizeQ8(q, K, N);
  Weight w = makeWeight(GgmlType::Q8_0, q.data(), {K, N});
  Vec y = poisoned(T * N);
  ASSERT_TRUE(linear(x.data(), T, w, y.data()).isOk());
  EXPECT_LE(relErr(y, naiveLinear(x, T, K, Wq, N)), 1e-7);
  EXPECT_LE(relErr(y, naiveLinear(x, T, K, W, N)), 2e-2); // Q8_0 error, not garbage

  Vec rows = poisoned(2 * K);
  ASSERT_TRUE(dequantRows(w, 3, 2, rows.data()).isOk());
  EXPECT_EQ(rows, Vec(Wq.begin() + 3 * K, Wq.begin() + 5 * K));
}

TEST(HostLinear, LargeCallMatchesNaiveAndIsDeterministic) {
  // Big enough for the multi-threaded path.
  Rng rng(3);
  const int64_t T = 40, K = 512, N = 520;
  Vec x = rng.vec(T * K), W = rng.vec(N * K);
  Vec y1 = poisoned(T * N), y2 = poisoned(T * N);
  ASSERT_TRUE(linear(x.data(), T, f32(W, {K, N}), y1.data()).isOk());
  ASSERT_TRUE(linear(x.data(), T, f32(W, {K, N}), y2.data()).isOk());
  EXPECT_LE(relErr(y1, naiveLinear(x, T, K, W, N)), 1e-7);
  EXPECT_EQ(y1, y2);
}

TEST(HostLinear, RejectsBadShapes) {
  float dummy[4] = {};
  Vec y(8);
  expectError(linear(dummy, 1, 512, f32(Vec(1), {256, 2048}), y.data()),
              "linear: weight {256, 2048} does not take 512 inputs");
  Weight three = makeWeight(GgmlType::F32, dummy, {2, 2, 1});
  expectError(linear(dummy, 1, three, y.data()), "linear: weight {2, 2, 1} is not {in, out}");
  Weight q8 = makeWeight(GgmlType::Q8_0, dummy, {48, 2});
  expectError(linear(dummy, 1, q8, y.data()), "not a whole number of Q8_0 blocks");
  Weight none = makeWeight(GgmlType::F32, nullptr, {2, 2});
  expectError(linear(dummy, 1, none, y.data()), "has no data");
  expectError(dequantRows(makeWeight(GgmlType::F32, dummy, {2, 2}), 1, 2, y.data()),
              "rows [1, 3) are outside weight {2, 2}");
}

TEST(HostHeadLinear, MatchesNaiveInAllFourForms) {
  Rng rng(4);
  const int64_t T = 3, a = 12, b = 16, H = 4;
  Vec W = rng.vec(H * b * a);
  Weight w = f32(W, {a, b, H});
  for (bool shared : {false, true})
    for (bool transpose : {false, true}) {
      const int64_t in = transpose ? b : a, out = transpose ? a : b;
      Vec x = rng.vec(T * (shared ? 1 : H) * in);
      Vec y = poisoned(T * H * out);
      ASSERT_TRUE(headLinear(x.data(), T, shared, w, transpose, y.data()).isOk());
      EXPECT_LE(relErr(y, naiveHeadLinear(x, T, shared, W, a, b, H, transpose)), 1e-7)
          << "shared " << shared << " transpose " << transpose;
    }
}

TEST(HostHeadLinear, Q8_0Weight) {
  Rng rng(5);
  const int64_t T = 2, a = 32, b = 8, H = 3;
  Vec W = rng.vec(H * b * a), x = rng.vec(T * H * b);
  std::vector<uint8_t> q = quantizeQ8(W, a);
  Vec y = poisoned(T * H * a);
  ASSERT_TRUE(headLinear(x.data(), T, false, makeWeight(GgmlType::Q8_0, q.data(), {a, b, H}), true,
                         y.data())
                  .isOk());
  EXPECT_LE(relErr(y, naiveHeadLinear(x, T, false, dequantizeQ8(q, a, H * b), a, b, H, true)),
            1e-7);
}

// ---------------------------------------------------------------- rope

TEST(HostRope, PositionZeroIsIdentity) {
  Rng rng(6);
  Vec x = rng.vec(3 * 2 * 16), before = x;
  int32_t pos[3] = {0, 0, 0};
  rope(x.data(), 3, 2, 16, pos, 10000.0f, 8, 4);
  EXPECT_EQ(x, before);
}

TEST(HostRope, DimTwoRotatesByPositionRadians) {
  // dim 2: one pair, frequency theta^0 = 1, so the angle is the position in radians.
  Vec x = {9.0f, 1.0f, 0.5f, 9.0f, /*token 1:*/ 9.0f, -2.0f, 0.25f, 9.0f};
  int32_t pos[2] = {3, 7};
  rope(x.data(), 2, 1, 4, pos, 1e6f, 2, 1);
  EXPECT_NEAR(x[1], std::cos(3.0) - 0.5 * std::sin(3.0), 1e-6);
  EXPECT_NEAR(x[2], std::sin(3.0) + 0.5 * std::cos(3.0), 1e-6);
  EXPECT_NEAR(x[5], -2.0 * std::cos(7.0) - 0.25 * std::sin(7.0), 1e-6);
  EXPECT_NEAR(x[6], -2.0 * std::sin(7.0) + 0.25 * std::cos(7.0), 1e-6);
  EXPECT_EQ(x[0], 9.0f);
  EXPECT_EQ(x[3], 9.0f);
  EXPECT_EQ(x[4], 9.0f);
  EXPECT_EQ(x[7], 9.0f);
}

TEST(HostRope, InterleavedPairsNormsAndSlice) {
  Rng rng(7);
  const int64_t T = 2, rowsPerToken = 3, width = 20, dim = 8, offset = 4;
  const float theta = 10000.0f;
  Vec x = rng.vec(T * rowsPerToken * width), before = x;
  int32_t pos[2] = {5, 1000};
  rope(x.data(), T, rowsPerToken, width, pos, theta, dim, offset);
  for (int64_t r = 0; r < T * rowsPerToken; ++r) {
    const int32_t p = pos[r / rowsPerToken];
    for (int64_t c = 0; c < width; ++c) {
      if (c < offset || c >= offset + dim) {
        EXPECT_EQ(x[r * width + c], before[r * width + c]) << "row " << r << " column " << c;
      }
    }
    for (int64_t i = 0; i < dim / 2; ++i) {
      const int64_t c = r * width + offset + 2 * i;
      double angle = p * std::pow(static_cast<double>(theta), -2.0 * i / dim);
      double x0 = before[c], x1 = before[c + 1];
      EXPECT_NEAR(x[c], x0 * std::cos(angle) - x1 * std::sin(angle), 1e-6);
      EXPECT_NEAR(x[c + 1], x0 * std::sin(angle) + x1 * std::cos(angle), 1e-6);
      EXPECT_NEAR(std::hypot(x[c], x[c + 1]), std::hypot(x0, x1), 1e-6);
    }
  }
}

// ---------------------------------------------------------------- norms

TEST(HostNorm, RmsNormKnownValues) {
  Vec x = {1, 2, 3, 4, -2, 0, 2, 0}, w = {1, 2, 0.5f, -1};
  const float eps = 1e-5f;
  Vec y = poisoned(8);
  ASSERT_TRUE(rmsNorm(x.data(), 2, 4, f32(w, {4}), eps, y.data()).isOk());
  const double r0 = 1 / std::sqrt(7.5 + eps), r1 = 1 / std::sqrt(2.0 + eps);
  Vec expect = {float(1 * r0),   float(4 * r0),
                float(1.5 * r0), float(-4 * r0),
                float(-2 * r1),  0,
                float(1 * r1),   0};
  for (int i = 0; i < 8; ++i)
    EXPECT_NEAR(y[i], expect[i], 1e-6) << i;
  // In place gives the same.
  ASSERT_TRUE(rmsNorm(x.data(), 2, 4, f32(w, {4}), eps, x.data()).isOk());
  EXPECT_EQ(x, y);
  expectError(rmsNorm(x.data(), 1, 4, f32(Vec(5), {5}), eps, y.data()),
              "rmsNorm: weight {5} does not match row width 4");
}

TEST(HostNorm, LayerNormKnownValuesBiasedVariance) {
  Vec x = {1, 2, 3, 4}, w = {1, 2, 3, 4}, b = {0.5f, 0, -0.5f, 1};
  const float eps = 1e-6f;
  Vec y = poisoned(4);
  ASSERT_TRUE(layerNorm(x.data(), 1, 4, f32(w, {4}), f32(b, {4}), eps, y.data()).isOk());
  const double inv = 1 / std::sqrt(1.25 + eps); // mean 2.5, biased variance 5/4
  for (int i = 0; i < 4; ++i)
    EXPECT_NEAR(y[i], (x[i] - 2.5) * inv * w[i] + b[i], 1e-6) << i;
  expectError(layerNorm(x.data(), 1, 4, f32(w, {4}), f32(b, {2, 2}), eps, y.data()),
              "layerNorm: bias {2, 2} does not match row width 4");
}

// ---------------------------------------------------------------- attention

struct MlaDims {
  int64_t T = 4, C = 9, H = 4, nope = 12, rope = 8, L = 16, dv = 10;
};

// Naive MLA from the latent (keys and values expanded per head) against the absorbed form,
// docs/model.md "Naive and absorbed attention".
void checkAbsorbedEqualsNaive(const std::vector<int32_t> &idx, int64_t K, uint64_t seed) {
  MlaDims d;
  Rng rng(seed);
  Vec c = rng.vec(d.C * d.L), kRope = rng.vec(d.C * d.rope);
  Vec WUK = rng.vec(d.H * d.L * d.nope), WUV = rng.vec(d.H * d.dv * d.L);
  Vec q = rng.vec(d.T * d.H * (d.nope + d.rope));
  Weight wuk = f32(WUK, {uint64_t(d.nope), uint64_t(d.L), uint64_t(d.H)});
  Weight wuv = f32(WUV, {uint64_t(d.L), uint64_t(d.dv), uint64_t(d.H)});
  const float scale = 1.0f / std::sqrt(float(d.nope + d.rope));

  Vec kNope = poisoned(d.C * d.H * d.nope), v = poisoned(d.C * d.H * d.dv);
  ASSERT_TRUE(headLinear(c.data(), d.C, true, wuk, true, kNope.data()).isOk());
  ASSERT_TRUE(headLinear(c.data(), d.C, true, wuv, false, v.data()).isOk());
  Vec naive = poisoned(d.T * d.H * d.dv);
  attention(q.data(), kNope.data(), kRope.data(), v.data(), d.T, d.C, d.H, d.nope, d.rope, d.dv,
            idx.data(), K, scale, naive.data());

  Vec qNope(d.T * d.H * d.nope), qPe(d.T * d.H * d.rope);
  for (int64_t r = 0; r < d.T * d.H; ++r) {
    std::copy_n(&q[r * (d.nope + d.rope)], d.nope, &qNope[r * d.nope]);
    std::copy_n(&q[r * (d.nope + d.rope) + d.nope], d.rope, &qPe[r * d.rope]);
  }
  Vec qLat = poisoned(d.T * d.H * d.L), oLat = poisoned(d.T * d.H * d.L), lse = poisoned(d.T * d.H);
  ASSERT_TRUE(headLinear(qNope.data(), d.T, false, wuk, false, qLat.data()).isOk());
  sparseMla(qLat.data(), qPe.data(), d.T, d.H, d.L, d.rope, c.data(), kRope.data(), d.C, idx.data(),
            K, scale, oLat.data(), lse.data());
  Vec absorbed = poisoned(d.T * d.H * d.dv);
  ASSERT_TRUE(headLinear(oLat.data(), d.T, false, wuv, false, absorbed.data()).isOk());

  EXPECT_LE(relErr(absorbed, naive), 1e-5);
  for (float l : lse)
    EXPECT_TRUE(std::isfinite(l));
}

TEST(HostMla, AbsorbedEqualsNaiveSparse) {
  MlaDims d;
  Rng rng(8);
  const int64_t K = 4;
  std::vector<int32_t> pos = {2, 5, 7, 8}, idx(d.T * K);
  Vec scores = rng.vec(d.T * d.C);
  topK(scores.data(), d.T, d.C, pos.data(), K, idx.data());
  EXPECT_EQ(idx[3], -1); // position 2 selects 3 of 4 slots
  checkAbsorbedEqualsNaive(idx, K, 9);
}

TEST(HostMla, AbsorbedEqualsNaiveDense) {
  MlaDims d;
  std::vector<int32_t> pos = {0, 3, 7, 8}, idx(d.T * d.C);
  ASSERT_TRUE(causalAll(pos.data(), d.T, idx.data(), d.C).isOk());
  checkAbsorbedEqualsNaive(idx, d.C, 10);
}

TEST(HostSparseMla, MatchesDirectComputationAndLse) {
  Rng rng(11);
  const int64_t T = 2, H = 3, L = 16, R = 8, C = 6, K = 4;
  Vec qLat = rng.vec(T * H * L), qRope = rng.vec(T * H * R), lat = rng.vec(C * L),
      kr = rng.vec(C * R);
  std::vector<int32_t> idx = {0, 2, 5, -1, 3, -1, -1, 1};
  const float scale = 0.25f;
  Vec oLat = poisoned(T * H * L), lse = poisoned(T * H);
  sparseMla(qLat.data(), qRope.data(), T, H, L, R, lat.data(), kr.data(), C, idx.data(), K, scale,
            oLat.data(), lse.data());
  Vec refO(T * H * L), refLse(T * H);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t r = t * H + h;
      double z = 0;
      std::vector<double> e(L, 0.0);
      for (int64_t j = 0; j < K; ++j) {
        int32_t s = idx[t * K + j];
        if (s < 0)
          continue;
        double sc = 0;
        for (int64_t i = 0; i < L; ++i)
          sc += double(qLat[r * L + i]) * lat[s * L + i];
        for (int64_t i = 0; i < R; ++i)
          sc += double(qRope[r * R + i]) * kr[s * R + i];
        double ex = std::exp(scale * sc); // small scores: no max subtraction needed
        z += ex;
        for (int64_t i = 0; i < L; ++i)
          e[i] += ex * lat[s * L + i];
      }
      refLse[r] = float(std::log(z));
      for (int64_t i = 0; i < L; ++i)
        refO[r * L + i] = float(e[i] / z);
    }
  EXPECT_LE(relErr(oLat, refO), 1e-6);
  for (int64_t r = 0; r < T * H; ++r)
    EXPECT_NEAR(lse[r], refLse[r], 1e-6) << r;
}

TEST(HostSparseMla, NoValidIndexGivesZerosAndMinusInf) {
  Rng rng(12);
  const int64_t T = 2, H = 2, L = 16, R = 8, C = 3, K = 3;
  Vec qLat = rng.vec(T * H * L), qRope = rng.vec(T * H * R), lat = rng.vec(C * L),
      kr = rng.vec(C * R);
  std::vector<int32_t> idx = {-1, -1, -1, 1, -1, 0}; // token 0: nothing; token 1: rows 1 and 0
  Vec oLat = poisoned(T * H * L), lse = poisoned(T * H);
  sparseMla(qLat.data(), qRope.data(), T, H, L, R, lat.data(), kr.data(), C, idx.data(), K, 0.5f,
            oLat.data(), lse.data());
  for (int64_t i = 0; i < H * L; ++i)
    EXPECT_EQ(oLat[i], 0.0f);
  EXPECT_EQ(lse[0], -INFINITY);
  EXPECT_EQ(lse[1], -INFINITY);
  EXPECT_TRUE(std::isfinite(lse[2]));
  EXPECT_TRUE(std::isfinite(lse[3]));

  // The naive form agrees: no valid index, zero output.
  const int64_t nope = 4, dv = 5;
  Vec q = rng.vec(T * H * (nope + R)), kn = rng.vec(C * H * nope), v = rng.vec(C * H * dv);
  Vec o = poisoned(T * H * dv);
  attention(q.data(), kn.data(), kr.data(), v.data(), T, C, H, nope, R, dv, idx.data(), K, 0.5f,
            o.data());
  for (int64_t i = 0; i < H * dv; ++i)
    EXPECT_EQ(o[i], 0.0f);
  for (int64_t i = H * dv; i < T * H * dv; ++i)
    EXPECT_TRUE(std::isfinite(o[i]));
}

// ---------------------------------------------------------------- indexer and top-k

TEST(HostTopK, CausalBound) {
  Vec scores = {0.1f, 0.2f, 0.3f, 9.0f, 9.0f, 9.0f, 9.0f, 9.0f}; // beyond position 2: high
  int32_t pos = 2;
  std::vector<int32_t> idx(5, 77);
  topK(scores.data(), 1, 8, &pos, 5, idx.data());
  EXPECT_EQ(idx, (std::vector<int32_t>{0, 1, 2, -1, -1}));
}

TEST(HostTopK, TiesGoToLowerPositions) {
  Vec equal(10, 0.0f);
  int32_t pos = 7;
  std::vector<int32_t> idx(3);
  topK(equal.data(), 1, 10, &pos, 3, idx.data());
  EXPECT_EQ(idx, (std::vector<int32_t>{0, 1, 2}));

  Vec mixed = {1, 5, 3, 5, 3, 0};
  pos = 5;
  topK(mixed.data(), 1, 6, &pos, 3, idx.data());
  EXPECT_EQ(idx, (std::vector<int32_t>{1, 2, 3})); // 5@1, 5@3, then 3@2 beats 3@4
}

TEST(HostTopK, MatchesBruteForceAscendingWithPadding) {
  Rng rng(13);
  const int64_t T = 4, nKeys = 12, k = 5;
  Vec scores = rng.vec(T * nKeys);
  std::vector<int32_t> pos = {11, 6, 0, 3}, idx(T * k);
  topK(scores.data(), T, nKeys, pos.data(), k, idx.data());
  for (int64_t t = 0; t < T; ++t) {
    std::vector<int32_t> order(pos[t] + 1);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      return scores[t * nKeys + a] > scores[t * nKeys + b];
    });
    const size_t n = std::min<size_t>(k, order.size());
    std::vector<int32_t> want(order.begin(), order.begin() + n);
    std::sort(want.begin(), want.end());
    want.resize(k, -1);
    EXPECT_EQ(std::vector<int32_t>(idx.begin() + t * k, idx.begin() + (t + 1) * k), want)
        << "row " << t;
  }
}

TEST(HostIndexer, ReluPerHeadAndCausalMask) {
  Rng rng(14);
  const int64_t HI = 4, DI = 16, nKeys = 3;
  Vec keys = rng.vec(nKeys * DI), q = rng.vec(HI * DI), w = {0.7f, -1.3f, 0.4f, 2.0f};
  // Heads 1 and 3 are the negations of heads 0 and 2: for every key one head of each pair has a
  // negative dot product, which must contribute 0.
  for (int64_t i = 0; i < DI; ++i) {
    q[1 * DI + i] = -q[0 * DI + i];
    q[3 * DI + i] = -q[2 * DI + i];
  }
  int32_t pos = 1;
  const float scale = 0.125f;
  Vec scores = poisoned(nKeys);
  indexerScore(q.data(), w.data(), 1, HI, DI, keys.data(), nKeys, &pos, scale, scores.data());
  for (int64_t s = 0; s <= pos; ++s) {
    double perHead = 0, ofSum = 0;
    for (int64_t h = 0; h < HI; ++h) {
      double d = 0;
      for (int64_t i = 0; i < DI; ++i)
        d += double(q[h * DI + i]) * keys[s * DI + i];
      perHead += w[h] * std::max(0.0, d);
      ofSum += w[h] * d;
    }
    EXPECT_NEAR(scores[s], scale * perHead, 1e-6) << s;
    EXPECT_GT(std::fabs(perHead - std::max(0.0, ofSum)), 1e-3) << "case does not separate";
  }
  EXPECT_EQ(scores[2], -INFINITY);
}

TEST(HostIndexer, MatchesNaiveOverTokens) {
  Rng rng(15);
  const int64_t T = 3, HI = 8, DI = 16, nKeys = 7;
  Vec q = rng.vec(T * HI * DI), w = rng.vec(T * HI), keys = rng.vec(nKeys * DI);
  std::vector<int32_t> pos = {4, 5, 6};
  Vec scores = poisoned(T * nKeys);
  indexerScore(q.data(), w.data(), T, HI, DI, keys.data(), nKeys, pos.data(), 0.5f, scores.data());
  for (int64_t t = 0; t < T; ++t)
    for (int64_t s = 0; s < nKeys; ++s) {
      if (s > pos[t]) {
        EXPECT_EQ(scores[t * nKeys + s], -INFINITY);
        continue;
      }
      double sum = 0;
      for (int64_t h = 0; h < HI; ++h) {
        double d = 0;
        for (int64_t i = 0; i < DI; ++i)
          d += double(q[(t * HI + h) * DI + i]) * keys[s * DI + i];
        sum += w[t * HI + h] * std::max(0.0, d);
      }
      EXPECT_NEAR(scores[t * nKeys + s], 0.5 * sum, 1e-6);
    }
}

TEST(HostCausalAll, RowsAndPadding) {
  std::vector<int32_t> pos = {0, 2, -1}, out(3 * 4, 77);
  ASSERT_TRUE(causalAll(pos.data(), 3, out.data(), 4).isOk());
  EXPECT_EQ(out, (std::vector<int32_t>{0, -1, -1, -1, 0, 1, 2, -1, -1, -1, -1, -1}));
  pos = {4};
  expectError(causalAll(pos.data(), 1, out.data(), 4), "needs 5 slots, rows have 4");
}

// ---------------------------------------------------------------- MoE

double sigmoid(double z) { return 1 / (1 + std::exp(-z)); }

TEST(HostMoeGate, BiasChoosesButDoesNotWeigh) {
  Vec logits = {2, 1, 0, -1}, bias = {0.01f, -0.02f, 0.5f, 0.03f};
  const float scale = 2.5f;
  std::vector<int32_t> ids(2);
  Vec w = poisoned(2);
  // Unbiased order is 0 > 1 > 2 > 3; the bias lifts expert 2 above both.
  ASSERT_TRUE(
      moeGate(logits.data(), 1, 4, f32(bias, {4}), 2, true, scale, w.data(), ids.data()).isOk());
  EXPECT_EQ(ids, (std::vector<int32_t>{2, 0})); // descending s + bias
  const double s0 = sigmoid(2), s2 = sigmoid(0);
  EXPECT_NEAR(w[0], scale * s2 / (s0 + s2), 1e-6);
  EXPECT_NEAR(w[1], scale * s0 / (s0 + s2), 1e-6);
  EXPECT_NEAR(w[0] + w[1], scale, 1e-6);

  ASSERT_TRUE(
      moeGate(logits.data(), 1, 4, f32(bias, {4}), 2, false, scale, w.data(), ids.data()).isOk());
  EXPECT_NEAR(w[0], scale * s2, 1e-6);
  EXPECT_NEAR(w[1], scale * s0, 1e-6);
}

TEST(HostMoeGate, NormalizedWeightsSumToScale) {
  Rng rng(16);
  const int64_t T = 3, E = 16, k = 4;
  Vec logits = rng.vec(T * E, -3, 3), bias = rng.vec(E, -0.1f, 0.1f);
  Vec w = poisoned(T * k);
  std::vector<int32_t> ids(T * k);
  ASSERT_TRUE(
      moeGate(logits.data(), T, E, f32(bias, {E}), k, true, 2.5f, w.data(), ids.data()).isOk());
  for (int64_t t = 0; t < T; ++t) {
    double sum = 0;
    for (int64_t j = 0; j < k; ++j) {
      sum += w[t * k + j];
      if (j > 0) { // descending s + bias
        int32_t a = ids[t * k + j - 1], b = ids[t * k + j];
        EXPECT_GE(sigmoid(logits[t * E + a]) + bias[a], sigmoid(logits[t * E + b]) + bias[b]);
      }
    }
    EXPECT_NEAR(sum, 2.5, 1e-6);
  }
}

TEST(HostMoeGate, TiesGoToLowerIdAndShapesAreChecked) {
  Vec logits = {0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f}, bias(6, 0.0f);
  std::vector<int32_t> ids(3);
  Vec w(3);
  ASSERT_TRUE(
      moeGate(logits.data(), 1, 6, f32(bias, {6}), 3, true, 1.0f, w.data(), ids.data()).isOk());
  EXPECT_EQ(ids, (std::vector<int32_t>{0, 1, 2}));
  logits = {0, 1, 1, 0, 1, 0};
  ASSERT_TRUE(
      moeGate(logits.data(), 1, 6, f32(bias, {6}), 2, true, 1.0f, w.data(), ids.data()).isOk());
  EXPECT_EQ(ids[0], 1);
  EXPECT_EQ(ids[1], 2);

  expectError(moeGate(logits.data(), 1, 6, f32(bias, {5}), 2, true, 1, w.data(), ids.data()),
              "moeGate: bias {5} does not match 6 experts");
  expectError(moeGate(logits.data(), 1, 6, f32(bias, {6}), 7, true, 1, w.data(), ids.data()),
              "cannot choose 7 of 6 experts");
}

TEST(HostSwiglu, MatchesNaive) {
  Rng rng(17);
  const int64_t T = 3, Hd = 16, F = 24;
  Vec x = rng.vec(T * Hd), g = rng.vec(F * Hd), u = rng.vec(F * Hd), d = rng.vec(Hd * F);
  Vec y = poisoned(T * Hd);
  ASSERT_TRUE(
      swiglu(x.data(), T, f32(g, {Hd, F}), f32(u, {Hd, F}), f32(d, {F, Hd}), y.data()).isOk());
  EXPECT_LE(relErr(y, naiveSwiglu(x, T, Hd, F, g, u, d)), 1e-6);
  expectError(swiglu(x.data(), T, f32(g, {Hd, F}), f32(u, {Hd, F}), f32(d, {Hd, F}), y.data()),
              "swiglu: down {16, 24} does not map gate {16, 24}");
}

TEST(HostMoeExperts, EqualsWeightedSumOfSlicedSwiglu) {
  Rng rng(18);
  const int64_t T = 4, Hd = 16, F = 8, E = 5, k = 2;
  Vec x = rng.vec(T * Hd), g = rng.vec(E * F * Hd), u = rng.vec(E * F * Hd),
      d = rng.vec(E * Hd * F), weights = rng.vec(T * k, 0.1f, 1.0f);
  std::vector<int32_t> ids = {3, 0, 1, 4, 2, 2, 4, 0}; // token 2 routes to expert 2 twice
  Vec y = poisoned(T * Hd);
  ASSERT_TRUE(moeExperts(x.data(), T, weights.data(), ids.data(), k, f32(g, {Hd, F, E}),
                         f32(u, {Hd, F, E}), f32(d, {F, Hd, E}), y.data())
                  .isOk());
  Vec ref(T * Hd, 0.0f);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < k; ++j) {
      const int64_t e = ids[t * k + j];
      Vec ge(g.begin() + e * F * Hd, g.begin() + (e + 1) * F * Hd);
      Vec ue(u.begin() + e * F * Hd, u.begin() + (e + 1) * F * Hd);
      Vec de(d.begin() + e * Hd * F, d.begin() + (e + 1) * Hd * F);
      Vec xt(x.begin() + t * Hd, x.begin() + (t + 1) * Hd), yt(Hd);
      ASSERT_TRUE(
          swiglu(xt.data(), 1, f32(ge, {Hd, F}), f32(ue, {Hd, F}), f32(de, {F, Hd}), yt.data())
              .isOk());
      for (int64_t i = 0; i < Hd; ++i)
        ref[t * Hd + i] += weights[t * k + j] * yt[i];
    }
  EXPECT_LE(relErr(y, ref), 1e-6);
}

TEST(HostMoeExperts, RejectsBadIdsAndShapes) {
  Rng rng(19);
  const int64_t Hd = 16, F = 8, E = 3, k = 2;
  Vec x = rng.vec(Hd), g = rng.vec(E * F * Hd), u = rng.vec(E * F * Hd), d = rng.vec(E * Hd * F);
  Vec w = {0.5f, 0.5f}, y(Hd);
  std::vector<int32_t> ids = {1, 3};
  expectError(moeExperts(x.data(), 1, w.data(), ids.data(), k, f32(g, {Hd, F, E}),
                         f32(u, {Hd, F, E}), f32(d, {F, Hd, E}), y.data()),
              "token 0 slot 1 routes to expert 3, outside [0, 3)");
  ids = {-1, 0};
  expectError(moeExperts(x.data(), 1, w.data(), ids.data(), k, f32(g, {Hd, F, E}),
                         f32(u, {Hd, F, E}), f32(d, {F, Hd, E}), y.data()),
              "routes to expert -1");
  ids = {0, 1};
  expectError(moeExperts(x.data(), 1, w.data(), ids.data(), k, f32(g, {Hd, F, E}),
                         f32(u, {Hd, 4, E}), f32(d, {F, Hd, E}), y.data()),
              "moeExperts: up {16, 4, 3} does not match gate {16, 8, 3}");
}

// ---------------------------------------------------------------- cache, embedding, add

TEST(HostKVCache, AppendReadAndCapacity) {
  const int64_t layers = 2, cap = 6, L = 4, R = 2, I = 3;
  KVCache cache(layers, cap, L, R, I);
  Rng rng(20);
  Vec lat = rng.vec(3 * L), kr = rng.vec(3 * R), ki = rng.vec(3 * I);
  std::vector<int32_t> pos = {0, 1, 4};
  ASSERT_TRUE(cache.append(1, pos.data(), 3, lat.data(), kr.data(), ki.data()).isOk());
  EXPECT_EQ(cache.length(1), 5);
  EXPECT_EQ(cache.length(0), 0);
  for (int64_t t = 0; t < 3; ++t) {
    EXPECT_TRUE(
        std::equal(lat.begin() + t * L, lat.begin() + (t + 1) * L, cache.latent(1) + pos[t] * L));
    EXPECT_TRUE(
        std::equal(kr.begin() + t * R, kr.begin() + (t + 1) * R, cache.ropeKey(1) + pos[t] * R));
    EXPECT_TRUE(
        std::equal(ki.begin() + t * I, ki.begin() + (t + 1) * I, cache.indexKey(1) + pos[t] * I));
  }
  for (int64_t i = 0; i < L; ++i) {
    EXPECT_EQ(cache.latent(1)[2 * L + i], 0.0f); // position 2 never written
    EXPECT_EQ(cache.latent(0)[0 * L + i], 0.0f); // layer 0 untouched
  }

  std::vector<int32_t> bad = {3, 6};
  expectError(cache.append(1, bad.data(), 2, lat.data(), kr.data(), ki.data()),
              "position 6 is past the cache capacity of 6");
  EXPECT_EQ(cache.latent(1)[3 * L], 0.0f); // nothing written by the failed append
  bad = {-1};
  expectError(cache.append(0, bad.data(), 1, lat.data(), kr.data(), ki.data()),
              "negative position -1");
  expectError(cache.append(2, pos.data(), 1, lat.data(), kr.data(), ki.data()), "layer 2 of 2");

  StatusOr<KVCache> made = KVCache::create(2, 8, 4, 2, 3);
  ASSERT_TRUE(made.isOk());
  EXPECT_EQ(made->capacity(), 8);
  EXPECT_FALSE(KVCache::create(2, -1, 4, 2, 3).isOk());
  EXPECT_FALSE(KVCache::create(1 << 20, 1 << 30, 1 << 20, 0, 0).isOk());
}

TEST(HostEmbed, RowsAndOutOfRangeToken) {
  Rng rng(21);
  const int64_t H = 32, V = 5;
  Vec table = rng.vec(V * H);
  std::vector<int32_t> tokens = {3, 0, 4};
  Vec out = poisoned(3 * H);
  ASSERT_TRUE(embed(tokens.data(), 3, f32(table, {H, V}), out.data()).isOk());
  for (int64_t t = 0; t < 3; ++t)
    EXPECT_TRUE(
        std::equal(out.begin() + t * H, out.begin() + (t + 1) * H, table.begin() + tokens[t] * H));

  std::vector<uint8_t> q = quantizeQ8(table, H);
  Vec deq = dequantizeQ8(q, H, V);
  ASSERT_TRUE(
      embed(tokens.data(), 3, makeWeight(GgmlType::Q8_0, q.data(), {H, V}), out.data()).isOk());
  EXPECT_TRUE(std::equal(out.begin(), out.begin() + H, deq.begin() + 3 * H));

  tokens = {1, 5};
  expectError(embed(tokens.data(), 2, f32(table, {H, V}), out.data()),
              "token 5 at index 1 is outside the vocabulary [0, 5)");
  tokens = {-2};
  expectError(embed(tokens.data(), 1, f32(table, {H, V}), out.data()), "token -2");
}

TEST(HostAdd, Elementwise) {
  Vec a = {1, 2, 3}, b = {0.5f, -2, 4}, y = poisoned(3);
  add(a.data(), b.data(), 3, y.data());
  EXPECT_EQ(y, (Vec{1.5f, 0, 7}));
  add(a.data(), b.data(), 3, a.data()); // in place
  EXPECT_EQ(a, y);
}

} // namespace

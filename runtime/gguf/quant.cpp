// Host dequantizers that match ggml-quants.c's dequantize_row_* bit for bit, and the simple
// deterministic round-to-nearest quantizers the fixture generator writes GGUF tensors with.
#include "runtime/gguf/quant.h"

#include "runtime/support/half.h"

#include <cmath>
#include <cstring>

namespace glm5rt::gguf {
namespace {

constexpr int kQK = 32;   // elements per Q4_0 .. Q8_0 and IQ4_NL block
constexpr int kQKK = 256; // elements per K-quant and IQ4_XS super-block

// ggml's kvalues_iq4nl; ascending, which iq4Index relies on.
constexpr int8_t kIq4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                   1,    13,   25,  38,  53,  69,  89,  113};

// All multi-byte fields are little-endian regardless of the host.
inline uint16_t load16(const uint8_t *p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
inline uint32_t load32(const uint8_t *p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}
inline void store16(uint8_t *p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
}
inline float loadHalf(const uint8_t *p) { return fp16ToFloat(load16(p)); }

// NaN passes through; only finite inputs give finite scales.
inline float clampToHalfRange(float v) {
  return v > 65504.0f ? 65504.0f : v < -65504.0f ? -65504.0f : v;
}

// Writes a block scale as fp16 and returns the value dequantization will read back; codes are
// computed against it. A nonzero half is rounded away from zero so the codes never need more than
// their range (rounded down, a subnormal super-block scale can clip the largest sub-scale code by
// several percent); one that rounds to zero stays zero so a negligible block dequantizes to zeros
// (IQ4 tables have no zero entry). Saturates at the largest finite half: an infinite scale would
// turn a zero code into NaN.
inline float storeScale(uint8_t *p, float v) {
  uint16_t h = floatToFp16(clampToHalfRange(v));
  if ((h & 0x7FFF) != 0 && std::fabs(fp16ToFloat(h)) < std::fabs(clampToHalfRange(v)))
    ++h; // sign-magnitude: the next code up in magnitude; cannot pass 0x7BFF after the clamp
  store16(p, h);
  return fp16ToFloat(h);
}

// Writes a Q4_1 / Q5_1 block min as fp16 rounded toward -inf, so that no element lies below it;
// as with storeScale, a min that rounds to zero stays zero.
inline float storeMin(uint8_t *p, float v) {
  uint16_t h = floatToFp16(clampToHalfRange(v));
  if ((h & 0x7FFF) != 0 && fp16ToFloat(h) > clampToHalfRange(v)) {
    if (h & 0x8000)
      ++h; // negative: grow the magnitude (clamped above, so this stays finite)
    else
      --h; // positive and nonzero, since fp16ToFloat(h) > v >= 0
  }
  store16(p, h);
  return fp16ToFloat(h);
}

inline float reciprocal(float d) { return d != 0.0f ? 1.0f / d : 0.0f; }

// Round half to even (ggml's nearest_int) of `v` clamped to [lo, hi]; NaN goes to lo. The
// magic-constant trick is exact for |v| < 2^22, which the clamp guarantees.
inline int nearestClamped(float v, int lo, int hi) {
  if (!(v >= static_cast<float>(lo)))
    v = static_cast<float>(lo);
  else if (v > static_cast<float>(hi))
    v = static_cast<float>(hi);
  float t = v + 12582912.0f;
  int32_t i;
  std::memcpy(&i, &t, 4);
  return (i & 0x007fffff) - 0x00400000;
}

// The element of largest magnitude, sign kept (first one on ties).
inline float signedAbsMax(const float *x, int n) {
  float amax = 0.0f, vmax = 0.0f;
  for (int i = 0; i < n; ++i) {
    float a = std::fabs(x[i]);
    if (a > amax) {
      amax = a;
      vmax = x[i];
    }
  }
  return vmax;
}

// Index of the kIq4Values entry nearest to x; ties go up, as ggml's best_index_int8.
inline int iq4Index(float x) {
  if (x <= kIq4Values[0])
    return 0;
  if (x >= kIq4Values[15])
    return 15;
  int lo = 0, hi = 15;
  while (hi - lo > 1) {
    int mid = (lo + hi) / 2;
    if (x < kIq4Values[mid])
      hi = mid;
    else
      lo = mid;
  }
  return x - kIq4Values[lo] < kIq4Values[hi] - x ? lo : hi;
}

// ---------------------------------------------------------------------------------------------
// Plain types. F32 is copied as is, which assumes a little-endian host like the rest of the
// runtime.

void dequantF32(const uint8_t *b, float *y, uint64_t n) { std::memcpy(y, b, n * 4); }
void quantF32(const float *x, uint8_t *b, uint64_t n) { std::memcpy(b, x, n * 4); }
void dequantF16(const uint8_t *b, float *y, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i)
    y[i] = fp16ToFloat(load16(b + 2 * i));
}
void quantF16(const float *x, uint8_t *b, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i)
    store16(b + 2 * i, floatToFp16(x[i]));
}
void dequantBF16(const uint8_t *b, float *y, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i)
    y[i] = bf16ToFloat(load16(b + 2 * i));
}
void quantBF16(const float *x, uint8_t *b, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i)
    store16(b + 2 * i, floatToBf16(x[i]));
}

// ---------------------------------------------------------------------------------------------
// Q4_0, Q4_1, Q5_0, Q5_1: {f16 d; [f16 m]; [u8 qh[4]]; u8 qs[16]}. Element j < 16 is the low
// nibble of qs[j], element j + 16 the high nibble; for 5 bits, bit j of qh is element j's fifth
// bit. Without a min the quant is offset by half its range.

template <int Bits, bool HasMin> struct Legacy {
  static constexpr int kQhOff = HasMin ? 4 : 2;
  static constexpr int kQsOff = kQhOff + (Bits == 5 ? 4 : 0);
  static constexpr int kBytes = kQsOff + kQK / 2;
  static constexpr int kMax = (1 << Bits) - 1;
  static constexpr int kOffset = HasMin ? 0 : 1 << (Bits - 1);

  static void dequant(const uint8_t *b, float *y, uint64_t nb) {
    for (uint64_t i = 0; i < nb; ++i, b += kBytes, y += kQK) {
      const float d = loadHalf(b);
      const float m = HasMin ? loadHalf(b + 2) : 0.0f;
      const uint32_t qh = Bits == 5 ? load32(b + kQhOff) : 0;
      const uint8_t *qs = b + kQsOff;
      for (int j = 0; j < kQK / 2; ++j) {
        int x0 = qs[j] & 0x0F;
        int x1 = qs[j] >> 4;
        if (Bits == 5) {
          x0 |= ((qh >> j) << 4) & 0x10;
          x1 |= (qh >> (j + 12)) & 0x10;
        }
        x0 -= kOffset;
        x1 -= kOffset;
        if (HasMin) {
          y[j] = x0 * d + m;
          y[j + kQK / 2] = x1 * d + m;
        } else {
          y[j] = x0 * d;
          y[j + kQK / 2] = x1 * d;
        }
      }
    }
  }

  static void quant(const float *x, uint8_t *b, uint64_t nb) {
    for (uint64_t i = 0; i < nb; ++i, b += kBytes, x += kQK) {
      uint8_t q[kQK];
      if (HasMin) {
        float lo = x[0], hi = x[0];
        for (int j = 1; j < kQK; ++j) {
          lo = std::fmin(lo, x[j]);
          hi = std::fmax(hi, x[j]);
        }
        const float m = storeMin(b + 2, lo);
        const float d = storeScale(b, (hi - m) / kMax);
        const float id = reciprocal(d);
        for (int j = 0; j < kQK; ++j)
          q[j] = static_cast<uint8_t>(nearestClamped((x[j] - m) * id, 0, kMax));
      } else {
        // The extreme maps to -kOffset, the one code the positive side lacks.
        const float d = storeScale(b, signedAbsMax(x, kQK) / -kOffset);
        const float id = reciprocal(d);
        for (int j = 0; j < kQK; ++j)
          q[j] = static_cast<uint8_t>(nearestClamped(x[j] * id, -kOffset, kOffset - 1) + kOffset);
      }
      uint8_t *qs = b + kQsOff;
      uint32_t qh = 0;
      for (int j = 0; j < kQK / 2; ++j) {
        qs[j] = static_cast<uint8_t>((q[j] & 0x0F) | ((q[j + kQK / 2] & 0x0F) << 4));
        qh |= static_cast<uint32_t>(q[j] >> 4) << j;
        qh |= static_cast<uint32_t>(q[j + kQK / 2] >> 4) << (j + kQK / 2);
      }
      if (Bits == 5)
        for (int k = 0; k < 4; ++k)
          b[kQhOff + k] = static_cast<uint8_t>(qh >> (8 * k));
    }
  }
};

// Q8_0: {f16 d; i8 qs[32]}.
constexpr int kQ8_0Bytes = 2 + kQK;

void dequantQ8_0(const uint8_t *b, float *y, uint64_t nb) {
  for (uint64_t i = 0; i < nb; ++i, b += kQ8_0Bytes, y += kQK) {
    const float d = loadHalf(b);
    for (int j = 0; j < kQK; ++j)
      y[j] = static_cast<int8_t>(b[2 + j]) * d;
  }
}

void quantQ8_0(const float *x, uint8_t *b, uint64_t nb) {
  for (uint64_t i = 0; i < nb; ++i, b += kQ8_0Bytes, x += kQK) {
    const float d = storeScale(b, std::fabs(signedAbsMax(x, kQK)) / 127.0f);
    const float id = reciprocal(d);
    for (int j = 0; j < kQK; ++j)
      b[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(nearestClamped(x[j] * id, -127, 127)));
  }
}

// IQ4_NL: {f16 d; u8 qs[16]}, nibbles indexing kIq4Values, laid out as Q4_0.
constexpr int kIq4NlBytes = 2 + kQK / 2;

void dequantIq4Nl(const uint8_t *b, float *y, uint64_t nb) {
  for (uint64_t i = 0; i < nb; ++i, b += kIq4NlBytes, y += kQK) {
    const float d = loadHalf(b);
    const uint8_t *qs = b + 2;
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = d * kIq4Values[qs[j] & 0x0F];
      y[j + kQK / 2] = d * kIq4Values[qs[j] >> 4];
    }
  }
}

// Quantizes 32 values against scale `d` into 16 IQ4 nibble pairs.
inline void packIq4(const float *x, float d, uint8_t *qs) {
  const float id = reciprocal(d);
  for (int j = 0; j < kQK / 2; ++j)
    qs[j] = static_cast<uint8_t>(iq4Index(x[j] * id) | (iq4Index(x[j + kQK / 2] * id) << 4));
}

void quantIq4Nl(const float *x, uint8_t *b, uint64_t nb) {
  for (uint64_t i = 0; i < nb; ++i, b += kIq4NlBytes, x += kQK)
    packIq4(x, storeScale(b, signedAbsMax(x, kQK) / kIq4Values[0]), b + 2);
}

// IQ4_XS: {f16 d; u16 scales_h; u8 scales_l[4]; u8 qs[128]}: eight IQ4_NL-shaped sub-blocks
// whose scales are d * (ls - 32) with a 6-bit ls split into a low nibble and two high bits.
constexpr int kIq4XsBytes = 2 + 2 + 4 + kQKK / 2;

void dequantIq4Xs(const uint8_t *b, float *y, uint64_t nb) {
  for (uint64_t i = 0; i < nb; ++i, b += kIq4XsBytes) {
    const float d = loadHalf(b);
    const uint16_t scalesH = load16(b + 2);
    const uint8_t *scalesL = b + 4;
    const uint8_t *qs = b + 8;
    for (int ib = 0; ib < kQKK / kQK; ++ib, qs += kQK / 2, y += kQK) {
      const int ls = ((scalesL[ib / 2] >> 4 * (ib % 2)) & 0xF) | (((scalesH >> 2 * ib) & 3) << 4);
      const float dl = d * (ls - 32);
      for (int j = 0; j < kQK / 2; ++j) {
        y[j] = dl * kIq4Values[qs[j] & 0x0F];
        y[j + kQK / 2] = dl * kIq4Values[qs[j] >> 4];
      }
    }
  }
}

void quantIq4Xs(const float *x, uint8_t *b, uint64_t nb) {
  constexpr int kSubs = kQKK / kQK;
  for (uint64_t i = 0; i < nb; ++i, b += kIq4XsBytes, x += kQKK) {
    float scales[kSubs];
    for (int ib = 0; ib < kSubs; ++ib)
      scales[ib] = signedAbsMax(x + kQK * ib, kQK) / kIq4Values[0];
    const float d = storeScale(b, signedAbsMax(scales, kSubs) / -32.0f);
    const float id = reciprocal(d);
    uint16_t scalesH = 0;
    uint8_t *scalesL = b + 4;
    std::memset(scalesL, 0, 4);
    for (int ib = 0; ib < kSubs; ++ib) {
      const int l = nearestClamped(scales[ib] * id, -32, 31);
      const int ls = l + 32;
      scalesL[ib / 2] |= static_cast<uint8_t>((ls & 0xF) << 4 * (ib % 2));
      scalesH |= static_cast<uint16_t>((ls >> 4) << 2 * ib);
      packIq4(x + kQK * ib, d * l, b + 8 + kQK / 2 * ib);
    }
    store16(b + 2, scalesH);
  }
}

// ---------------------------------------------------------------------------------------------
// K-quants: 256-element super-blocks of 16- or 32-element sub-blocks whose scales (and mins) are
// small integers times the super-block's fp16 d (and dmin).

// Sub-block range for the min-carrying K-quants: y = scale * q - negMin, q in [0, nmax]. As in
// ggml, the min is clamped to <= 0 so negMin (the stored, non-negative offset) is >= 0.
inline void rangeWithMin(const float *x, int n, int nmax, float *scale, float *negMin) {
  float lo = x[0], hi = x[0];
  for (int i = 1; i < n; ++i) {
    lo = std::fmin(lo, x[i]);
    hi = std::fmax(hi, x[i]);
  }
  if (lo > 0.0f)
    lo = 0.0f;
  if (hi < lo)
    hi = lo;
  *scale = (hi - lo) / nmax;
  *negMin = -lo;
}

inline float maxOf(const float *v, int n) {
  float m = 0.0f;
  for (int i = 0; i < n; ++i)
    m = std::fmax(m, v[i]);
  return m;
}

// ggml's get_scale_min_k4: eight 6-bit scale/min pairs packed in 12 bytes.
inline void scaleMinK4(int j, const uint8_t *q, int *sc, int *m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

inline void packScaleMinK4(int j, int sc, int m, uint8_t *q) {
  if (j < 4) {
    q[j] = static_cast<uint8_t>(q[j] | sc);
    q[j + 4] = static_cast<uint8_t>(q[j + 4] | m);
  } else {
    q[j + 4] = static_cast<uint8_t>((sc & 0xF) | ((m & 0xF) << 4));
    q[j - 4] = static_cast<uint8_t>(q[j - 4] | ((sc >> 4) << 6));
    q[j] = static_cast<uint8_t>(q[j] | ((m >> 4) << 6));
  }
}

// Q4_K: {f16 d; f16 dmin; u8 scales[12]; u8 qs[128]}; Q5_K adds u8 qh[32] before qs. Each 64
// elements share 32 qs bytes: the first 32 are low nibbles, the next 32 high nibbles. Element e's
// fifth bit is bit e / 32 of qh[e % 32].
template <bool Five> struct Q45K {
  static constexpr int kQhOff = 16;
  static constexpr int kQsOff = Five ? kQhOff + kQK : kQhOff;
  static constexpr int kBytes = kQsOff + kQKK / 2;
  static constexpr int kMax = Five ? 31 : 15;

  static void dequant(const uint8_t *b, float *y, uint64_t nb) {
    for (uint64_t i = 0; i < nb; ++i, b += kBytes) {
      const float d = loadHalf(b);
      const float min = loadHalf(b + 2);
      const uint8_t *scales = b + 4;
      const uint8_t *qh = b + kQhOff;
      const uint8_t *ql = b + kQsOff;
      int is = 0;
      int u1 = 1, u2 = 2;
      for (int j = 0; j < kQKK; j += 64) {
        int sc, m;
        scaleMinK4(is + 0, scales, &sc, &m);
        const float d1 = d * sc;
        const float m1 = min * m;
        scaleMinK4(is + 1, scales, &sc, &m);
        const float d2 = d * sc;
        const float m2 = min * m;
        for (int l = 0; l < 32; ++l)
          *y++ = d1 * ((ql[l] & 0xF) + (Five && (qh[l] & u1) ? 16 : 0)) - m1;
        for (int l = 0; l < 32; ++l)
          *y++ = d2 * ((ql[l] >> 4) + (Five && (qh[l] & u2) ? 16 : 0)) - m2;
        ql += 32;
        is += 2;
        u1 <<= 2;
        u2 <<= 2;
      }
    }
  }

  static void quant(const float *x, uint8_t *b, uint64_t nb) {
    constexpr int kSubs = kQKK / kQK;
    for (uint64_t i = 0; i < nb; ++i, b += kBytes, x += kQKK) {
      float scale[kSubs], negMin[kSubs];
      for (int j = 0; j < kSubs; ++j)
        rangeWithMin(x + kQK * j, kQK, kMax, &scale[j], &negMin[j]);
      const float d = storeScale(b, maxOf(scale, kSubs) / 63.0f);
      const float dmin = storeScale(b + 2, maxOf(negMin, kSubs) / 63.0f);
      const float id = reciprocal(d), idmin = reciprocal(dmin);
      uint8_t *scales = b + 4;
      std::memset(scales, 0, 12);
      uint8_t *qh = b + kQhOff;
      uint8_t *ql = b + kQsOff;
      if (Five)
        std::memset(qh, 0, kQK);
      for (int j = 0; j < kSubs; ++j) {
        const int sc = nearestClamped(scale[j] * id, 0, 63);
        const int m = nearestClamped(negMin[j] * idmin, 0, 63);
        packScaleMinK4(j, sc, m, scales);
        // The values are fit to the quantized sub-scale and min, not the exact ones.
        const float dl = d * sc;
        const float ml = dmin * m;
        const float idl = reciprocal(dl);
        const float *xs = x + kQK * j;
        uint8_t *qs = ql + kQK * (j / 2);
        const int shift = 4 * (j % 2);
        for (int l = 0; l < kQK; ++l) {
          const int q = nearestClamped((xs[l] + ml) * idl, 0, kMax);
          if (shift == 0)
            qs[l] = static_cast<uint8_t>(q & 0xF);
          else
            qs[l] = static_cast<uint8_t>(qs[l] | ((q & 0xF) << 4));
          if (Five)
            qh[l] = static_cast<uint8_t>(qh[l] | ((q >> 4) << j));
        }
      }
    }
  }
};

// Q2_K: {u8 scales[16]; u8 qs[64]; f16 d; f16 dmin}. scales[k] holds sub-block k's 4-bit scale
// (low) and min (high). Element e's 2 bits sit in qs[32 * (e / 128) + e % 32] at bit
// 2 * (e % 128 / 32); Q3_K shares this layout for its low two bits.
constexpr int kQ2KBytes = 16 + 64 + 2 + 2;

inline int kLowBitsIndex(int e) { return 32 * (e / 128) + e % 32; }
inline int kLowBitsShift(int e) { return 2 * (e % 128 / 32); }

void dequantQ2K(const uint8_t *b, float *y, uint64_t nb) {
  for (uint64_t i = 0; i < nb; ++i, b += kQ2KBytes) {
    const float d = loadHalf(b + 80);
    const float min = loadHalf(b + 82);
    const uint8_t *scales = b;
    const uint8_t *q = b + 16;
    int is = 0;
    for (int n = 0; n < kQKK; n += 128) {
      int shift = 0;
      for (int j = 0; j < 4; ++j) {
        uint8_t sc = scales[is++];
        float dl = d * (sc & 0xF), ml = min * (sc >> 4);
        for (int l = 0; l < 16; ++l)
          *y++ = dl * static_cast<int8_t>((q[l] >> shift) & 3) - ml;
        sc = scales[is++];
        dl = d * (sc & 0xF);
        ml = min * (sc >> 4);
        for (int l = 0; l < 16; ++l)
          *y++ = dl * static_cast<int8_t>((q[l + 16] >> shift) & 3) - ml;
        shift += 2;
      }
      q += 32;
    }
  }
}

void quantQ2K(const float *x, uint8_t *b, uint64_t nb) {
  constexpr int kSubs = kQKK / 16;
  for (uint64_t i = 0; i < nb; ++i, b += kQ2KBytes, x += kQKK) {
    float scale[kSubs], negMin[kSubs];
    for (int j = 0; j < kSubs; ++j)
      rangeWithMin(x + 16 * j, 16, 3, &scale[j], &negMin[j]);
    const float d = storeScale(b + 80, maxOf(scale, kSubs) / 15.0f);
    const float dmin = storeScale(b + 82, maxOf(negMin, kSubs) / 15.0f);
    const float id = reciprocal(d), idmin = reciprocal(dmin);
    uint8_t *qs = b + 16;
    std::memset(qs, 0, 64);
    for (int j = 0; j < kSubs; ++j) {
      const int sc = nearestClamped(scale[j] * id, 0, 15);
      const int m = nearestClamped(negMin[j] * idmin, 0, 15);
      b[j] = static_cast<uint8_t>(sc | (m << 4));
      const float dl = d * sc;
      const float ml = dmin * m;
      const float idl = reciprocal(dl);
      for (int l = 0; l < 16; ++l) {
        const int e = 16 * j + l;
        const int q = nearestClamped((x[e] + ml) * idl, 0, 3);
        qs[kLowBitsIndex(e)] = static_cast<uint8_t>(qs[kLowBitsIndex(e)] | (q << kLowBitsShift(e)));
      }
    }
  }
}

// Q3_K: {u8 hmask[32]; u8 qs[64]; u8 scales[12]; f16 d}. Sixteen 6-bit scales stored as ls + 32:
// low nibbles in scales[0..8) (k < 8 low half, k >= 8 high half of scales[k % 8]), top two bits
// in scales[8 + k % 4] at bit 2 * (k / 4). Element e is (low 2 bits, as Q2_K) - 4 unless bit
// e / 32 of hmask[e % 32] is set.
constexpr int kQ3KBytes = 32 + 64 + 12 + 2;

void dequantQ3K(const uint8_t *b, float *y, uint64_t nb) {
  constexpr uint32_t kmask1 = 0x03030303;
  constexpr uint32_t kmask2 = 0x0f0f0f0f;
  for (uint64_t i = 0; i < nb; ++i, b += kQ3KBytes) {
    const float dAll = loadHalf(b + 108);
    const uint8_t *hm = b;
    const uint8_t *q = b + 32;
    uint32_t aux[4];
    for (int k = 0; k < 3; ++k)
      aux[k] = load32(b + 96 + 4 * k);
    const uint32_t tmp = aux[2];
    aux[2] = ((aux[0] >> 4) & kmask2) | (((tmp >> 4) & kmask1) << 4);
    aux[3] = ((aux[1] >> 4) & kmask2) | (((tmp >> 6) & kmask1) << 4);
    aux[0] = (aux[0] & kmask2) | (((tmp >> 0) & kmask1) << 4);
    aux[1] = (aux[1] & kmask2) | (((tmp >> 2) & kmask1) << 4);
    int8_t scales[16];
    for (int k = 0; k < 16; ++k)
      scales[k] = static_cast<int8_t>(aux[k / 4] >> (8 * (k % 4)));
    int is = 0;
    uint8_t m = 1;
    for (int n = 0; n < kQKK; n += 128) {
      int shift = 0;
      for (int j = 0; j < 4; ++j) {
        float dl = dAll * (scales[is++] - 32);
        for (int l = 0; l < 16; ++l)
          *y++ = dl * (static_cast<int8_t>((q[l + 0] >> shift) & 3) - ((hm[l + 0] & m) ? 0 : 4));
        dl = dAll * (scales[is++] - 32);
        for (int l = 0; l < 16; ++l)
          *y++ = dl * (static_cast<int8_t>((q[l + 16] >> shift) & 3) - ((hm[l + 16] & m) ? 0 : 4));
        shift += 2;
        m = static_cast<uint8_t>(m << 1);
      }
      q += 32;
    }
  }
}

void quantQ3K(const float *x, uint8_t *b, uint64_t nb) {
  constexpr int kSubs = kQKK / 16;
  for (uint64_t i = 0; i < nb; ++i, b += kQ3KBytes, x += kQKK) {
    float scale[kSubs];
    for (int j = 0; j < kSubs; ++j)
      scale[j] = signedAbsMax(x + 16 * j, 16) / -4.0f;
    const float d = storeScale(b + 108, signedAbsMax(scale, kSubs) / -32.0f);
    const float id = reciprocal(d);
    uint8_t *hmask = b;
    uint8_t *qs = b + 32;
    uint8_t *scales = b + 96;
    std::memset(b, 0, 96 + 12);
    for (int j = 0; j < kSubs; ++j) {
      const int l = nearestClamped(scale[j] * id, -32, 31);
      const int ls = l + 32;
      scales[j % 8] = static_cast<uint8_t>(scales[j % 8] | ((ls & 0xF) << (j < 8 ? 0 : 4)));
      scales[8 + j % 4] = static_cast<uint8_t>(scales[8 + j % 4] | ((ls >> 4) << (2 * (j / 4))));
      const float dl = d * l;
      const float idl = reciprocal(dl);
      for (int k = 0; k < 16; ++k) {
        const int e = 16 * j + k;
        const int q = nearestClamped(x[e] * idl, -4, 3) + 4;
        if (q > 3)
          hmask[e % 32] = static_cast<uint8_t>(hmask[e % 32] | (1 << (e / 32)));
        qs[kLowBitsIndex(e)] =
            static_cast<uint8_t>(qs[kLowBitsIndex(e)] | ((q & 3) << kLowBitsShift(e)));
      }
    }
  }
}

// Q6_K: {u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d}. Per 128 elements (h = e / 128), quarter
// k = e % 128 / 32 and lane l = e % 32: low nibble of ql[64h + l + 32 (k & 1)] (high nibble when
// k >= 2), top two bits at bit 2k of qh[32h + l]; the quant is stored offset by 32.
constexpr int kQ6KBytes = 128 + 64 + 16 + 2;

void dequantQ6K(const uint8_t *b, float *y, uint64_t nb) {
  for (uint64_t i = 0; i < nb; ++i, b += kQ6KBytes) {
    const float d = loadHalf(b + 208);
    const uint8_t *ql = b;
    const uint8_t *qh = b + 128;
    const int8_t *sc = reinterpret_cast<const int8_t *>(b + 192);
    for (int n = 0; n < kQKK; n += 128) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = static_cast<int8_t>((ql[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = static_cast<int8_t>((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = static_cast<int8_t>((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = static_cast<int8_t>((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l + 0] = d * sc[is + 0] * q1;
        y[l + 32] = d * sc[is + 2] * q2;
        y[l + 64] = d * sc[is + 4] * q3;
        y[l + 96] = d * sc[is + 6] * q4;
      }
      y += 128;
      ql += 64;
      qh += 32;
      sc += 8;
    }
  }
}

void quantQ6K(const float *x, uint8_t *b, uint64_t nb) {
  constexpr int kSubs = kQKK / 16;
  for (uint64_t i = 0; i < nb; ++i, b += kQ6KBytes, x += kQKK) {
    float scale[kSubs];
    for (int j = 0; j < kSubs; ++j)
      scale[j] = signedAbsMax(x + 16 * j, 16) / -32.0f;
    const float d = storeScale(b + 208, signedAbsMax(scale, kSubs) / -128.0f);
    const float id = reciprocal(d);
    uint8_t *ql = b;
    uint8_t *qh = b + 128;
    std::memset(b, 0, 192);
    for (int j = 0; j < kSubs; ++j) {
      const int s = nearestClamped(scale[j] * id, -128, 127);
      b[192 + j] = static_cast<uint8_t>(static_cast<int8_t>(s));
      const float dl = d * s;
      const float idl = reciprocal(dl);
      for (int k = 0; k < 16; ++k) {
        const int e = 16 * j + k;
        const int q = nearestClamped(x[e] * idl, -32, 31) + 32;
        const int h = e / 128, quarter = e % 128 / 32, lane = e % 32;
        uint8_t &lo = ql[64 * h + lane + 32 * (quarter & 1)];
        lo = static_cast<uint8_t>(lo | ((q & 0xF) << (quarter >= 2 ? 4 : 0)));
        uint8_t &hi = qh[32 * h + lane];
        hi = static_cast<uint8_t>(hi | ((q >> 4) << (2 * quarter)));
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------

struct Codec {
  GgmlType type;
  void (*dequant)(const uint8_t *src, float *dst, uint64_t blocks);
  void (*quant)(const float *src, uint8_t *dst, uint64_t blocks);
};

const Codec kCodecs[] = {
    {GgmlType::F32, dequantF32, quantF32},
    {GgmlType::F16, dequantF16, quantF16},
    {GgmlType::BF16, dequantBF16, quantBF16},
    {GgmlType::Q8_0, dequantQ8_0, quantQ8_0},
    {GgmlType::Q4_0, Legacy<4, false>::dequant, Legacy<4, false>::quant},
    {GgmlType::Q4_1, Legacy<4, true>::dequant, Legacy<4, true>::quant},
    {GgmlType::Q5_0, Legacy<5, false>::dequant, Legacy<5, false>::quant},
    {GgmlType::Q5_1, Legacy<5, true>::dequant, Legacy<5, true>::quant},
    {GgmlType::Q2_K, dequantQ2K, quantQ2K},
    {GgmlType::Q3_K, dequantQ3K, quantQ3K},
    {GgmlType::Q4_K, Q45K<false>::dequant, Q45K<false>::quant},
    {GgmlType::Q5_K, Q45K<true>::dequant, Q45K<true>::quant},
    {GgmlType::Q6_K, dequantQ6K, quantQ6K},
    {GgmlType::IQ4_NL, dequantIq4Nl, quantIq4Nl},
    {GgmlType::IQ4_XS, dequantIq4Xs, quantIq4Xs},
};

// The block sizes above are ggml's; ggml_types.cpp's table states the same facts.
static_assert(Legacy<4, false>::kBytes == 18 && Legacy<4, true>::kBytes == 20 &&
                  Legacy<5, false>::kBytes == 22 && Legacy<5, true>::kBytes == 24,
              "legacy block sizes");
static_assert(kQ8_0Bytes == 34 && kIq4NlBytes == 18 && kIq4XsBytes == 136, "block sizes");
static_assert(kQ2KBytes == 84 && kQ3KBytes == 110 && Q45K<false>::kBytes == 144 &&
                  Q45K<true>::kBytes == 176 && kQ6KBytes == 210,
              "K-quant block sizes");

const Codec *findCodec(GgmlType type) {
  for (const Codec &c : kCodecs)
    if (c.type == type)
      return &c;
  return nullptr;
}

// Shared argument checks; on success *blocks is the number of blocks in the row.
Status checkRow(const char *fn, GgmlType type, uint64_t n, size_t bytes, const char *bufName,
                const void *src, const void *dst, uint64_t *blocks) {
  if (!findCodec(type))
    return makeStatus(StatusCode::kUnimplemented, "%s: type %s is not supported", fn,
                      ggmlTypeName(type));
  const GgmlTypeTraits &t = ggmlTypeTraits(type);
  if (n % t.blockElems != 0)
    return makeStatus(StatusCode::kInvalidArgument,
                      "%s: %llu elements is not a whole number of %u-element %s blocks", fn,
                      static_cast<unsigned long long>(n), t.blockElems, t.name);
  std::optional<uint64_t> need = ggmlRowBytes(type, n);
  if (!need)
    return makeStatus(StatusCode::kInvalidArgument, "%s: a %s row of %llu elements overflows", fn,
                      t.name, static_cast<unsigned long long>(n));
  if (bytes < *need)
    return makeStatus(StatusCode::kInvalidArgument,
                      "%s: %s is %zu bytes, a %s row of %llu elements needs %llu", fn, bufName,
                      bytes, t.name, static_cast<unsigned long long>(n),
                      static_cast<unsigned long long>(*need));
  if (n != 0 && (!src || !dst))
    return makeStatus(StatusCode::kInvalidArgument, "%s: null buffer for %llu elements", fn,
                      static_cast<unsigned long long>(n));
  *blocks = n / t.blockElems;
  return Status::ok();
}

} // namespace

bool canDequantize(GgmlType type) { return findCodec(type) != nullptr; }
bool canQuantize(GgmlType type) { return findCodec(type) != nullptr; }

Status dequantizeRow(GgmlType type, const void *src, size_t srcBytes, float *dst, uint64_t n) {
  uint64_t blocks = 0;
  GLM5_RETURN_IF_ERROR(checkRow("dequantizeRow", type, n, srcBytes, "source", src, dst, &blocks));
  if (blocks)
    findCodec(type)->dequant(static_cast<const uint8_t *>(src), dst, blocks);
  return Status::ok();
}

Status quantizeRow(GgmlType type, const float *src, uint64_t n, void *dst, size_t dstBytes) {
  uint64_t blocks = 0;
  GLM5_RETURN_IF_ERROR(
      checkRow("quantizeRow", type, n, dstBytes, "destination", src, dst, &blocks));
  if (blocks)
    findCodec(type)->quant(src, static_cast<uint8_t *>(dst), blocks);
  return Status::ok();
}

} // namespace glm5rt::gguf

// Device dequantization of GGUF weight blocks (docs/gguf.md "Quant blocks"), bit-exact with the
// host dequantizeRow, in the two shapes the qlinear kernels consume.
//
// GLM_WTYPE (a ggml type id, defined before this file) selects the format: F32 0, F16 1, Q4_0 2,
// Q8_0 8, Q4_K 12, Q5_K 13, Q6_K 14, BF16 30.
//
// 1. glm_dq32(row, s, y): the 32 fp32 values of elements [32 s, 32 s + 32) of a weight row. Exact:
//    every scale product of the host formula (d * sc, dmin * m, d * sc * q, d * q) is exact in fp32
//    (at most 11 + 8 + 6 significant bits), so the one rounding left (d1 * q - m1) is the same with
//    or without FMA contraction. Global loads are 16-byte where the layout keeps 16-byte alignment
//    (F32, F16, BF16 rows of K % 32 == 0; Q4_K and Q5_K blocks of 144 and 176 B), and 4-byte,
//    or pairs of halfwords when the address is only 2-byte aligned, for the 34-, 18- and 210-byte
//    blocks of Q8_0, Q4_0 and Q6_K.
//
// 2. glm_mv_step(...): the bf16 mma.sync A fragments of one 256-element step of two weight rows
//    (rows g and g + 8 of an m16 tile), taken from the raw bytes a decode kernel staged in shared
//    memory. The quants go into the fragments as exact small integers (128 + q, built by OR-ing q
//    into the mantissa of bf16 128.0; Q8_0 through an exact fp32 -> bf16 conversion), so the tensor
//    core computes D = sum (128 + q) x per scale group; the group's scale, min and the 128 offset
//    are applied in fp32 afterwards with the sum of x over the group (xsum):
//      sum_k (d1 q_k - m1) x_k = d1 D - (128 d1 + m1) sum_k x_k.
//    Inside a 16-wide k step, thread t's four values are the consecutive elements e, e+1, e+2, e+3
//    (one 32-bit word of quants); they stand for the mma's logical k = 2t, 2t+8, 2t+1, 2t+9, i.e. a
//    register holds the pair (e, e+2) or (e+1, e+3). x is staged with the same permutation, so the
//    product is unchanged. Which elements thread t owns:
//      P4 (Q4_0, Q8_0, Q6_K): in each 16-element span, elements 4t .. 4t+3;
//      P8 (Q4_K, Q5_K, BF16): in each 32-element span, elements 8t .. 8t+7, the first four in
//          the span's first k step and the last four in its second;
//    glm_x_perm_group gives the staged position of x accordingly.
//
// 3. glm_mv_step_i8(...) (GLM_MV_XI8): the same step of Q4_0, Q4_K, Q5_K and Q6_K with x staged
//    as int8, the quants entering integer mma.sync as they are stored (see its definition).
#pragma once
#include "common.cuh"

typedef unsigned char glm_u8;

#define GLM_T_F32 0
#define GLM_T_F16 1
#define GLM_T_Q4_0 2
#define GLM_T_Q8_0 8
#define GLM_T_Q4_K 12
#define GLM_T_Q5_K 13
#define GLM_T_Q6_K 14
#define GLM_T_BF16 30

#ifndef GLM_WTYPE
#error "GLM_WTYPE (the ggml type id of the weight) must be defined"
#endif
// The plain 16-bit weight types: their mma step takes the values as stored (no scales).
#define GLM_MV_PLAIN16 (GLM_WTYPE == GLM_T_BF16 || GLM_WTYPE == GLM_T_F16)
// GLM_MV_XF16: the mma decode step takes x as fp16 (see glm_mv_mma). The registry sets it for
// every mma decode instantiation (QLinearConfig::xf16, its rule qlinearXf16); otherwise bf16.
#ifndef GLM_MV_XF16
#define GLM_MV_XF16 0
#endif
// GLM_MV_XI8: the mma decode step takes x as int8 (glm_mv_step_i8). The registry sets it for
// Q4_0, Q4_K, Q5_K and Q6_K at two to four tokens (QLinearConfig::xi8, its rule qlinearXi8).
#ifndef GLM_MV_XI8
#define GLM_MV_XI8 0
#endif

// GLM_QK: elements per block; GLM_QBYTES: bytes per block (plain types: a 32-element "block").
// GLM_MV_MMA: the mma decode step exists. GLM_MV_P8: its element ownership is P8 (else P4).
// GLM_XSUM_GRAN: elements per scale group whose x sum the step needs (0: none).
// GLM_MV_ALIGNED16: a row's step bytes start 16-byte aligned whenever the weight base is.
#if GLM_WTYPE == GLM_T_F32
#define GLM_QK 32
#define GLM_QBYTES 128
#define GLM_MV_MMA 0
#elif GLM_WTYPE == GLM_T_F16 // the mma step takes its halves as they are: fp16 x only
#define GLM_QK 32
#define GLM_QBYTES 64
#define GLM_MV_MMA 1
#define GLM_MV_P8 1
#define GLM_XSUM_GRAN 0
#define GLM_MV_ALIGNED16 1
#elif GLM_WTYPE == GLM_T_BF16
#define GLM_QK 32
#define GLM_QBYTES 64
#define GLM_MV_MMA 1
#define GLM_MV_P8 1
#define GLM_XSUM_GRAN 0
#define GLM_MV_ALIGNED16 1
#elif GLM_WTYPE == GLM_T_Q8_0
#define GLM_QK 32
#define GLM_QBYTES 34
#define GLM_MV_MMA 1
#define GLM_MV_P8 0
#define GLM_XSUM_GRAN (GLM_MV_XF16 ? 32 : 0) // fp16 quants carry an offset (see its step)
#define GLM_MV_ALIGNED16 0
#elif GLM_WTYPE == GLM_T_Q4_0
#define GLM_QK 32
#define GLM_QBYTES 18
#define GLM_MV_MMA 1
#define GLM_MV_P8 0
#define GLM_XSUM_GRAN 32
#define GLM_MV_ALIGNED16 0
#elif GLM_WTYPE == GLM_T_Q4_K
#define GLM_QK 256
#define GLM_QBYTES 144
#define GLM_MV_MMA 1
#define GLM_MV_P8 1
#define GLM_XSUM_GRAN 32
#define GLM_MV_ALIGNED16 1
#define GLM_MV_SLOT_PAD 16 // see GLM_SLOT (qlinear.cuh)
#elif GLM_WTYPE == GLM_T_Q5_K
#define GLM_QK 256
#define GLM_QBYTES 176
#define GLM_MV_MMA 1
#define GLM_MV_P8 1
#define GLM_XSUM_GRAN 32
#define GLM_MV_ALIGNED16 1
#elif GLM_WTYPE == GLM_T_Q6_K
#define GLM_QK 256
#define GLM_QBYTES 210
#define GLM_MV_MMA 1
#define GLM_MV_P8 0
#define GLM_XSUM_GRAN 16
#define GLM_MV_ALIGNED16 0
#else
#error "unsupported GLM_WTYPE"
#endif
// Where the fold's x sums come from with more than four tokens: Q6_K has the tensor core take
// its offset out of D instead (GLM_MV_OFFSET_MMA, glm_mv_offset), the other types sum x on it
// in the steps (GLM_MV_XSUM_MMA, glm_mv_xsum); otherwise the x staging sums each group
// (GLM_XSUM_STAGED, qlinear.cuh).
#if defined(GLM_TOKENS) && GLM_TOKENS > 4 && GLM_WTYPE == GLM_T_Q6_K && !GLM_MV_XI8
#define GLM_MV_OFFSET_MMA 1
#else
#define GLM_MV_OFFSET_MMA 0
#endif
#if defined(GLM_TOKENS) && GLM_TOKENS > 4 && GLM_XSUM_GRAN != 0 && !GLM_MV_OFFSET_MMA &&       \
    !GLM_MV_XI8
#define GLM_MV_XSUM_MMA 1
#else
#define GLM_MV_XSUM_MMA 0
#endif
// (int8 x stages sums of its own: glm_mv_step_i8.)
#define GLM_XSUM_STAGED                                                                          \
  (GLM_XSUM_GRAN != 0 && !GLM_MV_XSUM_MMA && !GLM_MV_OFFSET_MMA && !GLM_MV_XI8)

// The mma decode step: 256 elements of a row (one K-quant block, eight 32-element blocks).
#define GLM_MV_STEP 256
#define GLM_MV_STEP_BYTES (GLM_MV_STEP / GLM_QK * GLM_QBYTES)

// ---------------------------------------------------------------------------------------------
// Scalar helpers.

// Exact fp32 of an unsigned integer v < 2^23: 2^23 + v has v as its mantissa.
__device__ __forceinline__ float glm_uint_f32(uint32_t v) {
  return __uint_as_float(0x4B000000u | v) - 8388608.0f;
}
// Exact fp32 of byte k of w, unsigned and signed (int8).
__device__ __forceinline__ float glm_byte_f32(uint32_t w, int k) {
  return __uint_as_float(__byte_perm(w, 0x4B000000u, 0x7440 + k)) - 8388608.0f;
}
__device__ __forceinline__ float glm_sbyte_f32(uint32_t w, int k) {
  return __uint_as_float(__byte_perm(w ^ 0x80808080u, 0x4B000000u, 0x7440 + k)) - 8388736.0f;
}
// Exact fp32 of a signed byte given as 0..255.
__device__ __forceinline__ float glm_s8_f32(uint32_t b) {
  return __uint_as_float((b ^ 0x80u) | 0x4B000000u) - 8388736.0f;
}
// s * (byte k of w), exact whenever the product fits 24 bits, in two instructions: with
// s2 = s * 2^23 (exact) and f = 1 + byte * 2^-23 (the byte OR-ed into 1.0's mantissa),
// fma(s2, f, -s2) is exactly s * byte, rounded once.
__device__ __forceinline__ float glm_mul_byte(float s2, uint32_t w, int k) {
  return fmaf(s2, __uint_as_float(__byte_perm(w, 0x3F800000u, 0x7650 + k)), -s2);
}
// d * (int8) b for a raw byte b, likewise: d2 = d * 2^23, dn = d * (2^23 + 128) (both exact).
__device__ __forceinline__ float glm_mul_s8(float d2, float dn, uint32_t b) {
  return fmaf(d2, __uint_as_float((b ^ 0x80u) | 0x3F800000u), -dn);
}
__device__ __forceinline__ float glm_half_f32(uint32_t bits) {
  return glm_f16_to_f32(static_cast<unsigned short>(bits & 0xFFFFu));
}

// Global loads (read-only path).
__device__ __forceinline__ uint4 glm_ldg16(const glm_u8 *p) {
  return __ldg(reinterpret_cast<const uint4 *>(p));
}
__device__ __forceinline__ uint32_t glm_ldg_u16(const glm_u8 *p) {
  return __ldg(reinterpret_cast<const unsigned short *>(p));
}
// N little-endian words from a 2-byte-aligned address: 4-byte loads when it is 4-byte aligned,
// else halfword pairs (no byte outside [p, p + 4N) is read).
template <int N> __device__ __forceinline__ void glm_ldg_words(const glm_u8 *p, uint32_t (&w)[N]) {
  if ((reinterpret_cast<unsigned long long>(p) & 3) == 0) {
#pragma unroll
    for (int i = 0; i < N; ++i)
      w[i] = __ldg(reinterpret_cast<const uint32_t *>(p) + i);
  } else {
    const unsigned short *h = reinterpret_cast<const unsigned short *>(p);
#pragma unroll
    for (int i = 0; i < N; ++i)
      w[i] = __byte_perm(__ldg(h + 2 * i), __ldg(h + 2 * i + 1), 0x5410);
  }
}

// (a & mask) | c in one LOP3: with two immediates the compiler spends two instructions, so the
// constant c is passed in a register.
template <uint32_t kMask> __device__ __forceinline__ uint32_t glm_and_or(uint32_t a, uint32_t c) {
  uint32_t d;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(d) : "r"(a), "n"(kMask), "r"(c));
  return d;
}

// a | (b & mask) in one LOP3.
template <uint32_t kMask> __device__ __forceinline__ uint32_t glm_or_and(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("lop3.b32 %0, %1, %2, %3, 0xF8;" : "=r"(d) : "r"(a), "r"(b), "n"(kMask));
  return d;
}

// Shared-memory loads of staged raw bytes.
__device__ __forceinline__ uint4 glm_lds16(const glm_u8 *p) {
  return *reinterpret_cast<const uint4 *>(p);
}
__device__ __forceinline__ uint2 glm_lds8(const glm_u8 *p) {
  return *reinterpret_cast<const uint2 *>(p);
}
__device__ __forceinline__ uint32_t glm_lds_u16(const glm_u8 *p) {
  return *reinterpret_cast<const unsigned short *>(p);
}
// A word at a 2-byte-aligned shared address.
__device__ __forceinline__ uint32_t glm_lds_u32_a2(const glm_u8 *p) {
  const unsigned short *h = reinterpret_cast<const unsigned short *>(p);
  return __byte_perm(h[0], h[1], 0x5410);
}
// A quant word of block jb of a staged step of 32-element blocks (Q8_0's 34 bytes, Q4_0's 18).
// With 16-byte-aligned rows (GLM_MV_ROWS16) a step starts 16-byte aligned in its slot, so an odd
// block's words are 4-byte aligned: one load instead of two halves and a permute.
__device__ __forceinline__ uint32_t glm_blk_word(const glm_u8 *p, int jb) {
#if defined(GLM_MV_ROWS16) && GLM_MV_ROWS16
  if (jb & 1)
    return *reinterpret_cast<const uint32_t *>(p);
#endif
  (void)jb;
  return glm_lds_u32_a2(p);
}

// Q4_K / Q5_K 6-bit scales and mins from the 12 scale bytes (header words h.y, h.z, h.w):
// sub-blocks 0-3 in the low words, 4-7 in the high words, one byte per sub-block.
struct glm_k4_scales {
  uint32_t sc_lo, sc_hi, mn_lo, mn_hi;
};
__device__ __forceinline__ glm_k4_scales glm_k4_unpack(uint4 h) {
  glm_k4_scales s;
  s.sc_lo = h.y & 0x3F3F3F3Fu;
  s.mn_lo = h.z & 0x3F3F3F3Fu;
  s.sc_hi = (h.w & 0x0F0F0F0Fu) | ((h.y >> 2) & 0x30303030u);
  s.mn_hi = ((h.w >> 4) & 0x0F0F0F0Fu) | ((h.z >> 2) & 0x30303030u);
  return s;
}

// ---------------------------------------------------------------------------------------------
// glm_dq32: exact fp32 values of elements [32 s, 32 s + 32) of `row` (a row's first byte).

__device__ __forceinline__ void glm_dq32(const glm_u8 *row, long long s, float (&y)[32]) {
#if GLM_WTYPE == GLM_T_F32
  const glm_u8 *p = row + 128 * s;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    uint4 v = glm_ldg16(p + 16 * i);
    y[4 * i + 0] = __uint_as_float(v.x);
    y[4 * i + 1] = __uint_as_float(v.y);
    y[4 * i + 2] = __uint_as_float(v.z);
    y[4 * i + 3] = __uint_as_float(v.w);
  }
#elif GLM_WTYPE == GLM_T_F16 || GLM_WTYPE == GLM_T_BF16
  const glm_u8 *p = row + 64 * s;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    uint4 v = glm_ldg16(p + 16 * i);
    uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
#if GLM_WTYPE == GLM_T_F16
      y[8 * i + 2 * j] = glm_half_f32(w[j]);
      y[8 * i + 2 * j + 1] = glm_half_f32(w[j] >> 16);
#else
      y[8 * i + 2 * j] = __uint_as_float(w[j] << 16);
      y[8 * i + 2 * j + 1] = __uint_as_float(w[j] & 0xFFFF0000u);
#endif
    }
  }
#elif GLM_WTYPE == GLM_T_Q8_0
  // {f16 d; i8 qs[32]}: y[j] = qs[j] * d.
  const glm_u8 *b = row + 34 * s;
  const float d = glm_half_f32(glm_ldg_u16(b));
  uint32_t w[8];
  glm_ldg_words<8>(b + 2, w);
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int k = 0; k < 4; ++k)
      y[4 * i + k] = glm_sbyte_f32(w[i], k) * d;
#elif GLM_WTYPE == GLM_T_Q4_0
  // {f16 d; u8 qs[16]}: y[j] = ((qs[j] & 15) - 8) d, y[j + 16] = ((qs[j] >> 4) - 8) d.
  const glm_u8 *b = row + 18 * s;
  const float d = glm_half_f32(glm_ldg_u16(b));
  uint32_t w[4];
  glm_ldg_words<4>(b + 2, w);
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      y[4 * i + k] = (glm_uint_f32((w[i] >> (8 * k)) & 0xFu) - 8.0f) * d;
      y[16 + 4 * i + k] = (glm_uint_f32((w[i] >> (8 * k + 4)) & 0xFu) - 8.0f) * d;
    }
#elif GLM_WTYPE == GLM_T_Q4_K || GLM_WTYPE == GLM_T_Q5_K
  // Sub-block j of the block: chunk j / 2 of the quants, low nibbles for even j, high for odd;
  // y = d sc_j q - dmin m_j, with q += 16 when bit j of qh[l] is set (Q5_K).
  const glm_u8 *b = row + GLM_QBYTES * (s >> 3);
  const int j = static_cast<int>(s & 7);
  const uint4 h = glm_ldg16(b);
  const glm_k4_scales sm = glm_k4_unpack(h);
  const int sh = 8 * (j & 3);
  const uint32_t sc = ((j < 4 ? sm.sc_lo : sm.sc_hi) >> sh) & 0xFFu;
  const uint32_t mn = ((j < 4 ? sm.mn_lo : sm.mn_hi) >> sh) & 0xFFu;
  const float d1 = glm_half_f32(h.x) * glm_uint_f32(sc);
  const float m1 = glm_half_f32(h.x >> 16) * glm_uint_f32(mn);
#if GLM_WTYPE == GLM_T_Q4_K
  const glm_u8 *qs = b + 16 + 32 * (j >> 1);
#else
  const glm_u8 *qs = b + 48 + 32 * (j >> 1);
  const uint4 h0 = glm_ldg16(b + 16), h1 = glm_ldg16(b + 32);
  const uint32_t qh[8] = {h0.x, h0.y, h0.z, h0.w, h1.x, h1.y, h1.z, h1.w};
#endif
  const uint4 q0 = glm_ldg16(qs), q1 = glm_ldg16(qs + 16);
  const uint32_t w[8] = {q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w};
  const int nib = 4 * (j & 1);
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      uint32_t q = (w[i] >> (8 * k + nib)) & 0xFu;
#if GLM_WTYPE == GLM_T_Q5_K
      q |= ((qh[i] >> (8 * k + j)) & 1u) << 4;
#endif
      y[4 * i + k] = d1 * glm_uint_f32(q) - m1;
    }
#elif GLM_WTYPE == GLM_T_Q6_K
  // Sub-block j: half n = j / 4, quarter qq = j % 4: ql[64 n + 32 (qq & 1) + l] (high nibble for
  // qq >= 2), bits 2 qq of qh[32 n + l], scales 8 n + 2 qq + l / 16; y = d sc (q - 32).
  const glm_u8 *b = row + 210 * (s >> 3);
  const int j = static_cast<int>(s & 7), n = j >> 2, qq = j & 3;
  uint32_t ql[8], qh[8];
  glm_ldg_words<8>(b + 64 * n + 32 * (qq & 1), ql);
  glm_ldg_words<8>(b + 128 + 32 * n, qh);
  const float d = glm_half_f32(glm_ldg_u16(b + 208));
  const int is = 8 * n + 2 * qq;
  const float ds0 = d * glm_s8_f32(__ldg(b + 192 + is)), ds1 = d * glm_s8_f32(__ldg(b + 193 + is));
  const int nib = 4 * (qq >> 1), hs = 2 * qq;
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      uint32_t q = ((ql[i] >> (8 * k + nib)) & 0xFu) | (((qh[i] >> (8 * k + hs)) & 3u) << 4);
      y[4 * i + k] = (i < 4 ? ds0 : ds1) * (glm_uint_f32(q) - 32.0f);
    }
#endif
}

// 32 values as bf16 at dst (16-byte aligned): four 16-byte stores.
__device__ __forceinline__ void glm_store_bf16x32(const float (&v)[32], glm_bf16 *dst) {
  uint4 *d = reinterpret_cast<uint4 *>(dst);
#pragma unroll
  for (int q = 0; q < 4; ++q)
    d[q] = make_uint4(glm_pack_bf16x2(v[8 * q], v[8 * q + 1]),
                      glm_pack_bf16x2(v[8 * q + 2], v[8 * q + 3]),
                      glm_pack_bf16x2(v[8 * q + 4], v[8 * q + 5]),
                      glm_pack_bf16x2(v[8 * q + 6], v[8 * q + 7]));
}

// ---------------------------------------------------------------------------------------------
// The mma decode step (see the header comment). Only for the types with GLM_MV_MMA, bf16
// activations and a decode instantiation (GLM_TOKENS defined).
#if GLM_MV_MMA && !GLM_ACT_F32 && defined(GLM_TOKENS)

// Position (in groups of 4 elements) where x group G of a staged chunk is stored, and the order
// inside a group: (e, e+2, e+1, e+3), so an 8-byte load gives the B registers (e, e+2), (e+1, e+3).
__device__ __forceinline__ int glm_x_perm_group(int G) {
#if GLM_MV_P8
  // In a 32-span, group 2u + v (elements 8u + 4v ..) goes to 4v + u: the four groups one k step
  // reads are contiguous.
  return (G & ~7) + 4 * (G & 1) + ((G & 7) >> 1);
#else
  return G;
#endif
}

// B fragment (x) for the k step whose staged elements start at `e16` (a multiple of 16): token g
// (staged rows `xrow` bf16 apart), the four values thread t pairs with its A elements. Tokens
// >= GLM_TOKENS multiply zeros.
__device__ __forceinline__ uint2 glm_mv_b(const glm_bf16 *xs, int xrow, int g, int t, int e16) {
  if (g < GLM_TOKENS)
    return *reinterpret_cast<const uint2 *>(xs + g * xrow + e16 + 4 * t);
  return make_uint2(0u, 0u);
}

// One token (GLM_MV_COLS): the step's scale groups take the mma's eight n columns instead of the
// tokens. In a round of up to eight consecutive groups, group j multiplies x in column
// glm_mv_col(j) and zeros in the others, so after the round D[row][col(j)] = sum over group j of
// (128 + q) x: one fold per round instead of one per group (the fp32 work of the step drops
// about fourfold), and thread t folds only its own columns 2t and 2t + 1, i.e. groups t and
// t + 4 of the round, into acc[0] (row g) and acc[2] (row g + 8). Those are partial sums over the
// thread's groups: the caller adds the four lanes of a quad at the end (acc[1], acc[3] unused).
// Not for BF16 and F16 (no scales) nor Q8_0, whose per-block fold is already just the scale
// (measured slower on the H200 with columns: lm_head 331.8 -> 343.6 us).
#define GLM_MV_COLS (GLM_TOKENS == 1 && !GLM_MV_PLAIN16 && GLM_WTYPE != GLM_T_Q8_0)
__device__ __forceinline__ constexpr int glm_mv_col(int j) { return 2 * (j & 3) + (j >> 2); }
// Where lane (g, t) reads group j's B fragment, relative to x: 0 (x, token row 0) when its
// column is col(j), else the staged zero row `xrow` further on. Fixed for a lane: the decode
// kernel computes them once (per step, each one's compare and select were two integer-pipe
// instructions, which bound the one-token Q4_K step).
struct glm_mv_xoff {
  int o[8];
};
__device__ __forceinline__ glm_mv_xoff glm_mv_xoff_of(int g, int xrow) {
  glm_mv_xoff x;
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    x.o[j] = g == glm_mv_col(j) ? 0 : xrow;
    asm volatile("" : "+r"(x.o[j])); // kept in a register: not recomputed per step
  }
  return x;
}
// B fragment of group j's k step at staged element e16: x in column col(j), zeros elsewhere.
__device__ __forceinline__ uint2 glm_mv_bcol(const glm_bf16 *xs, const glm_mv_xoff &xo, int t,
                                             int e16, int j) {
  return *reinterpret_cast<const uint2 *>(xs + xo.o[j] + e16 + 4 * t);
}
// B fragment of group j's k step in either mode.
__device__ __forceinline__ uint2 glm_mv_bx(const glm_bf16 *xs, int xrow, const glm_mv_xoff &xo,
                                           int g, int t, int e16, int j) {
#if GLM_MV_COLS
  return glm_mv_bcol(xs, xo, t, e16, j);
#else
  return glm_mv_b(xs, xrow, g, t, e16);
#endif
}
// One-token fold of a round: acc[0] += row g's groups t and t + 4 (D[0], D[1]) with scales s0, s1
// and offsets o0, o1 times the groups' x sums x0, x1; acc[2] likewise for row g + 8 (D[2], D[3]).
__device__ __forceinline__ void glm_mv_fold_cols(float (&acc)[4], const float (&D)[4], float sa0,
                                                 float oa0, float sa1, float oa1, float sb0,
                                                 float ob0, float sb1, float ob1, float x0,
                                                 float x1) {
  acc[0] = fmaf(sa0, D[0], fmaf(sa1, D[1], fmaf(-oa0, x0, fmaf(-oa1, x1, acc[0]))));
  acc[2] = fmaf(sb0, D[2], fmaf(sb1, D[3], fmaf(-ob0, x0, fmaf(-ob1, x1, acc[2]))));
}

// acc[0..3] += the fragment D scaled per row: rows g (D[0], D[1]: tokens 2t, 2t+1) and g + 8
// (D[2], D[3]); `off` is the per-row offset times the group's x sum (sx: tokens 2t, 2t+1).
__device__ __forceinline__ void glm_mv_fold(float (&acc)[4], const float (&D)[4], float sa,
                                            float oa, float sb, float ob, float2 sx) {
  acc[0] = fmaf(sa, D[0], fmaf(-oa, sx.x, acc[0]));
  acc[1] = fmaf(sa, D[1], fmaf(-oa, sx.y, acc[1]));
  acc[2] = fmaf(sb, D[2], fmaf(-ob, sx.x, acc[2]));
  acc[3] = fmaf(sb, D[3], fmaf(-ob, sx.y, acc[3]));
}

// acc[0..3] += the fragment D scaled per row (rows g: D[0], D[1]; g + 8: D[2], D[3]).
__device__ __forceinline__ void glm_mv_fold_scale(float (&acc)[4], const float (&D)[4], float sa,
                                                  float sb) {
  acc[0] = fmaf(sa, D[0], acc[0]);
  acc[1] = fmaf(sa, D[1], acc[1]);
  acc[2] = fmaf(sb, D[2], acc[2]);
  acc[3] = fmaf(sb, D[3], acc[3]);
}

// bf16 pair (128 + lo, 128 + hi) from two small integers already at bits 0.. and 16..
#define GLM_BF16_128 0x43004300u

// GLM_MV_XF16 (Q4_K, Q5_K, Q8_0): x is staged as fp16 and the quants enter the mma as fp16.
// 4-bit quants: fp16's 10-bit mantissa holds a nibble at bits 0..3 or 4..7 under 1024's exponent
// (ulp 1): one LOP3 makes (1024 + q) of a low nibble and (1024 + 16 q) of a high one in place, so
// a word's eight nibbles take one shift (bytes 1 and 3) instead of three (as bf16, with 7
// mantissa bits, every nibble has to be shifted to bits 0..3). A high-nibble group's scale
// carries the 1/16: d (q) = (d / 16) (16 q), and both offsets are then 1024 times the scale.
// fp16 x is exact for bf16 values of magnitude 2^-14 .. 65504; the decode CTA scales a chunk by a
// power of two when it holds larger ones (glm_stage_x), and the x sums are taken from the fp16
// values themselves.
// Q8_0: the biased byte q + 128 under 1024 (1152 + q, exact; bf16's 8 bits hold no such range),
// one byte permute per register instead of three instructions per value.
// The registry's rule (qlinearXf16): Q5_K with one token, where it measured 4.5% faster on the
// H200 (the fifth bits make its extraction the longest); Q8_0 with 1-4 tokens (lm_head 2-4%
// faster). Q4_K was even, and Q8_0 at 8 tokens even: the conversion and the x sums are paid in
// the x staging, once per chunk and CTA.
static_assert(!GLM_MV_XF16 || GLM_WTYPE == GLM_T_Q4_K || GLM_WTYPE == GLM_T_Q5_K ||
                  GLM_WTYPE == GLM_T_Q8_0 || GLM_WTYPE == GLM_T_F16,
              "fp16 x: the K-quant 4-bit steps, Q8_0's and F16's");
static_assert(!(GLM_WTYPE == GLM_T_Q8_0 && GLM_MV_XSUM_MMA),
              "fp16 Q8_0 (at most four tokens) folds with staged x sums");
// F16 weights enter the mma as they are stored, so their step is for fp16 x only (as bf16
// fragments they would lose three bits): qlinear.cuh asserts it where the step is used.
#define GLM_F16_1024 0x64006400u
// The step's mma: fp16 operands with GLM_MV_XF16, else bf16.
__device__ __forceinline__ void glm_mv_mma(float (&d)[4], const uint32_t (&a)[4], uint2 b) {
  glm_mma_16816<GLM_MV_XF16 != 0>(d, a, b.x, b.y);
}
// x sums with more than four tokens (GLM_MV_XSUM_MMA, above): the tensor core adds a scale
// group's x, as an mma of an A fragment of ones with the group's B fragments (the same registers
// the weights' mma takes), into s: s[0], s[1] are the sums of tokens 2t and 2t + 1 (s[2], s[3]
// the same again), the columns of this thread's C fragment, which is where the fold needs them.
// Two or one mma per group replace the staging's sums, whose conversions, adds and shuffles grow
// with the tokens, and the fold's shared-memory load. Measured on the H200 (SM120 tiles): eight
// tokens 2-5% faster for every quantized type, two tokens 2-4% slower (the staging's sums are
// cheap there). The products are exact (x times 1); the sum is rounded as an fp32 accumulation.
__device__ __forceinline__ void glm_mv_xsum(float (&s)[4], uint2 b) {
#if GLM_MV_XSUM_MMA
  constexpr uint32_t kOne = GLM_MV_XF16 ? 0x3C003C00u : 0x3F803F80u; // (1, 1) as fp16 or bf16
  const uint32_t a[4] = {kOne, kOne, kOne, kOne};
  glm_mv_mma(s, a, b);
#endif
}
// Q6_K with more than four tokens (GLM_MV_OFFSET_MMA): an mma of an A fragment of -160 (bf16
// pairs) with the group's B fragment adds -160 sum x into D, so D = sum (v - 32) x and the fold
// is the scale alone: four FMAs per 16-element group instead of eight and the scale's offset
// products, no x sums. The products are exact (an 8-bit significand times x); D's cancellation
// is the one the fold's subtraction had, in the tensor core's fp32 accumulator. Measured on the
// H200 (SM120 tiles): Q6_K at eight tokens 4-5% faster than with glm_mv_xsum (head 302.3 ->
// 286.6 us); Q6_K at two tokens, Q4_0 at 2-8 and fp16 Q8_0 at 1-4 tokens lost 2-8% (one more
// mma per group where the fold is cheaper), so they keep their x sums.
__device__ __forceinline__ void glm_mv_offset(float (&d)[4], uint2 b) {
#if GLM_MV_OFFSET_MMA
  constexpr uint32_t kNeg160 = 0xC320C320u;
  const uint32_t a[4] = {kNeg160, kNeg160, kNeg160, kNeg160};
  glm_mv_mma(d, a, b);
#endif
}
// The fold's x sums of tokens 2t, 2t + 1: from glm_mv_xsum's s, or staged ([group][8 tokens],
// xg at the group's first token).
__device__ __forceinline__ float2 glm_mv_sx(const float (&s)[4], const float *xg, int t) {
#if GLM_MV_XSUM_MMA
  return make_float2(s[0], s[1]);
#else
  return *reinterpret_cast<const float2 *>(xg + 2 * t);
#endif
}
// A registers of the low (hi = 0) or high nibbles of a quant word: the pairs of bytes 0 and 2
// (.x: elements (e, e+2)) and of bytes 1 and 3 (.y: (e+1, e+3)). fp16 (GLM_MV_XF16): 1024 + q,
// or 1024 + 16 q for high nibbles; bf16: 128 + q.
__device__ __forceinline__ uint2 glm_nib_pair(uint32_t w, int hi) {
#if GLM_MV_XF16
  return hi ? make_uint2(glm_and_or<0x00F000F0u>(w, GLM_F16_1024),
                         glm_and_or<0x00F000F0u>(w >> 8, GLM_F16_1024))
            : make_uint2(glm_and_or<0x000F000Fu>(w, GLM_F16_1024),
                         glm_and_or<0x000F000Fu>(w >> 8, GLM_F16_1024));
#else
  return make_uint2(glm_and_or<0x000F000Fu>(w >> (4 * hi), GLM_BF16_128),
                    glm_and_or<0x000F000Fu>(w >> (4 * hi + 8), GLM_BF16_128));
#endif
}

#if GLM_WTYPE == GLM_T_Q6_K
// glm_mv_step's Q6_K body; kA4: both rows' step bytes start 4-byte aligned in shared memory.
template <bool kA4>
__device__ __forceinline__ void glm_q6k_step(const glm_u8 *ra, const glm_u8 *rb, const glm_bf16 *xs,
                                             int xrow, const glm_mv_xoff &xo, const float *xsum,
                                             int g, int t, float (&acc)[4]) {
  auto ld = [](const glm_u8 *p) {
    return kA4 ? *reinterpret_cast<const uint32_t *>(p) : glm_lds_u32_a2(p);
  };
  const float da = glm_half_f32(glm_lds_u16(ra + 208)), db = glm_half_f32(glm_lds_u16(rb + 208));
  const float da2 = da * 8388608.f, dan = da * 8388736.f; // for glm_mul_s8
  const float db2 = db * 8388608.f, dbn = db * 8388736.f;
#if GLM_MV_COLS
#pragma unroll 1 // one round per half: unrolled, Q6_K's one-token step spilled at 96 registers
#else
#pragma unroll
#endif
  for (int n = 0; n < 2; ++n) {
#if GLM_MV_COLS
    float D[4] = {0.f, 0.f, 0.f, 0.f}; // round n: sub-blocks 8n .. 8n + 7
#endif
#pragma unroll
    for (int hp = 0; hp < 2; ++hp) {
      // Thread t: l = 16 hp + 4t .. +3 of half n, in all four quarters.
      const int l = 16 * hp + 4 * t;
      const uint32_t la = ld(ra + 64 * n + l), lb = ld(rb + 64 * n + l);
      const uint32_t ua = ld(ra + 64 * n + 32 + l), ub = ld(rb + 64 * n + 32 + l);
      const uint32_t qa = ld(ra + 128 + 32 * n + l), qb = ld(rb + 128 + 32 * n + l);
#pragma unroll
      for (int qq = 0; qq < 4; ++qq) {
        // 6-bit values (0..63, i.e. q + 32) of elements 128n + 32qq + l .. +3, one per byte.
        uint32_t va, vb;
        if (qq == 0) {
          va = (la & 0x0F0F0F0Fu) | ((qa << 4) & 0x30303030u);
          vb = (lb & 0x0F0F0F0Fu) | ((qb << 4) & 0x30303030u);
        } else if (qq == 1) {
          va = (ua & 0x0F0F0F0Fu) | ((qa << 2) & 0x30303030u);
          vb = (ub & 0x0F0F0F0Fu) | ((qb << 2) & 0x30303030u);
        } else if (qq == 2) {
          va = ((la >> 4) & 0x0F0F0F0Fu) | (qa & 0x30303030u);
          vb = ((lb >> 4) & 0x0F0F0F0Fu) | (qb & 0x30303030u);
        } else {
          va = ((ua >> 4) & 0x0F0F0F0Fu) | ((qa >> 2) & 0x30303030u);
          vb = ((ub >> 4) & 0x0F0F0F0Fu) | ((qb >> 2) & 0x30303030u);
        }
        // bf16 pairs (128 + v). One token: a byte permute puts bytes 0, 2 (or 1, 3) under 0x43
        // each, no shift; more tokens keep mask-and-or (the permutes made T = 3 spill at 96).
        uint32_t a[4];
#if GLM_MV_COLS
        a[0] = __byte_perm(va, 0x43u, 0x4240);
        a[1] = __byte_perm(vb, 0x43u, 0x4240);
        a[2] = __byte_perm(va, 0x43u, 0x4341);
        a[3] = __byte_perm(vb, 0x43u, 0x4341);
#else
        a[0] = glm_and_or<0x00FF00FFu>(va, GLM_BF16_128);
        a[1] = glm_and_or<0x00FF00FFu>(vb, GLM_BF16_128);
        a[2] = glm_and_or<0x00FF00FFu>(va >> 8, GLM_BF16_128);
        a[3] = glm_and_or<0x00FF00FFu>(vb >> 8, GLM_BF16_128);
#endif
        const int is = 8 * n + 2 * qq + hp; // the 16-element sub-block, also its x-sum group
#if !GLM_MV_COLS
        float D[4] = {0.f, 0.f, 0.f, 0.f};
#endif
        const uint2 bx = glm_mv_bx(xs, xrow, xo, g, t, 16 * is, 2 * qq + hp);
        glm_mma_bf16_16816(D, a, bx.x, bx.y);
#if !GLM_MV_COLS
        // value = d sc (v - 32): D' = sum (128 + v) x, so subtract 160 sum x.
        const float dsa = glm_mul_s8(da2, dan, ra[192 + is]);
        const float dsb = glm_mul_s8(db2, dbn, rb[192 + is]);
#if GLM_MV_OFFSET_MMA
        glm_mv_offset(D, bx);
        glm_mv_fold_scale(acc, D, dsa, dsb);
#else
        const float2 sx = *reinterpret_cast<const float2 *>(xsum + 8 * is + 2 * t);
        glm_mv_fold(acc, D, dsa, 160.f * dsa, dsb, 160.f * dsb, sx);
#endif
#endif
      }
    }
#if GLM_MV_COLS
    // Thread t's sub-blocks 8n + t and 8n + t + 4 (value d sc (v - 32): offset 160 d sc).
    const int i0 = 8 * n + t, i1 = i0 + 4;
    const float dsa0 = glm_mul_s8(da2, dan, ra[192 + i0]);
    const float dsa1 = glm_mul_s8(da2, dan, ra[192 + i1]);
    const float dsb0 = glm_mul_s8(db2, dbn, rb[192 + i0]);
    const float dsb1 = glm_mul_s8(db2, dbn, rb[192 + i1]);
    glm_mv_fold_cols(acc, D, dsa0, 160.f * dsa0, dsa1, 160.f * dsa1, dsb0, 160.f * dsb0, dsb1,
                     160.f * dsb1, xsum[8 * i0], xsum[8 * i1]);
#endif
  }
}
#endif

// One 256-element step (nel < 256 only at the end of K, for 32-element blocks) of rows g (raw
// bytes at ra) and g + 8 (rb). xs: staged x at the step's first element, token rows `xrow` apart;
// xsum: x sums of the step's first scale group, [group][8 tokens].
__device__ __forceinline__ void glm_mv_step(const glm_u8 *ra, const glm_u8 *rb, const glm_bf16 *xs,
                                            int xrow, const glm_mv_xoff &xo, const float *xsum,
                                            int nel, int g, int t, float (&acc)[4]) {
#if GLM_WTYPE == GLM_T_Q4_K || GLM_WTYPE == GLM_T_Q5_K
  const uint4 ha = glm_lds16(ra), hb = glm_lds16(rb);
  const glm_k4_scales sa = glm_k4_unpack(ha), sb = glm_k4_unpack(hb);
#if GLM_MV_XF16 && GLM_MV_COLS
  // Thread t folds sub-blocks t and t + 4: high nibbles (scale / 16) when t is odd.
  const float kD = (t & 1) ? 524288.f : 8388608.f;
#else
  constexpr float kD = 8388608.f;
#endif
  // Super-block scales times 2^23, for glm_mul_byte.
  const float da = glm_half_f32(ha.x) * kD, dmina = glm_half_f32(ha.x >> 16) * 8388608.f;
  const float db = glm_half_f32(hb.x) * kD, dminb = glm_half_f32(hb.x >> 16) * 8388608.f;
  constexpr float kOff = GLM_MV_XF16 ? 1024.f : 128.f; // the quants' offset in the mma
#if !GLM_MV_COLS // with more tokens every group is folded here: high nibbles' scales / 16
  const float da16 = GLM_MV_XF16 ? da * 0.0625f : da, db16 = GLM_MV_XF16 ? db * 0.0625f : db;
#endif
#if GLM_WTYPE == GLM_T_Q5_K
  const uint2 qha = glm_lds8(ra + 16 + 8 * t), qhb = glm_lds8(rb + 16 + 8 * t);
#define GLM_QS_OFF 48
#else
#define GLM_QS_OFF 16
#endif
#if GLM_MV_COLS
  float D[4] = {0.f, 0.f, 0.f, 0.f}; // the step is one round: its 8 sub-blocks
#else
  // The rows' scale and offset of sub-block j are the same in the four lanes of a quad: thread t
  // works them out for sub-blocks t and t + 4 (byte t of the low and high scale words, high
  // nibbles' scale / 16 when t is odd), and sub-block j's fold takes them from lane j % 4 of its
  // quad: four shuffles instead of four byte extractions, four multiplies and two offsets.
  const float das = (t & 1) ? da16 : da, dbs = (t & 1) ? db16 : db;
  float cd[2][2], co[2][2]; // [sub-block t / t + 4][row g / g + 8]: scale, offset
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    cd[h][0] = glm_mul_byte(das, h ? sa.sc_hi : sa.sc_lo, t);
    cd[h][1] = glm_mul_byte(dbs, h ? sb.sc_hi : sb.sc_lo, t);
    co[h][0] = fmaf(kOff, cd[h][0], glm_mul_byte(dmina, h ? sa.mn_hi : sa.mn_lo, t));
    co[h][1] = fmaf(kOff, cd[h][1], glm_mul_byte(dminb, h ? sb.mn_hi : sb.mn_lo, t));
  }
#endif
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    // Thread t: quant bytes 8t .. 8t+7 of chunk c (elements 64c + 8t .. and 64c + 32 + 8t ..).
    const uint2 qa = glm_lds8(ra + GLM_QS_OFF + 32 * c + 8 * t);
    const uint2 qb = glm_lds8(rb + GLM_QS_OFF + 32 * c + 8 * t);
#pragma unroll
    for (int hi = 0; hi < 2; ++hi) {
      const int j = 2 * c + hi; // sub-block
#if !GLM_MV_COLS
      float D[4] = {0.f, 0.f, 0.f, 0.f}, Ds[4] = {0.f, 0.f, 0.f, 0.f};
#endif
#pragma unroll
      for (int ks = 0; ks < 2; ++ks) {
        const uint32_t wa = ks ? qa.y : qa.x, wb = ks ? qb.y : qb.x;
        const uint2 pa = glm_nib_pair(wa, hi), pb = glm_nib_pair(wb, hi); // rows g, g + 8
        uint32_t a[4] = {pa.x, pb.x, pa.y, pb.y};
#if GLM_WTYPE == GLM_T_Q5_K
        // Fifth bit: bit j of qh[l], l the byte's position in the chunk (same for every chunk),
        // to bit 4 of the value: bit 4 of the half, or bit 8 where fp16 keeps the nibble at 4..7.
        // One shift and one LOP3 per register.
        const uint32_t xa = ks ? qha.y : qha.x, xb = ks ? qhb.y : qhb.x;
        const int kB5 = GLM_MV_XF16 && hi ? 8 : 4;
        auto put = [&](uint32_t a0, uint32_t q, int bit) { // bit `bit` of q's halves to kB5
          const uint32_t y = bit <= kB5 ? q << (kB5 - bit) : q >> (bit - kB5);
          return kB5 == 8 ? glm_or_and<0x01000100u>(a0, y) : glm_or_and<0x00100010u>(a0, y);
        };
        a[0] = put(a[0], xa, j);
        a[1] = put(a[1], xb, j);
        a[2] = put(a[2], xa, j + 8);
        a[3] = put(a[3], xb, j + 8);
#endif
        const uint2 bx = glm_mv_bx(xs, xrow, xo, g, t, 32 * j + 16 * ks, j);
        glm_mv_mma(D, a, bx);
#if !GLM_MV_COLS
        glm_mv_xsum(Ds, bx);
#endif
      }
#if !GLM_MV_COLS
      const int src = 4 * g + (j & 3), h = j >> 2;
      const float d1a = __shfl_sync(0xffffffffu, cd[h][0], src);
      const float d1b = __shfl_sync(0xffffffffu, cd[h][1], src);
      const float oa = __shfl_sync(0xffffffffu, co[h][0], src);
      const float ob = __shfl_sync(0xffffffffu, co[h][1], src);
      glm_mv_fold(acc, D, d1a, oa, d1b, ob, glm_mv_sx(Ds, xsum + 8 * j, t));
#endif
    }
  }
#if GLM_MV_COLS
  // Thread t's sub-blocks t (scale byte t of the low words) and t + 4 (of the high words).
  const float d1a0 = glm_mul_byte(da, sa.sc_lo, t), d1a1 = glm_mul_byte(da, sa.sc_hi, t);
  const float d1b0 = glm_mul_byte(db, sb.sc_lo, t), d1b1 = glm_mul_byte(db, sb.sc_hi, t);
  const float m1a0 = glm_mul_byte(dmina, sa.mn_lo, t), m1a1 = glm_mul_byte(dmina, sa.mn_hi, t);
  const float m1b0 = glm_mul_byte(dminb, sb.mn_lo, t), m1b1 = glm_mul_byte(dminb, sb.mn_hi, t);
  glm_mv_fold_cols(acc, D, d1a0, fmaf(kOff, d1a0, m1a0), d1a1, fmaf(kOff, d1a1, m1a1), d1b0,
                   fmaf(kOff, d1b0, m1b0), d1b1, fmaf(kOff, d1b1, m1b1), xsum[8 * t],
                   xsum[8 * (t + 4)]);
#endif
#undef GLM_QS_OFF
#elif GLM_WTYPE == GLM_T_Q6_K
  // 210-byte blocks: a row's step starts 2- or 4-byte aligned; when every row of the warp is
  // 4-byte aligned (rows of K % 512 == 0 on even blocks: half the steps) words load in one. One
  // token only: with more, the second copy of the body spilled at 96 registers (T = 3).
#if GLM_MV_COLS
  const bool a4 = __all_sync(0xffffffffu, ((glm_smem_addr(ra) | glm_smem_addr(rb)) & 3u) == 0);
  if (a4) {
    glm_q6k_step<true>(ra, rb, xs, xrow, xo, xsum, g, t, acc);
    return;
  }
#endif
  glm_q6k_step<false>(ra, rb, xs, xrow, xo, xsum, g, t, acc);
#elif GLM_WTYPE == GLM_T_Q8_0 || GLM_WTYPE == GLM_T_Q4_0
#if GLM_MV_COLS
  float D[4] = {0.f, 0.f, 0.f, 0.f}; // the step is one round: its (up to) 8 blocks
#endif
#pragma unroll
  for (int jb = 0; jb < 8; ++jb) {
    if (32 * jb >= nel)
      break;
    const glm_u8 *ba = ra + GLM_QBYTES * jb, *bb = rb + GLM_QBYTES * jb;
#if !GLM_MV_COLS
    const float da = glm_half_f32(glm_lds_u16(ba)), db = glm_half_f32(glm_lds_u16(bb));
    float D[4] = {0.f, 0.f, 0.f, 0.f}, Ds[4] = {0.f, 0.f, 0.f, 0.f};
#endif
    auto ldw = [jb](const glm_u8 *p) { return glm_blk_word(p, jb); };
#if GLM_WTYPE == GLM_T_Q8_0
#pragma unroll
    for (int ks = 0; ks < 2; ++ks) {
      // Thread t: qs[16 ks + 4t .. +3]. GLM_MV_XF16: the biased byte q + 128 under fp16's 1024
      // (one XOR per word, one byte permute per register: 1152 + q, exact), the offset folded
      // below with x's sums; else exact int8 -> fp32 -> bf16 (|q| <= 128 fits 8 bits), three
      // instructions per value.
      const uint32_t wa = ldw(ba + 2 + 16 * ks + 4 * t);
      const uint32_t wb = ldw(bb + 2 + 16 * ks + 4 * t);
      uint32_t a[4];
#if GLM_MV_XF16
      const uint32_t ua = wa ^ 0x80808080u, ub = wb ^ 0x80808080u;
      a[0] = __byte_perm(ua, 0x64u, 0x4240); // halves 0x64 b0, 0x64 b2: (e, e+2)
      a[1] = __byte_perm(ub, 0x64u, 0x4240);
      a[2] = __byte_perm(ua, 0x64u, 0x4341); // (e+1, e+3)
      a[3] = __byte_perm(ub, 0x64u, 0x4341);
#else
      a[0] = glm_pack_bf16x2(glm_sbyte_f32(wa, 0), glm_sbyte_f32(wa, 2));
      a[1] = glm_pack_bf16x2(glm_sbyte_f32(wb, 0), glm_sbyte_f32(wb, 2));
      a[2] = glm_pack_bf16x2(glm_sbyte_f32(wa, 1), glm_sbyte_f32(wa, 3));
      a[3] = glm_pack_bf16x2(glm_sbyte_f32(wb, 1), glm_sbyte_f32(wb, 3));
#endif
      const uint2 bx = glm_mv_bx(xs, xrow, xo, g, t, 32 * jb + 16 * ks, jb);
      glm_mv_mma(D, a, bx);
    }
#if !GLM_MV_COLS && GLM_MV_XF16
    // value = d q: D' = sum (1152 + q) x, so subtract 1152 sum x (staged: fp16 Q8_0 is at most
    // four tokens, GLM_MV_XSUM_MMA never applies).
    const float2 sx = *reinterpret_cast<const float2 *>(xsum + 8 * jb + 2 * t);
    glm_mv_fold(acc, D, da, 1152.f * da, db, 1152.f * db, sx);
#elif !GLM_MV_COLS
    glm_mv_fold_scale(acc, D, da, db);
#endif
#else
    // Thread t: qs[4t .. 4t+3]; low nibbles are elements 4t.. (k step 0), high ones 16 + 4t..
    const uint32_t wa = ldw(ba + 2 + 4 * t), wb = ldw(bb + 2 + 4 * t);
#pragma unroll
    for (int ks = 0; ks < 2; ++ks) {
      const uint2 pa = glm_nib_pair(wa, ks), pb = glm_nib_pair(wb, ks);
      const uint32_t a[4] = {pa.x, pb.x, pa.y, pb.y};
      const uint2 bx = glm_mv_bx(xs, xrow, xo, g, t, 32 * jb + 16 * ks, jb);
      glm_mv_mma(D, a, bx);
#if !GLM_MV_COLS
      glm_mv_xsum(Ds, bx);
#endif
    }
#if !GLM_MV_COLS
    // value = d (q - 8): D' = sum (128 + q) x, so subtract 136 sum x.
    const float2 sx = glm_mv_sx(Ds, xsum + 8 * jb, t);
    glm_mv_fold(acc, D, da, 136.f * da, db, 136.f * db, sx);
#endif
#endif
  }
#if GLM_MV_COLS
  // Q4_0 (the one type of this branch with columns). Thread t's blocks t and t + 4, where the
  // step has them (a block past nel, its scale and its x sum are stale shared memory: they must
  // not reach the fold, where 0 * NaN would).
  float s[4] = {0.f, 0.f, 0.f, 0.f}, sx[2] = {0.f, 0.f}; // scales a0 a1 b0 b1; x sums
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int jb = t + 4 * h;
    if (32 * jb < nel) {
      s[h] = glm_half_f32(glm_lds_u16(ra + GLM_QBYTES * jb));
      s[2 + h] = glm_half_f32(glm_lds_u16(rb + GLM_QBYTES * jb));
      sx[h] = xsum[8 * jb];
    }
  }
  // value = d (q - 8), D = sum (128 + q) x: offset 136 d.
  constexpr float o = 136.f;
  glm_mv_fold_cols(acc, D, s[0], o * s[0], s[1], o * s[1], s[2], o * s[2], s[3], o * s[3], sx[0],
                   sx[1]);
#endif
#elif GLM_MV_PLAIN16
  // 16-bit weights as they are (bf16; F16 with fp16 x): the step only rearranges pairs.
#pragma unroll
  for (int sp = 0; sp < 8; ++sp) {
    if (32 * sp >= nel)
      break;
    // Thread t: elements 8t .. 8t+7 of 32-span sp; the first four in k step 0.
    const uint4 va = glm_lds16(ra + 64 * sp + 16 * t), vb = glm_lds16(rb + 64 * sp + 16 * t);
#pragma unroll
    for (int ks = 0; ks < 2; ++ks) {
      const uint32_t a0 = ks ? va.z : va.x, a1 = ks ? va.w : va.y;
      const uint32_t b0 = ks ? vb.z : vb.x, b1 = ks ? vb.w : vb.y;
      uint32_t a[4];
      a[0] = __byte_perm(a0, a1, 0x5410); // (e, e+2)
      a[1] = __byte_perm(b0, b1, 0x5410);
      a[2] = __byte_perm(a0, a1, 0x7632); // (e+1, e+3)
      a[3] = __byte_perm(b0, b1, 0x7632);
      glm_mv_mma(acc, a, glm_mv_b(xs, xrow, g, t, 32 * sp + 16 * ks));
    }
  }
#endif
}

#if GLM_MV_XI8
// ---------------------------------------------------------------------------------------------
// glm_mv_step_i8: the K-quant steps with int8 x, on the tensor core. x is quantized per token
// and 32-element sub-block, as llama.cpp's q8_1 (glm_stage_x8, qlinear.cuh): q = round(x / dx),
// dx = max |x| / 127 over the sub-block, so one large value costs resolution only in its own 32.
// A sub-block j's quants are 0..15 (Q5_K 0..31) bytes, and
//   sum_k (d sc_j q_k - dmin m_j) x_k = d sum_j sc_j dx_j I_j - dmin sum_j m_j s_j,
// I_j = sum_k q_k xq_k (one u8 x s8 mma.m16n8k32 per sub-block, exact in s32: |I_j| < 2^17),
// s_j = dx_j sum_k xq_k, the sub-block's sum of the quantized x. sum_j m_j s_j is one bf16 mma
// per step: A (m_j, m_j), exact; B s_j as the bf16 pair (hi, s_j - hi), 16 significant bits.
// Against the bf16 step a sub-block takes one mma instead of four, its quants one or two logic
// instructions per register instead of a conversion per pair, and no x sums (ncu, Q4_K at eight
// tokens: ~366 warp instructions per step against ~420). What x loses: int8 per 32 elements,
// about 0.4% of a product's norm on random data.
// Q6_K (glm_q6k_step_i8): a 16-element group (one scale) of two rows is one u8 x s8
// mma.m16n8k16 of the 6-bit values (0..63, q + 32) whose C input is -32 sum xq over the group
// (staged): D = sum (v - 32) xq, exact, with no conversion of the values; sc D accumulates in s32
// over the sub-block's two groups, then the fold d dx_j I_j.
// Q4_0: a 32-element block of two rows is one mma.m16n8k32 whose C input is -8 times the
// block's x sum (staged): D = sum (q - 8) xq exactly; the fold is d dx D.
// The staged values of one step: xq, token rows `xrow` bytes apart, in element order; xd
// [8 sub-blocks][8 tokens] the dx_j; then xm [8 tokens][8 sub-blocks] the s_j as bf16 pairs
// (Q4_K, Q5_K), xo [16 groups][8 tokens] the -32 sum xq of each group (Q6_K), or xo
// [8 blocks][8 tokens] the -8 sum xq of each block (Q4_0).
#if GLM_WTYPE == GLM_T_Q6_K
#define GLM_XI8_SUM_WORDS 128
#else
#define GLM_XI8_SUM_WORDS 64
#endif
#define GLM_XI8_STEP_WORDS (64 + GLM_XI8_SUM_WORDS) // xd's 64 floats and the sums
static_assert((GLM_WTYPE == GLM_T_Q4_0 || GLM_WTYPE == GLM_T_Q4_K || GLM_WTYPE == GLM_T_Q5_K ||
               GLM_WTYPE == GLM_T_Q6_K) &&
                  GLM_TOKENS >= 2 && !GLM_MV_XF16,
              "int8 x: the Q4_0, Q4_K, Q5_K and Q6_K steps, at two tokens or more");
#if GLM_WTYPE == GLM_T_Q6_K
// kA4: both rows' step bytes start 4-byte aligned in shared memory (see glm_q6k_step).
template <bool kA4>
__device__ __forceinline__ void glm_q6k_step_i8(const glm_u8 *ra, const glm_u8 *rb,
                                                const glm_u8 *xq, int xrow, const float *xd,
                                                const int *xo, int g, int t, float (&acc)[4]) {
  auto ld = [](const glm_u8 *p) {
    return kA4 ? *reinterpret_cast<const uint32_t *>(p) : glm_lds_u32_a2(p);
  };
  const float da = glm_half_f32(glm_lds_u16(ra + 208)), db = glm_half_f32(glm_lds_u16(rb + 208));
  const signed char *sca = reinterpret_cast<const signed char *>(ra + 192);
  const signed char *scb = reinterpret_cast<const signed char *>(rb + 192);
  const bool tok = g < GLM_TOKENS; // B column g: token g (zeros past the tokens)
  const glm_u8 *xg = xq + g * xrow + 4 * t;
#pragma unroll 1 // unrolled, the 2-byte-aligned copy path's two-token kernel spilled at 96
  for (int n = 0; n < 2; ++n) {
    // Thread t: l = 16 hp + 4t .. +3 of half n (both hp), in all four quarters.
    uint32_t L[2][2], U[2][2], H[2][2]; // [hp][row g, g + 8]: ql, ql + 32, qh words
#pragma unroll
    for (int hp = 0; hp < 2; ++hp) {
      const int l = 16 * hp + 4 * t;
      L[hp][0] = ld(ra + 64 * n + l), L[hp][1] = ld(rb + 64 * n + l);
      U[hp][0] = ld(ra + 64 * n + 32 + l), U[hp][1] = ld(rb + 64 * n + 32 + l);
      H[hp][0] = ld(ra + 128 + 32 * n + l), H[hp][1] = ld(rb + 128 + 32 * n + l);
    }
#pragma unroll
    for (int qq = 0; qq < 4; ++qq) {
      const int j = 4 * n + qq; // the x sub-block: elements 32j .. 32j + 31 of the step
      int I[4] = {0, 0, 0, 0};  // sum over the sub-block's groups of sc (sum (v - 32) xq)
#pragma unroll
      for (int hp = 0; hp < 2; ++hp) {
        const int is = 2 * j + hp; // the 16-element group: elements 16 is .. 16 is + 15
        uint32_t v[2];             // 6-bit values of elements 16 is + 4t .. +3, rows g, g + 8
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const uint32_t lo = qq & 1 ? U[hp][r] : L[hp][r], h = H[hp][r];
          v[r] = ((qq < 2 ? lo : lo >> 4) & 0x0F0F0F0Fu) |
                 ((2 * qq <= 4 ? h << (4 - 2 * qq) : h >> (2 * qq - 4)) & 0x30303030u);
        }
        const uint32_t b = tok ? *reinterpret_cast<const uint32_t *>(xg + 16 * is) : 0u;
        const int2 c = *reinterpret_cast<const int2 *>(xo + 8 * is + 2 * t);
        int D[4];
        glm_mma_u8s8_16816(D, v[0], v[1], b, c.x, c.y);
        const int sa = sca[is], sb = scb[is];
        I[0] += sa * D[0];
        I[1] += sa * D[1];
        I[2] += sb * D[2];
        I[3] += sb * D[3];
      }
      // Columns past the tokens scale by stale dx: their results are never emitted.
      const float2 dx = *reinterpret_cast<const float2 *>(xd + 8 * j + 2 * t);
      acc[0] = fmaf(da * dx.x, static_cast<float>(I[0]), acc[0]);
      acc[1] = fmaf(da * dx.y, static_cast<float>(I[1]), acc[1]);
      acc[2] = fmaf(db * dx.x, static_cast<float>(I[2]), acc[2]);
      acc[3] = fmaf(db * dx.y, static_cast<float>(I[3]), acc[3]);
    }
  }
}
#endif
// nel: the step's elements (< 256 only at the end of K, for Q4_0's 32-element blocks).
__device__ __forceinline__ void glm_mv_step_i8(const glm_u8 *ra, const glm_u8 *rb,
                                               const glm_u8 *xq, int xrow, const float *xd,
                                               const uint32_t *xm, int nel, int g, int t,
                                               float (&acc)[4]) {
#if GLM_WTYPE == GLM_T_Q4_0
  const int *xo = reinterpret_cast<const int *>(xm);
  const bool tok = g < GLM_TOKENS; // B column g: token g (zeros past the tokens)
  const glm_u8 *xg = xq + g * xrow + 4 * t;
#pragma unroll
  for (int jb = 0; jb < 8; ++jb) {
    if (32 * jb >= nel) // past K: stale bytes and sums
      break;
    const glm_u8 *ba = ra + GLM_QBYTES * jb, *bb = rb + GLM_QBYTES * jb;
    // Thread t: qs[4t .. 4t+3]; low nibbles are elements 4t.. (k 4t..), high ones 16 + 4t..
    // (k 16 + 4t..), x likewise.
    const uint32_t wa = glm_blk_word(ba + 2 + 4 * t, jb), wb = glm_blk_word(bb + 2 + 4 * t, jb);
    const uint32_t a[4] = {wa & 0x0F0F0F0Fu, wb & 0x0F0F0F0Fu, (wa >> 4) & 0x0F0F0F0Fu,
                           (wb >> 4) & 0x0F0F0F0Fu};
    const uint32_t b0 = tok ? *reinterpret_cast<const uint32_t *>(xg + 32 * jb) : 0u;
    const uint32_t b1 = tok ? *reinterpret_cast<const uint32_t *>(xg + 32 * jb + 16) : 0u;
    const int2 c = *reinterpret_cast<const int2 *>(xo + 8 * jb + 2 * t);
    int D[4];
    glm_mma_u8s8_16832(D, a, b0, b1, c.x, c.y);
    // Columns past the tokens scale by stale dx: their results are never emitted.
    const float2 dx = *reinterpret_cast<const float2 *>(xd + 8 * jb + 2 * t);
    const float da = glm_half_f32(glm_lds_u16(ba)), db = glm_half_f32(glm_lds_u16(bb));
    acc[0] = fmaf(da * dx.x, static_cast<float>(D[0]), acc[0]);
    acc[1] = fmaf(da * dx.y, static_cast<float>(D[1]), acc[1]);
    acc[2] = fmaf(db * dx.x, static_cast<float>(D[2]), acc[2]);
    acc[3] = fmaf(db * dx.y, static_cast<float>(D[3]), acc[3]);
  }
#elif GLM_WTYPE == GLM_T_Q6_K
  (void)nel;
  const int *xo = reinterpret_cast<const int *>(xm);
  if (__all_sync(0xffffffffu, ((glm_smem_addr(ra) | glm_smem_addr(rb)) & 3u) == 0))
    glm_q6k_step_i8<true>(ra, rb, xq, xrow, xd, xo, g, t, acc);
  else
    glm_q6k_step_i8<false>(ra, rb, xq, xrow, xd, xo, g, t, acc);
#else
  (void)nel;
  const uint4 ha = glm_lds16(ra), hb = glm_lds16(rb);
  const glm_k4_scales sa = glm_k4_unpack(ha), sb = glm_k4_unpack(hb);
#if GLM_WTYPE == GLM_T_Q5_K
  const uint2 qha = glm_lds8(ra + 16 + 8 * t), qhb = glm_lds8(rb + 16 + 8 * t);
  constexpr int kQs = 48;
#else
  constexpr int kQs = 16;
#endif
  // B column g is token g (zeros past the tokens). Thread t's k 4t..4t+3 and 16 + 4t.. of a
  // sub-block are its elements 8t..8t+3 and 8t+4..8t+7: the quant bytes it loads, and x's.
  const bool tok = g < GLM_TOKENS;
  const glm_u8 *xg = xq + g * xrow + 8 * t;
  float sd[4] = {0.f, 0.f, 0.f, 0.f}; // sum_j sc_j dx_j I_j: rows g, g + 8 x tokens 2t, 2t + 1
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    // Bytes 8t..8t+7 of chunk c: low nibbles sub-block 2c, high ones 2c + 1.
    const uint2 qa = glm_lds8(ra + kQs + 32 * c + 8 * t);
    const uint2 qb = glm_lds8(rb + kQs + 32 * c + 8 * t);
#pragma unroll
    for (int hi = 0; hi < 2; ++hi) {
      const int j = 2 * c + hi;
      uint32_t a[4] = {(qa.x >> (4 * hi)) & 0x0F0F0F0Fu, (qb.x >> (4 * hi)) & 0x0F0F0F0Fu,
                       (qa.y >> (4 * hi)) & 0x0F0F0F0Fu, (qb.y >> (4 * hi)) & 0x0F0F0F0Fu};
#if GLM_WTYPE == GLM_T_Q5_K
      // Fifth bit: bit j of qh byte l (l the byte's place in its chunk) to bit 4 of byte l.
      auto put = [&](uint32_t a0, uint32_t q) {
        return glm_or_and<0x10101010u>(a0, j <= 4 ? q << (4 - j) : q >> (j - 4));
      };
      a[0] = put(a[0], qha.x);
      a[1] = put(a[1], qhb.x);
      a[2] = put(a[2], qha.y);
      a[3] = put(a[3], qhb.y);
#endif
      const uint2 b = tok ? glm_lds8(xg + 32 * j) : make_uint2(0u, 0u);
      int D[4];
      glm_mma_u8s8_16832(D, a, b.x, b.y);
      // Columns past the tokens scale by stale dx: their results are never emitted.
      const float2 dx = *reinterpret_cast<const float2 *>(xd + 8 * j + 2 * t);
      const float sca = glm_byte_f32(j < 4 ? sa.sc_lo : sa.sc_hi, j % 4);
      const float scb = glm_byte_f32(j < 4 ? sb.sc_lo : sb.sc_hi, j % 4);
      sd[0] = fmaf(sca * dx.x, static_cast<float>(D[0]), sd[0]);
      sd[1] = fmaf(sca * dx.y, static_cast<float>(D[1]), sd[1]);
      sd[2] = fmaf(scb * dx.x, static_cast<float>(D[2]), sd[2]);
      sd[3] = fmaf(scb * dx.y, static_cast<float>(D[3]), sd[3]);
    }
  }
  // The mins: A's k (2t, 2t + 1) is sub-block t's pair, (2t + 8, 2t + 9) sub-block t + 4's;
  // (m, m) as bf16 from the byte under 128's exponent (128 + m, exact) less 128.
  const uint32_t sel = 0x4040u + 0x101u * static_cast<uint32_t>(t); // bytes (t, 0, t, 0)
  auto mpair = [sel](uint32_t w) {
    uint32_t h;
    asm("fma.rn.bf16x2 %0, %1, %2, %3;"
        : "=r"(h)
        : "r"(__byte_perm(w, 0u, sel) | 0x43004300u), "r"(0x3F803F80u), "r"(0xC300C300u));
    return h;
  };
  const uint32_t am[4] = {mpair(sa.mn_lo), mpair(sb.mn_lo), mpair(sa.mn_hi), mpair(sb.mn_hi)};
  const uint32_t bm0 = tok ? xm[8 * g + t] : 0u, bm1 = tok ? xm[8 * g + t + 4] : 0u;
  float dm[4] = {0.f, 0.f, 0.f, 0.f};
  glm_mma_16816<false>(dm, am, bm0, bm1);
  const float d_a = glm_half_f32(ha.x), m_a = glm_half_f32(ha.x >> 16);
  const float d_b = glm_half_f32(hb.x), m_b = glm_half_f32(hb.x >> 16);
  acc[0] = fmaf(d_a, sd[0], fmaf(-m_a, dm[0], acc[0]));
  acc[1] = fmaf(d_a, sd[1], fmaf(-m_a, dm[1], acc[1]));
  acc[2] = fmaf(d_b, sd[2], fmaf(-m_b, dm[2], acc[2]));
  acc[3] = fmaf(d_b, sd[3], fmaf(-m_b, dm[3], acc[3]));
#endif
}
#endif // GLM_MV_XI8

#endif // GLM_MV_MMA && !GLM_ACT_F32 && defined(GLM_TOKENS)

// Per-head products over a stacked GGUF weight (glm.head_linear, transpose = false) and the
// last-dimension slice copy (glm.slice), with fp32 accumulation and glm_act activations.
//
// GLM_HL_KIND selects the entry point of an instantiation:
//   0 head_linear: y[t, h, j] = sum_i W[h][j][i] x[t, h, i] for W {a, b, H} (tensor row h b + j
//     holds the a elements of W[h][j], GGUF blocks of GLM_WTYPE), x [T, H, a] (or [T, a] read
//     by every head with GLM_SHARED_INPUT 1), y [T, H, b];
//   1 slice_copy: y[r, c] = x[r, offset + c] for r < rows, c < width_out.
//
// head_linear. Constants: GLM_HL_A (= a, a multiple of 32 and of the block), GLM_HL_LPR (lanes
// per weight row, a power of two <= 8 dividing a / 32), GLM_HL_TC (tokens per chunk), GLM_HL_WARPS,
// GLM_HL_ROWS (rows per CTA, a multiple of GLM_HL_WARPS * 32 / GLM_HL_LPR).
// Grid (ceil(b / GLM_HL_ROWS), H, any z >= 1): CTA (bx, h, bz) owns rows
// [bx GLM_HL_ROWS, +GLM_HL_ROWS) of head h and token chunks bz, bz + gridDim.z, ... of GLM_HL_TC
// tokens each. Per chunk, x[t, h, :] of the chunk's tokens is staged in shared memory as fp32
// (each 32-element sub-block padded to 36 floats: the lanes of a row read distinct sub-blocks
// and their 16-byte reads then fall in distinct banks). Rows are walked in passes of 32 / LPR
// rows per warp: lane l serves row l / LPR of the pass and dequantizes its sub-blocks
// l % LPR, l % LPR + LPR, ... (glm_dq32, exact), multiplying each with every token of the
// chunk; the LPR lanes of a row then sum with shuffles and lane (tok % LPR) stores token tok.
// With T <= GLM_HL_TC (decode) each weight row is read exactly once per launch.
// The f32 instantiation (GLM_ACT_F32) is exact up to the fp32 summation order.
#pragma once

#ifndef GLM_HL_KIND
#error "GLM_HL_KIND must be defined (0 head_linear, 1 slice_copy)"
#endif

// ---------------------------------------------------------------------------------------------
#if GLM_HL_KIND == 0 // head_linear
#include "dequant.cuh"

#ifndef GLM_SHARED_INPUT
#define GLM_SHARED_INPUT 0
#endif

#define GLM_HL_THREADS (GLM_HL_WARPS * 32)
#define GLM_HL_NSUB (GLM_HL_A / 32)                               // 32-element sub-blocks per row
#define GLM_HL_RPP (32 / GLM_HL_LPR)                              // rows per warp per pass
#define GLM_HL_PASSES (GLM_HL_ROWS / (GLM_HL_WARPS * GLM_HL_RPP)) // passes per CTA
#define GLM_HL_XROW (GLM_HL_NSUB * 36)                            // staged floats per token
// Dynamic shared memory in bytes (the registry computes the same).
#define GLM_HL_SMEM_BYTES (GLM_HL_TC * GLM_HL_XROW * 4)

static_assert(GLM_HL_A % 32 == 0 && GLM_HL_A % GLM_QK == 0, "a: whole sub-blocks and blocks");
static_assert(GLM_HL_LPR == 1 || GLM_HL_LPR == 2 || GLM_HL_LPR == 4 || GLM_HL_LPR == 8,
              "lanes per row: a power of two <= 8 (distinct banks for the x reads)");
static_assert(GLM_HL_NSUB % GLM_HL_LPR == 0, "every lane of a row takes as many sub-blocks");
static_assert(GLM_HL_PASSES >= 1 && GLM_HL_ROWS % (GLM_HL_WARPS * GLM_HL_RPP) == 0,
              "rows per CTA: whole passes");
static_assert(GLM_HL_TC >= 1 && GLM_HL_TC <= 16, "tokens per chunk (accumulators per lane)");

// Register budget: 128 per thread (4 CTAs of 128 threads per SM, so GLM-5's decode grids of 512
// CTAs are one wave on 132 SMs); up to 168 for F32 weights, whose sub-blocks in flight take 32
// registers each (at 128, a = 512 spilled on sm_90).
#if GLM_WTYPE == GLM_T_F32
#define GLM_HL_MIN_BLOCKS 3
#else
#define GLM_HL_MIN_BLOCKS 4
#endif
extern "C" __global__ void __launch_bounds__(GLM_HL_THREADS, GLM_HL_MIN_BLOCKS)
    head_linear(const glm_u8 *__restrict__ w,  // {a, b, H}: row h * b + j, GGUF blocks
                const glm_act *__restrict__ x, // [T, H, a], or [T, a] with GLM_SHARED_INPUT
                glm_act *__restrict__ y,       // [T, H, b]
                int T, int b, int H) {
  glm_grid_chain();
  extern __shared__ __align__(16) unsigned char smem[];
  float *xs = reinterpret_cast<float *>(smem); // [GLM_HL_TC][GLM_HL_XROW]
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int h = blockIdx.y;
  const int sl = lane % GLM_HL_LPR; // this lane's first sub-block of its row
  const int rl = lane / GLM_HL_LPR; // this lane's row within a warp's pass
  const long long row_bytes = static_cast<long long>(GLM_HL_A / GLM_QK) * GLM_QBYTES;
  const glm_u8 *wh = w + static_cast<long long>(h) * b * row_bytes; // head h's first row
  const int row0 = blockIdx.x * GLM_HL_ROWS;
  const int nchunks = (T + GLM_HL_TC - 1) / GLM_HL_TC;

  for (int c = blockIdx.z; c < nchunks; c += gridDim.z) {      // uniform per CTA (barriers)
    const int t0 = c * GLM_HL_TC, nt = min(GLM_HL_TC, T - t0); // 1 <= nt <= GLM_HL_TC
    __syncthreads(); // every warp is done with the previous chunk's x
    for (int i = threadIdx.x; i < nt * GLM_HL_A; i += GLM_HL_THREADS) {
      const int tok = i / GLM_HL_A, e = i % GLM_HL_A;
#if GLM_SHARED_INPUT
      const long long src = static_cast<long long>(t0 + tok) * GLM_HL_A + e;
#else
      const long long src = (static_cast<long long>(t0 + tok) * H + h) * GLM_HL_A + e;
#endif
      xs[tok * GLM_HL_XROW + e / 32 * 36 + e % 32] = glm_act_load(x, src);
    }
    __syncthreads();

#pragma unroll 1
    for (int p = 0; p < GLM_HL_PASSES; ++p) {
      const int j = row0 + (p * GLM_HL_WARPS + warp) * GLM_HL_RPP + rl; // row of head h
      float acc[GLM_HL_TC];
#pragma unroll
      for (int tok = 0; tok < GLM_HL_TC; ++tok)
        acc[tok] = 0.f;
      if (j < b) { // lanes past b only join the shuffles below
        const glm_u8 *wr = wh + static_cast<long long>(j) * row_bytes;
#pragma unroll 4
        for (int k = 0; k < GLM_HL_NSUB / GLM_HL_LPR; ++k) {
          const int s = sl + k * GLM_HL_LPR;
          float v[32];
          glm_dq32(wr, s, v);
#pragma unroll
          for (int tok = 0; tok < GLM_HL_TC; ++tok) {
            if (tok < nt) { // tokens past T are neither staged nor computed
              const float4 *xp = reinterpret_cast<const float4 *>(xs + tok * GLM_HL_XROW + s * 36);
              float s0 = 0.f, s1 = 0.f; // two chains: even and odd float4s
#pragma unroll
              for (int q = 0; q < 8; q += 2) {
                const float4 xa = xp[q], xb = xp[q + 1];
                s0 = fmaf(v[4 * q + 0], xa.x, s0);
                s0 = fmaf(v[4 * q + 1], xa.y, s0);
                s0 = fmaf(v[4 * q + 2], xa.z, s0);
                s0 = fmaf(v[4 * q + 3], xa.w, s0);
                s1 = fmaf(v[4 * q + 4], xb.x, s1);
                s1 = fmaf(v[4 * q + 5], xb.y, s1);
                s1 = fmaf(v[4 * q + 6], xb.z, s1);
                s1 = fmaf(v[4 * q + 7], xb.w, s1);
              }
              acc[tok] += s0 + s1;
            }
          }
        }
      }
      // The LPR lanes of a row are lanes LPR rl .. LPR rl + LPR - 1: xor offsets < LPR stay
      // inside the group, and every lane of it ends with the row's full sums.
#pragma unroll
      for (int tok = 0; tok < GLM_HL_TC; ++tok)
#pragma unroll
        for (int o = GLM_HL_LPR / 2; o > 0; o >>= 1)
          acc[tok] += __shfl_xor_sync(0xffffffffu, acc[tok], o);
      if (j < b) {
#pragma unroll
        for (int tok = 0; tok < GLM_HL_TC; ++tok)
          if (tok < nt && tok % GLM_HL_LPR == sl)
            glm_act_store(y, (static_cast<long long>(t0 + tok) * H + h) * b + j, acc[tok]);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
#elif GLM_HL_KIND == 1 // slice_copy
#include "common.cuh"

#define GLM_SL_THREADS 256
#define GLM_HL_SMEM_BYTES 0

// Grid-stride over the output (any grid >= 1). 16-byte vectors when both bases are 16-byte
// aligned and offset, width_in and width_out are multiples of a vector: then every vector of a
// row stays inside it and aligned. Otherwise one value per thread.
extern "C" __global__ void __launch_bounds__(GLM_SL_THREADS)
    slice_copy(const glm_act *__restrict__ x, // [rows, width_in]
               glm_act *__restrict__ y,       // [rows, width_out]
               long long rows, int width_in, int width_out, int offset) {
  glm_grid_chain();
  constexpr int kV = 16 / sizeof(glm_act); // values per 16-byte vector
  const long long stride = static_cast<long long>(gridDim.x) * GLM_SL_THREADS;
  const long long first = static_cast<long long>(blockIdx.x) * GLM_SL_THREADS + threadIdx.x;
  const bool vec =
      ((reinterpret_cast<unsigned long long>(x) | reinterpret_cast<unsigned long long>(y)) & 15) ==
          0 &&
      offset % kV == 0 && width_in % kV == 0 && width_out % kV == 0;
  if (vec) {
    const int wv = width_out / kV; // vectors per output row
    const long long n = rows * wv;
    for (long long i = first; i < n; i += stride) {
      const long long r = i / wv;
      const int cv = static_cast<int>(i - r * wv);
      const uint4 v = __ldg(reinterpret_cast<const uint4 *>(x + r * width_in + offset + cv * kV));
      *reinterpret_cast<uint4 *>(y + r * width_out + cv * kV) = v;
    }
  } else {
    const long long n = rows * width_out;
    for (long long i = first; i < n; i += stride) {
      const long long r = i / width_out;
      const int col = static_cast<int>(i - r * width_out);
      glm_act_store(y, i, glm_act_load(x, r * width_in + offset + col));
    }
  }
}

#else
#error "unknown GLM_HL_KIND"
#endif

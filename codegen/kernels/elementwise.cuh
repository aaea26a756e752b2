// Row norms, RoPE, the (rotating) paged KV-cache append and pointwise ops (docs/model.md
// "Forward pass", "RoPE", "DSA lightning indexer", "KV cache per token").
//
// One template, four op groups; an instantiation enables exactly one group by defining its
// switch before this file (codegen/registry/Elementwise.cpp writes them):
//
//   GLM_ELEM_NORM: rms_norm, add_rms_norm, layer_norm over rows of GLM_D values.
//     GLM_TPR threads per row (a multiple of 32; 32 = one warp per row, no barrier needed for
//     the sums), GLM_ROWS_PER_CTA rows per CTA. Each thread keeps its ceil(GLM_D / GLM_TPR)
//     values of the row in registers, so every input is read once and every output written once.
//   GLM_ELEM_ROPE: rope, in place, on columns [GLM_ROPE_OFFSET, + GLM_ROPE_DIM) of GLM_ROPE_ROWS
//     rows of GLM_ROPE_WIDTH per token; one CTA of GLM_ROPE_THREADS per token.
//   GLM_ELEM_CACHE: rope_cache_append and cache_append into a paged cache: kv rows
//     [GLM_D_LATENT | GLM_D_ROPE] (sparse_mla_decode's layout) and index rows of GLM_D_INDEX;
//     GLM_ROPE_DIM leading values of both keys rotated; GLM_PAGE slots per page. One warp per
//     token, 4 tokens per CTA.
//   GLM_ELEM_POINTWISE: swiglu_mul and add over n values, grid-stride, 256 threads.
//
// Math is fp32 except the RoPE angle and its sine and cosine (double, see glm_rope_cs). Norm
// weights and biases are the GGUF's F32 vectors. Activations and the cache are glm_act.
#pragma once
#include "common.cuh"

// v rounded to the activation dtype, as storing and reloading it would give.
__device__ __forceinline__ float glm_act_round(float v) {
  glm_act t;
  glm_act_store(&t, 0, v);
  return glm_act_load(&t, 0);
}

#if defined(GLM_ELEM_ROPE) || defined(GLM_ELEM_CACHE)
// (cos, sin) of pos * theta^(-2i / dim), the angle of interleaved pair i (docs/model.md "RoPE").
// The inverse frequency, the angle and its sine and cosine are computed in double, as the host
// reference does: angles reach 2e5 rad at the longest contexts, where a float angle alone is off
// by up to ~1e-2 rad, and where __sinf / __cosf (what sinf / cosf become under --use_fast_math)
// are worse still; double math is the same under either NVRTC setting. sincospi (of angle / pi, off
// from the host's angle by a few double ulps: < 1e-10 rad at 2e5 rad) reduces its argument
// exactly, so it needs neither sincos's large-argument path nor its local-memory stack frame.
// Called once per (token, pair), never per row.
__device__ __forceinline__ float2 glm_rope_cs(int pos, int i, int dim, float theta) {
  const double inv_freq_over_pi =
      pow(static_cast<double>(theta), -2.0 * i / dim) * 0.31830988618379067154;
  double s, c;
  sincospi(static_cast<double>(pos) * inv_freq_over_pi, &s, &c);
  return make_float2(static_cast<float>(c), static_cast<float>(s));
}

// Rotates pair (e[0], e[1]) of src into dst: (x0 c - x1 s, x0 s + x1 c). dst may equal src.
__device__ __forceinline__ void glm_rope_pair(const glm_act *src, glm_act *dst, float2 cs) {
  const float x0 = glm_act_load(src, 0), x1 = glm_act_load(src, 1);
  glm_act_store(dst, 0, x0 * cs.x - x1 * cs.y);
  glm_act_store(dst, 1, x0 * cs.y + x1 * cs.x);
}
#endif

// ------------------------------------------------------------------------------------------
#if defined(GLM_ELEM_NORM)

#define GLM_EPT ((GLM_D + GLM_TPR - 1) / GLM_TPR)
#define GLM_NORM_THREADS (GLM_TPR * GLM_ROWS_PER_CTA)
#define GLM_ROW_WARPS (GLM_TPR / 32)

static_assert(GLM_D > 0, "a row has values");
static_assert(GLM_TPR % 32 == 0, "a row is served by whole warps");
static_assert(GLM_ROWS_PER_CTA >= 1 && GLM_NORM_THREADS <= 1024, "CTA size");

// The sum of v over the GLM_TPR threads of this thread's row, the same value in each of them
// (fixed order: warp tree, then the row's warps in ascending order). With more than one warp per
// row every thread of the CTA must call it, valid row or not (it has barriers).
__device__ __forceinline__ float glm_row_sum(float v, float *red) {
  v = glm_warp_sum(v);
#if GLM_ROW_WARPS > 1
  const int warp = threadIdx.x / 32;
  __syncthreads(); // every thread has read the previous sum out of red
  if (threadIdx.x % 32 == 0)
    red[warp] = v;
  __syncthreads();
  const int first = (warp / GLM_ROW_WARPS) * GLM_ROW_WARPS;
  v = 0.f;
#pragma unroll
  for (int w = 0; w < GLM_ROW_WARPS; ++w)
    v += red[first + w];
#endif
  return v;
}

// This thread's row and its place in it: value k of the thread is column k * GLM_TPR + lane_in_row
// (consecutive threads read consecutive columns).
struct GlmNormRow {
  long long row;
  int j;
  bool valid;
};
__device__ __forceinline__ GlmNormRow glm_norm_row(int rows) {
  GlmNormRow r;
  r.row = static_cast<long long>(blockIdx.x) * GLM_ROWS_PER_CTA + threadIdx.x / GLM_TPR;
  r.j = threadIdx.x % GLM_TPR;
  r.valid = r.row < rows;
  return r;
}

// The tail both RMSNorms share: `ss` is this thread's part of the row's sum of squares and v its
// values; writes y = w * v / sqrt(mean + eps) to row r of y [rows, GLM_D]. Every thread of the
// CTA calls it (glm_row_sum synchronizes), valid row or not.
__device__ __forceinline__ void glm_rms_finish(const float (&v)[GLM_EPT], float ss, float *red,
                                               const GlmNormRow &r, const float *__restrict__ w,
                                               glm_act *__restrict__ y, float eps) {
  ss = glm_row_sum(ss, red);
  const float inv = rsqrtf(ss * (1.f / GLM_D) + eps);
  if (!r.valid)
    return;
#pragma unroll
  for (int k = 0; k < GLM_EPT; ++k) {
    const int c = k * GLM_TPR + r.j;
    if (c < GLM_D)
      glm_act_store(y, r.row * GLM_D + c, w[c] * (v[k] * inv));
  }
}

// y = w * x / sqrt(mean(x^2) + eps) per row: x [rows] with row stride ld_x (a row may be a slice
// of a wider one, e.g. the latent of the 576-wide kv_a output), w {GLM_D} F32, y [rows, GLM_D].
extern "C" __global__ void __launch_bounds__(GLM_NORM_THREADS)
    rms_norm(const glm_act *__restrict__ x, const float *__restrict__ w, glm_act *__restrict__ y,
             int rows, long long ld_x, float eps) {
  glm_grid_chain_early();
  __shared__ float red[GLM_NORM_THREADS / 32];
  const GlmNormRow r = glm_norm_row(rows);
  float v[GLM_EPT];
  float ss = 0.f;
#pragma unroll
  for (int k = 0; k < GLM_EPT; ++k) {
    const int c = k * GLM_TPR + r.j;
    v[k] = r.valid && c < GLM_D ? glm_act_load(x, r.row * ld_x + c) : 0.f;
    ss += v[k] * v[k];
  }
  glm_rms_finish(v, ss, red, r, w, y, eps);
}

// The residual add fused with the next norm: h = a + b (written out, rounded to glm_act), then
// y = rms_norm(h) of the rounded h, so the result equals add followed by rms_norm. All
// [rows, GLM_D]. h may alias a or b: each thread reads its values before it writes them.
extern "C" __global__ void __launch_bounds__(GLM_NORM_THREADS)
    add_rms_norm(const glm_act *a, const glm_act *b, glm_act *h, const float *__restrict__ w,
                 glm_act *__restrict__ y, int rows, float eps) {
  glm_grid_chain_early();
  __shared__ float red[GLM_NORM_THREADS / 32];
  const GlmNormRow r = glm_norm_row(rows);
  float v[GLM_EPT];
  float ss = 0.f;
#pragma unroll
  for (int k = 0; k < GLM_EPT; ++k) {
    const int c = k * GLM_TPR + r.j;
    const long long i = r.row * GLM_D + c;
    v[k] = r.valid && c < GLM_D ? glm_act_round(glm_act_load(a, i) + glm_act_load(b, i)) : 0.f;
    ss += v[k] * v[k];
  }
#pragma unroll
  for (int k = 0; k < GLM_EPT; ++k) {
    const int c = k * GLM_TPR + r.j;
    if (r.valid && c < GLM_D)
      glm_act_store(h, r.row * GLM_D + c, v[k]);
  }
  glm_rms_finish(v, ss, red, r, w, y, eps);
}

// LayerNorm with bias (the indexer key norm): y = (x - mean) / sqrt(var + eps) * w + b, var the
// biased variance, computed from the deviations held in registers (two passes over registers,
// one over memory). x row stride ld_x, w and b {GLM_D} F32, y [rows, GLM_D].
extern "C" __global__ void __launch_bounds__(GLM_NORM_THREADS)
    layer_norm(const glm_act *__restrict__ x, const float *__restrict__ w,
               const float *__restrict__ bias, glm_act *__restrict__ y, int rows, long long ld_x,
               float eps) {
  glm_grid_chain_early();
  __shared__ float red[GLM_NORM_THREADS / 32];
  const GlmNormRow r = glm_norm_row(rows);
  float v[GLM_EPT];
  float s = 0.f;
#pragma unroll
  for (int k = 0; k < GLM_EPT; ++k) {
    const int c = k * GLM_TPR + r.j;
    v[k] = r.valid && c < GLM_D ? glm_act_load(x, r.row * ld_x + c) : 0.f;
    s += v[k];
  }
  const float mean = glm_row_sum(s, red) * (1.f / GLM_D);
  float ss = 0.f;
#pragma unroll
  for (int k = 0; k < GLM_EPT; ++k) {
    const int c = k * GLM_TPR + r.j;
    v[k] -= mean;
    if (c < GLM_D) // the padding past GLM_D is no deviation
      ss += v[k] * v[k];
  }
  const float inv = rsqrtf(glm_row_sum(ss, red) * (1.f / GLM_D) + eps);
  if (!r.valid)
    return;
#pragma unroll
  for (int k = 0; k < GLM_EPT; ++k) {
    const int c = k * GLM_TPR + r.j;
    if (c < GLM_D)
      glm_act_store(y, r.row * GLM_D + c, v[k] * inv * w[c] + bias[c]);
  }
}

#endif // GLM_ELEM_NORM

// ------------------------------------------------------------------------------------------
#if defined(GLM_ELEM_ROPE)

#define GLM_ROPE_HALF (GLM_ROPE_DIM / 2)
static_assert(GLM_ROPE_DIM > 0 && GLM_ROPE_DIM % 2 == 0, "whole pairs");
static_assert(GLM_ROPE_OFFSET >= 0 && GLM_ROPE_OFFSET + GLM_ROPE_DIM <= GLM_ROPE_WIDTH,
              "the rotated slice lies in the row");
static_assert(GLM_ROPE_ROWS >= 1 && GLM_ROPE_THREADS % 32 == 0 && GLM_ROPE_THREADS <= 1024,
              "CTA shape");

// Interleaved RoPE in place: x [tokens, GLM_ROPE_ROWS, GLM_ROPE_WIDTH]; in every row of token t,
// pair i of the slice, columns (GLM_ROPE_OFFSET + 2i, + 1), is rotated by positions[t] *
// theta^(-2i / GLM_ROPE_DIM). Other columns are not touched. One CTA per token (grid = tokens):
// the token's (cos, sin) table is computed once into shared memory and serves all its rows.
extern "C" __global__ void __launch_bounds__(GLM_ROPE_THREADS)
    rope(glm_act *x, const int32_t *__restrict__ positions, float theta) {
  glm_grid_chain_early();
  __shared__ float2 cs[GLM_ROPE_HALF];
  const long long t = blockIdx.x;
  const int pos = positions[t];
  for (int i = threadIdx.x; i < GLM_ROPE_HALF; i += GLM_ROPE_THREADS)
    cs[i] = glm_rope_cs(pos, i, GLM_ROPE_DIM, theta);
  __syncthreads();
  glm_act *base = x + t * (GLM_ROPE_ROWS * GLM_ROPE_WIDTH) + GLM_ROPE_OFFSET;
  // Consecutive threads take consecutive pairs of a row, then of the next row.
  for (int p = threadIdx.x; p < GLM_ROPE_ROWS * GLM_ROPE_HALF; p += GLM_ROPE_THREADS) {
    const int row = p / GLM_ROPE_HALF, i = p % GLM_ROPE_HALF;
    glm_act *e = base + row * GLM_ROPE_WIDTH + 2 * i;
    glm_rope_pair(e, e, cs[i]);
  }
}

#endif // GLM_ELEM_ROPE

// ------------------------------------------------------------------------------------------
#if defined(GLM_ELEM_CACHE)

#define GLM_KV_ROW (GLM_D_LATENT + GLM_D_ROPE)
#define GLM_CACHE_TOKENS_PER_CTA 4
#define GLM_KEY_HALF ((GLM_D_ROPE > GLM_D_INDEX ? GLM_D_ROPE : GLM_D_INDEX) / 2)
static_assert(GLM_D_ROPE % 2 == 0 && GLM_D_INDEX % 2 == 0, "keys are whole pairs");
static_assert(GLM_ROPE_DIM % 2 == 0 && GLM_ROPE_DIM <= GLM_D_ROPE && GLM_ROPE_DIM <= GLM_D_INDEX,
              "the rotated part is a leading slice of both keys");
static_assert(GLM_PAGE >= 1, "page size");

// Token t of this warp goes to physical slot block_table[seq * pages_per_seq + pos / GLM_PAGE] *
// GLM_PAGE + pos % GLM_PAGE (seq = seq_ids[t], or 0 when seq_ids is null). A token whose
// position is negative, whose page lies past pages_per_seq, is unmapped (-1) or maps past
// num_slots writes nothing (the runtime verifies positions and tables; this only keeps a bad
// one from writing outside the cache). Inputs are rows with strides (in values) ld_*, so the
// rope key can be read straight out of the 576-wide kv_a output.
template <bool kRotate>
__device__ __forceinline__ void glm_cache_append(
    const glm_act *__restrict__ latent, long long ld_latent, const glm_act *__restrict__ rope_key,
    long long ld_rope, const glm_act *__restrict__ index_key, long long ld_index,
    const int32_t *__restrict__ positions, const int32_t *__restrict__ seq_ids,
    const int32_t *__restrict__ block_table, int pages_per_seq, glm_act *__restrict__ kv_cache,
    glm_act *__restrict__ index_cache, long long num_slots, int num_tokens, float theta) {
  const int lane = threadIdx.x % 32;
  const long long t =
      static_cast<long long>(blockIdx.x) * GLM_CACHE_TOKENS_PER_CTA + threadIdx.x / 32;
  if (t >= num_tokens) // warp-uniform; the kernel has no barrier
    return;
  const int pos = positions[t];
  const long long seq = seq_ids ? seq_ids[t] : 0;
  if (pos < 0 || seq < 0 || pos / GLM_PAGE >= pages_per_seq)
    return;
  const int phys = block_table[seq * pages_per_seq + pos / GLM_PAGE];
  const long long slot = static_cast<long long>(phys) * GLM_PAGE + pos % GLM_PAGE;
  if (phys < 0 || slot >= num_slots)
    return;
  glm_act *kv = kv_cache + slot * GLM_KV_ROW;
  glm_act *ix = index_cache + slot * GLM_D_INDEX;

  const glm_act *lat = latent + t * ld_latent;
  for (int c = lane; c < GLM_D_LATENT; c += 32)
    glm_act_store(kv, c, glm_act_load(lat, c));

  // Pair i of both keys in one lane, so one (cos, sin) per lane and pair serves both.
  const glm_act *rk = rope_key + t * ld_rope;
  const glm_act *ik = index_key + t * ld_index;
  for (int i = lane; i < GLM_KEY_HALF; i += 32) {
    const bool rot = kRotate && 2 * i < GLM_ROPE_DIM;
    const float2 cs = rot ? glm_rope_cs(pos, i, GLM_ROPE_DIM, theta) : make_float2(1.f, 0.f);
    if (2 * i < GLM_D_ROPE) {
      if (rot)
        glm_rope_pair(rk + 2 * i, kv + GLM_D_LATENT + 2 * i, cs);
      else {
        glm_act_store(kv, GLM_D_LATENT + 2 * i, glm_act_load(rk, 2 * i));
        glm_act_store(kv, GLM_D_LATENT + 2 * i + 1, glm_act_load(rk, 2 * i + 1));
      }
    }
    if (2 * i < GLM_D_INDEX) {
      if (rot)
        glm_rope_pair(ik + 2 * i, ix + 2 * i, cs);
      else {
        glm_act_store(ix, 2 * i, glm_act_load(ik, 2 * i));
        glm_act_store(ix, 2 * i + 1, glm_act_load(ik, 2 * i + 1));
      }
    }
  }
}

// The fused op (glm.rope_cache_append): rotates the first GLM_ROPE_DIM values of the rope key
// and of the indexer key by positions[t] * theta^(-2i / GLM_ROPE_DIM) (interleaved pairs) and
// writes latent, rope key and index key rows of each token into the paged cache.
// Grid: ceil(num_tokens / 4) CTAs of 128 threads.
extern "C" __global__ void __launch_bounds__(32 * GLM_CACHE_TOKENS_PER_CTA)
    rope_cache_append(const glm_act *__restrict__ latent, long long ld_latent,
                      const glm_act *__restrict__ rope_key, long long ld_rope,
                      const glm_act *__restrict__ index_key, long long ld_index,
                      const int32_t *__restrict__ positions, const int32_t *__restrict__ seq_ids,
                      const int32_t *__restrict__ block_table, int pages_per_seq,
                      glm_act *__restrict__ kv_cache, glm_act *__restrict__ index_cache,
                      long long num_slots, int num_tokens, float theta) {
  glm_grid_chain_early();
  glm_cache_append<true>(latent, ld_latent, rope_key, ld_rope, index_key, ld_index, positions,
                         seq_ids, block_table, pages_per_seq, kv_cache, index_cache, num_slots,
                         num_tokens, theta);
}

// glm.cache_append: the same rows and slots, keys written as given (already rotated). Same
// arguments as rope_cache_append; theta is unused.
extern "C" __global__ void __launch_bounds__(32 * GLM_CACHE_TOKENS_PER_CTA)
    cache_append(const glm_act *__restrict__ latent, long long ld_latent,
                 const glm_act *__restrict__ rope_key, long long ld_rope,
                 const glm_act *__restrict__ index_key, long long ld_index,
                 const int32_t *__restrict__ positions, const int32_t *__restrict__ seq_ids,
                 const int32_t *__restrict__ block_table, int pages_per_seq,
                 glm_act *__restrict__ kv_cache, glm_act *__restrict__ index_cache,
                 long long num_slots, int num_tokens, float theta) {
  glm_grid_chain_early();
  glm_cache_append<false>(latent, ld_latent, rope_key, ld_rope, index_key, ld_index, positions,
                          seq_ids, block_table, pages_per_seq, kv_cache, index_cache, num_slots,
                          num_tokens, theta);
}

#endif // GLM_ELEM_CACHE

// ------------------------------------------------------------------------------------------
#if defined(GLM_ELEM_POINTWISE)

#define GLM_PW_THREADS 256

// y = silu(g) * u, silu(z) = z / (1 + exp(-z)), over n values. g and u are two separate
// buffers (the gate and up products; a fused gate-up product passes its two halves as two
// pointers). y may alias g or u. Grid-stride: any grid size covers n.
extern "C" __global__ void __launch_bounds__(GLM_PW_THREADS)
    swiglu_mul(const glm_act *g, const glm_act *u, glm_act *y, long long n) {
  glm_grid_chain_early();
  for (long long i = static_cast<long long>(blockIdx.x) * GLM_PW_THREADS + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * GLM_PW_THREADS) {
    const float gv = glm_act_load(g, i);
    // -gv large: __expf gives inf and gv / inf gives -0, silu's limit.
    glm_act_store(y, i, gv / (1.f + __expf(-gv)) * glm_act_load(u, i));
  }
}

// y = a + b over n values; y may alias a or b. Grid-stride.
extern "C" __global__ void __launch_bounds__(GLM_PW_THREADS)
    add(const glm_act *a, const glm_act *b, glm_act *y, long long n) {
  glm_grid_chain_early();
  for (long long i = static_cast<long long>(blockIdx.x) * GLM_PW_THREADS + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * GLM_PW_THREADS)
    glm_act_store(y, i, glm_act_load(a, i) + glm_act_load(b, i));
}

#endif // GLM_ELEM_POINTWISE

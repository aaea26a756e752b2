// Sparse MLA, absorbed form, fp32 everywhere: the validation instantiation behind
// --activation-dtype f32 (docs/kernels.md "Sparse MLA decode"). Simple and exact rather than
// fast: one CTA per (query row, head); scores of all selected rows into shared memory, a
// block-wide max and sum, then each thread accumulates 4 of the 512 output columns.
//
// Instantiation constants: GLM_D_LATENT (512), GLM_D_ROPE (64), GLM_TOPK.
#pragma once
#include "common.cuh"

#define GLM_F32_D (GLM_D_LATENT + GLM_D_ROPE)
#define GLM_F32_THREADS 128

__device__ __forceinline__ float glm_block_reduce(float v, float *scratch, bool is_max) {
  v = is_max ? glm_warp_max(v) : glm_warp_sum(v);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads(); // scratch reuse across calls
  if (lane == 0)
    scratch[warp] = v;
  __syncthreads();
  float r = scratch[0];
  for (int w = 1; w < GLM_F32_THREADS / 32; ++w)
    r = is_max ? fmaxf(r, scratch[w]) : r + scratch[w];
  return r;
}

extern "C" __global__ void __launch_bounds__(GLM_F32_THREADS)
    sparse_mla_f32(const float *__restrict__ q_lat,      // [T, H, GLM_D_LATENT]
                   const float *__restrict__ q_rope,     // [T, H, GLM_D_ROPE]
                   const float *__restrict__ kv,         // [slots, GLM_F32_D]
                   const int32_t *__restrict__ indices,  // [T, GLM_TOPK] physical slots
                   float *__restrict__ out,              // [T, H, GLM_D_LATENT]
                   float *__restrict__ lse,              // [T, H]
                   int num_heads, int num_slots, float scale) {
  glm_grid_chain();
  __shared__ float score[GLM_TOPK];
  __shared__ int32_t slot[GLM_TOPK];
  __shared__ float qs[GLM_F32_D];
  __shared__ float scratch[GLM_F32_THREADS / 32];
  const int h = blockIdx.x, t = blockIdx.y, tid = threadIdx.x;
  const long long qrow = static_cast<long long>(t) * num_heads + h;
  for (int c = tid; c < GLM_F32_D; c += GLM_F32_THREADS)
    qs[c] = c < GLM_D_LATENT ? q_lat[qrow * GLM_D_LATENT + c]
                             : q_rope[qrow * GLM_D_ROPE + (c - GLM_D_LATENT)];
  __syncthreads();
  float mx = -__int_as_float(0x7f800000);
  for (int s = tid; s < GLM_TOPK; s += GLM_F32_THREADS) {
    int sl = indices[static_cast<long long>(t) * GLM_TOPK + s];
    bool ok = sl >= 0 && sl < num_slots;
    slot[s] = ok ? sl : -1;
    float acc = 0.f;
    if (ok) {
      const float *row = kv + static_cast<long long>(sl) * GLM_F32_D;
      for (int c = 0; c < GLM_F32_D; ++c)
        acc = fmaf(qs[c], row[c], acc);
    }
    score[s] = ok ? acc * scale : -__int_as_float(0x7f800000);
    mx = fmaxf(mx, score[s]);
  }
  mx = glm_block_reduce(mx, scratch, true);
  float sum = 0.f;
  for (int s = tid; s < GLM_TOPK; s += GLM_F32_THREADS) {
    float p = slot[s] >= 0 ? expf(score[s] - mx) : 0.f;
    score[s] = p;
    sum += p;
  }
  sum = glm_block_reduce(sum, scratch, false); // also orders the score writes before the reads
  float acc[GLM_D_LATENT / GLM_F32_THREADS] = {};
  for (int s = 0; s < GLM_TOPK; ++s) {
    if (slot[s] < 0)
      continue;
    const float *row = kv + static_cast<long long>(slot[s]) * GLM_F32_D;
    float p = score[s];
#pragma unroll
    for (int j = 0; j < GLM_D_LATENT / GLM_F32_THREADS; ++j)
      acc[j] = fmaf(p, row[tid + j * GLM_F32_THREADS], acc[j]);
  }
  const long long row = static_cast<long long>(t) * num_heads + h;
  float inv = sum > 0.f ? 1.f / sum : 0.f;
#pragma unroll
  for (int j = 0; j < GLM_D_LATENT / GLM_F32_THREADS; ++j)
    out[row * GLM_D_LATENT + tid + j * GLM_F32_THREADS] = acc[j] * inv;
  if (tid == 0)
    lse[row] = sum > 0.f ? mx + logf(sum) : -__int_as_float(0x7f800000);
}

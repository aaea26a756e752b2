// MoE routing (docs/model.md "MoE"): the gate (sigmoid, correction-biased top-k, unbiased
// weights normalized and scaled), grouping of (token, slot) pairs by expert so one launch can run
// every active expert, and the weighted combine of the experts' outputs.
//
// Instantiation constants: GLM_EXPERTS (E), GLM_TOPK_E (k, experts per token), GLM_HIDDEN (for
// the combine), GLM_NORMALIZE (0/1), and GLM_EXPERT_SHARD (1: a rank of a sharded plan holds the
// model's experts [first_expert, first_expert + GLM_EXPERTS), a kernel argument; the grouping
// keeps only their pairs and the combine skips the other slots. Absent: the whole model's).
// Activations are glm_act; gate math is fp32.
#pragma once
#include "common.cuh"

#ifndef GLM_EXPERT_SHARD
#define GLM_EXPERT_SHARD 0
#endif
#if GLM_EXPERT_SHARD
#define GLM_LOCAL_EXPERT(id) ((id) - first_expert)
#else
#define GLM_LOCAL_EXPERT(id) (id)
#endif

#define GLM_GATE_PER_LANE ((GLM_EXPERTS + 31) / 32)

// One warp per token. Selection compares s + bias in fp32, ties to the lower expert id (as the
// host reference); ids are written in selection order (descending s + bias).
extern "C" __global__ void __launch_bounds__(128)
    moe_gate(const float *__restrict__ logits, // [T, E]
             const float *__restrict__ bias,   // [E] (exp_probs_b, F32 in every mix)
             float *__restrict__ weights,      // [T, k]
             int32_t *__restrict__ ids,        // [T, k]
             int tokens, float scale) {
  glm_grid_chain();
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (warp >= tokens)
    return;
  const float *row = logits + static_cast<long long>(warp) * GLM_EXPERTS;
  float s[GLM_GATE_PER_LANE], sel[GLM_GATE_PER_LANE];
#pragma unroll
  for (int j = 0; j < GLM_GATE_PER_LANE; ++j) {
    int e = lane + 32 * j;
    s[j] = e < GLM_EXPERTS ? 1.f / (1.f + expf(-row[e])) : 0.f;
    sel[j] = e < GLM_EXPERTS ? s[j] + bias[e] : -__int_as_float(0x7f800000);
  }
  float chosen_w[GLM_TOPK_E];
  int chosen_id[GLM_TOPK_E];
  float sum = 0.f;
  for (int k = 0; k < GLM_TOPK_E; ++k) {
    // Warp argmax of (sel, -id): the lower id wins ties.
    float best = -__int_as_float(0x7f800000);
    int best_id = 0x7fffffff;
#pragma unroll
    for (int j = 0; j < GLM_GATE_PER_LANE; ++j) {
      int e = lane + 32 * j;
      if (e < GLM_EXPERTS && (sel[j] > best || (sel[j] == best && e < best_id))) {
        best = sel[j];
        best_id = e;
      }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      float ob = __shfl_xor_sync(0xffffffffu, best, o);
      int oi = __shfl_xor_sync(0xffffffffu, best_id, o);
      if (ob > best || (ob == best && oi < best_id)) {
        best = ob;
        best_id = oi;
      }
    }
    // The owner lane publishes the unbiased score and removes the expert from selection.
    float w = 0.f;
#pragma unroll
    for (int j = 0; j < GLM_GATE_PER_LANE; ++j)
      if (lane + 32 * j == best_id) {
        w = s[j];
        sel[j] = -__int_as_float(0x7f800000);
      }
    w = glm_warp_sum(w); // exactly one lane contributed
    chosen_w[k] = w;
    chosen_id[k] = best_id;
    sum += w;
  }
  if (lane == 0) {
    float norm = GLM_NORMALIZE ? 1.f / (sum + 1e-20f) : 1.f;
    for (int k = 0; k < GLM_TOPK_E; ++k) {
      weights[static_cast<long long>(warp) * GLM_TOPK_E + k] = chosen_w[k] * norm * scale;
      ids[static_cast<long long>(warp) * GLM_TOPK_E + k] = chosen_id[k];
    }
  }
}

// Grouping, deterministic: one CTA counts every expert's pairs, scans, and writes each pair's
// position in expert-major order (within an expert, pairs keep token order). For T*k up to a
// few thousand pairs per step (prefill chunks); a multi-CTA version replaces it for more.
//   offsets [E + 1]: pairs of expert e are [offsets[e], offsets[e+1])
//   pair_of [T*k]: the (token * k + slot) at each expert-major position
extern "C" __global__ void __launch_bounds__(256)
    moe_group(const int32_t *__restrict__ ids, int pairs, int32_t *__restrict__ offsets,
              int32_t *__restrict__ pair_of
#if GLM_EXPERT_SHARD
              , int first_expert
#endif
              ) {
  glm_grid_chain();
  __shared__ int32_t count[GLM_EXPERTS];
  __shared__ int32_t start[GLM_EXPERTS + 1];
  for (int e = threadIdx.x; e < GLM_EXPERTS; e += blockDim.x)
    count[e] = 0;
  __syncthreads();
  for (int p = threadIdx.x; p < pairs; p += blockDim.x) {
    int e = GLM_LOCAL_EXPERT(ids[p]);
    if (e >= 0 && e < GLM_EXPERTS)
      atomicAdd(&count[e], 1);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    int acc = 0;
    for (int e = 0; e < GLM_EXPERTS; ++e) {
      start[e] = acc;
      acc += count[e];
    }
    start[GLM_EXPERTS] = acc;
  }
  __syncthreads();
  for (int e = threadIdx.x; e <= GLM_EXPERTS; e += blockDim.x)
    offsets[e] = start[e];
  // Stable placement: pair p goes after every earlier pair of the same expert. Each thread owns
  // experts e = tid, tid + blockDim, ... and walks the pairs in order.
  for (int e = threadIdx.x; e < GLM_EXPERTS; e += blockDim.x) {
    int at = start[e];
    for (int p = 0; p < pairs; ++p)
      if (GLM_LOCAL_EXPERT(ids[p]) == e)
        pair_of[at++] = p;
  }
}

// y[t] = sum_j weights[t, j] * expert_out[t * k + j] (rows of GLM_HIDDEN, fp32 partials), in slot
// order. One CTA per token.
extern "C" __global__ void __launch_bounds__(256)
    moe_combine(const float *__restrict__ expert_out, // [T * k, GLM_HIDDEN]
                const float *__restrict__ weights,    // [T, k]
                glm_act *__restrict__ y,              // [T, GLM_HIDDEN]
                int tokens
#if GLM_EXPERT_SHARD
                , const int32_t *__restrict__ ids, int first_expert // [T, k]: other ranks' slots
#endif                                                              // have no expert_out row
                ) {
  glm_grid_chain();
  const int t = blockIdx.x;
  for (int c = threadIdx.x; c < GLM_HIDDEN; c += blockDim.x) {
    float acc = 0.f;
#pragma unroll
    for (int j = 0; j < GLM_TOPK_E; ++j) {
#if GLM_EXPERT_SHARD
      const int e = GLM_LOCAL_EXPERT(ids[t * GLM_TOPK_E + j]);
      if (e < 0 || e >= GLM_EXPERTS)
        continue;
#endif
      acc = fmaf(weights[t * GLM_TOPK_E + j],
                 expert_out[(static_cast<long long>(t) * GLM_TOPK_E + j) * GLM_HIDDEN + c], acc);
    }
    glm_act_store(y, static_cast<long long>(t) * GLM_HIDDEN + c, acc);
  }
}

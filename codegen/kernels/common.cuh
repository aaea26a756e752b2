// Device helpers shared by the kernel templates: bf16 packing, ldmatrix, mma.sync m16n8k16 and
// cp.async. Only instructions present on sm_80 and later (so on sm_90 and sm_120 alike): the
// same template source serves both, and SM120 tile configurations run on Hopper for testing.
// Self-contained (no CUDA headers), so NVRTC needs no include path.
#pragma once

typedef unsigned short glm_bf16;
typedef unsigned int uint32_t;
typedef int int32_t;

__device__ __forceinline__ uint32_t glm_pack_bf16x2(float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

__device__ __forceinline__ float glm_bf16_to_f32(glm_bf16 h) {
  return __uint_as_float(static_cast<uint32_t>(h) << 16);
}

// Four bf16 values packed low half first (as glm_pack_bf16x2 packs them), widened.
__device__ __forceinline__ float4 glm_unpack_bf16x4(uint2 h) {
  return make_float4(__uint_as_float(h.x << 16), __uint_as_float(h.x & 0xffff0000u),
                     __uint_as_float(h.y << 16), __uint_as_float(h.y & 0xffff0000u));
}

__device__ __forceinline__ glm_bf16 glm_f32_to_bf16(float f) {
  glm_bf16 r;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(f));
  return r;
}

__device__ __forceinline__ float glm_f16_to_f32(unsigned short h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}

// Activations and the KV cache are bf16, or f32 in the validation instantiation
// (--activation-dtype f32). Kernels read and write them through these, never directly.
#ifndef GLM_ACT_F32
#define GLM_ACT_F32 0
#endif
#if GLM_ACT_F32
typedef float glm_act;
__device__ __forceinline__ float glm_act_load(const glm_act *p, long long i) { return p[i]; }
__device__ __forceinline__ void glm_act_store(glm_act *p, long long i, float v) { p[i] = v; }
#else
typedef glm_bf16 glm_act;
__device__ __forceinline__ float glm_act_load(const glm_act *p, long long i) {
  return glm_bf16_to_f32(p[i]);
}
__device__ __forceinline__ void glm_act_store(glm_act *p, long long i, float v) {
  p[i] = glm_f32_to_bf16(v);
}
#endif

// 2^x with the hardware's approximate instruction (rel. error ~2^-22); NVRTC runs without
// --use_fast_math, so plain expf/exp2f/sincosf stay accurate where a kernel needs them.
__device__ __forceinline__ float glm_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ float glm_warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float glm_warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__device__ __forceinline__ uint32_t glm_smem_addr(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Four 8x8 bf16 matrices; lane l supplies the row address of matrix l / 8, row l % 8.
__device__ __forceinline__ void glm_ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// Two 8x8 bf16 matrices; lanes 0-15 supply the row addresses (matrix l / 8, row l % 8).
__device__ __forceinline__ void glm_ldmatrix_x2(uint32_t (&r)[2], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(addr));
}

__device__ __forceinline__ void glm_ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// D = A(16x16, row) * B(16x8, col) + D, fp32 accumulators; inputs bf16, or fp16 with kF16.
template <bool kF16>
__device__ __forceinline__ void glm_mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                              uint32_t b1) {
#define GLM_MMA_16816(T)                                                                         \
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." T "." T ".f32 "                          \
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"                 \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                                  \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1))
  if (kF16)
    GLM_MMA_16816("f16");
  else
    GLM_MMA_16816("bf16");
#undef GLM_MMA_16816
}
__device__ __forceinline__ void glm_mma_bf16_16816(float (&d)[4], const uint32_t (&a)[4],
                                                   uint32_t b0, uint32_t b1) {
  glm_mma_16816<false>(d, a, b0, b1);
}
// D = A(16x32, row, unsigned bytes) * B(32x8, col, signed bytes) + C, s32 (sm_80+, SM120
// included), C's columns 2t, 2t + 1 given as c0, c1 for both rows. Fragments as m16n8k16's with
// four bytes per register: a0 row g, k 4t..4t+3; a1 row g + 8; a2, a3 the same at k + 16; b0
// k 4t..4t+3 of column g, b1 k + 16.
__device__ __forceinline__ void glm_mma_u8s8_16832(int (&d)[4], const uint32_t (&a)[4],
                                                   uint32_t b0, uint32_t b1, int c0 = 0,
                                                   int c1 = 0) {
  asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %10, %11};"
               : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "r"(c0), "r"(c1));
}
// D = A(16x16, row, unsigned bytes) * B(16x8, col, signed bytes) + C, s32, with C's columns
// 2t, 2t + 1 given as c0, c1 for both rows (sm_80+): a0 row g, k 4t..4t+3; a1 row g + 8;
// b0 k 4t..4t+3 of column g.
__device__ __forceinline__ void glm_mma_u8s8_16816(int (&d)[4], uint32_t a0, uint32_t a1,
                                                   uint32_t b0, int c0, int c1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.s32.u8.s8.s32 "
               "{%0, %1, %2, %3}, {%4, %5}, {%6}, {%7, %8, %7, %8};"
               : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
               : "r"(a0), "r"(a1), "r"(b0), "r"(c0), "r"(c1));
}

// 16-byte global->shared copy; src_bytes 0 zero-fills (masked rows are never read from memory).
// One k-tile of the 64 x 128 products (qlinear_prefill, the MoE expert tiles): 8 warps in a
// 2 x 4 grid, warp (wm, wn) multiplies rows [32 wm, 32 wm + 32) of xt (activations, bf16) by rows
// [32 wn, 32 wn + 32) of wt (weights, bf16, one row per output), both with row stride PROW
// elements, over k in [0, BK). acc[mi][ni] is the mma C fragment of xt rows 32 wm + 16 mi and
// wt rows 32 wn + 8 ni.
template <int BK, int PROW>
__device__ __forceinline__ void glm_tile_mma_64x128(const glm_bf16 *xt, const glm_bf16 *wt, int wm,
                                                    int wn, int lane, float (&acc)[2][4][4]) {
#pragma unroll
  for (int kk = 0; kk < BK; kk += 16) {
    uint32_t a[2][4];
#pragma unroll
    for (int mi = 0; mi < 2; ++mi)
      glm_ldmatrix_x4(a[mi], glm_smem_addr(xt + (wm * 32 + mi * 16 + lane % 16) * PROW + kk +
                                           (lane / 16) * 8));
#pragma unroll
    for (int p = 0; p < 2; ++p) {
      // matrices: (rows n..n+7, k 0-7), (n.., k 8-15), (n+8.., k 0-7), (n+8.., k 8-15).
      uint32_t b[4];
      glm_ldmatrix_x4(b, glm_smem_addr(wt + (wn * 32 + p * 16 + (lane / 16) * 8 + lane % 8) * PROW +
                                       kk + ((lane / 8) % 2) * 8));
#pragma unroll
      for (int mi = 0; mi < 2; ++mi) {
        glm_mma_bf16_16816(acc[mi][2 * p], a[mi], b[0], b[1]);
        glm_mma_bf16_16816(acc[mi][2 * p + 1], a[mi], b[2], b[3]);
      }
    }
  }
}

// kL1: through L1 (.ca) instead of L2 only (.cg); kPf: L2 prefetch size, 0 or 128 bytes
// (.L2::128B: L2 fetches the whole 128-byte line a copy falls in).
template <bool kL1 = false, int kPf = 0>
__device__ __forceinline__ void glm_cp_async_16(uint32_t dst, const void *src, int src_bytes) {
  static_assert(kPf == 0 || kPf == 128, "L2 prefetch of 0 or 128 bytes");
#define GLM_CP16(OP, PF)                                                                           \
  asm volatile("cp.async." OP ".shared.global" PF " [%0], [%1], 16, %2;" ::"r"(dst), "l"(src),    \
               "r"(src_bytes))
  if (kL1 && kPf)
    GLM_CP16("ca", ".L2::128B");
  else if (kL1)
    GLM_CP16("ca", "");
  else if (kPf)
    GLM_CP16("cg", ".L2::128B");
  else
    GLM_CP16("cg", "");
#undef GLM_CP16
}
// The same at constant byte offsets from both addresses (immediates in the instruction, so a
// row's chunks share one address computation).
template <int kOffset>
__device__ __forceinline__ void glm_cp_async_16_at(uint32_t dst, const void *src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0+%3], [%1+%3], 16, %2;" ::"r"(dst), "l"(src),
               "r"(src_bytes), "n"(kOffset));
}
// N such copies at byte offsets 0, kStride, .., (N - 1) kStride from both addresses.
template <int N, int kStride>
__device__ __forceinline__ void glm_cp_async_16_strided(uint32_t dst, const void *src,
                                                        int src_bytes) {
  if constexpr (N > 0) {
    glm_cp_async_16_strided<N - 1, kStride>(dst, src, src_bytes);
    glm_cp_async_16_at<(N - 1) * kStride>(dst, src, src_bytes);
  }
}
// The same where only the first n_full copies read their source; the others zero-fill their 16
// bytes (src-size 0: nothing is read).
template <int N, int kStride>
__device__ __forceinline__ void glm_cp_async_16_strided_upto(uint32_t dst, const void *src,
                                                             int n_full) {
  if constexpr (N > 0) {
    glm_cp_async_16_strided_upto<N - 1, kStride>(dst, src, n_full);
    glm_cp_async_16_at<(N - 1) * kStride>(dst, src, N - 1 < n_full ? 16 : 0);
  }
}
__device__ __forceinline__ void glm_cp_async_commit() { asm volatile("cp.async.commit_group;"); }
template <int N> __device__ __forceinline__ void glm_cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N));
}

// Shared-memory barrier objects (mbarrier, sm_80+; try_wait sm_90+, which SM120 has). A phase
// completes when `count` arrivals have been made (init); arrive has release and try_wait acquire
// semantics at CTA scope, so the stores an arriving thread made before are visible to a thread
// whose wait for that phase has returned. glm_mbar_wait(bar, p) returns once the phase of parity
// p (0 for the first, 1 for the second, ...) has completed.
__device__ __forceinline__ void glm_mbar_init(unsigned long long *bar, unsigned count) {
  asm volatile("mbarrier.init.shared.b64 [%0], %1;" ::"r"(glm_smem_addr(bar)), "r"(count)
               : "memory");
}
__device__ __forceinline__ void glm_mbar_arrive(unsigned long long *bar) {
  asm volatile("{\n\t.reg .b64 st;\n\tmbarrier.arrive.shared.b64 st, [%0];\n\t}" ::"r"(
                   glm_smem_addr(bar))
               : "memory");
}
__device__ __forceinline__ void glm_mbar_wait(unsigned long long *bar, unsigned parity) {
  asm volatile("{\n\t.reg .pred p;\n\tGLM_MBAR_WAIT:\n\t"
               "mbarrier.try_wait.parity.shared.b64 p, [%0], %1;\n\t"
               "@!p bra GLM_MBAR_WAIT;\n\t}" ::"r"(glm_smem_addr(bar)),
               "r"(parity)
               : "memory");
}

// Bulk copies (the copy engine, sm_90+, SM120 too) into shared memory whose completion counts on
// an mbarrier: the issuing thread first raises the phase's expected bytes (an arrival too), the
// copy's bytes then complete them. Shared memory written by threads (the generic proxy) before a
// later bulk copy overwrites it needs glm_fence_proxy_async() between the two.
__device__ __forceinline__ void glm_mbar_arrive_expect_tx(unsigned long long *bar,
                                                          unsigned bytes) {
  asm volatile("{\n\t.reg .b64 st;\n\t"
               "mbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\n\t}" ::"r"(
                   glm_smem_addr(bar)),
               "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void glm_bulk_copy_to_shared(uint32_t dst, const void *src,
                                                        unsigned bytes, unsigned long long *bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, "
               "[%3];" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(glm_smem_addr(bar))
               : "memory");
}
__device__ __forceinline__ void glm_fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
// 16 zero bytes to shared memory at addr (16-byte aligned).
__device__ __forceinline__ void glm_st_shared_zero16(uint32_t addr) {
  asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};" ::"r"(addr), "r"(0u) : "memory");
}

// Programmatic dependent launch (sm_90 and sm_120; Driver::launchOverlapped). Every kernel's
// first statement but qlinear_decode's, which first issues copies of its weights (never written
// by a kernel of a step) into its own shared memory, and indexer_score's, which first copies its
// first tile of keys written by earlier calls (the positions and block table it reads to find
// them are the host's). A kernel launched overlapped may be scheduled as soon as its
// predecessor on the stream has triggered, which it does when its last CTA exits (before the
// grid's completion is processed) or earlier (glm_grid_chain_early);
// `griddepcontrol.wait` holds it until that kernel has completed and its writes are visible (at
// once without the launch attribute), so nothing else before the wait may touch global memory
// (test/gpu/check_grid_chain.py checks the PTX). GLM_PDL_TRIGGER 1 also issues `launch_dependents` after the wait, so the
// successor is scheduled once every CTA of this grid has started: measured on the H200
// (bench/RESULTS.md, "overlapped launches"), it made a 4-CTA-per-SM indexer score followed by
// topk_row 12 us slower and the width slice's decode ~4% slower, so it is off.
#ifndef GLM_PDL_TRIGGER
#define GLM_PDL_TRIGGER 0
#endif
__device__ __forceinline__ void glm_grid_chain() {
  asm volatile("griddepcontrol.wait;" ::: "memory");
#if GLM_PDL_TRIGGER
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
// The chain of a short kernel (elementwise.cuh): glm_grid_chain, then `launch_dependents`, which
// lets the successor be scheduled once every CTA of this grid has issued it (so all of them are
// resident or done; the successor's CTAs take what is left and what this grid's CTAs free)
// instead of once every CTA has exited. A successor that works before its wait (qlinear_decode's
// first weight copies) then overlaps this kernel, and its launch is off the critical path. Only
// the short kernels issue it: measured on the H200 (bench/RESULTS.md, "weights before the
// wait"), the decode step gains with it there and loses with it in head_linear, and
// qlinear_decode chains with it were up to 30% slower (the successor's early CTAs land unevenly).
__device__ __forceinline__ void glm_grid_chain_early() {
  glm_grid_chain();
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

// The SM this thread runs on (profiling: which SMs the slow CTAs share).
__device__ __forceinline__ unsigned glm_smid() {
  unsigned id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  return id;
}
// The device's nanosecond clock, comparable across SMs (profiling traces only).
__device__ __forceinline__ unsigned long long glm_globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Thread-block clusters (sm_90 and sm_120). A launch without a cluster attribute is a cluster
// of one CTA: rank 0 of 1, and its own shared memory is the only one mapped.
__device__ __forceinline__ unsigned glm_cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ unsigned glm_cluster_size() {
  unsigned n;
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
  return n;
}
// Every thread of every CTA of the cluster executes both halves. Writes to shared memory before
// the arrive are visible to the cluster's reads after the wait.
__device__ __forceinline__ void glm_cluster_arrive() {
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
}
// The arrive for a barrier that publishes shared memory only: this thread's earlier writes to
// its own CTA's shared memory are visible to the peers' distributed-shared-memory reads after
// their wait. A release fence restricted to shared::cta operations, then a relaxed arrive: the
// plain release arrive is a MEMBAR.ALL.GPU first (SASS), which waits for the thread's global
// memory operations too (GLM_CLUSTER_SHARED_RELEASE 0: that arrive, for comparison).
// The peers' own reads of this CTA's shared memory before their arrive are not ordered by it:
// a caller that overwrites what peers read relies on their having used the values read.
#ifndef GLM_CLUSTER_SHARED_RELEASE
#define GLM_CLUSTER_SHARED_RELEASE 1
#endif
__device__ __forceinline__ void glm_cluster_arrive_shared() {
#if GLM_CLUSTER_SHARED_RELEASE
  asm volatile("fence.release.sync_restrict::shared::cta.cluster;\n\t"
               "barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
#else
  glm_cluster_arrive();
#endif
}
// An arrive without release semantics, for a barrier that only keeps CTAs alive: no CTA exits
// while a peer still reads its shared memory (reads whose values were used before the arrive).
__device__ __forceinline__ void glm_cluster_arrive_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}
__device__ __forceinline__ void glm_cluster_wait() {
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// atomicAdd at gpu scope with acquire-release semantics: the calling thread's earlier writes
// (and those ordered before it by a barrier) are visible to whoever reads the new value with
// acquire, and the caller's later reads see what the earlier arrivals published.
__device__ __forceinline__ unsigned glm_atomic_add_acq_rel_gpu(unsigned *p, unsigned v) {
  unsigned old;
  asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;"
               : "=r"(old)
               : "l"(p), "r"(v)
               : "memory");
  return old;
}
// Counters other CTAs of the launch wait on, at gpu scope: an arrival that publishes the
// caller's earlier writes (and those a barrier ordered before it) without waiting for a reply,
// and an acquire load to poll with. (A relaxed add that returns the old value is atomicAdd.)
__device__ __forceinline__ void glm_red_add_release_gpu(unsigned *p, unsigned v) {
  asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ unsigned glm_ld_acquire_gpu(const unsigned *p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
// A barrier of CTAs of one launch in global memory, every one of them resident at once: the
// calling CTA arrives on *count (release: its threads' earlier writes, ordered before thread 0's
// arrival by the CTA barrier, are published) and waits until the count reaches `target`; thread
// 0's (tid, the caller's threadIdx.x) acquire then orders every thread's later reads. A barrier that never completes would hang
// the process: after 2^24 polls (seconds) it traps instead, which the host reports as a failed
// launch. A call, not inlined (sparse MLA's spread merge measured why; sparse_mla_decode.cuh).
// Resetting the count is the caller's (a departure counter, the last CTA out zeroing both).
__device__ __noinline__ void glm_global_barrier(unsigned *count, int target, int tid) {
  __syncthreads();
  if (tid == 0) {
    glm_red_add_release_gpu(count, 1u);
    for (unsigned polls = 0; glm_ld_acquire_gpu(count) < static_cast<unsigned>(target);)
      if (++polls == (1u << 24))
        __trap();
  }
  __syncthreads();
}

// The address of the same shared-memory location in the CTA of cluster rank `rank`.
__device__ __forceinline__ uint32_t glm_cluster_map(uint32_t smem_addr, unsigned rank) {
  uint32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(smem_addr), "r"(rank));
  return r;
}
__device__ __forceinline__ float glm_ld_cluster_f32(uint32_t addr) {
  float v;
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(addr) : "memory");
  return v;
}
__device__ __forceinline__ uint32_t glm_ld_cluster_u32(uint32_t addr) {
  uint32_t v;
  asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(v) : "r"(addr) : "memory");
  return v;
}
__device__ __forceinline__ uint2 glm_ld_cluster_u32x2(uint32_t addr) {
  uint2 v;
  asm volatile("ld.shared::cluster.v2.u32 {%0, %1}, [%2];"
               : "=r"(v.x), "=r"(v.y)
               : "r"(addr)
               : "memory");
  return v;
}
__device__ __forceinline__ uint4 glm_ld_cluster_u32x4(uint32_t addr) {
  uint4 v;
  asm volatile("ld.shared::cluster.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(addr)
               : "memory");
  return v;
}
__device__ __forceinline__ float4 glm_ld_cluster_f32x4(uint32_t addr) {
  const uint4 v = glm_ld_cluster_u32x4(addr);
  return make_float4(__uint_as_float(v.x), __uint_as_float(v.y), __uint_as_float(v.z),
                     __uint_as_float(v.w));
}

// Causal top-k of indexer scores by radix select (docs/model.md "DSA lightning indexer"; design
// notes in docs/kernels.md "Lightning indexer and top-k").
//
// Row t selects count = min(k, n) of its n = min(pos_t + 1, n_cols) causal positions (none when
// pos_t < 0): every position whose score is above the count-th largest, then the lowest positions
// among those equal to it (ties to the LOWER position; NaN ranks as -inf, -0 equals +0, as in
// runtime/host topK). The selected positions go to indices [T, k] in ascending order, -1 after
// the last; `slots`, when not null, gets their physical cache slots (-1 likewise). Deterministic:
// every decision comes from integer counts and (score, position) order, never from the order of
// atomics.
//
// Scores become order-preserving uint32 keys (bigger score, bigger key); histogram passes of 11,
// 11 and 10 bits find the count-th largest key K* and `need`, the number of positions with key
// K* to take after the strictly greater ones.
//
// topk_row: one CTA per row, one launch. A row of at most GLM_TOPK_CACHE positions is read from
// global memory once and kept as keys in shared memory; a longer one keeps the candidates of the
// first pass's bin there when they fit. A final pass in position order emits s when key > K*, or
// key == K* and fewer than `need` equal keys precede it, at output index (#greater before s) +
// min(#equal before s, need): ascending without a sort.
//
// topk_seg_hist0 + topk_seg_collect: the multi-CTA variant for long rows and few of them, CTA
// (c, t) covering positions [c seg_len, (c + 1) seg_len) of row t, two launches. hist0 adds each
// segment's 11-bit histogram to the row's global one; the last CTA of the row (an atomic ticket)
// picks the bin b0. collect appends the positions above b0 (fewer than k) to the row's output and
// the (key, position) pairs in b0 to a candidate buffer; its last CTA selects the remaining ones
// among the candidates (two key passes, position passes on a tie at the cut), merges, and writes
// the k positions in ascending order through a bitmap of the row in shared memory.
//
// topk_cluster: one launch, a thread-block cluster of CTAs per row, each holding a segment's keys
// in shared memory; pass 0's digit comes from the cluster's summed histograms read through
// distributed shared memory, and passes 1 and 2 either the same way or, when the cluster's keys
// in pass 0's bin are few, from those keys gathered into every CTA (see its section below).
//
// topk_grid: one launch, many CTAs per row meeting at barriers in global memory (every CTA
// resident at once), each a segment in shared memory; the digits come from global histograms,
// and once a pass's bin is small its keys go to a list every CTA finishes alone (its section at
// the end of this file).
//
// Instantiation constants: GLM_PAGE (positions per cache page, a power of two),
// GLM_TOPK_THREADS (threads of every entry, a power of two in 64..1024), GLM_TOPK_CACHE,
// GLM_TOPK_SEG_ELEMS (positions per thread of a segment), GLM_TOPK_MAXK (largest k of the
// multi-CTA variant, a power of two), GLM_TOPK_CAND_SMEM (candidates the finishing CTA copies to
// shared memory; more are read from the global buffer).
#pragma once
#include "common.cuh"

#define GLM_TK_WARPS (GLM_TOPK_THREADS / 32)
#define GLM_TK_BINS 2048 // bins of the 11-bit passes; the 10-bit pass uses the first 1024
// Keys each lane loads before using any (memory-level parallelism); every pass's loop body is
// unrolled this far. Overridable (`glm5c-bench-indexer --define GLM_TK_BATCH=4`): at B = 1 the
// row kernel stalls on instruction fetch (bench/RESULTS.md "where topk_row's time goes").
#ifndef GLM_TK_BATCH
#define GLM_TK_BATCH 8
#endif
#define GLM_TK_SEG_MAX (GLM_TOPK_THREADS * GLM_TOPK_SEG_ELEMS) // longest segment
// topk_row's register path gathers its outputs in shared memory before writing them (0: direct
// stores, for comparison: `glm5c-bench-indexer --define GLM_TK_ROW_STAGE=0`).
#ifndef GLM_TK_ROW_STAGE
#define GLM_TK_ROW_STAGE 1
#endif

static_assert((GLM_PAGE & (GLM_PAGE - 1)) == 0, "page size is a power of two");
static_assert(GLM_TOPK_THREADS >= 64 && GLM_TOPK_THREADS <= 1024 &&
                  (GLM_TOPK_THREADS & (GLM_TOPK_THREADS - 1)) == 0,
              "bins split evenly over the threads");
static_assert((GLM_TOPK_MAXK & (GLM_TOPK_MAXK - 1)) == 0, "the bitonic sort takes a power of two");
static_assert(GLM_TOPK_SEG_ELEMS <= 64, "per-thread counts are packed in 16 bits");

// Scratch (uint32) shared by the block-wide helpers: [0, 32) warp totals of a scan,
// [32, 96) per-warp (greater, equal) counts, [96, 128) single values.
#define GLM_TK_SCRATCH 128
#define GLM_TK_PAIRS 32
#define GLM_TK_MISC 96

// topk_row's dynamic shared memory, in bytes (the registry's topKRowSmem computes the same).
#define GLM_TK_SMEM_HIST 0
#define GLM_TK_SMEM_SCRATCH (GLM_TK_BINS * 4)
#define GLM_TK_SMEM_CACHE (GLM_TK_SMEM_SCRATCH + GLM_TK_SCRATCH * 4)
#define GLM_TK_SMEM_BYTES (GLM_TK_SMEM_CACHE + GLM_TOPK_CACHE * 4)

// topk_seg_collect's dynamic shared memory (the registry's topKCollectSmem): histogram, scratch,
// the merged positions, the candidate copy.
#define GLM_TK_CSMEM_SEL GLM_TK_SMEM_CACHE
#define GLM_TK_CSMEM_CAND (GLM_TK_CSMEM_SEL + GLM_TOPK_MAXK * 4)
#define GLM_TK_CSMEM_BYTES (GLM_TK_CSMEM_CAND + GLM_TOPK_CAND_SMEM * 8)

// Multi-CTA workspace: per row GLM_TK_WS_ROW uint32 (the global histogram, two tickets, the
// append counters, b0 and the count above it), then per row n_cols (key, position) pairs.
// Invariant: histogram, tickets and counters are zero whenever no launch is running (zero the
// workspace once at allocation; each launch's last CTA re-zeroes what it used).
#define GLM_TK_WS_TICKET0 2048
#define GLM_TK_WS_TICKET1 2049
#define GLM_TK_WS_SURE 2050
#define GLM_TK_WS_CAND 2051
#define GLM_TK_WS_B0 2052
#define GLM_TK_WS_ABOVE0 2053
#define GLM_TK_WS_ROW 2056

// Phase trace (profiling only, glm5c-bench-indexer --trace; GLM_TK_TRACE = the most CTAs per
// launch traced): thread 0 of CTA c (blockIdx.y * gridDim.x + blockIdx.x) of the multi-CTA
// launches (0 hist0, 1 collect) stores %globaltimer at slot 0 its start (after the grid chain),
// 1 its ticket, 2 its end; the row's last CTA of collect also at 3 candidates loaded, 4 K* and
// `need` found, 5 merged, 6 positions written. topk_row (launch 2, rows in registers): 0 start,
// 1 histograms zeroed, 2-4 histogram passes 0-2 selected (the rank finish: 4 its end, 3 too
// after pass 0), 5 end; topk_cluster (launch 2 too): 0 start, 1 keys loaded, 2-4 passes 0-2
// selected, 5 end, and with the gathered finish 6 the collect scanned, 7 the cluster synced
// (before the gathered keys' loads). topk_trace_dump copies them out.
#ifdef GLM_TK_TRACE
#define GLM_TK_TRACE_SLOTS 8
__device__ unsigned long long glm_tk_trace[3][GLM_TK_TRACE][GLM_TK_TRACE_SLOTS];
#define GLM_TK_STAMP(launch, slot)                                                                \
  do {                                                                                           \
    const unsigned c_ = blockIdx.y * gridDim.x + blockIdx.x;                                     \
    if (threadIdx.x == 0 && c_ < GLM_TK_TRACE)                                                   \
      glm_tk_trace[launch][c_][slot] = glm_globaltimer();                                        \
  } while (0)
extern "C" __global__ void topk_trace_dump(unsigned long long *out) {
  glm_grid_chain();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < 3 * GLM_TK_TRACE * GLM_TK_TRACE_SLOTS;
       i += gridDim.x * blockDim.x)
    out[i] = (&glm_tk_trace[0][0][0])[i];
}
#else
#define GLM_TK_STAMP(launch, slot)
#endif

// Order-preserving key of a score.
__device__ __forceinline__ uint32_t glm_tk_key(float f) {
  uint32_t u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    u = 0xff800000u; // NaN ranks as -inf
  if (u == 0x80000000u)
    u = 0u; // -0 ties with +0
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

__device__ __forceinline__ uint32_t glm_tk_load(const float *src, const uint32_t *cache, int s) {
  return cache ? cache[s] : glm_tk_key(src[s]);
}

// Causal candidates of a row: positions 0 .. n - 1.
__device__ __forceinline__ int glm_tk_candidates(int pos, int n_cols) {
  return pos < 0 ? 0 : min(pos, n_cols - 1) + 1;
}

__device__ __forceinline__ int32_t glm_tk_slot(const int32_t *bt, int s) {
  return bt[static_cast<unsigned>(s) / GLM_PAGE] * GLM_PAGE + static_cast<unsigned>(s) % GLM_PAGE;
}

// Pass p: digit bits [shift, shift + bits) of the key; elements count when their bits above the
// digit equal the prefix resolved so far.
__device__ __forceinline__ int glm_tk_shift(int p) { return p == 0 ? 21 : p == 1 ? 10 : 0; }
__device__ __forceinline__ int glm_tk_nbins(int p) { return p == 2 ? 1024 : 2048; }
__device__ __forceinline__ uint32_t glm_tk_himask(int p) {
  return p == 0 ? 0u : p == 1 ? 0xffe00000u : 0xfffffc00u;
}

// Loads that bypass L1: data other CTAs of this launch wrote.
__device__ __forceinline__ uint32_t glm_ld_cg(const uint32_t *p) {
  uint32_t v;
  asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}
__device__ __forceinline__ uint2 glm_ld_cg2(const uint2 *p) {
  uint2 v;
  asm volatile("ld.global.cg.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p));
  return v;
}

// hist[bin] += 1 for every lane with `valid`. A warp whose valid lanes share one bin (rows of
// equal scores) makes one atomic instead of 32 serialized ones. All 32 lanes call it together.
__device__ __forceinline__ void glm_tk_hist_add(uint32_t *hist, uint32_t bin, bool valid) {
  const uint32_t vm = __ballot_sync(0xffffffffu, valid);
  if (!vm)
    return;
  const int leader = __ffs(vm) - 1;
  const uint32_t first = __shfl_sync(0xffffffffu, bin, leader);
  if (__all_sync(0xffffffffu, !valid || bin == first)) {
    if (static_cast<int>(threadIdx.x % 32) == leader)
      atomicAdd(&hist[first], static_cast<uint32_t>(__popc(vm)));
  } else if (valid) {
    atomicAdd(&hist[bin], 1u);
  }
}

// Appends `v` for every lane with `take` at dst[*counter ...] (shared counter, one atomic per
// warp; the order among warps is arbitrary). All 32 lanes call it together.
__device__ __forceinline__ void glm_tk_append(int32_t *dst, uint32_t *counter, int32_t v,
                                              bool take) {
  const int lane = threadIdx.x % 32;
  const uint32_t bm = __ballot_sync(0xffffffffu, take);
  if (!bm)
    return;
  const int leader = __ffs(bm) - 1;
  uint32_t at = 0;
  if (lane == leader)
    at = atomicAdd(counter, static_cast<uint32_t>(__popc(bm)));
  at = __shfl_sync(0xffffffffu, at, leader);
  if (take)
    dst[at + __popc(bm & ((1u << lane) - 1u))] = v;
}

// Inclusive prefix sum over the warp in lane order (every lane calls it).
__device__ __forceinline__ uint32_t glm_tk_warp_inscan(uint32_t x) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const uint32_t y = __shfl_up_sync(0xffffffffu, x, o);
    if (lane >= o)
      x += y;
  }
  return x;
}

// Exclusive prefix sum over the block in thread order; ends with a barrier (scratch reusable)
// unless kLast (the block's last use of scratch, or a barrier follows before its next use).
template <bool kLast = false>
__device__ __forceinline__ uint32_t glm_tk_exscan(uint32_t v, uint32_t *scratch) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const uint32_t x = glm_tk_warp_inscan(v);
  if (lane == 31)
    scratch[warp] = x;
  __syncthreads();
  // The lower warps' totals: one load per lane and a warp reduction, not a serial walk.
  const uint32_t off = __reduce_add_sync(0xffffffffu, lane < warp ? scratch[lane] : 0u);
  if (!kLast)
    __syncthreads();
  return off + x - v;
}

// gt += the lower warps' (greater, equal) counts of pairs (pairs[2 w], pairs[2 w + 1]), eq too:
// one load per lane and a warp reduction. All 32 lanes call it.
__device__ __forceinline__ void glm_tk_pairs_before(const uint32_t *pairs, int warp, uint32_t *gt,
                                                    uint32_t *eq) {
  const int lane = threadIdx.x % 32;
  *gt += __reduce_add_sync(0xffffffffu, lane < warp ? pairs[2 * lane] : 0u);
  *eq += __reduce_add_sync(0xffffffffu, lane < warp ? pairs[2 * lane + 1] : 0u);
}

// Finds the digit d with above(d) < remaining <= above(d) + hist[d], above(d) = sum of hist[b]
// for b > d; writes misc[0] = d, misc[1] = above(d). Requires sum(hist) >= remaining >= 1, so
// exactly one (thread, bin) matches. Thread i owns the bins [nbins - (i + 1) per, nbins - i per),
// walked downward, so thread order is descending bin order. Ends with a barrier, which is also
// what keeps the scan's scratch words from the next scan's writes (misc lies past them).
__device__ __forceinline__ void glm_tk_select(const uint32_t *hist, int nbins, uint32_t remaining,
                                              uint32_t *scratch, uint32_t *misc) {
  const int per = nbins / GLM_TOPK_THREADS;
  const int hi = nbins - static_cast<int>(threadIdx.x) * per;
  uint32_t local = 0;
  for (int b = hi - 1; b >= hi - per; --b)
    local += hist[b];
  uint32_t above = glm_tk_exscan<true>(local, scratch);
  for (int b = hi - 1; b >= hi - per; --b) {
    const uint32_t c = hist[b];
    if (above < remaining && above + c >= remaining) {
      misc[0] = static_cast<uint32_t>(b);
      misc[1] = above;
    }
    above += c;
  }
  __syncthreads();
}

// Warp w's piece of [lo, hi): contiguous, a multiple of 32 long, in warp order.
__device__ __forceinline__ void glm_tk_warp_range(int lo, int hi, int *wlo, int *whi) {
  const int per = ((hi - lo + GLM_TK_WARPS - 1) / GLM_TK_WARPS + 31) & ~31;
  *wlo = min(hi, lo + static_cast<int>(threadIdx.x / 32) * per);
  *whi = min(hi, *wlo + per);
}

// Warp-wide counts of keys > kth and == kth in [wlo, whi) (every lane gets the totals).
__device__ __forceinline__ void glm_tk_warp_count(const float *src, const uint32_t *cache, int wlo,
                                                  int whi, uint32_t kth, uint32_t *gt,
                                                  uint32_t *eq) {
  const int lane = threadIdx.x % 32;
  uint32_t g = 0, e = 0;
  for (int base = wlo; base < whi; base += 32 * GLM_TK_BATCH) {
    uint32_t key[GLM_TK_BATCH];
#pragma unroll
    for (int u = 0; u < GLM_TK_BATCH; ++u) {
      const int s = base + u * 32 + lane;
      key[u] = s < whi ? glm_tk_load(src, cache, s) : 0u;
    }
#pragma unroll
    for (int u = 0; u < GLM_TK_BATCH; ++u) {
      const bool valid = base + u * 32 + lane < whi;
      g += valid && key[u] > kth;
      e += valid && key[u] == kth;
    }
  }
  *gt = __reduce_add_sync(0xffffffffu, g);
  *eq = __reduce_add_sync(0xffffffffu, e);
}

// Emits the selected positions of [wlo, whi) in position order. gtB / eqB: keys > kth / == kth
// in the row before wlo. Invariant per element s: gtB and eqB count the row before s, so s goes
// to out[gtB + min(eqB, need)] when selected. s_off: the row position of element 0 (the cluster
// kernel's segments index their keys from their first position).
__device__ __forceinline__ void glm_tk_warp_emit(const float *src, const uint32_t *cache, int wlo,
                                                 int whi, uint32_t kth, uint32_t need, uint32_t gtB,
                                                 uint32_t eqB, int32_t *out, int32_t *sout,
                                                 const int32_t *bt, int s_off = 0) {
  const int lane = threadIdx.x % 32;
  const uint32_t lt = (1u << lane) - 1u;
  for (int base = wlo; base < whi; base += 32 * GLM_TK_BATCH) {
    uint32_t key[GLM_TK_BATCH];
#pragma unroll
    for (int u = 0; u < GLM_TK_BATCH; ++u) {
      const int s = base + u * 32 + lane;
      key[u] = s < whi ? glm_tk_load(src, cache, s) : 0u;
    }
#pragma unroll
    for (int u = 0; u < GLM_TK_BATCH; ++u) {
      const int s = base + u * 32 + lane;
      const bool valid = s < whi;
      const bool g = valid && key[u] > kth, e = valid && key[u] == kth;
      const uint32_t bg = __ballot_sync(0xffffffffu, g), be = __ballot_sync(0xffffffffu, e);
      const uint32_t gx = gtB + __popc(bg & lt), ex = eqB + __popc(be & lt);
      if (g || (e && ex < need)) {
        const uint32_t o = gx + min(ex, need);
        out[o] = s + s_off;
        if (sout)
          sout[o] = glm_tk_slot(bt, s + s_off);
      }
      gtB += __popc(bg);
      eqB += __popc(be);
    }
  }
}

// Warp w's piece [*wlo, *whi) of [lo, hi) and its (greater, equal) counts against kth, stored
// for the block at pairs[2 w], pairs[2 w + 1] (pairs = scratch + GLM_TK_PAIRS); ends with the
// barrier that makes every warp's counts visible.
__device__ __forceinline__ const uint32_t *
glm_tk_warp_pairs(const float *src, const uint32_t *cache, int lo, int hi, uint32_t kth,
                  uint32_t *scratch, int warp, int lane, int *wlo, int *whi) {
  glm_tk_warp_range(lo, hi, wlo, whi);
  uint32_t gt, eq;
  glm_tk_warp_count(src, cache, *wlo, *whi, kth, &gt, &eq);
  uint32_t *pairs = scratch + GLM_TK_PAIRS;
  if (lane == 0) {
    pairs[2 * warp] = gt;
    pairs[2 * warp + 1] = eq;
  }
  __syncthreads();
  return pairs;
}

// Block-wide ordered emit of [lo, hi) given the counts of the row before lo. Ends with a barrier.
__device__ __forceinline__ void glm_tk_emit(const float *src, const uint32_t *cache, int lo, int hi,
                                            uint32_t kth, uint32_t need, uint32_t gt0, uint32_t eq0,
                                            int32_t *out, int32_t *sout, const int32_t *bt,
                                            uint32_t *scratch) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int wlo, whi;
  const uint32_t *pairs =
      glm_tk_warp_pairs(src, cache, lo, hi, kth, scratch, warp, lane, &wlo, &whi);
  glm_tk_pairs_before(pairs, warp, &gt0, &eq0);
  glm_tk_warp_emit(src, cache, wlo, whi, kth, need, gt0, eq0, out, sout, bt);
  __syncthreads();
}

// Rows with n <= k take every causal position: indices 0 .. n - 1 of [lo, hi), then (pad) -1
// up to k.
__device__ __forceinline__ void glm_tk_take_all(int lo, int hi, int n, int k, bool pad,
                                                int32_t *out, int32_t *sout, const int32_t *bt) {
  for (int s = lo + threadIdx.x; s < min(hi, n); s += GLM_TOPK_THREADS) {
    out[s] = s;
    if (sout)
      sout[s] = glm_tk_slot(bt, s);
  }
  if (pad)
    for (int j = n + threadIdx.x; j < k; j += GLM_TOPK_THREADS) {
      out[j] = -1;
      if (sout)
        sout[j] = -1;
    }
}

// Rows with n <= k in a launch of `parts` CTAs per row: CTA `part` writes output entries
// [part q, (part + 1) q), q = ceil(k / parts): every causal position, then -1.
__device__ __forceinline__ void glm_tk_take_all_part(int n, int k, int part, int parts,
                                                     int32_t *out, int32_t *sout,
                                                     const int32_t *bt) {
  const int q = (k + parts - 1) / parts;
  for (int j = part * q + static_cast<int>(threadIdx.x); j < min(k, (part + 1) * q);
       j += GLM_TOPK_THREADS) {
    out[j] = j < n ? j : -1;
    if (sout)
      sout[j] = j < n ? glm_tk_slot(bt, j) : -1;
  }
}

// Rows of at most GLM_TK_REG_ROW positions (every row at decode up to 8K of context): thread i
// keeps the keys of positions [GLM_TK_REG i, GLM_TK_REG (i + 1)) in registers, loaded once, with
// the block-table entries of their pages (GLM_TK_REG_PAGES: one when a page holds 16 positions
// or more, as 16 i is a multiple of 16). The three histogram passes read the keys from there, each
// into its own zeroed histogram (no re-zeroing between passes), and the emit needs no warp-order
// walk: the threads hold the row in position order, so one block scan of their (greater, equal)
// counts gives each its output offsets. Same selection and order as the general path
// (k < n <= GLM_TK_REG_ROW).
#define GLM_TK_REG 16
#define GLM_TK_REG_ROW (GLM_TOPK_THREADS * GLM_TK_REG)
#define GLM_TK_REG_PAGES (GLM_PAGE >= GLM_TK_REG ? 1 : GLM_TK_REG / GLM_PAGE)
static_assert(GLM_TOPK_CACHE >= 2048 + 1024, "passes 1 and 2 histogram in the cache's space");

struct glm_tk_row_keys {
  uint32_t key[GLM_TK_REG];
  int32_t page[GLM_TK_REG_PAGES]; // block-table entries of the thread's positions (bt only)
};

// Loads thread i's keys of positions below `bound` (bound <= the row's length n_cols), which may
// be issued before the row's causal length is known.
__device__ __forceinline__ glm_tk_row_keys glm_tk_row_load(const float *src, int bound) {
  glm_tk_row_keys r;
  const int p0 = threadIdx.x * GLM_TK_REG;
  if (p0 + GLM_TK_REG <= bound && (reinterpret_cast<unsigned long long>(src) & 15) == 0) {
#pragma unroll
    for (int q = 0; q < GLM_TK_REG / 4; ++q) {
      const float4 v = *reinterpret_cast<const float4 *>(src + p0 + 4 * q);
      r.key[4 * q] = glm_tk_key(v.x), r.key[4 * q + 1] = glm_tk_key(v.y);
      r.key[4 * q + 2] = glm_tk_key(v.z), r.key[4 * q + 3] = glm_tk_key(v.w);
    }
  } else {
#pragma unroll
    for (int j = 0; j < GLM_TK_REG; ++j)
      r.key[j] = p0 + j < bound ? glm_tk_key(src[p0 + j]) : 0u;
  }
  return r;
}

// The table entries of thread i's causal positions' pages (when bt is not null), loaded at the
// start of the passes and first used by the emit after them.
__device__ __forceinline__ void glm_tk_row_pages(glm_tk_row_keys &r, int n, const int32_t *bt) {
  const int p0 = threadIdx.x * GLM_TK_REG;
#pragma unroll
  for (int j = 0; j < GLM_TK_REG_PAGES; ++j) {
    const int pos = p0 + j * GLM_PAGE;
    r.page[j] = bt && pos < n ? bt[static_cast<unsigned>(pos) / GLM_PAGE] : 0;
  }
}

// The rank finish: once a pass's bin holds at most GLM_TK_ROW_RANK keys (pass 0's often does
// not: 51 to 1040 keys on the bench's 8K-position indexer rows; pass 1's nearly always), the
// passes left give way to ranking those candidates directly. Each is packed as
// (key << 32) | ~position, so (score, then the lower position) order is the order of distinct
// uint64 values: the candidate of rank need0 - 1 among them (need0 = the keys still to take from
// the bin) is the cut K*, and `need` = need0 - the candidates with key > K*. A c^2 loop over
// shared-memory broadcasts, ~7 instructions per pair, hence the bound (0: off). Traced on the
// H200, it takes about as long as the pass it replaces (~2000 cycles): the gain is where it
// follows pass 0 and two passes go (bench/RESULTS.md 2026-12-03, third session).
#ifndef GLM_TK_ROW_RANK
#define GLM_TK_ROW_RANK 128
#endif
static_assert(GLM_TK_ROW_RANK % 2 == 0 && GLM_TK_ROW_RANK + 2 <= 512,
              "the candidates fit in pass 2's histogram, in pairs");

// Collects thread i's keys with (key & mask) == prefix (warp-aggregated appends at misc[2], zero
// on entry) into cand[0, c), pads cand to an even count with a zero (below every packed
// candidate: keys of valid scores are >= 0x007fffff) and ranks them; returns K* in misc[3] and
// `need` in misc[4], after a barrier. Every thread calls it; c (block-uniform) is the bin's count.
__device__ __forceinline__ void glm_tk_row_rank(const glm_tk_row_keys &r, int nv, uint32_t mask,
                                                uint32_t prefix, uint32_t c, uint32_t need0,
                                                unsigned long long *cand, uint32_t *misc) {
  const int tid = threadIdx.x, lane = tid % 32, p0 = tid * GLM_TK_REG;
  uint32_t m = 0;
#pragma unroll
  for (int j = 0; j < GLM_TK_REG; ++j)
    m += j < nv && (r.key[j] & mask) == prefix;
  const uint32_t incl = glm_tk_warp_inscan(m);
  uint32_t base = 0;
  if (lane == 31 && incl)
    base = atomicAdd(&misc[2], incl);
  uint32_t at = __shfl_sync(0xffffffffu, base, 31) + incl - m;
#pragma unroll
  for (int j = 0; j < GLM_TK_REG; ++j)
    if (j < nv && (r.key[j] & mask) == prefix)
      cand[at++] = (static_cast<unsigned long long>(r.key[j]) << 32) |
                   static_cast<uint32_t>(~(p0 + j));
  if (tid == 0 && (c & 1))
    cand[c] = 0ull;
  __syncthreads();
  const int pairs = static_cast<int>(c + 1) / 2;
  const ulonglong2 *cand2 = reinterpret_cast<const ulonglong2 *>(cand);
  for (int i = tid; i < static_cast<int>(c); i += GLM_TOPK_THREADS) {
    const unsigned long long mine = cand[i];
    const uint32_t mkey = static_cast<uint32_t>(mine >> 32);
    uint32_t above = 0, gt = 0;
#pragma unroll 4
    for (int q = 0; q < pairs; ++q) {
      const ulonglong2 o = cand2[q];
      above += (o.x > mine) + (o.y > mine);
      gt += (static_cast<uint32_t>(o.x >> 32) > mkey) + (static_cast<uint32_t>(o.y >> 32) > mkey);
    }
    if (above == need0 - 1) { // exactly one candidate: the ranks are 0 .. c - 1
      misc[3] = mkey;
      misc[4] = need0 - gt;
    }
  }
  __syncthreads();
}

__device__ __forceinline__ void glm_tk_row_regs(glm_tk_row_keys &r, int n, int k, uint32_t *hist,
                                                uint32_t *hist12, uint32_t *scratch, int32_t *out,
                                                int32_t *sout, const int32_t *bt) {
  uint32_t *misc = scratch + GLM_TK_MISC;
  const int tid = threadIdx.x, p0 = tid * GLM_TK_REG;
  glm_tk_row_pages(r, n, bt);
  const int nv = max(0, min(GLM_TK_REG, n - p0)); // this thread's valid positions
  // Pass 0 into hist, passes 1 and 2 into hist12 and hist12 + 2048, all zeroed once.
  for (int b = tid; b < GLM_TK_BINS; b += GLM_TOPK_THREADS)
    hist[b] = 0;
  for (int b = tid; b < GLM_TK_BINS + 1024; b += GLM_TOPK_THREADS)
    hist12[b] = 0;
  if (tid == 0)
    misc[2] = 0; // the rank finish's candidate count
  __syncthreads();
  GLM_TK_STAMP(2, 1);
  uint32_t prefix = 0, remaining = static_cast<uint32_t>(k);
#pragma unroll 1
  for (int p = 0; p < 3; ++p) {
    const int shift = glm_tk_shift(p), nbins = glm_tk_nbins(p);
    const uint32_t himask = glm_tk_himask(p);
    uint32_t *h = p == 0 ? hist : hist12 + (p - 1) * GLM_TK_BINS;
#pragma unroll
    for (int j = 0; j < GLM_TK_REG; ++j)
      if (j < nv && (r.key[j] & himask) == prefix)
        atomicAdd(&h[(r.key[j] >> shift) & (nbins - 1)], 1u);
    __syncthreads();
    // Ends with a barrier; misc is next written by the following select, after the barrier
    // that follows its pass: every thread has read it by then.
    glm_tk_select(h, nbins, remaining, scratch, misc);
    GLM_TK_STAMP(2, 2 + p);
    prefix |= misc[0] << shift;
    remaining -= misc[1];
    if (GLM_TK_ROW_RANK && p < 2 && h[misc[0]] <= GLM_TK_ROW_RANK) {
      // Pass 2 does not run: its histogram takes the candidates.
      glm_tk_row_rank(r, nv, p == 0 ? 0xffe00000u : 0xfffffc00u, prefix, h[misc[0]], remaining,
                      reinterpret_cast<unsigned long long *>(hist12 + GLM_TK_BINS), misc);
      if (p == 0)
        GLM_TK_STAMP(2, 3);
      GLM_TK_STAMP(2, 4);
      prefix = misc[3];
      remaining = misc[4];
      break;
    }
  }
  const uint32_t kth = prefix, need = remaining;
  uint32_t g = 0, e = 0;
#pragma unroll
  for (int j = 0; j < GLM_TK_REG; ++j) {
    g += j < nv && r.key[j] > kth;
    e += j < nv && r.key[j] == kth;
  }
  // Counts of the row before this thread's positions: greater in the high half, equal in the low
  // (each at most GLM_TK_REG_ROW < 2^16). Scratch's last use: no trailing barrier.
  const uint32_t before = glm_tk_exscan<true>((g << 16) | e, scratch);
  uint32_t gb = before >> 16, eb = before & 0xffffu;
  // The k outputs (and slots) are gathered in shared memory past passes 1 and 2's histograms
  // when they fit, then copied out in 16-byte pieces: a thread's selected positions are a run of
  // the output, so the direct stores of a warp scatter over many lines (GLM_TK_ROW_STAGE).
  const bool staged = GLM_TK_ROW_STAGE && 2 * k + GLM_TK_BINS + 1024 <= GLM_TOPK_CACHE;
  int32_t *stage = reinterpret_cast<int32_t *>(hist12 + GLM_TK_BINS + 1024);
  int32_t *dout = staged ? stage : out, *dsout = staged ? stage + k : sout;
#pragma unroll
  for (int j = 0; j < GLM_TK_REG; ++j) {
    if (j >= nv)
      break;
    const bool gt = r.key[j] > kth, eq = r.key[j] == kth;
    if (gt || (eq && eb < need)) {
      const uint32_t o = gb + min(eb, need);
      dout[o] = p0 + j;
      if (sout)
        dsout[o] = r.page[j / GLM_PAGE < GLM_TK_REG_PAGES ? j / GLM_PAGE : 0] * GLM_PAGE +
                   (p0 + j) % GLM_PAGE;
    }
    gb += gt;
    eb += eq;
  }
  if (staged) { // k < n: all k entries are written
    __syncthreads();
    const bool vec = k % 4 == 0 && (reinterpret_cast<unsigned long long>(out) & 15) == 0 &&
                     (!sout || (reinterpret_cast<unsigned long long>(sout) & 15) == 0);
    for (int i = 4 * tid; i < k; i += 4 * GLM_TOPK_THREADS) {
      if (vec) {
        *reinterpret_cast<int4 *>(out + i) = *reinterpret_cast<const int4 *>(stage + i);
        if (sout)
          *reinterpret_cast<int4 *>(sout + i) = *reinterpret_cast<const int4 *>(stage + k + i);
      } else {
        for (int q = i; q < min(k, i + 4); ++q) {
          out[q] = stage[q];
          if (sout)
            sout[q] = stage[k + q];
        }
      }
    }
  }
  GLM_TK_STAMP(2, 5);
}

// One CTA per row. scores [T, ld]; block_table [seqs, bt_stride] (only read when slots is not
// null), row t using table row t / rows_per_seq.
extern "C" __global__ void __launch_bounds__(GLM_TOPK_THREADS)
    topk_row(const float *__restrict__ scores, int ld, int n_cols,
             const int32_t *__restrict__ positions, int k, int32_t *__restrict__ indices,
             int32_t *__restrict__ slots, const int32_t *__restrict__ block_table, int bt_stride,
             int rows_per_seq) {
  glm_grid_chain();
  extern __shared__ __align__(16) unsigned char smem[];
  uint32_t *hist = reinterpret_cast<uint32_t *>(smem + GLM_TK_SMEM_HIST);
  uint32_t *scratch = reinterpret_cast<uint32_t *>(smem + GLM_TK_SMEM_SCRATCH);
  uint32_t *cache = reinterpret_cast<uint32_t *>(smem + GLM_TK_SMEM_CACHE);
  uint32_t *misc = scratch + GLM_TK_MISC;
  const int tid = threadIdx.x, lane = tid % 32;
  const int row = blockIdx.x;
  GLM_TK_STAMP(2, 0);
  int32_t *out = indices + static_cast<long long>(row) * k;
  int32_t *sout = slots ? slots + static_cast<long long>(row) * k : nullptr;
  const int32_t *bt =
      slots ? block_table + static_cast<long long>(row / rows_per_seq) * bt_stride : nullptr;
  const float *src = scores + static_cast<long long>(row) * ld;
  if (n_cols <= GLM_TK_REG_ROW) {
    // Every row's n <= n_cols: the registers' path or take-all. The keys load while the row's
    // position does (one round trip, not two). The path below calls glm_tk_row_regs again
    // after the position: one shared call site keeps the keys live across the general path,
    // which then spills at SM120's 64 registers (bench/RESULTS.md, compile time entry).
    glm_tk_row_keys r = glm_tk_row_load(src, n_cols);
    const int n = glm_tk_candidates(positions[row], n_cols);
    if (n <= k) {
      glm_tk_take_all(0, n, n, k, true, out, sout, bt);
      return;
    }
    glm_tk_row_regs(r, n, k, hist, cache, scratch, out, sout, bt);
    return;
  }
  const int n = glm_tk_candidates(positions[row], n_cols);
  if (n <= k) {
    glm_tk_take_all(0, n, n, k, true, out, sout, bt);
    return;
  }
  // From here count = k < n: exactly k positions are written, no padding.
  if (n <= GLM_TK_REG_ROW) {
    glm_tk_row_keys r = glm_tk_row_load(src, n);
    glm_tk_row_regs(r, n, k, hist, cache, scratch, out, sout, bt);
    return;
  }
  const bool cached = n <= GLM_TOPK_CACHE;
  const int step = GLM_TOPK_THREADS * GLM_TK_BATCH;
  const int wbase = (tid - lane) * GLM_TK_BATCH; // warp-uniform: whole warps take each branch

  // Pass 0 (bits 31..21) over the whole row; keeps the keys when the row fits.
  for (int b = tid; b < GLM_TK_BINS; b += GLM_TOPK_THREADS)
    hist[b] = 0;
  __syncthreads();
  for (int base = wbase; base < n; base += step) {
    float v[GLM_TK_BATCH];
#pragma unroll
    for (int u = 0; u < GLM_TK_BATCH; ++u) {
      const int s = base + u * 32 + lane;
      v[u] = s < n ? src[s] : 0.f;
    }
#pragma unroll
    for (int u = 0; u < GLM_TK_BATCH; ++u) {
      const int s = base + u * 32 + lane;
      const uint32_t key = glm_tk_key(v[u]);
      if (cached && s < n)
        cache[s] = key;
      glm_tk_hist_add(hist, key >> 21, s < n);
    }
  }
  __syncthreads();
  glm_tk_select(hist, 2048, static_cast<uint32_t>(k), scratch, misc);
  uint32_t prefix = misc[0] << 21, remaining = static_cast<uint32_t>(k) - misc[1];
  // The first bin's elements fit in shared memory: pass 1 collects them as the candidates of
  // pass 2 (their order is irrelevant, pass 2 only counts).
  const bool use_cand = !cached && hist[misc[0]] <= GLM_TOPK_CACHE;
  __syncthreads(); // everyone has read hist and misc
  for (int b = tid; b < GLM_TK_BINS; b += GLM_TOPK_THREADS)
    hist[b] = 0;
  if (tid == 0)
    misc[2] = 0; // candidates collected
  __syncthreads();

  // Pass 1 (bits 20..10) over the row.
  {
    const uint32_t *c0 = cached ? cache : nullptr;
    for (int base = wbase; base < n; base += step) {
      uint32_t key[GLM_TK_BATCH];
#pragma unroll
      for (int u = 0; u < GLM_TK_BATCH; ++u) {
        const int s = base + u * 32 + lane;
        key[u] = s < n ? glm_tk_load(src, c0, s) : 0u;
      }
#pragma unroll
      for (int u = 0; u < GLM_TK_BATCH; ++u) {
        const bool match = base + u * 32 + lane < n && (key[u] & 0xffe00000u) == prefix;
        glm_tk_hist_add(hist, (key[u] >> 10) & 2047u, match);
        if (use_cand) {
          const uint32_t bm = __ballot_sync(0xffffffffu, match);
          uint32_t at = 0;
          if (bm && lane == __ffs(bm) - 1)
            at = atomicAdd(&misc[2], static_cast<uint32_t>(__popc(bm)));
          at = __shfl_sync(0xffffffffu, at, bm ? __ffs(bm) - 1 : 0);
          if (match)
            cache[at + __popc(bm & ((1u << lane) - 1u))] = key[u];
        }
      }
    }
  }
  __syncthreads();
  glm_tk_select(hist, 2048, remaining, scratch, misc);
  prefix |= misc[0] << 10;
  remaining -= misc[1];
  const int num_cand = static_cast<int>(misc[2]);
  __syncthreads();
  for (int b = tid; b < 1024; b += GLM_TOPK_THREADS)
    hist[b] = 0;
  __syncthreads();

  // Pass 2 (bits 9..0) over the kept keys, the candidates, or the row.
  {
    const uint32_t *c1 = cached || use_cand ? cache : nullptr;
    const int m = use_cand ? num_cand : n;
    for (int base = wbase; base < m; base += step) {
      uint32_t key[GLM_TK_BATCH];
#pragma unroll
      for (int u = 0; u < GLM_TK_BATCH; ++u) {
        const int s = base + u * 32 + lane;
        key[u] = s < m ? glm_tk_load(src, c1, s) : 0u;
      }
#pragma unroll
      for (int u = 0; u < GLM_TK_BATCH; ++u) {
        const bool match = base + u * 32 + lane < m && (key[u] & 0xfffffc00u) == prefix;
        glm_tk_hist_add(hist, key[u] & 1023u, match);
      }
    }
  }
  __syncthreads();
  glm_tk_select(hist, 1024, remaining, scratch, misc);
  const uint32_t kth = prefix | misc[0], need = remaining - misc[1];

  // The block-table entries of the row's pages go to shared memory (the histogram's, free once
  // the last select has ended with its barrier) when they fit: the emit then finds a selected
  // position's slot there, not by a dependent global load per element.
  const int32_t *ebt = bt;
  if (bt) {
    const int pages = (n + GLM_PAGE - 1) / GLM_PAGE;
    if (pages <= GLM_TK_BINS) {
      int32_t *sbt = reinterpret_cast<int32_t *>(hist);
      for (int i = tid; i < pages; i += GLM_TOPK_THREADS)
        sbt[i] = bt[i];
      __syncthreads();
      ebt = sbt;
    }
  }
  // Ordered emit over the row (the candidates overwrote the kept keys only when !cached).
  glm_tk_emit(src, cached ? cache : nullptr, 0, n, kth, need, 0, 0, out, sout, ebt, scratch);
}

// Multi-CTA, launch 1 of 2: grid (segments, T). Adds the segment's histogram of key bits 31..21
// to the row's global one; the last CTA of the row picks the bin b0 holding the k-th largest
// key, stores b0 and the count above it, and re-zeroes histogram and ticket.
extern "C" __global__ void __launch_bounds__(GLM_TOPK_THREADS)
    topk_seg_hist0(const float *__restrict__ scores, int ld, int n_cols,
                   const int32_t *__restrict__ positions, int k, uint32_t *__restrict__ ws,
                   int seg_len) {
  glm_grid_chain();
  __shared__ uint32_t hist[GLM_TK_BINS];
  __shared__ uint32_t scratch[GLM_TK_SCRATCH];
  uint32_t *misc = scratch + GLM_TK_MISC;
  const int tid = threadIdx.x, lane = tid % 32;
  const int row = blockIdx.y, segs = gridDim.x;
  GLM_TK_STAMP(0, 0);
  const int n = glm_tk_candidates(positions[row], n_cols);
  if (n <= k)
    return; // the whole row's grid returns: the workspace stays zero
  uint32_t *wsr = ws + static_cast<long long>(row) * GLM_TK_WS_ROW;
  const float *src = scores + static_cast<long long>(row) * ld;
  const int lo = blockIdx.x * seg_len, hi = min(n, lo + seg_len);

  for (int b = tid; b < GLM_TK_BINS; b += GLM_TOPK_THREADS)
    hist[b] = 0;
  __syncthreads();
  const int step = GLM_TOPK_THREADS * GLM_TK_BATCH;
  for (int base = lo + (tid - lane) * GLM_TK_BATCH; base < hi; base += step) {
    uint32_t key[GLM_TK_BATCH];
#pragma unroll
    for (int u = 0; u < GLM_TK_BATCH; ++u) {
      const int s = base + u * 32 + lane;
      key[u] = s < hi ? glm_tk_key(src[s]) : 0u;
    }
#pragma unroll
    for (int u = 0; u < GLM_TK_BATCH; ++u)
      glm_tk_hist_add(hist, key[u] >> 21, base + u * 32 + lane < hi);
  }
  __syncthreads();
  for (int b = tid; b < GLM_TK_BINS; b += GLM_TOPK_THREADS)
    if (hist[b])
      atomicAdd(&wsr[b], hist[b]);
  __threadfence(); // this CTA's bins are visible before its ticket
  __syncthreads();
  GLM_TK_STAMP(0, 1);
  if (tid == 0)
    misc[4] = atomicAdd(&wsr[GLM_TK_WS_TICKET0], 1u) == static_cast<uint32_t>(segs - 1);
  __syncthreads();
  if (!misc[4]) {
    GLM_TK_STAMP(0, 2);
    return;
  }
  __threadfence(); // the last ticket: every other CTA's bins are in the global histogram
  for (int b = tid; b < GLM_TK_BINS; b += GLM_TOPK_THREADS) {
    hist[b] = glm_ld_cg(&wsr[b]);
    wsr[b] = 0;
  }
  __syncthreads();
  glm_tk_select(hist, GLM_TK_BINS, static_cast<uint32_t>(k), scratch, misc);
  if (tid == 0) {
    wsr[GLM_TK_WS_B0] = misc[0];
    wsr[GLM_TK_WS_ABOVE0] = misc[1];
    wsr[GLM_TK_WS_TICKET0] = 0;
  }
  GLM_TK_STAMP(0, 2);
}

// Multi-CTA, launch 2 of 2: grid (segments, T), seg_len <= GLM_TK_SEG_MAX, k <= GLM_TOPK_MAXK,
// GLM_TK_CSMEM_BYTES of dynamic shared memory. Each CTA appends its positions with key bin > b0
// to the row's indices (unordered; fewer than k in all) and its (key, position) pairs of bin b0
// to the candidate buffer (one atomic per counter per CTA). The last CTA of the row selects the
// remaining k - above0 candidates, merges them with those positions, sorts, writes indices and
// slots, and re-zeroes ticket and counters.
extern "C" __global__ void __launch_bounds__(GLM_TOPK_THREADS)
    topk_seg_collect(const float *__restrict__ scores, int ld, int n_cols,
                     const int32_t *__restrict__ positions, int k, uint32_t *__restrict__ ws,
                     int seg_len, int32_t *__restrict__ indices, int32_t *__restrict__ slots,
                     const int32_t *__restrict__ block_table, int bt_stride, int rows_per_seq) {
  glm_grid_chain();
  extern __shared__ __align__(16) unsigned char smem[];
  uint32_t *hist = reinterpret_cast<uint32_t *>(smem + GLM_TK_SMEM_HIST);
  uint32_t *scratch = reinterpret_cast<uint32_t *>(smem + GLM_TK_SMEM_SCRATCH);
  int32_t *sel = reinterpret_cast<int32_t *>(smem + GLM_TK_CSMEM_SEL);
  uint2 *cand_s = reinterpret_cast<uint2 *>(smem + GLM_TK_CSMEM_CAND);
  uint32_t *misc = scratch + GLM_TK_MISC;
  const int tid = threadIdx.x, lane = tid % 32;
  const int row = blockIdx.y, segs = gridDim.x, seg = blockIdx.x;
  GLM_TK_STAMP(1, 0);
  const int n = glm_tk_candidates(positions[row], n_cols);
  int32_t *out = indices + static_cast<long long>(row) * k;
  int32_t *sout = slots ? slots + static_cast<long long>(row) * k : nullptr;
  // The row's table, formed where used (from the kernel's parameters): not live in between.
  auto row_table = [&]() {
    return block_table + static_cast<long long>(row / rows_per_seq) * bt_stride;
  };
  const int lo = seg * seg_len, hi = min(n, lo + seg_len);
  if (n <= k) {
    glm_tk_take_all(lo, hi, n, k, seg == 0, out, sout, slots ? row_table() : nullptr);
    return;
  }
  uint32_t *wsr = ws + static_cast<long long>(row) * GLM_TK_WS_ROW;
  uint2 *cand = reinterpret_cast<uint2 *>(ws + static_cast<long long>(gridDim.y) * GLM_TK_WS_ROW) +
                static_cast<long long>(row) * n_cols;
  const float *src = scores + static_cast<long long>(row) * ld;
  const uint32_t b0 = wsr[GLM_TK_WS_B0];

  // Classify this thread's positions lo + e * THREADS + tid; one scan gives every thread its
  // offsets among the CTA's appends (sure positions in the low 16 bits, candidates above).
  uint32_t key[GLM_TOPK_SEG_ELEMS];
  uint32_t counts = 0;
#pragma unroll
  for (int e = 0; e < GLM_TOPK_SEG_ELEMS; ++e) {
    const int s = lo + e * GLM_TOPK_THREADS + tid;
    key[e] = s < hi ? glm_tk_key(src[s]) : 0u;
  }
#pragma unroll
  for (int e = 0; e < GLM_TOPK_SEG_ELEMS; ++e) {
    const bool valid = lo + e * GLM_TOPK_THREADS + tid < hi;
    const uint32_t d = key[e] >> 21;
    counts += valid && d > b0 ? 1u : valid && d == b0 ? 0x10000u : 0u;
  }
  const uint32_t off = glm_tk_exscan(counts, scratch);
  if (tid == GLM_TOPK_THREADS - 1)
    misc[5] = off + counts; // the CTA's totals
  __syncthreads();
  if (tid == 0 && (misc[5] & 0xffffu))
    misc[6] = atomicAdd(&wsr[GLM_TK_WS_SURE], misc[5] & 0xffffu);
  if (tid == 32 && (misc[5] >> 16))
    misc[7] = atomicAdd(&wsr[GLM_TK_WS_CAND], misc[5] >> 16);
  __syncthreads();
  uint32_t at_sure = misc[6] + (off & 0xffffu), at_cand = misc[7] + (off >> 16);
#pragma unroll
  for (int e = 0; e < GLM_TOPK_SEG_ELEMS; ++e) {
    const int s = lo + e * GLM_TOPK_THREADS + tid;
    const uint32_t d = key[e] >> 21;
    if (s < hi && d > b0)
      out[at_sure++] = s;
    else if (s < hi && d == b0)
      cand[at_cand++] = make_uint2(key[e], static_cast<uint32_t>(s));
  }
  __threadfence(); // this CTA's appends are visible before its ticket
  __syncthreads();
  GLM_TK_STAMP(1, 1);
  if (tid == 0)
    misc[4] = atomicAdd(&wsr[GLM_TK_WS_TICKET1], 1u) == static_cast<uint32_t>(segs - 1);
  __syncthreads();
  if (!misc[4]) {
    GLM_TK_STAMP(1, 2);
    return;
  }
  __threadfence(); // the last ticket: every CTA's appends are in memory

  // The row's last CTA. m candidates (all in bin b0), r of them to take.
  const uint32_t above0 = glm_ld_cg(&wsr[GLM_TK_WS_ABOVE0]);
  const int m = static_cast<int>(glm_ld_cg(&wsr[GLM_TK_WS_CAND]));
  uint32_t r = static_cast<uint32_t>(k) - above0;
  // Candidates from the shared-memory copy when they fit, else from the global buffer.
  const bool in_smem = m <= GLM_TOPK_CAND_SMEM;
  if (in_smem)
    for (int i = tid; i < m; i += GLM_TOPK_THREADS)
      cand_s[i] = glm_ld_cg2(&cand[i]);
  auto cs = [&](int i) { return in_smem ? cand_s[i] : glm_ld_cg2(&cand[i]); };
  for (int i = tid; i < static_cast<int>(above0); i += GLM_TOPK_THREADS)
    sel[i] = static_cast<int32_t>(glm_ld_cg(reinterpret_cast<const uint32_t *>(out) + i));
  for (int b = tid; b < GLM_TK_BINS; b += GLM_TOPK_THREADS)
    hist[b] = 0;
  __syncthreads();
  GLM_TK_STAMP(1, 3);

  // Key bits 20..10, then 9..0, of the candidates: K* and `need`.
  const int mwarp = tid - lane;
  for (int base = mwarp; base < m; base += GLM_TOPK_THREADS) {
    const int i = base + lane;
    const uint32_t kk = i < m ? cs(i).x : 0u;
    glm_tk_hist_add(hist, (kk >> 10) & 2047u, i < m);
  }
  __syncthreads();
  glm_tk_select(hist, GLM_TK_BINS, r, scratch, misc);
  const uint32_t prefix = (b0 << 21) | (misc[0] << 10);
  r -= misc[1];
  __syncthreads();
  for (int b = tid; b < 1024; b += GLM_TOPK_THREADS)
    hist[b] = 0;
  __syncthreads();
  for (int base = mwarp; base < m; base += GLM_TOPK_THREADS) {
    const int i = base + lane;
    const uint32_t kk = i < m ? cs(i).x : 0u;
    glm_tk_hist_add(hist, kk & 1023u, i < m && (kk & 0xfffffc00u) == prefix);
  }
  __syncthreads();
  glm_tk_select(hist, 1024, r, scratch, misc);
  const uint32_t kth = prefix | misc[0], need = r - misc[1], equal = hist[misc[0]];
  __syncthreads();
  GLM_TK_STAMP(1, 4);

  // A tie at the cut: the `need` lowest positions among key == K*, i.e. the need-th largest
  // ~position (positions are distinct), by three more passes.
  uint32_t pmax = 0xffffffffu; // take equal keys at positions <= pmax
  if (equal > need) {
    uint32_t p2 = 0, r2 = need;
    for (int pass = 0; pass < 3; ++pass) {
      const int shift = glm_tk_shift(pass), nbins = glm_tk_nbins(pass);
      const uint32_t himask = glm_tk_himask(pass);
      for (int b = tid; b < nbins; b += GLM_TOPK_THREADS)
        hist[b] = 0;
      __syncthreads();
      for (int base = mwarp; base < m; base += GLM_TOPK_THREADS) {
        const int i = base + lane;
        const uint2 c = i < m ? cs(i) : make_uint2(0u, 0u);
        const uint32_t np = ~c.y;
        glm_tk_hist_add(hist, (np >> shift) & static_cast<uint32_t>(nbins - 1),
                        i < m && c.x == kth && (np & himask) == p2);
      }
      __syncthreads();
      glm_tk_select(hist, nbins, r2, scratch, misc);
      p2 |= misc[0] << shift;
      r2 -= misc[1];
      __syncthreads();
    }
    pmax = ~p2;
  }

  // Merge: the positions above b0 are sel[0, above0); append the chosen candidates.
  if (tid == 0)
    misc[8] = above0;
  __syncthreads();
  for (int base = mwarp; base < m; base += GLM_TOPK_THREADS) {
    const int i = base + lane;
    const uint2 c = i < m ? cs(i) : make_uint2(0u, 0u);
    glm_tk_append(sel, &misc[8], static_cast<int32_t>(c.y),
                  i < m && (c.x > kth || (c.x == kth && c.y <= pmax)));
  }
  // Invariant: exactly k distinct positions in sel now. Write them in ascending order: as a
  // bitmap of the row in the (consumed) candidate space, each position's index is the number of
  // set bits before it; rows too long for the bitmap take a bitonic sort.
  __syncthreads(); // sel complete, candidate reads done
  GLM_TK_STAMP(1, 5);
  const int nwords = (n + 31) / 32;
  if (nwords <= 2 * GLM_TOPK_CAND_SMEM) {
    uint32_t *bits = reinterpret_cast<uint32_t *>(cand_s);
    for (int w = tid; w < nwords; w += GLM_TOPK_THREADS)
      bits[w] = 0;
    __syncthreads();
    for (int j = tid; j < k; j += GLM_TOPK_THREADS)
      atomicOr(&bits[sel[j] >> 5], 1u << (sel[j] & 31));
    __syncthreads();
    const int per = (nwords + GLM_TOPK_THREADS - 1) / GLM_TOPK_THREADS;
    const int w0 = min(nwords, tid * per), w1 = min(nwords, w0 + per);
    uint32_t c = 0;
    for (int w = w0; w < w1; ++w)
      c += __popc(bits[w]);
    uint32_t o = glm_tk_exscan(c, scratch); // its barriers: every sel read above is done
    for (int w = w0; w < w1; ++w)
      for (uint32_t b = bits[w]; b; b &= b - 1) {
        const int s = 32 * w + __ffs(b) - 1;
        out[o] = s;
        sel[o++] = s; // sorted, for the slots below
      }
  } else {
    int size = 1;
    while (size < k)
      size <<= 1;
    for (int i = k + tid; i < size; i += GLM_TOPK_THREADS)
      sel[i] = 0x7fffffff;
    __syncthreads();
    for (int block = 2; block <= size; block <<= 1)
      for (int stride = block / 2; stride > 0; stride >>= 1) {
        for (int i = tid; i < size / 2; i += GLM_TOPK_THREADS) {
          const int a = 2 * stride * (i / stride) + i % stride, b = a + stride;
          const int32_t x = sel[a], y = sel[b];
          if ((x > y) == ((a & block) == 0)) {
            sel[a] = y;
            sel[b] = x;
          }
        }
        __syncthreads();
      }
    for (int j = tid; j < k; j += GLM_TOPK_THREADS)
      out[j] = sel[j];
  }
  GLM_TK_STAMP(1, 6);
  // Slots of the sorted positions sel[0, k). The row's block-table entries go to the (consumed)
  // histogram's space first when they fit, as in topk_row: a slot is then a shared-memory
  // lookup, not a dependent global load.
  if (sout) {
    const int pages = (n + GLM_PAGE - 1) / GLM_PAGE;
    const int32_t *tbl = row_table();
    if (pages <= GLM_TK_BINS) {
      int32_t *sbt = reinterpret_cast<int32_t *>(hist);
      for (int i = tid; i < pages; i += GLM_TOPK_THREADS)
        sbt[i] = tbl[i];
      tbl = sbt;
    }
    __syncthreads(); // sel complete; the staged table published
    for (int j = tid; j < k; j += GLM_TOPK_THREADS)
      sout[j] = glm_tk_slot(tbl, sel[j]);
  }
  if (tid == 0) {
    wsr[GLM_TK_WS_TICKET1] = 0;
    wsr[GLM_TK_WS_SURE] = 0;
    wsr[GLM_TK_WS_CAND] = 0;
  }
  GLM_TK_STAMP(1, 2);
}

// ---- topk_cluster: one launch, one thread-block cluster of C CTAs per row (grid (C, T), cluster
// (C, 1, 1), C <= GLM_TK_MAX_CLUSTER). CTA r of row t takes the causal positions [r seg,
// (r + 1) seg), seg = ceil(n / C) rounded up to 4, keeps their keys in its shared memory, and
// builds each pass's histogram of them, plus the sums of every 32 bins (coarse bins). After a
// cluster barrier, one warp per CTA finds the digit from the C CTAs' histograms through
// distributed shared memory: the coarse bin holding the count-th largest key from the coarse
// sums, then the digit among its 32 bins -- two round trips and ~16 loads per lane, not a read of
// every peer's whole histogram (which took ~12 us per pass: distributed shared memory serves
// about one request per clock). Every CTA computes the same digits from the same counts, so K*
// and `need` agree across the cluster. The CTAs' (greater, equal) counts are exchanged the same
// way, and each CTA emits its segment's selected positions in position order at offsets counted
// from the lower-ranked CTAs' counts and its own: the same selection and order as topk_row, from
// one read of the row, with no global workspace and no atomics outside shared memory.
// Gathered finish (glm_tk_cluster_gather): when pass 0's bin holds at most GLM_TK_CL_GATHER keys
// over the cluster (the decode rows of 8K-32K positions), the scan after pass 0 only collects
// each CTA's keys of that bin; after one cluster barrier every CTA reads all of them and finishes
// passes 1 and 2 alone, and knows the lower-ranked CTAs' (greater, equal) counts from them and
// their counts above the bin: two cluster barriers per row instead of four.
// Dynamic shared memory: GLM_TK_CL_FIXED + 4 * keys, keys >= the longest segment,
// ceil(ceil(n_cols / C) / 4) * 4 (the launch sizes it; the kernel traps on a shorter one).
// Every buffer a peer reads (histograms, coarse sums, totals) is written once per launch, so a
// CTA running ahead never overwrites what a slower peer still reads.
#define GLM_TK_MAX_CLUSTER 8
#define GLM_TK_CL_COARSE (GLM_TK_BINS * 4) // 64 + 64 + 32 coarse sums
#define GLM_TK_CL_SCRATCH (GLM_TK_CL_COARSE + 160 * 4)
#define GLM_TK_CL_TOTALS (GLM_TK_CL_SCRATCH + GLM_TK_SCRATCH * 4)
#define GLM_TK_CL_HIST1 (GLM_TK_CL_TOTALS + 16)
#define GLM_TK_CL_HIST2 (GLM_TK_CL_HIST1 + GLM_TK_BINS * 4)
#define GLM_TK_CL_CAND (GLM_TK_CL_HIST2 + 1024 * 4) // pass 2's candidates (the keys pass 1 matched)
#define GLM_TK_CL_CANDS 2048
// The gathered finish (glm_tk_cluster_gather) keeps a CTA's keys of pass 0's bin in
// [GLM_TK_CL_HIST1, GLM_TK_CL_KEYS) -- hist1, hist2 and cand, which it does not otherwise use --
// and each CTA loads the whole cluster's, GLM_TK_CL_GPT per thread, into registers: it runs when
// the cluster's count in the bin is at most GLM_TK_CL_GATHER (overridable downwards: 0 turns the
// gathered finish off, `glm5c-bench-indexer --define GLM_TK_CL_GATHER=0`).
#define GLM_TK_CL_GPT 8
#define GLM_TK_CL_GBUF ((GLM_TK_CL_KEYS - GLM_TK_CL_HIST1) / 4)
#ifndef GLM_TK_CL_GATHER
#define GLM_TK_CL_GATHER                                                                          \
  (GLM_TK_CL_GPT * GLM_TOPK_THREADS - 3 * GLM_TK_MAX_CLUSTER < GLM_TK_CL_GBUF                      \
       ? GLM_TK_CL_GPT * GLM_TOPK_THREADS - 3 * GLM_TK_MAX_CLUSTER                                 \
       : GLM_TK_CL_GBUF)
#endif
// 16-byte score loads in flight per lane (tuning; 4 measured slower at every shape and spill as
// sm_90 code: bench/RESULTS.md 2026-11-30).
#ifndef GLM_TK_CL_LOADS
#define GLM_TK_CL_LOADS 2
#endif
#define GLM_TK_CL_KEYS (GLM_TK_CL_CAND + GLM_TK_CL_CANDS * 4)
#define GLM_TK_CL_FIXED GLM_TK_CL_KEYS
static_assert(GLM_TK_CL_KEYS % 16 == 0, "keys stored 16 bytes at a time");
// The list's chunks number at most (keys + 3 C) / 4: GLM_TK_CL_GPT / 4 per thread.
static_assert(GLM_TK_CL_GATHER + 3 * GLM_TK_MAX_CLUSTER <= GLM_TK_CL_GPT * GLM_TOPK_THREADS &&
                  GLM_TK_CL_GATHER <= GLM_TK_CL_GBUF && GLM_TK_CL_GPT % 4 == 0,
              "the gathered keys fit the registers and every CTA's buffer");
static_assert(GLM_TK_CL_FIXED == 29840, "runtime/launch topKClusterSmem mirrors this layout");

__device__ __forceinline__ uint32_t glm_dynamic_smem_size() {
  uint32_t r;
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(r));
  return r;
}

// coarse[c] = sum of hist[32 c .. 32 c + 32), c < nbins / 32: each warp takes 128 bins (four
// coarse bins) at a time, a 16-byte load per lane and a sum over each 8 lanes.
__device__ __forceinline__ void glm_tk_coarse(const uint32_t *hist, int nbins, uint32_t *coarse) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int b = 128 * warp; b < nbins; b += 128 * GLM_TK_WARPS) {
    const uint4 v = *reinterpret_cast<const uint4 *>(hist + b + 4 * lane);
    uint32_t sum = v.x + v.y + v.z + v.w;
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    sum += __shfl_xor_sync(0xffffffffu, sum, 4);
    if (lane % 8 == 0)
      coarse[b / 32 + lane / 8] = sum;
  }
}

// Sum over lanes >= this one (warp-wide suffix sum; lane 31 holds the highest bins).
__device__ __forceinline__ uint32_t glm_tk_suffix(uint32_t v) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const uint32_t y = __shfl_down_sync(0xffffffffu, v, o);
    if (lane + o < 32)
      v += y;
  }
  return v;
}

// glm_tk_select over the cluster's summed histogram of a pass: hist and coarse are this CTA's
// (complete in every CTA of the cluster: call after a cluster barrier). Warp 0 sums the C CTAs'
// coarse bins (lane l: bins l cpl .. l cpl + cpl - 1), finds the coarse bin c* holding the
// remaining-th largest, then sums c*'s 32 bins (lane l: bin 32 c* + l) and finds the digit.
// Writes misc[0] = the digit, misc[1] = the count above it, misc[5] = the cluster's count in the
// digit's bin; ends with a barrier. Requires sum(hist over the cluster) >= remaining >= 1.
// kCluster false: this CTA's histogram alone, read from its own shared memory (csize ignored;
// the caller's barrier made hist and coarse complete); then warp 0, once its reads are done,
// also zeroes zero[0, zero_n) (zero_n a multiple of 128) before the barrier.
template <bool kCluster = true>
__device__ __forceinline__ void glm_tk_cluster_select(const uint32_t *hist, const uint32_t *coarse,
                                                      int nbins, uint32_t remaining,
                                                      unsigned csize, uint32_t *misc,
                                                      uint32_t *zero = nullptr, int zero_n = 0) {
  if (threadIdx.x < 32) {
    const int lane = threadIdx.x;
    const int cpl = nbins / 32 / 32; // coarse bins per lane: 2 (2048 bins) or 1 (1024)
    uint32_t c0 = 0, c1 = 0;
    if (!kCluster) {
      c0 = coarse[lane * cpl];
      c1 = cpl == 2 ? coarse[lane * cpl + 1] : 0u;
    } else {
      const uint32_t a = glm_smem_addr(coarse + lane * cpl);
      uint32_t v0[GLM_TK_MAX_CLUSTER], v1[GLM_TK_MAX_CLUSTER];
#pragma unroll
      for (int q = 0; q < GLM_TK_MAX_CLUSTER; ++q)
        if (q < static_cast<int>(csize)) {
          const uint32_t peer = glm_cluster_map(a, static_cast<unsigned>(q));
          if (cpl == 2) { // one 8-byte request for the lane's two coarse bins
            const uint2 v = glm_ld_cluster_u32x2(peer);
            v0[q] = v.x;
            v1[q] = v.y;
          } else {
            v0[q] = glm_ld_cluster_u32(peer);
            v1[q] = 0u;
          }
        }
#pragma unroll
      for (int q = 0; q < GLM_TK_MAX_CLUSTER; ++q)
        if (q < static_cast<int>(csize)) {
          c0 += v0[q];
          c1 += v1[q];
        }
    }
    // Descending: the lane's higher bin (c1 when cpl == 2) first.
    uint32_t above = glm_tk_suffix(c0 + c1) - (c0 + c1);
    int hit = -1;
    uint32_t hit_above = 0;
    if (cpl == 2) {
      if (above < remaining && above + c1 >= remaining) {
        hit = 2 * lane + 1;
        hit_above = above;
      }
      above += c1;
    }
    if (above < remaining && above + c0 >= remaining) {
      hit = lane * cpl;
      hit_above = above;
    }
    uint32_t bm = __ballot_sync(0xffffffffu, hit >= 0);
    int src = __ffs(bm) - 1; // exactly one lane
    const int cstar = __shfl_sync(0xffffffffu, hit, src);
    const uint32_t base = __shfl_sync(0xffffffffu, hit_above, src);
    uint32_t f = 0;
    if (!kCluster) {
      f = hist[32 * cstar + lane];
    } else {
      const uint32_t a = glm_smem_addr(hist + 32 * cstar + lane);
      uint32_t v[GLM_TK_MAX_CLUSTER];
#pragma unroll
      for (int q = 0; q < GLM_TK_MAX_CLUSTER; ++q)
        if (q < static_cast<int>(csize))
          v[q] = glm_ld_cluster_u32(glm_cluster_map(a, static_cast<unsigned>(q)));
#pragma unroll
      for (int q = 0; q < GLM_TK_MAX_CLUSTER; ++q)
        if (q < static_cast<int>(csize))
          f += v[q];
    }
    above = base + glm_tk_suffix(f) - f;
    bm = __ballot_sync(0xffffffffu, above < remaining && above + f >= remaining);
    src = __ffs(bm) - 1;
    if (lane == src) {
      misc[0] = static_cast<uint32_t>(32 * cstar + lane);
      misc[1] = above;
      misc[5] = f;
    }
    // Every lane's reads of hist and coarse are done. Their values' use above (shuffles, votes)
    // orders them in practice but not in the memory model; the warp barrier does.
    __syncwarp();
    for (int i = 4 * lane; i < zero_n; i += 128)
      *reinterpret_cast<uint4 *>(zero + i) = make_uint4(0u, 0u, 0u, 0u);
  }
  __syncthreads();
}

// The warp's sums of g and e to dst[0] and dst[1] (lane 0 stores). All 32 lanes call it.
__device__ __forceinline__ void glm_tk_warp_store_sums(uint32_t g, uint32_t e, uint32_t *dst) {
  g = __reduce_add_sync(0xffffffffu, g);
  e = __reduce_add_sync(0xffffffffu, e);
  if (threadIdx.x % 32 == 0) {
    dst[0] = g;
    dst[1] = e;
  }
}

// The gathered finish of topk_cluster, after pass 0's select (its digit resolved in `prefix`,
// `remaining` positions still to take; the cluster's count of keys in that bin is at most
// GLM_TK_CL_GATHER): each CTA holds its keys of the bin in gbuf[0, misc[4]) and its count of keys
// above the bin in misc[6]. One cluster barrier publishes both; every CTA then loads the whole
// cluster's keys of the bin into registers -- 16 bytes per distributed-shared-memory request
// (which cost about a clock each whatever their width): the list is of 4-key chunks, CTA q's
// ceil(misc[4] / 4) in rank order -- and runs passes 1 and 2 on them alone, with block barriers
// only: the same counts, so the same digits, in every CTA. This replaces two cluster-synchronized
// selects and the exchange of (greater, equal) totals. Returns K* and `need`; leaves in misc[2],
// misc[3] the counts of keys > K* and == K* in the lower-ranked CTAs' segments, complete after
// the caller's next block barrier. Arrives on the cluster barrier once its remote reads are done:
// the caller waits on it before exiting.
__device__ __forceinline__ void glm_tk_cluster_gather(uint32_t *hist, uint32_t *coarse,
                                                      const uint32_t *gbuf, uint32_t *scratch,
                                                      uint32_t prefix, uint32_t remaining,
                                                      unsigned csize, unsigned rank,
                                                      uint32_t *kth, uint32_t *need) {
  uint32_t *misc = scratch + GLM_TK_MISC;
  uint32_t *coff = misc + 8;  // [q]: CTA q's first chunk in the cluster's list
  uint32_t *count = misc + 16; // [q]: CTA q's keys in the bin
  const int tid = threadIdx.x, lane = tid % 32;
  // The cluster barrier makes every CTA's collect counts (misc[6], misc[4]: no later write) final
  // and visible to the peers.
  glm_cluster_arrive_shared();
  glm_cluster_wait();
  // Pass 1's histogram is this CTA's pass-0 histogram, zeroed: every peer read it (its select)
  // before the barrier above, and used what it read (the digit it wrote; the shared-memory
  // arrive does not order a peer's remote reads). Its coarse sums (coarse + 64, and pass 2's at coarse + 128) were
  // zeroed at the start: no cluster pass past 0 wrote them.
  for (int b = 4 * tid; b < GLM_TK_BINS; b += 4 * GLM_TOPK_THREADS)
    *reinterpret_cast<uint4 *>(hist + b) = make_uint4(0u, 0u, 0u, 0u);
  if (tid < 32) {
    uint32_t a = 0, c = 0;
    if (lane < static_cast<int>(csize)) {
      const uint32_t peer = glm_cluster_map(glm_smem_addr(misc + 4), static_cast<unsigned>(lane));
      c = glm_ld_cluster_u32(peer);     // misc[4]: keys in the bin
      a = glm_ld_cluster_u32(peer + 8); // misc[6]: keys above it
    }
    const uint32_t chunks = (c + 3) / 4;
    uint32_t x = chunks; // inclusive scan over the ranks
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const uint32_t y = __shfl_up_sync(0xffffffffu, x, o);
      if (lane >= o)
        x += y;
    }
    if (lane < static_cast<int>(csize)) {
      coff[lane] = x - chunks;
      count[lane] = c;
    }
    if (lane == 31)
      misc[7] = x; // the list's chunks
    a = __reduce_add_sync(0xffffffffu, lane < static_cast<int>(rank) ? a : 0u);
    if (lane == 0) {
      misc[2] = a; // keys above the bin in lower-ranked segments: all above K*
      misc[3] = 0u;
    }
  }
  __syncthreads();
  GLM_TK_STAMP(2, 7);
  // Chunk j of the list is in the CTA q with coff[q] <= j < coff[q + 1], the last such q (empty
  // CTAs have equal offsets): the offsets in registers, the search without memory accesses.
  // Key k of this thread (chunk u = k / 4) is valid when bit k of `valid` is set, and from a
  // lower-ranked CTA when bit k of `lower` is.
  uint32_t offs[GLM_TK_MAX_CLUSTER];
#pragma unroll
  for (int q = 1; q < GLM_TK_MAX_CLUSTER; ++q)
    offs[q] = q < static_cast<int>(csize) ? coff[q] : 0xffffffffu;
  const uint32_t chunks = misc[7], gb = glm_smem_addr(gbuf);
  uint32_t key[GLM_TK_CL_GPT], valid = 0, lower = 0;
#pragma unroll
  for (int u = 0; u < GLM_TK_CL_GPT / 4; ++u) {
    const uint32_t j = static_cast<uint32_t>(tid + u * GLM_TOPK_THREADS);
    uint4 v = make_uint4(0u, 0u, 0u, 0u);
    if (j < chunks) {
      unsigned q = 0;
      uint32_t base = 0;
#pragma unroll
      for (int p = 1; p < GLM_TK_MAX_CLUSTER; ++p)
        if (offs[p] <= j) {
          q = static_cast<unsigned>(p);
          base = offs[p];
        }
      const uint32_t first = 4 * (j - base); // local index of the chunk's first key
      const uint32_t n = min(count[q] - first, 4u);
      v = glm_ld_cluster_u32x4(glm_cluster_map(gb + 4 * first, q));
      valid |= ((1u << n) - 1u) << (4 * u);
      lower |= q < rank ? 0xfu << (4 * u) : 0u;
    }
    key[4 * u] = v.x;
    key[4 * u + 1] = v.y;
    key[4 * u + 2] = v.z;
    key[4 * u + 3] = v.w;
  }
  glm_cluster_arrive(); // remote reads done (the caller's wait keeps every CTA alive until then)
  // Pass 1 (bits 10..20) with its coarse sums, then pass 2 (bits 0..9) in the first 1024 bins,
  // which the select zeroes once its reads are done. Each select is one warp's two round trips
  // through this CTA's shared memory.
  uint32_t *coarse1 = coarse + 64, *coarse2 = coarse + 128;
#pragma unroll
  for (int u = 0; u < GLM_TK_CL_GPT; ++u)
    if (valid >> u & 1u) {
      const uint32_t d = (key[u] >> 10) & (GLM_TK_BINS - 1);
      atomicAdd(&hist[d], 1u);
      atomicAdd(&coarse1[d >> 5], 1u);
    }
  __syncthreads();
  glm_tk_cluster_select<false>(hist, coarse1, GLM_TK_BINS, remaining, 1u, misc, hist, 1024);
  GLM_TK_STAMP(2, 3);
  prefix |= misc[0] << 10;
  remaining -= misc[1];
#pragma unroll
  for (int u = 0; u < GLM_TK_CL_GPT; ++u)
    if ((valid >> u & 1u) && (key[u] & 0xfffffc00u) == prefix) {
      const uint32_t d = key[u] & 1023u;
      atomicAdd(&hist[d], 1u);
      atomicAdd(&coarse2[d >> 5], 1u);
    }
  __syncthreads();
  glm_tk_cluster_select<false>(hist, coarse2, 1024, remaining, 1u, misc);
  GLM_TK_STAMP(2, 4);
  *kth = prefix | misc[0];
  *need = remaining - misc[1];
  uint32_t g = 0, e = 0; // over the lower-ranked CTAs' keys
#pragma unroll
  for (int u = 0; u < GLM_TK_CL_GPT; ++u)
    if ((valid & lower) >> u & 1u) {
      g += key[u] > *kth;
      e += key[u] == *kth;
    }
  g = __reduce_add_sync(0xffffffffu, g);
  e = __reduce_add_sync(0xffffffffu, e);
  if (lane == 0 && (g | e)) {
    atomicAdd(&misc[2], g);
    atomicAdd(&misc[3], e);
  }
}

// The ordered emit of a segment of at most S GLM_TK_CL_RUN keys per thread (S = 1, 2 or 4) in
// S sub-segments of GLM_TK_CL_RUN keys per thread: thread t's run i is keys [8 (i T + t),
// 8 (i T + t) + 8), T = GLM_TOPK_THREADS (runs of consecutive threads 32 bytes apart: their
// 16-byte loads conflict at most two ways). Each run's (greater, equal) counts against kth, S
// block-wide exclusive scans of them behind one barrier (packed 16 bits each: a sub-segment has
// fewer than 2^16 keys) with the sub-segments' totals, then each run's selected positions in
// order, its keys read again from shared memory -- no per-key votes, one barrier instead of a
// count pass, its barrier and a second walk. misc[2], misc[3]: the counts of the row before the
// segment, complete after the scans' barrier. s_off: the row position of key 0. (Segments of
// more than 8 keys per thread -- rows past 32K positions in clusters of 8 -- took the per-warp
// vote emit until this took S: 1 x 128K top-k 18.8 -> 17.6 us on the H200.)
#define GLM_TK_CL_RUN 8
template <int S>
__device__ __forceinline__ void glm_tk_run_emit(const uint32_t *keys, int len, uint32_t kth,
                                                uint32_t need, uint32_t *scratch,
                                                const uint32_t *misc, int32_t *out,
                                                int32_t *sout, const int32_t *bt, int s_off) {
  static_assert(GLM_TK_CL_RUN == 8, "two 16-byte loads per run");
  static_assert((S == 1 || S == 2 || S == 4) && GLM_TK_CL_RUN * GLM_TOPK_THREADS < 65536 &&
                    S * GLM_TK_WARPS <= GLM_TK_MISC && GLM_TK_WARPS <= 32,
                "16-bit counts; the scans' warp totals below misc");
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  auto start = [](int i) {
    return GLM_TK_CL_RUN * (i * GLM_TOPK_THREADS + static_cast<int>(threadIdx.x));
  };
  // keys has room for len rounded up to 4: a 16-byte load that starts below len stays inside.
  auto load = [&](int i, uint32_t (&key)[GLM_TK_CL_RUN]) {
    const int i0 = start(i);
    const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
    const uint4 a = i0 < len ? *reinterpret_cast<const uint4 *>(keys + i0) : zero;
    const uint4 b = i0 + 4 < len ? *reinterpret_cast<const uint4 *>(keys + i0 + 4) : zero;
    key[0] = a.x, key[1] = a.y, key[2] = a.z, key[3] = a.w;
    key[4] = b.x, key[5] = b.y, key[6] = b.z, key[7] = b.w;
  };
  // A run's page entries (its positions span at most two pages when GLM_PAGE >= 8): the first
  // run's loaded before the scans, each next one's before the run ahead of it is emitted, so
  // their latency overlaps work (all S runs' entries held at once spilled at 64 registers).
  auto pages = [&](int i, int32_t &p0, int32_t &p1) {
    const int i0 = start(i);
    p0 = p1 = 0;
    if (GLM_PAGE >= GLM_TK_CL_RUN && sout != nullptr && i0 < len) {
      p0 = bt[static_cast<unsigned>(s_off + i0) / GLM_PAGE];
      p1 = bt[static_cast<unsigned>(s_off + min(i0 + GLM_TK_CL_RUN, len) - 1) / GLM_PAGE];
    }
  };
  int32_t page0, page1;
  pages(0, page0, page1);
  // Run i's packed (greater, equal) counts and their inclusive scan over the warp; computed
  // again after the barrier rather than held across it (64 registers as sm_90 code).
  auto scan = [&](int i, const uint32_t (&key)[GLM_TK_CL_RUN], uint32_t &c) {
    const int i0 = start(i);
    uint32_t g = 0, e = 0;
#pragma unroll
    for (int u = 0; u < GLM_TK_CL_RUN; ++u) {
      g += i0 + u < len && key[u] > kth;
      e += i0 + u < len && key[u] == kth;
    }
    c = g | e << 16;
    return glm_tk_warp_inscan(c);
  };
#pragma unroll 1
  for (int i = 0; i < S; ++i) {
    uint32_t key[GLM_TK_CL_RUN], c;
    load(i, key);
    const uint32_t x = scan(i, key, c);
    if (lane == 31)
      scratch[i * GLM_TK_WARPS + warp] = x;
  }
  __syncthreads();
  uint32_t gB = misc[2], eB = misc[3]; // before run i's sub-segment
#pragma unroll 1
  for (int i = 0; i < S; ++i) {
    const uint32_t w = lane < GLM_TK_WARPS ? scratch[i * GLM_TK_WARPS + lane] : 0u;
    uint32_t key[GLM_TK_CL_RUN], c;
    load(i, key);
    const uint32_t ex = __reduce_add_sync(0xffffffffu, lane < warp ? w : 0u) + scan(i, key, c) - c;
    const uint32_t tot = __reduce_add_sync(0xffffffffu, w);
    uint32_t gx = gB + (ex & 0xffffu), eqx = eB + (ex >> 16);
    gB += tot & 0xffffu;
    eB += tot >> 16;
    const int32_t p0 = page0, p1 = page1;
    if (i + 1 < S)
      pages(i + 1, page0, page1);
    const int i0 = start(i), first = s_off + i0;
#pragma unroll
    for (int u = 0; u < GLM_TK_CL_RUN; ++u) {
      if (i0 + u >= len)
        break;
      const bool gt = key[u] > kth, eq = key[u] == kth;
      if (gt || (eq && eqx < need)) {
        const uint32_t o = gx + min(eqx, need);
        const int s = first + u;
        out[o] = s;
        if (sout != nullptr) {
          const unsigned page = static_cast<unsigned>(s) / GLM_PAGE;
          const int32_t entry = page == static_cast<unsigned>(first) / GLM_PAGE ? p0 : p1;
          sout[o] = GLM_PAGE >= GLM_TK_CL_RUN
                        ? entry * GLM_PAGE + static_cast<unsigned>(s) % GLM_PAGE
                        : glm_tk_slot(bt, s);
        }
      }
      gx += gt;
      eqx += eq;
    }
  }
}

// A segment's keys into shared memory (`keys`, room for len rounded up to 4) and pass 0's
// histogram of them into `hist0` (zeroed), as the scores arrive: 16-byte loads when the
// segment start s0 is 16-byte aligned, each lane 4 consecutive positions, GLM_TK_CL_LOADS loads
// in flight per lane. topk_cluster's and topk_grid's first read of their segment.
__device__ __forceinline__ void glm_tk_seg_load(const float *s0, int len, uint32_t *keys,
                                                uint32_t *hist0) {
  const int tid = threadIdx.x, lane = tid % 32;
  const bool vec = (reinterpret_cast<unsigned long long>(s0) & 15) == 0;
  constexpr int kB = GLM_TK_CL_LOADS;
  const int step = 4 * GLM_TOPK_THREADS * kB;
  for (int base = 4 * (tid - lane); base < len; base += step) { // warp-uniform bounds
    float4 v[kB];
#pragma unroll
    for (int u = 0; u < kB; ++u) {
      const int i = base + 4 * (u * GLM_TOPK_THREADS + lane);
      if (vec && i + 4 <= len) {
        v[u] = *reinterpret_cast<const float4 *>(s0 + i);
      } else {
        v[u].x = i < len ? s0[i] : 0.f;
        v[u].y = i + 1 < len ? s0[i + 1] : 0.f;
        v[u].z = i + 2 < len ? s0[i + 2] : 0.f;
        v[u].w = i + 3 < len ? s0[i + 3] : 0.f;
      }
    }
#pragma unroll
    for (int u = 0; u < kB; ++u) {
      const int i = base + 4 * (u * GLM_TOPK_THREADS + lane);
      const uint4 kk = make_uint4(glm_tk_key(v[u].x), glm_tk_key(v[u].y), glm_tk_key(v[u].z),
                                  glm_tk_key(v[u].w));
      if (i < len) // seg is a multiple of 4 and keys has room for it: a whole uint4 fits
        *reinterpret_cast<uint4 *>(keys + i) = kk;
      // Plain shared-memory atomics: glm_tk_hist_add's equal-bin check (a vote, a shuffle and
      // a branch per key) was the largest part of this loop in a profile (1 x 128K); a row of
      // equal scores only serializes these atomics.
      if (i < len)
        atomicAdd(&hist0[kk.x >> 21], 1u);
      if (i + 1 < len)
        atomicAdd(&hist0[kk.y >> 21], 1u);
      if (i + 2 < len)
        atomicAdd(&hist0[kk.z >> 21], 1u);
      if (i + 3 < len)
        atomicAdd(&hist0[kk.w >> 21], 1u);
    }
  }
}

// One row per cluster; scores, positions, outputs and block table as in topk_row. Registers for
// two CTAs per SM, so that twice as many rows' clusters are resident (a lone row's cluster is
// spread one CTA per SM all the same: bench/RESULTS.md 2026-12-02, fourth session).
extern "C" __global__ void __launch_bounds__(GLM_TOPK_THREADS, 2)
    topk_cluster(const float *__restrict__ scores, int ld, int n_cols,
                 const int32_t *__restrict__ positions, int k, int32_t *__restrict__ indices,
                 int32_t *__restrict__ slots, const int32_t *__restrict__ block_table,
                 int bt_stride, int rows_per_seq) {
  glm_grid_chain();
  extern __shared__ __align__(16) unsigned char smem[];
  uint32_t *hist0 = reinterpret_cast<uint32_t *>(smem);
  uint32_t *hist1 = reinterpret_cast<uint32_t *>(smem + GLM_TK_CL_HIST1);
  uint32_t *hist2 = reinterpret_cast<uint32_t *>(smem + GLM_TK_CL_HIST2);
  uint32_t *coarse = reinterpret_cast<uint32_t *>(smem + GLM_TK_CL_COARSE);
  uint32_t *scratch = reinterpret_cast<uint32_t *>(smem + GLM_TK_CL_SCRATCH);
  uint32_t *totals = reinterpret_cast<uint32_t *>(smem + GLM_TK_CL_TOTALS);
  uint32_t *cand = reinterpret_cast<uint32_t *>(smem + GLM_TK_CL_CAND);
  uint32_t *keys = reinterpret_cast<uint32_t *>(smem + GLM_TK_CL_KEYS);
  uint32_t *misc = scratch + GLM_TK_MISC;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const unsigned csize = glm_cluster_size(), rank = glm_cluster_rank();
  const int row = blockIdx.y;
  int32_t *out = indices + static_cast<long long>(row) * k;
  int32_t *sout = slots ? slots + static_cast<long long>(row) * k : nullptr;
  const int32_t *bt =
      slots ? block_table + static_cast<long long>(row / rows_per_seq) * bt_stride : nullptr;
  const float *src = scores + static_cast<long long>(row) * ld;
  GLM_TK_STAMP(2, 0);
  const int n = glm_tk_candidates(positions[row], n_cols);
  const int C = static_cast<int>(csize), r = static_cast<int>(rank);
  if (n <= k) { // the whole cluster takes this branch (n is the row's): no cluster barrier
    glm_tk_take_all_part(n, k, r, C, out, sout, bt);
    return;
  }
  const int seg = ((n + C - 1) / C + 3) & ~3;
  if (GLM_TK_CL_FIXED + 4u * static_cast<uint32_t>(seg) > glm_dynamic_smem_size())
    __trap(); // the launch sized shared memory for fewer columns than the row has
  const int lo = min(n, r * seg), len = min(n, lo + seg) - lo;

  for (int b = tid; b < GLM_TK_BINS; b += GLM_TOPK_THREADS)
    hist0[b] = 0;
  for (int b = tid; b < GLM_TK_BINS + 1024; b += GLM_TOPK_THREADS)
    hist1[b] = 0; // hist1, hist2 are contiguous
  for (int b = tid; b < 96; b += GLM_TOPK_THREADS)
    coarse[64 + b] = 0; // passes 1 and 2's coarse sums: the gathered finish adds to them
  if (tid == 0)
    misc[4] = misc[6] = 0; // pass 0's collect counts (the candidates or gathered keys; above)
  __syncthreads();
  glm_tk_seg_load(src + lo, len, keys, hist0);
  GLM_TK_STAMP(2, 1);
  // Pass p: this CTA's histogram complete (barrier), its coarse sums, the cluster barrier that
  // publishes both, then the select over the cluster's sums.
  uint32_t prefix = 0, remaining = static_cast<uint32_t>(k), kth = 0, need = 0;
  bool gathered = false;
#pragma unroll 1
  for (int p = 0; p < 3; ++p) {
    uint32_t *h = p == 0 ? hist0 : p == 1 ? hist1 : hist2;
    uint32_t *co = coarse + 64 * p; // 64, 64, 32 sums
    const int nbins = glm_tk_nbins(p);
    __syncthreads();
    glm_tk_coarse(h, nbins, co);
    glm_cluster_arrive_shared();
    glm_cluster_wait();
    glm_tk_cluster_select(h, co, nbins, remaining, csize, misc);
    GLM_TK_STAMP(2, 2 + p);
    prefix |= misc[0] << glm_tk_shift(p);
    remaining -= misc[1];
    if (p == 2)
      break;
    // Pass p + 1 over the keys matching the prefix: pass 1 over the segment, which also
    // collects its matches as pass 2's candidates (while they fit; the count may pass the
    // capacity, the stores stop there); pass 2 over those, or the segment again. misc is next
    // written after the barriers that follow, which every thread passes after reading it here.
    // When the cluster's keys in pass 0's bin fit the gathered finish (every CTA decides alike),
    // the scan only collects them, into the larger buffer at hist1, and counts the keys above.
    const int shift = glm_tk_shift(p + 1), nb = glm_tk_nbins(p + 1);
    const uint32_t himask = glm_tk_himask(p + 1);
    uint32_t *hn = p == 0 ? hist1 : hist2;
    const bool from_cand = p == 1 && misc[4] <= GLM_TK_CL_CANDS;
    const uint32_t *src_keys = from_cand ? cand : keys;
    const int m = from_cand ? static_cast<int>(misc[4]) : len;
    const uint32_t total = misc[5];
    gathered = p == 0 && total <= GLM_TK_CL_GATHER;
    uint32_t *cdst = gathered ? hist1 : cand;
    const uint32_t ccap = gathered ? GLM_TK_CL_GBUF : GLM_TK_CL_CANDS;
    // misc[4] and misc[6] (pass 0's collect counts) were zeroed at the start; nothing else writes
    // misc before the next select, which follows the barrier at the top of the loop.
    uint32_t above = 0; // gathered: keys above pass 0's bin
    constexpr int kB = 4; // keys per lane in flight (8 spill at sm_90's 64 registers)
    const int step = GLM_TOPK_THREADS * kB;
    for (int base = (tid - lane) * kB; base < m; base += step) { // warp-uniform
      uint32_t kk[kB];
#pragma unroll
      for (int u = 0; u < kB; ++u) {
        const int i = base + u * 32 + lane;
        kk[u] = i < m ? src_keys[i] : 0u;
      }
      uint32_t bm[kB], cnt = 0; // pass 0: the warp's matches of each piece, and their count
#pragma unroll
      for (int u = 0; u < kB; ++u) {
        const bool valid = base + u * 32 + lane < m;
        const bool match = valid && (kk[u] & himask) == prefix;
        if (match && !gathered)
          atomicAdd(&hn[(kk[u] >> shift) & static_cast<uint32_t>(nb - 1)], 1u);
        if (gathered)
          above += valid && (kk[u] & himask) > prefix;
        bm[u] = p == 0 ? __ballot_sync(0xffffffffu, match) : 0u;
        cnt += __popc(bm[u]);
      }
      if (cnt) { // pass 0: one shared-memory atomic per warp and batch for all its matches
        uint32_t at = 0;
        if (lane == 0)
          at = atomicAdd(&misc[4], cnt);
        at = __shfl_sync(0xffffffffu, at, 0);
#pragma unroll
        for (int u = 0; u < kB; ++u) {
          const uint32_t j = at + __popc(bm[u] & ((1u << lane) - 1u));
          if ((bm[u] >> lane & 1u) && j < ccap)
            cdst[j] = kk[u];
          at += __popc(bm[u]);
        }
      }
    }
    if (gathered) {
      GLM_TK_STAMP(2, 6);
      above = __reduce_add_sync(0xffffffffu, above);
      if (lane == 0 && above)
        atomicAdd(&misc[6], above);
      glm_tk_cluster_gather(hist0, coarse, hist1, scratch, prefix, remaining, csize, rank, &kth,
                            &need);
      break;
    }
  }
  if (!gathered) {
    kth = prefix;
    need = remaining;
  }

  // The gathered finish knows the lower-ranked CTAs' counts already: a segment of at most 4
  // runs of GLM_TK_CL_RUN keys per thread takes the run emit.
  constexpr int kRun = GLM_TK_CL_RUN * GLM_TOPK_THREADS;
  if (gathered && len <= 4 * kRun) {
    if (len <= kRun)
      glm_tk_run_emit<1>(keys, len, kth, need, scratch, misc, out, sout, bt, lo);
    else if (len <= 2 * kRun)
      glm_tk_run_emit<2>(keys, len, kth, need, scratch, misc, out, sout, bt, lo);
    else
      glm_tk_run_emit<4>(keys, len, kth, need, scratch, misc, out, sout, bt, lo);
    GLM_TK_STAMP(2, 5);
    glm_cluster_wait();
    return;
  }
  // Counts per warp piece; the CTA's totals for the peers; warp 0 sums the lower-ranked CTAs'
  // totals (one load per lane); then the ordered emit.
  int wlo, whi;
  const uint32_t *pairs =
      glm_tk_warp_pairs(nullptr, keys, 0, len, kth, scratch, warp, lane, &wlo, &whi);
  if (!gathered) { // the lower-ranked CTAs' counts come from their totals
    if (warp == 0)
      glm_tk_warp_store_sums(lane < GLM_TK_WARPS ? pairs[2 * lane] : 0u,
                             lane < GLM_TK_WARPS ? pairs[2 * lane + 1] : 0u, totals);
    glm_cluster_arrive_shared();
    glm_cluster_wait();
    if (warp == 0) {
      uint32_t g = 0, e = 0;
      if (lane < r) {
        const uint32_t peer = glm_cluster_map(glm_smem_addr(totals), static_cast<unsigned>(lane));
        g = glm_ld_cluster_u32(peer);
        e = glm_ld_cluster_u32(peer + 4);
      }
      glm_tk_warp_store_sums(g, e, misc + 2);
    }
    // The last remote reads are done (their values used): a peer may leave once every CTA has
    // arrived here; nobody leaves before then (the wait at the end).
    glm_cluster_arrive_relaxed();
    __syncthreads();
  }
  uint32_t gt0 = misc[2], eq0 = misc[3];
  glm_tk_pairs_before(pairs, warp, &gt0, &eq0);
  glm_tk_warp_emit(nullptr, keys, wlo, whi, kth, need, gt0, eq0, out, sout, bt, lo);
  GLM_TK_STAMP(2, 5);
  glm_cluster_wait();
}

// ---- topk_grid: one launch, G CTAs per row (grid (G, T)) that meet at barriers in global
// memory instead of in a cluster, so a lone long row spreads over many SMs (topk_cluster holds
// it on 8: at 128K positions its per-key passes over 16K keys per CTA were most of its time).
// The launch must have every CTA resident at once (launch::topKGridCtas sizes it so); the row
// barriers are glm_global_barrier (common.cuh), with the row's arrivals counted across them.
// CTA c of row t keeps the keys of causal positions [c seg, (c + 1) seg), seg = ceil(n / G)
// rounded up to 4, in shared memory, with its pass-0 histogram. Pass p (from 0): each CTA adds
// its nonzero bins to the row's global histogram p, a row barrier, and every CTA selects the
// same digit from the same global counts. After the first pass whose bin holds at most
// GLM_TK_GR_CANDS keys (or after pass 2, when the bin is one key value), each CTA publishes its
// counts above and in the bin and appends its keys of the bin with their positions to the row's
// list; after a second barrier every CTA reads the list, finishes the remaining passes on it
// alone (the same K* and `need` everywhere), counts the lower CTAs' selected keys from their
// published counts and the list's positions, and emits its segment in position order (the run
// emit). So a row costs two barriers in the common case and at most four; decisions come from
// integer counts only: deterministic.
// Workspace per row, GLM_TK_GR_WS_ROW uint32 (launch::topKGridWorkspaceBytes): the three global
// histograms, the barrier's arrivals and departures, the list's ticket, per-CTA counts, the list.
// Invariant: histograms, arrivals, departures and ticket are zero whenever no launch runs (zero
// the workspace once at allocation): after the last barrier every CTA zeroes its share of the
// histograms (all were read before it), and the last CTA to depart resets the counters.
// Dynamic shared memory: GLM_TK_GR_FIXED + 4 * keys, keys >= seg (the kernel traps on less).
#define GLM_TK_GR_CANDS 4096
#define GLM_TK_GR_MAX_CTAS 256
#define GLM_TK_GR_ARRIVE 5120 // after the histograms: pass p's at p * GLM_TK_BINS (1024 for p 2)
#define GLM_TK_GR_DEPART 5121
#define GLM_TK_GR_TICKET 5122
#define GLM_TK_GR_COUNTS 5124 // (above the bin, in the bin) per CTA
#define GLM_TK_GR_LIST (GLM_TK_GR_COUNTS + 2 * GLM_TK_GR_MAX_CTAS) // (key, position) pairs
#define GLM_TK_GR_WS_ROW (GLM_TK_GR_LIST + 2 * GLM_TK_GR_CANDS)
static_assert(GLM_TK_GR_WS_ROW == 13828, "runtime/launch topKGridWorkspaceBytes mirrors this");
// Shared memory: the pass histogram (then the global one's copy), the list's passes 1 and 2,
// scratch, the list's keys and positions, then the segment's keys.
#define GLM_TK_GR_HIST12 (GLM_TK_BINS * 4)
#define GLM_TK_GR_SCRATCH (GLM_TK_GR_HIST12 + (GLM_TK_BINS + 1024) * 4)
#define GLM_TK_GR_CKEY (GLM_TK_GR_SCRATCH + GLM_TK_SCRATCH * 4)
#define GLM_TK_GR_CPOS (GLM_TK_GR_CKEY + GLM_TK_GR_CANDS * 4)
#define GLM_TK_GR_FIXED (GLM_TK_GR_CPOS + GLM_TK_GR_CANDS * 4)
static_assert(GLM_TK_GR_FIXED == 53760, "runtime/launch topKGridSmem mirrors this layout");

extern "C" __global__ void __launch_bounds__(GLM_TOPK_THREADS)
    topk_grid(const float *__restrict__ scores, int ld, int n_cols,
              const int32_t *__restrict__ positions, int k, int32_t *__restrict__ indices,
              int32_t *__restrict__ slots, const int32_t *__restrict__ block_table, int bt_stride,
              int rows_per_seq, uint32_t *__restrict__ ws) {
  glm_grid_chain();
  extern __shared__ __align__(16) unsigned char smem[];
  uint32_t *hist = reinterpret_cast<uint32_t *>(smem);
  uint32_t *hist12 = reinterpret_cast<uint32_t *>(smem + GLM_TK_GR_HIST12);
  uint32_t *scratch = reinterpret_cast<uint32_t *>(smem + GLM_TK_GR_SCRATCH);
  uint32_t *ckey = reinterpret_cast<uint32_t *>(smem + GLM_TK_GR_CKEY);
  int32_t *cpos = reinterpret_cast<int32_t *>(smem + GLM_TK_GR_CPOS);
  uint32_t *keys = reinterpret_cast<uint32_t *>(smem + GLM_TK_GR_FIXED);
  uint32_t *misc = scratch + GLM_TK_MISC;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int G = static_cast<int>(gridDim.x), c = static_cast<int>(blockIdx.x);
  const int row = blockIdx.y;
  int32_t *out = indices + static_cast<long long>(row) * k;
  int32_t *sout = slots ? slots + static_cast<long long>(row) * k : nullptr;
  const int32_t *bt =
      slots ? block_table + static_cast<long long>(row / rows_per_seq) * bt_stride : nullptr;
  const float *src = scores + static_cast<long long>(row) * ld;
  uint32_t *rws = ws + static_cast<long long>(row) * GLM_TK_GR_WS_ROW;
  GLM_TK_STAMP(2, 0);
  const int n = glm_tk_candidates(positions[row], n_cols);
  if (n <= k) { // the whole row takes this branch: no barrier
    glm_tk_take_all_part(n, k, c, G, out, sout, bt);
    return;
  }
  const int seg = ((n + G - 1) / G + 3) & ~3;
  if (G > GLM_TK_GR_MAX_CTAS || GLM_TK_GR_FIXED + 4u * static_cast<uint32_t>(seg) >
                                    glm_dynamic_smem_size())
    __trap(); // more CTAs than count slots, or shared memory sized for fewer columns
  const int lo = min(n, c * seg), len = min(n, lo + seg) - lo;
  for (int b = tid; b < GLM_TK_BINS; b += GLM_TOPK_THREADS)
    hist[b] = 0;
  if (tid < 8)
    misc[tid] = 0; // misc[4..7]: this CTA's counts and the list's counts below its segment
                   // (misc[8]: the CTA's place on the list)
  __syncthreads();
  glm_tk_seg_load(src + lo, len, keys, hist);
  GLM_TK_STAMP(2, 1);

  // Global passes until the bin is small enough for the list (or fully resolved).
  uint32_t prefix = 0, remaining = static_cast<uint32_t>(k), cnt = 0;
  int p = 0;
#pragma unroll 1
  for (;; ++p) {
    const int nbins = glm_tk_nbins(p);
    uint32_t *hg = rws + p * GLM_TK_BINS;
    if (p > 0) { // this pass's histogram of the keys matching the prefix
      for (int b = tid; b < nbins; b += GLM_TOPK_THREADS)
        hist[b] = 0;
      __syncthreads();
      const int shift = glm_tk_shift(p);
      const uint32_t himask = glm_tk_himask(p);
      for (int i = tid; i < len; i += GLM_TOPK_THREADS) {
        const uint32_t kk = keys[i];
        if ((kk & himask) == prefix)
          atomicAdd(&hist[(kk >> shift) & static_cast<uint32_t>(nbins - 1)], 1u);
      }
    }
    __syncthreads();
    for (int b = tid; b < nbins; b += GLM_TOPK_THREADS) {
      const uint32_t v = hist[b];
      if (v)
        atomicAdd(&hg[b], v);
    }
    glm_global_barrier(rws + GLM_TK_GR_ARRIVE, (p + 1) * G, tid);
    { // the global counts, every load in flight before the first store (a round trip each)
      constexpr int kPer = GLM_TK_BINS / GLM_TOPK_THREADS;
      uint32_t v[kPer];
#pragma unroll
      for (int u = 0; u < kPer; ++u) {
        const int b = u * GLM_TOPK_THREADS + tid;
        v[u] = b < nbins ? glm_ld_cg(hg + b) : 0u;
      }
#pragma unroll
      for (int u = 0; u < kPer; ++u)
        if (u * GLM_TOPK_THREADS + tid < nbins)
          hist[u * GLM_TOPK_THREADS + tid] = v[u];
    }
    __syncthreads();
    glm_tk_select(hist, nbins, remaining, scratch, misc); // ends with a barrier
    GLM_TK_STAMP(2, 2 + p);
    const uint32_t d = misc[0];
    prefix |= d << glm_tk_shift(p);
    remaining -= misc[1];
    cnt = hist[d];
    __syncthreads(); // every thread has read hist and misc before they are rewritten
    if (cnt <= GLM_TK_GR_CANDS || p == 2)
      break;
  }
  // The bin: keys whose bits resolved so far (mask) equal prefix; cnt of them in the row.
  const uint32_t mask = p < 2 ? glm_tk_himask(p + 1) : 0xffffffffu;
  const bool list = cnt <= GLM_TK_GR_CANDS;
  {
    // This CTA's keys of the bin are staged in the list's shared buffers (at most cnt of them),
    // then go to the row's list at one ticket: a global round trip per CTA, not per warp batch.
    uint32_t above = 0;
    for (int i0 = 32 * warp; i0 < len; i0 += GLM_TOPK_THREADS) { // warp-uniform
      const int i = i0 + lane;
      const uint32_t kk = i < len ? keys[i] & mask : 0u;
      const bool valid = i < len, match = valid && kk == prefix;
      above += valid && kk > prefix;
      const uint32_t bm = __ballot_sync(0xffffffffu, match);
      if (bm) {
        uint32_t at = 0;
        if (lane == 0)
          at = atomicAdd(&misc[5], static_cast<uint32_t>(__popc(bm)));
        at = __shfl_sync(0xffffffffu, at, 0) + __popc(bm & ((1u << lane) - 1u));
        if (list && match && at < GLM_TK_GR_CANDS) {
          ckey[at] = keys[i];
          cpos[at] = lo + i;
        }
      }
    }
    above = __reduce_add_sync(0xffffffffu, above);
    if (lane == 0 && above)
      atomicAdd(&misc[4], above);
    __syncthreads();
    const uint32_t in = misc[5];
    if (tid == 0) {
      *reinterpret_cast<uint2 *>(rws + GLM_TK_GR_COUNTS + 2 * c) = make_uint2(misc[4], in);
      if (list && in)
        misc[8] = atomicAdd(rws + GLM_TK_GR_TICKET, in);
    }
    if (list && in) {
      __syncthreads();
      uint2 *dst = reinterpret_cast<uint2 *>(rws + GLM_TK_GR_LIST) + misc[8];
      for (int j = tid; j < static_cast<int>(in); j += GLM_TOPK_THREADS)
        if (misc[8] + j < GLM_TK_GR_CANDS)
          dst[j] = make_uint2(ckey[j], static_cast<uint32_t>(cpos[j]));
    }
  }
  glm_global_barrier(rws + GLM_TK_GR_ARRIVE, (p + 2) * G, tid);
  GLM_TK_STAMP(2, 6);
  // Every CTA has read every pass's global histogram (before its arrival here): zero a share.
  for (int q = 0; q <= p; ++q) {
    uint32_t *hg = rws + q * GLM_TK_BINS;
    for (int b = c * GLM_TOPK_THREADS + tid; b < glm_tk_nbins(q); b += G * GLM_TOPK_THREADS)
      hg[b] = 0;
  }
  uint32_t departed = 0; // the reply, read at the end (its round trip overlaps the emit)
  if (tid == 0)
    departed = atomicAdd(rws + GLM_TK_GR_DEPART, 1u);
  // The lower CTAs' counts (warp 0, one 8-byte load per lane and CTA).
  uint32_t gLow = 0, eLow = 0;
  if (warp == 0) {
    const uint2 *cts = reinterpret_cast<const uint2 *>(rws + GLM_TK_GR_COUNTS);
    for (int j = lane; j < c; j += 32) {
      const uint2 v = glm_ld_cg2(cts + j);
      gLow += v.x;
      eLow += v.y;
    }
    gLow = __reduce_add_sync(0xffffffffu, gLow);
    eLow = __reduce_add_sync(0xffffffffu, eLow);
  }
  uint32_t kth = prefix, need = remaining;
  if (list) {
    const int m = static_cast<int>(cnt);
    const uint2 *lst = reinterpret_cast<const uint2 *>(rws + GLM_TK_GR_LIST);
    { // every load in flight before the first store
      constexpr int kPer = GLM_TK_GR_CANDS / GLM_TOPK_THREADS;
      uint2 v[kPer];
#pragma unroll
      for (int u = 0; u < kPer; ++u) {
        const int j = u * GLM_TOPK_THREADS + tid;
        v[u] = j < m ? glm_ld_cg2(lst + j) : make_uint2(0u, 0u);
      }
      // (The staged keys were last read before the barrier above: the buffers are free.)
#pragma unroll
      for (int u = 0; u < kPer; ++u) {
        const int j = u * GLM_TOPK_THREADS + tid;
        if (j < m) {
          ckey[j] = v[u].x;
          cpos[j] = static_cast<int32_t>(v[u].y);
        }
      }
    }
    for (int b = tid; b < GLM_TK_BINS + 1024; b += GLM_TOPK_THREADS)
      hist12[b] = 0;
    __syncthreads();
#pragma unroll 1
    for (int q = p + 1; q < 3; ++q) { // the remaining passes over the list alone
      uint32_t *h = hist12 + (q - 1) * GLM_TK_BINS;
      const int shift = glm_tk_shift(q), nb = glm_tk_nbins(q);
      const uint32_t himask = glm_tk_himask(q);
      for (int j = tid; j < m; j += GLM_TOPK_THREADS)
        if ((ckey[j] & himask) == kth)
          atomicAdd(&h[(ckey[j] >> shift) & static_cast<uint32_t>(nb - 1)], 1u);
      __syncthreads();
      glm_tk_select(h, nb, need, scratch, misc);
      kth |= misc[0] << shift;
      need -= misc[1];
      __syncthreads();
    }
    GLM_TK_STAMP(2, 7);
    // The list's keys below this segment: greater than K*, equal to it.
    uint32_t g = 0, e = 0;
    for (int j = tid; j < m; j += GLM_TOPK_THREADS)
      if (cpos[j] < lo) {
        g += ckey[j] > kth;
        e += ckey[j] == kth;
      }
    g = __reduce_add_sync(0xffffffffu, g);
    e = __reduce_add_sync(0xffffffffu, e);
    if (lane == 0 && (g | e)) {
      atomicAdd(&misc[6], g);
      atomicAdd(&misc[7], e);
    }
    __syncthreads();
  }
  // misc[2], misc[3]: keys > K* and == K* of the row before the segment (the run emit's counts).
  // Above the bin: the lower CTAs' counts; in it: the list's (or, with no list, the bin is K*).
  if (tid == 0) {
    misc[2] = gLow + (list ? misc[6] : 0u);
    misc[3] = list ? misc[7] : eLow;
  }
  constexpr int kRun = GLM_TK_CL_RUN * GLM_TOPK_THREADS;
  if (len <= kRun)
    glm_tk_run_emit<1>(keys, len, kth, need, scratch, misc, out, sout, bt, lo);
  else if (len <= 2 * kRun)
    glm_tk_run_emit<2>(keys, len, kth, need, scratch, misc, out, sout, bt, lo);
  else if (len <= 4 * kRun)
    glm_tk_run_emit<4>(keys, len, kth, need, scratch, misc, out, sout, bt, lo);
  else
    __trap(); // segments longer than the run emit's: launch::topKGridCtas never makes them
  // The last CTA to depart resets the counters: every CTA has passed its last wait by then, and
  // none reads the ticket after it.
  if (tid == 0 && departed == static_cast<uint32_t>(G - 1)) {
    rws[GLM_TK_GR_ARRIVE] = 0;
    rws[GLM_TK_GR_DEPART] = 0;
    rws[GLM_TK_GR_TICKET] = 0;
  }
  GLM_TK_STAMP(2, 5);
}

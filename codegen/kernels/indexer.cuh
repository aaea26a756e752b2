// DSA lightning-indexer scores of T query rows against a paged indexer-key cache (docs/model.md
// "DSA lightning indexer"; design notes in docs/kernels.md "Lightning indexer and top-k").
//
// score[t][s] = scale * sum_h w[t][h] * ReLU(q[t][h] . key(s)) for s <= pos_t (s < n_cols),
// -inf for pos_t < s < n_cols. key(s) is the cache row of physical slot
// block_table[seq][s / GLM_PAGE] * GLM_PAGE + s % GLM_PAGE, seq = t / rows_per_seq (decode: one
// row per request, rows_per_seq 1; prefill: all rows of one sequence, rows_per_seq T).
//
// One CTA per (row t, chunk of chunk_len positions), 4 warps. The CTA streams its chunk's key rows
// once, in tiles of GLM_TILE_N rows gathered with 16-byte cp.async into a GLM_STAGES-deep
// shared-memory ring; warp w owns GLM_TILE_N / 4 rows of each tile. Its first tile is copied
// before the grid chain's wait when no kernel of the step writes its rows (GLM_IDX_PREWAIT).
// bf16: a skinny GEMM, M = the heads (one or two m16 tiles, q fragments held in registers for the
// whole chunk), N = 8 positions per mma, K = 128; ReLU and the head-weighted sum happen on the
// accumulators, the sum over heads crosses the 8 lanes of a column with 3 shuffles. f32
// (GLM_ACT_F32): lane = head, fp32 FMA.
//
// Instantiation constants: GLM_HEADS (1..32 real heads; padded to m16 tiles with zero q and w),
// GLM_DIM (128), GLM_PAGE (positions per cache page, a power of two), GLM_TILE_N, GLM_STAGES.
#pragma once
#include "common.cuh"

#define GLM_IDX_WARPS 4
#define GLM_IDX_THREADS (GLM_IDX_WARPS * 32)
#define GLM_IDX_ROW_BYTES (GLM_DIM * (int)sizeof(glm_act))
#define GLM_IDX_CHUNKS (GLM_IDX_ROW_BYTES / 16) // 16-byte pieces of one key row
#define GLM_IDX_ROWS_PER_WARP (GLM_TILE_N / GLM_IDX_WARPS)
// A tile's copies: each thread's GLM_IDX_CP_N pieces, GLM_IDX_CP_ROWS rows apart (load_tile).
#define GLM_IDX_CP_ROWS (GLM_IDX_THREADS / GLM_IDX_CHUNKS)
#define GLM_IDX_CP_N (GLM_TILE_N / GLM_IDX_CP_ROWS)
static_assert(GLM_IDX_THREADS % GLM_IDX_CHUNKS == 0 && GLM_IDX_CP_ROWS % 2 == 0 &&
                  GLM_TILE_N % GLM_IDX_CP_ROWS == 0,
              "whole rows per pass of the threads, an even row step (the bf16 swizzle)");

static_assert(GLM_DIM == 128, "the k permutation below covers exactly 128 dims");
static_assert(GLM_HEADS >= 1 && GLM_HEADS <= 32, "at most two m16 tiles of q fragments");
static_assert((GLM_PAGE & (GLM_PAGE - 1)) == 0, "page size is a power of two");
static_assert(GLM_STAGES >= 2, "a ring of at least two tiles");
// Tiles of the ring's prologue copied before the grid chain's wait (below; tuning, 0: none).
// One: tile 0, then q's loads, then the rest -- q waiting behind every prologue tile cost more
// than their earlier start gained where a CTA has few tiles (8 x 8K: 2; bench/RESULTS.md
// 2026-12-03, fourth session).
#ifndef GLM_IDX_PREWAIT
#define GLM_IDX_PREWAIT 1
#endif
static_assert(GLM_IDX_PREWAIT >= 0 && GLM_IDX_PREWAIT <= GLM_STAGES - 1, "prologue tiles");

// Dynamic shared memory layout, in bytes (the registry's indexerScoreSmem computes the same).
#if GLM_ACT_F32
#define GLM_IDX_Q_ROW (GLM_DIM + 4) // f32 q rows padded: lane h's float4 reads hit distinct banks
#define GLM_IDX_SMEM_Q 0
#define GLM_IDX_SMEM_KEYS (32 * GLM_IDX_Q_ROW * 4)
#else
#define GLM_IDX_SMEM_KEYS 0 // bf16 q lives in registers
#endif
#define GLM_IDX_SMEM_BYTES (GLM_IDX_SMEM_KEYS + GLM_STAGES * GLM_TILE_N * GLM_IDX_ROW_BYTES)

#if GLM_ACT_F32
static_assert(GLM_IDX_ROWS_PER_WARP % 4 == 0, "f32 warps take positions four at a time");
#else
static_assert(GLM_IDX_ROWS_PER_WARP % 8 == 0, "bf16 warps take whole n8 tiles of positions");
#define GLM_IDX_MT ((GLM_HEADS + 15) / 16)
#define GLM_IDX_NT (GLM_IDX_ROWS_PER_WARP / 8)
static_assert(GLM_IDX_NT <= 8, "one lane group g per n8 tile writes its scores");
#endif

extern "C" __global__ void __launch_bounds__(GLM_IDX_THREADS)
    indexer_score(const glm_act *__restrict__ q,           // [T, GLM_HEADS, GLM_DIM]
                  const glm_act *__restrict__ w,           // [T, GLM_HEADS] (indexer.proj output)
                  const glm_act *__restrict__ keys,        // [num_slots, GLM_DIM] paged cache
                  const int32_t *__restrict__ block_table, // [seqs, bt_stride] physical pages
                  int bt_stride, int rows_per_seq,
                  const int32_t *__restrict__ positions, // [T]
                  float *__restrict__ scores,            // [T, ld]
                  int ld, int n_cols, int num_slots, int chunk_len, float scale) {
  extern __shared__ __align__(16) unsigned char smem[];
  unsigned char *skeys = smem + GLM_IDX_SMEM_KEYS;

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int row = blockIdx.y;
  const int begin = blockIdx.x * chunk_len;
  const int end = min(begin + chunk_len, n_cols);
  const int pos = positions[row];
  const int last = min(pos, n_cols - 1); // the last causal position; < 0: none
  // Invariant: this CTA writes exactly positions [begin, end): those below causal_end from keys,
  // the rest -inf. Tile rows at or past causal_end are zero-filled and their results dropped.
  const int causal_end = min(end, last + 1);
  const int num_tiles = causal_end > begin ? (causal_end - begin + GLM_TILE_N - 1) / GLM_TILE_N : 0;
  const int32_t *bt = block_table + static_cast<long long>(row / rows_per_seq) * bt_stride;
  float *out = scores + static_cast<long long>(row) * ld;
  // The first position this call appends to the row's sequence: one call's positions are
  // consecutive (runtime/cuda/Backend.cpp checks it), so it is the sequence's first row's.
  // Keys below it were written by earlier calls; positions and the block table are uploaded by
  // the host before a call. No kernel of the step writes any of them, so they may be read
  // before the grid chain's wait (see the prologue below).
  const int first_new = positions[(row / rows_per_seq) * rows_per_seq];

  // Gathers tile `tile` into its ring stage. bf16 rows: 16-byte piece c of row r lands at piece
  // c ^ 4 (r & 1), so the 8 threads of a quarter warp reading pieces 4i + t of rows g and g + 1
  // (the compute loop below) hit 8 distinct 16-byte bank groups.
  // Thread tid copies piece tid % GLM_IDX_CHUNKS of rows tid / GLM_IDX_CHUNKS + GLM_IDX_CP_ROWS j,
  // j < GLM_IDX_CP_N: where the tile's positions are one run of slots (a tile inside one page
  // whose slots all exist in the cache: every tile with the plans' page of GLM_TILE_N or more
  // positions), its copies are one address computation and GLM_IDX_CP_N cp.async at immediate
  // offsets, the rows at or past causal_end zero-filled -- one block-table load per tile, not
  // one per copy (the issue sits between a tile's barrier and its math). Other tiles take the
  // general loop, and so does every tile of the f32 validation path (its copies here made
  // ptxas spill).
  auto load_tile = [&](int tile) {
    unsigned char *dst = skeys + (tile % GLM_STAGES) * (GLM_TILE_N * GLM_IDX_ROW_BYTES);
    const int p0 = begin + tile * GLM_TILE_N;
#if !GLM_ACT_F32
    if (static_cast<unsigned>(p0) % GLM_PAGE + GLM_TILE_N <= GLM_PAGE) {
      const long long base = static_cast<long long>(bt[static_cast<unsigned>(p0) / GLM_PAGE]) *
                                 GLM_PAGE +
                             static_cast<unsigned>(p0) % GLM_PAGE;
      if (base >= 0 && base + GLM_TILE_N <= num_slots) { // uniform over the CTA
        const int r0 = tid / GLM_IDX_CHUNKS, piece = tid % GLM_IDX_CHUNKS;
        const int spiece = piece ^ ((r0 & 1) << 2); // r & 1 is r0 & 1 (GLM_IDX_CP_ROWS even)
        // This thread's causal rows (p0 < causal_end: the tile is below num_tiles).
        const int n_full = (causal_end - p0 - r0 + GLM_IDX_CP_ROWS - 1) / GLM_IDX_CP_ROWS;
        glm_cp_async_16_strided_upto<GLM_IDX_CP_N, GLM_IDX_CP_ROWS * GLM_IDX_ROW_BYTES>(
            glm_smem_addr(dst + r0 * GLM_IDX_ROW_BYTES + spiece * 16),
            reinterpret_cast<const unsigned char *>(keys) + (base + r0) * GLM_IDX_ROW_BYTES +
                piece * 16,
            n_full);
        return;
      }
    }
#pragma unroll 1 // rare: a tile of an invalid page, or pages shorter than a tile
#else
#pragma unroll 4
#endif
    for (int c = tid; c < GLM_TILE_N * GLM_IDX_CHUNKS; c += GLM_IDX_THREADS) {
      const int r = c / GLM_IDX_CHUNKS, piece = c % GLM_IDX_CHUNKS;
      const int p = p0 + r;
      long long slot = -1;
      if (p < causal_end)
        slot = static_cast<long long>(bt[static_cast<unsigned>(p) / GLM_PAGE]) * GLM_PAGE +
               static_cast<unsigned>(p) % GLM_PAGE;
      const bool ok = slot >= 0 && slot < num_slots; // else a zero key: score 0
      const unsigned char *src = reinterpret_cast<const unsigned char *>(keys) +
                                 (ok ? slot : 0) * GLM_IDX_ROW_BYTES + piece * 16;
#if GLM_ACT_F32
      const int spiece = piece;
#else
      const int spiece = piece ^ ((r & 1) << 2);
#endif
      glm_cp_async_16(glm_smem_addr(dst + r * GLM_IDX_ROW_BYTES + spiece * 16), src, ok ? 16 : 0);
    }
  };

  // The ring's prologue, part 1, before the grid chain's wait: the leading tiles (at most
  // GLM_IDX_PREWAIT) whose causal rows all lie below first_new, so the kernel streams keys while
  // its predecessor (the cache append, which lets it in early) still runs. Tile s's causal rows
  // end at min(begin + (s + 1) GLM_TILE_N, causal_end); rows past causal_end are zero-filled, not
  // read. The safe tiles are a prefix, so the commit groups stay one per tile in tile order.
  int pre = 0; // tiles issued here
#pragma unroll
  for (int s = 0; s < GLM_IDX_PREWAIT; ++s)
    if (pre == s && s < num_tiles && min(begin + (s + 1) * GLM_TILE_N, causal_end) <= first_new) {
      load_tile(s);
      glm_cp_async_commit();
      ++pre;
    }
  glm_grid_chain(); // q and w are written by this step's kernels

#if GLM_ACT_F32
  // q rows of this query into shared memory (padded rows; heads past GLM_HEADS are zero).
  float *sq = reinterpret_cast<float *>(smem + GLM_IDX_SMEM_Q);
  for (int i = tid; i < 32 * GLM_DIM; i += GLM_IDX_THREADS) {
    const int h = i / GLM_DIM, d = i % GLM_DIM;
    sq[h * GLM_IDX_Q_ROW + d] =
        h < GLM_HEADS ? q[(static_cast<long long>(row) * GLM_HEADS + h) * GLM_DIM + d] : 0.f;
  }
  const float wl = lane < GLM_HEADS ? glm_act_load(w, row * GLM_HEADS + lane) : 0.f;
#else
  // q as mma A fragments, with the k order permuted so one thread's B data are 4 whole 16-byte
  // pieces of a key row. For k-step j = 2i + e, thread t's k pair {2t, 2t+1} is dims
  // 32i + 8t + 4e + {0,1} and its pair {2t+8, 2t+9} is dims 32i + 8t + 4e + {2,3}: a bijection
  // of the 16 k of each step onto 16 dims, all 128 dims over the 8 steps. A and B use the same
  // map, so q . key is unchanged. Piece 4i + t of a row (dims 32i + 8t .. +7) thus holds
  // .x = (step 2i, low pair), .y = (2i, high pair), .z = (2i+1, low), .w = (2i+1, high).
  const int g = lane / 4, t4 = lane % 4;
  uint32_t qa[GLM_IDX_MT][8][4];
  float wr[GLM_IDX_MT][2];
#pragma unroll
  for (int m = 0; m < GLM_IDX_MT; ++m)
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const int h = 16 * m + g + 8 * hh; // A rows g (regs 0, 2) and g + 8 (regs 1, 3)
      const bool ok = h < GLM_HEADS;
      const uint4 *src = reinterpret_cast<const uint4 *>(
          q + (static_cast<long long>(row) * GLM_HEADS + (ok ? h : 0)) * GLM_DIM);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        uint4 v = ok ? src[4 * i + t4] : make_uint4(0u, 0u, 0u, 0u);
        qa[m][2 * i][hh] = v.x;
        qa[m][2 * i][2 + hh] = v.y;
        qa[m][2 * i + 1][hh] = v.z;
        qa[m][2 * i + 1][2 + hh] = v.w;
      }
      wr[m][hh] = ok ? glm_act_load(w, row * GLM_HEADS + h) : 0.f;
    }
#endif

#pragma unroll
  for (int s = 0; s < GLM_STAGES - 1; ++s) // the prologue, part 2
    if (s >= pre) {
      if (s < num_tiles)
        load_tile(s);
      glm_cp_async_commit();
    }

  for (int tile = 0; tile < num_tiles; ++tile) {
    glm_cp_async_wait<GLM_STAGES - 2>();
    __syncthreads(); // tile landed; every warp is done with the stage refilled below
    if (tile + GLM_STAGES - 1 < num_tiles)
      load_tile(tile + GLM_STAGES - 1);
    glm_cp_async_commit();

    const unsigned char *tk = skeys + (tile % GLM_STAGES) * (GLM_TILE_N * GLM_IDX_ROW_BYTES);
    const int r0 = warp * GLM_IDX_ROWS_PER_WARP; // this warp's first row of the tile
    const int p0 = begin + tile * GLM_TILE_N + r0;
#if GLM_ACT_F32
#pragma unroll 1
    for (int u0 = 0; u0 < GLM_IDX_ROWS_PER_WARP; u0 += 4) {
      const float *k0 = reinterpret_cast<const float *>(tk + (r0 + u0) * GLM_IDX_ROW_BYTES);
      float acc[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll 4
      for (int d = 0; d < GLM_DIM; d += 4) {
        const float4 qv = *reinterpret_cast<const float4 *>(sq + lane * GLM_IDX_Q_ROW + d);
#pragma unroll
        for (int u = 0; u < 4; ++u) {
          const float4 kv = *reinterpret_cast<const float4 *>(k0 + u * GLM_DIM + d); // broadcast
          acc[u] = fmaf(qv.x, kv.x, acc[u]);
          acc[u] = fmaf(qv.y, kv.y, acc[u]);
          acc[u] = fmaf(qv.z, kv.z, acc[u]);
          acc[u] = fmaf(qv.w, kv.w, acc[u]);
        }
      }
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const float v = glm_warp_sum(wl * fmaxf(acc[u], 0.f)); // ReLU per head, then sum heads
        if (lane == u && p0 + u0 + u < causal_end)
          out[p0 + u0 + u] = scale * v;
      }
    }
#else
    float sum[GLM_IDX_NT][2];
#pragma unroll
    for (int nt = 0; nt < GLM_IDX_NT; ++nt) {
      // B fragments of column g (position p0 + 8 nt + g): 4 pieces 4i + t4 of that key row.
      const int r = r0 + nt * 8 + g;
      const unsigned char *krow = tk + r * GLM_IDX_ROW_BYTES;
      uint4 kb[4];
#pragma unroll
      for (int i = 0; i < 4; ++i)
        kb[i] = *reinterpret_cast<const uint4 *>(krow + (((4 * i + t4) ^ ((r & 1) << 2)) * 16));
      float acc[GLM_IDX_MT][4];
#pragma unroll
      for (int m = 0; m < GLM_IDX_MT; ++m)
        acc[m][0] = acc[m][1] = acc[m][2] = acc[m][3] = 0.f;
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int m = 0; m < GLM_IDX_MT; ++m) {
          glm_mma_bf16_16816(acc[m], qa[m][2 * i], kb[i].x, kb[i].y);
          glm_mma_bf16_16816(acc[m], qa[m][2 * i + 1], kb[i].z, kb[i].w);
        }
      // acc[m]: [0], [1] = head 16m + g at positions 2t4, 2t4 + 1 of the n8 tile; [2], [3] =
      // head 16m + g + 8. ReLU per head on the raw dot product, then the weighted sum.
      float s0 = 0.f, s1 = 0.f;
#pragma unroll
      for (int m = 0; m < GLM_IDX_MT; ++m) {
        s0 = fmaf(wr[m][0], fmaxf(acc[m][0], 0.f), s0);
        s0 = fmaf(wr[m][1], fmaxf(acc[m][2], 0.f), s0);
        s1 = fmaf(wr[m][0], fmaxf(acc[m][1], 0.f), s1);
        s1 = fmaf(wr[m][1], fmaxf(acc[m][3], 0.f), s1);
      }
      sum[nt][0] = s0;
      sum[nt][1] = s1;
    }
    // Sum over the heads: the 8 lanes g = 0..7 of each t4 (lane bits 2..4).
#pragma unroll
    for (int nt = 0; nt < GLM_IDX_NT; ++nt)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float v = sum[nt][e];
        v += __shfl_xor_sync(0xffffffffu, v, 4);
        v += __shfl_xor_sync(0xffffffffu, v, 8);
        v += __shfl_xor_sync(0xffffffffu, v, 16);
        sum[nt][e] = v;
      }
    // Every lane now holds the sums of its t4's two positions; lanes g = nt write n8 tile nt.
#pragma unroll
    for (int nt = 0; nt < GLM_IDX_NT; ++nt)
      if (g == nt) {
        const int p = p0 + nt * 8 + 2 * t4;
        if (p < causal_end)
          out[p] = scale * sum[nt][0];
        if (p + 1 < causal_end)
          out[p + 1] = scale * sum[nt][1];
      }
#endif
  }
  glm_cp_async_wait<0>();

  // Non-causal positions of the chunk.
  for (int p = max(begin, last + 1) + tid; p < end; p += GLM_IDX_THREADS)
    out[p] = -__int_as_float(0x7f800000);
}

// sparse_mla_decode (with its in-kernel merge of the splits) against runtime/host sparseMla: index
// lists with -1 and out-of-range holes, head counts that do not fill a 16-head group, 1 to 64
// splits in clusters of 1 to 8 (one cluster covering all splits, several clusters, and 64 splits
// without clusters); every case launched twice, the second reusing the merge counters the first
// left zeroed. Both layouts: 16 heads per CTA (the registry's) and 8 (tokens as the mma M); and
// the bulk-copy gathers (GLM_MLA_BULK, the plans' where a request has several head groups) in
// each ring form.
#include "codegen/registry/SparseMla.h"
#include "runtime/host/ops.h"
#include "runtime/launch/Attention.h"
#include "test/gpu/gpu_test.h"

using namespace glm5c::gputest;
using namespace glm5c::codegen;

namespace {
// Rows of L + R values -> the first L of each row and the last R (the kernels' two q operands).
void splitRows(const std::vector<float> &q, int L, int R, std::vector<float> *lat,
               std::vector<float> *rope) {
  for (size_t r = 0; r < q.size() / size_t(L + R); ++r) {
    lat->insert(lat->end(), q.begin() + r * (L + R), q.begin() + r * (L + R) + L);
    rope->insert(rope->end(), q.begin() + r * (L + R) + L, q.begin() + (r + 1) * (L + R));
  }
}
} // namespace

GPU_TEST(sparse_mla_decode) {
  GPU_TRY(selected, selectSparseMlaDecode(ctx.tiles, MlaShape{}));
  // Every layout: 16 heads per CTA (the registry's), 32 with 8 and 16 warps, 8; and, where the
  // tile target has it (SM120), the two-CTAs-per-SM form of 16 and 8 heads (one-tile ring; 16
  // heads with Q from global memory). minCtas 1: the register budget of one CTA per SM, as
  // SM120 code has it (16 and 8 heads then run S in two accumulator chains), whatever the
  // device's arch. bulk: the gathers as one bulk copy per row (GLM_MLA_BULK), in the two-tile
  // ring, the one-tile ring and with 16 warps, of which only the first 8 gather.
  struct Layout {
    int heads, warps;
    bool twoPerSm;
    int minCtas;
    bool bulk = false;
  } layouts[] = {{16, 8, false, 0},      {32, 8, false, 0},      {32, 16, false, 0},
                 {8, 8, false, 0},       {16, 8, true, 0},       {8, 8, true, 0},
                 {16, 8, false, 1},      {8, 8, false, 1},       {16, 8, false, 0, true},
                 {8, 8, false, 0, true}, {16, 8, true, 0, true}, {32, 16, false, 0, true}};
  for (const Layout &layout : layouts) {
    SparseMlaDecodeConfig base = selected;
    base.threads = 32 * layout.warps;
    base.bulk = layout.bulk;
    SparseMlaDecodeConfig cfg = sparseMlaDecodeWithHeads(base, layout.heads, ctx.tiles);
    if (layout.minCtas > 0) {
      cfg.minCtas = layout.minCtas;
      cfg.variant += "_m" + std::to_string(layout.minCtas);
    }
    if (layout.twoPerSm) {
      const auto two = sparseMlaDecodeTwoPerSm(cfg, ctx.tiles);
      if (!two)
        continue;
      cfg = *two;
    }
    GPU_TRY(mod, ctx.build(cfg.variant, sparseMlaDecodeSource(cfg)));
    // The phase-traced build of glm5c-bench-sparse-mla --trace compiles too (without spills:
    // the compile-only lit test checks every build's ptxas report). Not with the bulk gathers:
    // their traced build spills 4-8 B as sm_90 code at 16 and 32 heads (a diagnostic only).
    if (!layout.bulk) {
      GPU_TRY(traced, ctx.build(cfg.variant + "_trace",
                                "#define GLM_MLA_TRACE 64\n" + sparseMlaDecodeSource(cfg)));
      (void)traced;
    }
    if (ctx.compileOnly)
      continue;
    GPU_TRY(decode, ctx.function(mod, "sparse_mla_decode", static_cast<int>(cfg.dynamicSmem)));
    const int D = 576, L = 512, R = 64, topk = 2048;
    struct Case {
      int B, H, ctx, splits, cluster;
      // ramp: request b selects slots b ctx + i in order, row i's values scaled by 1 + i / 64,
      // so the scores grow along every split and its reference maximum moves on later tiles
      // (the slow path rescaling earlier tiles' P V), not only on the first.
      bool ramp = false;
    } cases[] = {{1, 8, 4096, 1, 1},
                 {2, 16, 3000, 5, 1},
                 {3, 64, 8192, 16, 8},
                 {2, 20, 2048, 64, 8},
                 {1, 8, 100, 3, 1},
                 {1, 8, 8192, 8, 8},
                 {2, 12, 4096, 4, 2},
                 {1, 16, 8192, 64, 1},
                 {1, 8, 300, 64, 4},
                 // Unclustered splits write their partials straight from registers: heads past
                 // num_heads in the last group must not be written.
                 {2, 12, 4096, 4, 1},
                 {2, 20, 2048, 8, 1},
                 {2, 40, 4096, 4, 1},
                 // Pairs of splits (the many-groups cluster) with a second stage.
                 {4, 8, 8192, 8, 2},
                 // Stage 1 merging several items per thread in one pass (pairs: 4 per thread,
                 // the last group's heads past num_heads; clusters of 4 with a second stage).
                 {2, 40, 4096, 2, 2},
                 {3, 24, 8192, 8, 4},
                 // Several waves of CTAs under full load: a tile read before it landed shows.
                 {32, 8, 8192, 8, 1},
                 {16, 16, 8192, 8, 8},
                 // Cluster 0: the spread merge (no cluster; the group's CTAs meet at a barrier
                 // and each merges a share of the columns): one-tile splits, heads past
                 // num_heads, empty splits (a short context), several groups and rows.
                 {1, 8, 4096, 64, 0},
                 {2, 20, 2048, 8, 0},
                 {1, 8, 100, 3, 0},
                 {3, 64, 8192, 4, 0},
                 {1, 16, 8192, 32, 0},
                 // Splits past the top-k range (48 splits of 64 rows: the last 16 have no tile),
                 // whose CTAs only take part in the merge with an empty partial -- in a cluster,
                 // alone with a second stage, and in the spread merge.
                 {1, 8, 4096, 48, 8},
                 {2, 16, 4096, 48, 1},
                 {1, 20, 4096, 48, 0},
                 {2, 16, 4096, 4, 1, true},
                 {1, 8, 4096, 8, 8, true},
                 {2, 20, 4096, 2, 2, true}};
    int ctasPerSm = 1;
    Context::check(ctx.drv->occupancy(decode, cfg.threads, static_cast<size_t>(cfg.dynamicSmem),
                                      &ctasPerSm));
    for (const Case &c : cases) {
      const bool spread = c.cluster == 0;
      const int cluster = spread ? 1 : c.cluster;
      const int groups = (c.H + cfg.heads - 1) / cfg.heads;
      // The spread merge needs the whole grid resident at once (the runtime's condition too).
      if (spread && !glm5rt::launch::sparseMlaResidentAtOnce(int64_t(groups) * c.B * c.splits,
                                                             ctasPerSm,
                                                             ctx.drv->info().smCount))
        continue;
      Rng rng(c.B * 131 + c.H * 7 + c.splits * 3 + c.cluster);
      std::vector<float> q = fromBf16(toBf16(rng.vec(size_t(c.B) * c.H * D)));
      std::vector<float> kv = rng.vec(size_t(c.B) * c.ctx * D);
      std::vector<int32_t> idx(size_t(c.B) * topk, -1);
      for (int b = 0; b < c.B; ++b)
        for (int i = 0; i < std::min(topk, c.ctx); ++i) {
          uint64_t r = rng.next();
          idx[size_t(b) * topk + i] =
              c.ramp ? b * c.ctx + i
              : r % 7 == 0 ? (r % 2 ? -1 : 1 << 30)
                           : b * c.ctx + static_cast<int>(r % c.ctx);
          if (c.ramp)
            for (int d = 0; d < D; ++d)
              kv[(size_t(b) * c.ctx + i) * D + d] *= 1.0f + i / 64.0f;
        }
      kv = fromBf16(toBf16(kv));
      int slots = c.B * c.ctx, splits = c.splits;
      int perSplit = ((topk + splits - 1) / splits + cfg.tileN - 1) / cfg.tileN * cfg.tileN;
      float scaleLog2 = (1.0f / 16.0f) * 1.4426950408889634f;
      // q_latent [B, H, 512] and q_rope [B, H, 64] are separate buffers.
      std::vector<float> qLat, qRope;
      splitRows(q, L, R, &qLat, &qRope);
      cu::DevicePtr dq = ctx.upload(toBf16(qLat)), dqr = ctx.upload(toBf16(qRope));
      cu::DevicePtr dkv = ctx.upload(toBf16(kv)), didx = ctx.upload(idx);
      cu::DevicePtr opart = ctx.alloc(size_t(c.B) * c.H * splits * L * 4);
      cu::DevicePtr lpart = ctx.alloc(size_t(c.B) * c.H * splits * 4);
      cu::DevicePtr out = ctx.alloc(size_t(c.B) * c.H * L * 2),
                    lse = ctx.alloc(size_t(c.B) * c.H * 4);
      const size_t numCounters = size_t(c.B) * groups * cluster; // per (row, group, chunk)
      cu::DevicePtr counters = ctx.upload(std::vector<uint32_t>(numCounters, 0));
      int heads = c.H, spreadArg = spread ? 1 : 0;
      for (int rep = 0; rep < 2; ++rep) {
        if (rep == 1) { // poison again (NaN): the second launch must write everything anew
          Context::check(ctx.drv->synchronize(ctx.stream));
          Context::check(ctx.drv->memsetD8(out, 0xff, size_t(c.B) * c.H * L * 2));
          Context::check(ctx.drv->memsetD8(lse, 0xff, size_t(c.B) * c.H * 4));
        }
        ctx.launchClustered(decode, groups * splits, c.B, cluster, cfg.threads,
                            static_cast<unsigned>(cfg.dynamicSmem), &dq, &dqr, &dkv, &didx, &opart,
                            &lpart, &out, &lse, &counters, &heads, &slots, &splits, &perSplit,
                            &scaleLog2, &spreadArg);
      }
      for (uint32_t v : ctx.download<uint32_t>(counters, numCounters))
        if (v != 0) {
          report.fail("sparse_mla merge counters",
                      "a counter is " + std::to_string(v) + " after the launches, not 0");
          break;
        }
      std::vector<float> gotO = fromBf16(ctx.download<uint16_t>(out, size_t(c.B) * c.H * L));
      std::vector<float> gotL = ctx.download<float>(lse, size_t(c.B) * c.H);

      std::vector<float> latent(size_t(slots) * L), rope(size_t(slots) * R);
      for (size_t i = 0; i < size_t(slots); ++i)
        for (int d = 0; d < D; ++d)
          (d < L ? latent[i * L + d] : rope[i * R + d - L]) = kv[i * D + d];
      std::vector<float> refO(size_t(c.B) * c.H * L), refL(size_t(c.B) * c.H);
      for (int b = 0; b < c.B; ++b) {
        std::vector<float> ql(size_t(c.H) * L), qr(size_t(c.H) * R);
        for (int h = 0; h < c.H; ++h)
          for (int d = 0; d < D; ++d)
            (d < L ? ql[size_t(h) * L + d] : qr[size_t(h) * R + d - L]) =
                q[(size_t(b) * c.H + h) * D + d];
        glm5rt::host::sparseMla(ql.data(), qr.data(), 1, c.H, L, R, latent.data(), rope.data(),
                                slots, idx.data() + size_t(b) * topk, topk, 1.0f / 16.0f,
                                refO.data() + size_t(b) * c.H * L, refL.data() + size_t(b) * c.H);
      }
      std::string what = cfg.variant + " B=" + std::to_string(c.B) + " H=" + std::to_string(c.H) +
                         " ctx=" + std::to_string(c.ctx) + " splits=" + std::to_string(c.splits) +
                         (spread ? std::string(" spread merge")
                                 : " cluster=" + std::to_string(c.cluster)) +
                         (c.ramp ? " ramp" : "");
      report.expectRelErr("sparse_mla out " + what, relErr(gotO, refO), 1e-2);
      report.expectRelErr("sparse_mla lse " + what, relErr(gotL, refL), 1e-2);
    }
  }
}

// The fp32 validation variant against the same reference: fp32 math, bound 1e-5.
GPU_TEST(sparse_mla_f32) {
  MlaShape shape;
  GPU_TRY(src, sparseMlaF32Source(shape));
  GPU_TRY(mod, ctx.build("sparse_mla_f32", src));
  if (ctx.compileOnly)
    return;
  GPU_TRY(fn, ctx.function(mod, "sparse_mla_f32"));
  const int D = 576, L = 512, R = 64, topk = 2048;
  struct Case {
    int T, H, ctx;
  } cases[] = {{1, 8, 4096}, {3, 20, 3000}, {2, 64, 100}};
  for (const Case &c : cases) {
    Rng rng(c.T * 17 + c.H);
    std::vector<float> q = rng.vec(size_t(c.T) * c.H * D), kv = rng.vec(size_t(c.ctx) * D);
    std::vector<int32_t> idx(size_t(c.T) * topk, -1);
    for (int t = 0; t < c.T; ++t)
      for (int i = 0; i < std::min(topk, c.ctx); ++i) {
        uint64_t r = rng.next();
        idx[size_t(t) * topk + i] = r % 9 == 0 ? -1 : static_cast<int>(r % c.ctx);
      }
    std::vector<float> qLat, qRope;
    splitRows(q, L, R, &qLat, &qRope);
    cu::DevicePtr dq = ctx.upload(qLat), dqr = ctx.upload(qRope), dkv = ctx.upload(kv);
    cu::DevicePtr didx = ctx.upload(idx);
    cu::DevicePtr out = ctx.alloc(size_t(c.T) * c.H * L * 4),
                  lse = ctx.alloc(size_t(c.T) * c.H * 4);
    int heads = c.H, slots = c.ctx;
    float scale = 1.0f / 16.0f;
    ctx.launch(fn, c.H, c.T, 1, 128, 0, &dq, &dqr, &dkv, &didx, &out, &lse, &heads, &slots, &scale);
    std::vector<float> gotO = ctx.download<float>(out, size_t(c.T) * c.H * L);
    std::vector<float> gotL = ctx.download<float>(lse, size_t(c.T) * c.H);
    std::vector<float> latent(size_t(c.ctx) * L), rope(size_t(c.ctx) * R);
    for (int i = 0; i < c.ctx; ++i)
      for (int d = 0; d < D; ++d)
        (d < L ? latent[size_t(i) * L + d] : rope[size_t(i) * R + d - L]) = kv[size_t(i) * D + d];
    std::vector<float> ql(size_t(c.T) * c.H * L), qr(size_t(c.T) * c.H * R);
    for (size_t r = 0; r < size_t(c.T) * c.H; ++r)
      for (int d = 0; d < D; ++d)
        (d < L ? ql[r * L + d] : qr[r * R + d - L]) = q[r * D + d];
    std::vector<float> refO(size_t(c.T) * c.H * L), refL(size_t(c.T) * c.H);
    glm5rt::host::sparseMla(ql.data(), qr.data(), c.T, c.H, L, R, latent.data(), rope.data(), c.ctx,
                            idx.data(), topk, scale, refO.data(), refL.data());
    std::string what =
        "T=" + std::to_string(c.T) + " H=" + std::to_string(c.H) + " ctx=" + std::to_string(c.ctx);
    report.expectRelErr("sparse_mla_f32 out " + what, relErr(gotO, refO), 1e-5);
    report.expectRelErr("sparse_mla_f32 lse " + what, relErr(gotL, refL), 1e-5);
  }
}

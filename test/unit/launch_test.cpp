// Launch geometry from the plan's kernel params (runtime/launch): the params round-trip through
// a plan kernel, the grid formulas give the expected numbers, and malformed params are refused
// naming the key.
#include "runtime/launch/Attention.h"
#include "runtime/launch/Elementwise.h"
#include "runtime/launch/HeadLinear.h"
#include "runtime/launch/Moe.h"
#include "runtime/launch/QLinear.h"

#include <gtest/gtest.h>

#include <flatbuffers/flatbuffers.h>

namespace glm5rt::launch {
namespace {

namespace pl = glm5::plan;

// A plan kernel carrying `params` (what glm5c's plan emitter writes).
struct FakeKernel {
  flatbuffers::FlatBufferBuilder b;
  const pl::Kernel *kernel = nullptr;
  explicit FakeKernel(const std::vector<std::pair<std::string, int64_t>> &params,
                      bool floatValue = false) {
    std::vector<flatbuffers::Offset<pl::Attr>> attrs;
    for (const auto &[k, v] : params)
      attrs.push_back(pl::CreateAttr(b, b.CreateString(k), v, 0.0, 0, floatValue));
    b.Finish(pl::CreateKernel(b, b.CreateString("qlinear_test"), 0, 0, 0, 256, 16, 9216, 0,
                              b.CreateVector(attrs)));
    kernel = flatbuffers::GetRoot<pl::Kernel>(b.GetBufferPointer());
  }
};

TEST(Launch, QLinearParamsRoundTrip) {
  QLinearParams decode;
  decode.kind = QLinearKind::kDecode;
  decode.tokens = 2;
  decode.rowsPerCta = 32;
  QLinearParams prefill;
  prefill.kind = QLinearKind::kPrefill;
  prefill.tileM = 64;
  prefill.tileN = 128;
  for (const QLinearParams &p : {decode, prefill}) {
    FakeKernel k(qlinearParamList(p));
    auto back = qlinearParamsOf(*k.kernel);
    ASSERT_TRUE(back.isOk()) << back.status().message();
    EXPECT_EQ(back->kind, p.kind);
    EXPECT_EQ(back->tokens, p.tokens);
    EXPECT_EQ(back->rowsPerCta, p.rowsPerCta);
    EXPECT_EQ(back->tileM, p.tileM);
    EXPECT_EQ(back->tileN, p.tileN);
    EXPECT_EQ(back->threads, 256); // from the kernel itself
    EXPECT_EQ(back->dynamicSmem, 9216);
  }
}

TEST(Launch, QLinearDecodeSplitsSmallOutputsOverK) {
  QLinearParams p;
  p.kind = QLinearKind::kDecode;
  p.threads = 256;
  p.tokens = 1;
  p.rowsPerCta = 32;
  // N = 512 rows make 16 CTAs of 8 warps; 7.5 warps on each of 188 SMs need 12 splits of K =
  // 6144 (24 steps): 192 CTAs of 2 steps, at most 2 on an SM (24 splits: up to 3 CTAs of 1).
  QLinearGrid g = qlinearGrid(p, 188, 1, 512, 6144);
  EXPECT_EQ(g.gridX, 16u);
  EXPECT_EQ(g.gridY, 12u);
  EXPECT_EQ(g.splits, 12);
  EXPECT_EQ(g.kPerSplit, 2 * kQLinearKStep);
  EXPECT_EQ(g.workspaceBytes, 12 * 1 * 512 * 4);
  EXPECT_EQ(g.counters, 16);
  // The output head (N = 154880) fills the GPU without a split.
  QLinearGrid head = qlinearGrid(p, 188, 1, 154880, 6144);
  EXPECT_EQ(head.gridX, 4840u);
  EXPECT_EQ(head.splits, 1);
  EXPECT_EQ(head.workspaceBytes, 0);
  // A forced split (benchmarks): 3 of the head's 24 steps, 8 each, with the partials' workspace;
  // more than the K steps clamp to one per step.
  QLinearGrid head3 = qlinearGrid(p, 188, 1, 154880, 6144, 3);
  EXPECT_EQ(head3.splits, 3);
  EXPECT_EQ(head3.gridY, 3u);
  EXPECT_EQ(head3.kPerSplit, 8 * kQLinearKStep);
  EXPECT_EQ(head3.workspaceBytes, 3 * 1 * 154880 * 4);
  EXPECT_EQ(head3.counters, 4840);
  EXPECT_EQ(qlinearGrid(p, 188, 1, 154880, 6144, 100).splits, 24);
  // o_proj (16384 -> 6144) with 128-thread CTAs of 64 rows on the H200: 96 row tiles of 64
  // steps. 3 splits are the fewest with 7.5 warps per SM but load an SM with 3 CTAs of 22
  // steps; 4 splits: 3 of 16 (6 gave 288 CTAs, 3 of 11 steps on some SMs, 2 on others).
  QLinearParams p4 = p;
  p4.threads = 128;
  p4.rowsPerCta = 64;
  QLinearGrid o = qlinearGrid(p4, 132, 1, 6144, 16384);
  EXPECT_EQ(o.gridX, 96u);
  EXPECT_EQ(o.splits, 4);
  EXPECT_EQ(o.kPerSplit, 16 * kQLinearKStep);
  // q_b (2048 -> 16384): 256 row tiles already put 7.8 warps on each SM: no split.
  EXPECT_EQ(qlinearGrid(p4, 132, 1, 16384, 2048).splits, 1);
  // kv_a (6144 -> 576): 9 tiles never reach the floor; the least load, 12 splits of 2 steps
  // (108 CTAs, one per SM).
  EXPECT_EQ(qlinearGrid(p4, 132, 1, 576, 6144).splits, 12);
  // A K that is not a whole number of steps: the last split is shorter, none is empty.
  QLinearGrid odd = qlinearGrid(p, 132, 1, 2048, 1000);
  EXPECT_EQ(odd.kPerSplit % kQLinearKStep, 0);
  EXPECT_GT(1000, (odd.splits - 1) * odd.kPerSplit);
}

TEST(Launch, QLinearPrefillAndEmbedGrids) {
  QLinearParams p;
  p.kind = QLinearKind::kPrefill;
  p.tileM = 64;
  p.tileN = 128;
  QLinearGrid g = qlinearGrid(p, 188, 100, 1000, 6144);
  EXPECT_EQ(g.gridX, 8u); // ceil(1000 / 128)
  EXPECT_EQ(g.gridY, 2u); // ceil(100 / 64)
  p.kind = QLinearKind::kEmbed;
  EXPECT_EQ(qlinearGrid(p, 188, 37, 0, 6144).gridX, 37u);
}

TEST(Launch, QLinearMalformedParams) {
  struct Case {
    std::vector<std::pair<std::string, int64_t>> params;
    bool floatValue;
    const char *needle;
  } cases[] = {
      {{}, false, "params.kind is missing"},
      {{{"kind", 3}}, false, "params.kind is outside [0, 2]"},
      {{{"kind", 0}, {"tokens", 1}}, false, "params.rows_per_cta is missing"},
      {{{"kind", 0}, {"tokens", 0}, {"rows_per_cta", 32}}, false, "params.tokens is outside"},
      {{{"kind", 1}, {"tile_m", 64}}, false, "params.tile_n is missing"},
      {{{"kind", 2}}, true, "params.kind is outside"},
  };
  for (const Case &c : cases) {
    FakeKernel k(c.params, c.floatValue);
    auto p = qlinearParamsOf(*k.kernel);
    ASSERT_FALSE(p.isOk()) << c.needle;
    EXPECT_NE(p.status().message().find(c.needle), std::string::npos) << p.status().message();
    EXPECT_NE(p.status().message().find("qlinear_test"), std::string::npos);
  }
}

TEST(Launch, HeadLinearGridAndParams) {
  HeadLinearParams p;
  p.threads = 256;
  p.dynamicSmem = 4096;
  p.b = 512; // attn_k_b folded into q: 192 -> 512 per head
  p.heads = 64;
  p.rowsPerCta = 64;
  p.tokensPerChunk = 8;
  FakeKernel k(headLinearParamList(p));
  auto back = headLinearParamsOf(*k.kernel);
  ASSERT_TRUE(back.isOk()) << back.status().message();
  EXPECT_EQ(back->b, 512);
  EXPECT_EQ(back->heads, 64);
  EXPECT_EQ(back->rowsPerCta, 64);
  EXPECT_EQ(back->tokensPerChunk, 8);
  // 8 x 64 CTAs per chunk; 188 SMs x 16 = 3008 CTAs allow 6 chunks in flight.
  HeadLinearGrid g = headLinearGrid(p, 188, 1000);
  EXPECT_EQ(g.gridX, 8u);
  EXPECT_EQ(g.gridY, 64u);
  EXPECT_EQ(g.gridZ, 6u);
  EXPECT_EQ(headLinearGrid(p, 188, 1).gridZ, 1u);
  EXPECT_EQ(headLinearGrid(p, 188, 0).gridZ, 1u); // no tokens: one (idle) chunk
  FakeKernel bad({{"b", 512}, {"heads", 70000}, {"rows_per_cta", 64}, {"tokens_per_chunk", 8}});
  auto rejected = headLinearParamsOf(*bad.kernel);
  ASSERT_FALSE(rejected.isOk());
  EXPECT_NE(rejected.status().message().find("params.heads is outside [1, 65535]"),
            std::string::npos)
      << rejected.status().message();
}

TEST(Launch, SliceGridVectorizesWhenAligned) {
  SliceParams p;
  p.threads = 256;
  FakeKernel k(sliceParamList(p));
  auto back = sliceParamsOf(*k.kernel);
  ASSERT_TRUE(back.isOk()) << back.status().message();
  EXPECT_FALSE(back->actF32);
  // bf16, 2048 rows of the 576-wide kv row, 512 latent values at offset 0: 64 vectors per row.
  EXPECT_EQ(sliceGrid(p, 188, 2048, 576, 512, 0).gridX, 2048u * 64 / 256);
  // An odd offset does not vectorize: one value per thread, capped at 8 CTAs per SM.
  EXPECT_EQ(sliceGrid(p, 188, 2048, 576, 512, 3).gridX, 8u * 188);
  EXPECT_EQ(sliceGrid(p, 188, 0, 576, 512, 0).gridX, 1u);
}

TEST(Launch, MoeRouterSplitsExpertsOverCtas) {
  MoeRouterParams p;
  p.threads = 256;
  p.dynamicSmem = (6144 + 256) * 4;
  p.experts = 256;
  FakeKernel k(moeRouterParamList(p));
  auto back = moeRouterParamsOf(*k.kernel);
  ASSERT_TRUE(back.isOk()) << back.status().message();
  EXPECT_EQ(back->experts, 256);
  // One token on 188 SMs: as many splits as rounds of 2 experts allow (128).
  MoeRouterGrid one = moeRouterGrid(p, 188, 1);
  EXPECT_EQ(one.gridX, 1u);
  EXPECT_EQ(one.splits, 128);
  EXPECT_EQ(one.counters, 1);
  EXPECT_EQ(one.logitsBytes, 256 * 4);
  // 512 tokens already fill the GPU: no split, no counters.
  MoeRouterGrid many = moeRouterGrid(p, 188, 512);
  EXPECT_EQ(many.splits, 1);
  EXPECT_EQ(many.counters, 0);
  // 20 tokens want ceil(376 / 20) = 19 splits; 256 experts in groups of 14 make 19.
  EXPECT_EQ(moeRouterGrid(p, 188, 20).splits, 19);
}

TEST(Launch, MoeFfnGridBoundsTheTileList) {
  MoeFfnParams p;
  p.threads = 256;
  p.experts = 256;
  p.topk = 8;
  p.hidden = 6144;
  p.ffn = 2048;
  p.tileM = 64;
  p.outRows = 64;
  FakeKernel k(moeFfnParamList(p));
  auto back = moeFfnParamsOf(*k.kernel);
  ASSERT_TRUE(back.isOk()) << back.status().message();
  EXPECT_TRUE(back->gateUp);
  EXPECT_EQ(back->ffn, 2048);
  EXPECT_EQ(back->outRows, 64);
  // One token: 8 pairs, 8 active experts, at most 8 tiles; gate/up spans F = 2048 rows.
  MoeFfnGrid g = moeFfnGrid(p, 1);
  EXPECT_EQ(g.pairs, 8);
  EXPECT_EQ(g.gridX, 2048u / 64);
  EXPECT_EQ(g.gridY, 8u);
  EXPECT_EQ(g.hBytes, 8 * 2048 * 2);
  // 1000 tokens: 8000 pairs over 256 experts, (8000 + 256 * 63 + 63) / 64 = 377 tiles at most.
  EXPECT_EQ(moeFfnGrid(p, 1000).gridY, 377u);
  // The down phase spans H; no tokens, no launch.
  p.gateUp = false;
  p.outRows = 128;
  EXPECT_EQ(moeFfnGrid(p, 1).gridX, 6144u / 128);
  EXPECT_EQ(moeFfnGrid(p, 0).gridY, 0u);
  FakeKernel bad({{"phase", 0}, {"act_f32", 0}, {"experts", 16}, {"topk", 17}});
  auto rejected = moeFfnParamsOf(*bad.kernel);
  ASSERT_FALSE(rejected.isOk());
  EXPECT_NE(rejected.status().message().find("params.topk is outside [1, 16]"), std::string::npos)
      << rejected.status().message();
}

TEST(Launch, MoeDecodeSplitsFillOneWave) {
  // GLM-5's gate/up phase: 64 row blocks a pair, 24 K steps; 7 CTAs on each of the H200's 132
  // SMs. The most equal splits whose CTAs fit the 924: 12 for one pair (768 CTAs), 6 for two, 4
  // for three, 3 for four, 1 for eight (512 CTAs already; 2 would be 1024).
  EXPECT_EQ(moeDecodeSplits(64, 24, 132 * 7), 12);
  EXPECT_EQ(moeDecodeSplits(128, 24, 132 * 7), 6);
  EXPECT_EQ(moeDecodeSplits(192, 24, 132 * 7), 4);
  EXPECT_EQ(moeDecodeSplits(256, 24, 132 * 7), 3);
  EXPECT_EQ(moeDecodeSplits(512, 24, 132 * 7), 1);
  // The down phase: 96 row blocks a pair, 8 steps, 5 per SM (660). 5-7 splits of 8 steps are
  // not equal (they run as 4), so one pair takes 4, two 3 (3 + 3 + 2 steps), three 2, four 1.
  EXPECT_EQ(moeDecodeSplits(96, 8, 132 * 5), 4);
  EXPECT_EQ(moeDecodeSplits(192, 8, 132 * 5), 3);
  EXPECT_EQ(moeDecodeSplits(288, 8, 132 * 5), 2);
  EXPECT_EQ(moeDecodeSplits(384, 8, 132 * 5), 1);
  // SM120's 188 SMs at 3 gate/up and 2 down CTAs per SM.
  EXPECT_EQ(moeDecodeSplits(64, 24, 188 * 3), 8);
  EXPECT_EQ(moeDecodeSplits(96, 8, 188 * 2), 3);
  // More tiles than a wave, or one step: never fewer than one split.
  EXPECT_EQ(moeDecodeSplits(2000, 24, 924), 1);
  EXPECT_EQ(moeDecodeSplits(1, 1, 924), 1);

  // The grid: with ctasPerSm the rule above, without it qlinearSplits' load model; a forced
  // count wins over both.
  QLinearParams p;
  p.kind = QLinearKind::kDecode;
  p.threads = 128;
  p.tokens = 1;
  p.rowsPerCta = 32;
  MoeDecodeGrid g = moeDecodeGrid(p, true, 132, 8, 2, 2048, 6144, 7);
  EXPECT_EQ(g.gridX, 64u);
  EXPECT_EQ(g.gridY, 8u);
  EXPECT_EQ(g.gridZ, 6u);
  EXPECT_EQ(g.kPerSplit, 4 * kQLinearKStep);
  EXPECT_EQ(g.workspaceBytes, 6 * 8 * 2 * 2048 * 4);
  EXPECT_EQ(g.counters, 64 * 8);
  const MoeDecodeGrid old = moeDecodeGrid(p, true, 132, 8, 2, 2048, 6144);
  EXPECT_EQ(int64_t(old.gridZ), qlinearSplits(p, 132, 128, 24));
  EXPECT_EQ(moeDecodeGrid(p, true, 132, 8, 2, 2048, 6144, 7, 2).gridZ, 2u);
  // The last pairs' phase at one split has no workspace.
  const MoeDecodeGrid all = moeDecodeGrid(p, false, 132, 8, 8, 6144, 2048, 5);
  EXPECT_EQ(all.gridZ, 1u);
  EXPECT_EQ(all.workspaceBytes, 0);
}

TEST(Launch, ElementwiseGrids) {
  NormParams norm;
  norm.threads = 256;
  norm.rowsPerCta = 8;
  FakeKernel nk(normParamList(norm));
  auto n = normParamsOf(*nk.kernel);
  ASSERT_TRUE(n.isOk()) << n.status().message();
  EXPECT_EQ(n->rowsPerCta, 8);
  EXPECT_EQ(normGrid(*n, 1), 1);
  EXPECT_EQ(normGrid(*n, 17), 3);
  EXPECT_EQ(normGrid(*n, 0), 0); // no rows: no launch

  CacheAppendParams append;
  append.threads = 128;
  append.tokensPerCta = 4;
  append.page = 64;
  FakeKernel ak(cacheAppendParamList(append));
  auto a = cacheAppendParamsOf(*ak.kernel);
  ASSERT_TRUE(a.isOk()) << a.status().message();
  EXPECT_EQ(a->page, 64);
  EXPECT_EQ(cacheAppendGrid(*a, 9), 3);
  FakeKernel bad({{"tokens_per_cta", 4}});
  auto missing = cacheAppendParamsOf(*bad.kernel);
  ASSERT_FALSE(missing.isOk());
  EXPECT_NE(missing.status().message().find("params.page is missing"), std::string::npos);

  EXPECT_EQ(ropeGrid(5), 5);
  EXPECT_EQ(pointwiseGrid(256, 188, 1), 1);
  EXPECT_EQ(pointwiseGrid(256, 188, 256 * 100), 100);
  EXPECT_EQ(pointwiseGrid(256, 188, int64_t(1) << 30), 8 * 188); // grid-stride covers the rest
}

TEST(Launch, IndexerScoreChunksCoverOneWave) {
  IndexerScoreParams p;
  p.threads = 128;
  p.dynamicSmem = 49152;
  p.tileN = 64;
  p.ctasPerSm = 4;
  p.heads = 32;
  p.page = 64;
  FakeKernel k(indexerScoreParamList(p));
  auto back = indexerScoreParamsOf(*k.kernel);
  ASSERT_TRUE(back.isOk()) << back.status().message();
  EXPECT_EQ(back->tileN, 64);
  EXPECT_EQ(back->ctasPerSm, 4);
  EXPECT_EQ(back->heads, 32);
  EXPECT_EQ(back->page, 64);
  // Decode, 8192 cached positions on 132 SMs x 4 CTAs: one tile (64 positions) per CTA.
  IndexerScoreGrid g = indexerScoreGrid(p, 132, 1, 8192);
  EXPECT_EQ(g.chunk, 64);
  EXPECT_EQ(g.gridX, 128u);
  EXPECT_EQ(g.gridY, 1u);
  // 64 rows: 64 x 128 tiles over 528 CTAs = 16 tiles (1024 positions) each.
  g = indexerScoreGrid(p, 132, 64, 8192);
  EXPECT_EQ(g.chunk, 1024);
  EXPECT_EQ(g.gridX, 8u);
  EXPECT_EQ(g.gridY, 64u);
  // 33 rows x 32768 positions: floor(528 / 33) = 16 chunks of 32 tiles per row, 528 CTAs (an
  // even spread, ceil(33 x 512 / 528) = 32 tiles, would be the same here) ...
  g = indexerScoreGrid(p, 132, 33, 32768);
  EXPECT_EQ(g.chunk, 2048);
  EXPECT_EQ(g.gridX, 16u);
  // ... and 34 rows: 15 chunks of 35 tiles per row, 510 CTAs, one wave (an even spread, 33
  // tiles, would make 16 chunks per row: 544 CTAs, past the 528 slots).
  g = indexerScoreGrid(p, 132, 34, 32768);
  EXPECT_EQ(g.chunk, 35 * 64);
  EXPECT_EQ(g.gridX, 15u);
  EXPECT_LE(g.gridX * g.gridY, 528u);
  // An empty cache still launches one CTA per row.
  g = indexerScoreGrid(p, 132, 1, 0);
  EXPECT_EQ(g.gridX, 1u);
}

TEST(Launch, TopKChoosesRowOrSegments) {
  TopKParams p;
  p.threads = 512;
  p.rowSmem = 74240;
  p.collectSmem = 57856;
  p.cache = 16384;
  p.segElems = 16;
  p.maxK = 4096;
  p.page = 64;
  FakeKernel k(topKParamList(p));
  auto back = topKParamsOf(*k.kernel);
  ASSERT_TRUE(back.isOk()) << back.status().message();
  EXPECT_EQ(back->collectSmem, 57856);
  EXPECT_EQ(back->cache, 16384);
  EXPECT_EQ(back->segElems, 16);
  EXPECT_EQ(back->maxK, 4096);
  EXPECT_FALSE(topKGrid(p, 132, 1, 8192, 2048).multi());   // fits topk_row's cache
  EXPECT_FALSE(topKGrid(p, 132, 132, 65536, 2048).multi()); // rows fill the SMs
  EXPECT_FALSE(topKGrid(p, 132, 1, 65536, 5000).multi());   // k above the multi-CTA limit
  TopKGrid g = topKGrid(p, 132, 1, 65536, 2048);
  ASSERT_TRUE(g.multi());
  EXPECT_EQ(g.segmentLen, 2048); // one wave wants 249 positions; at least 2048
  EXPECT_EQ(g.segments, 32);
  EXPECT_EQ(g.workspaceBytes, 2056 * 4 + 65536 * 8);
  // Decode graphs: topk_row's limit (its cache) while the context is within it, else the
  // capacity; no second bound when the capacity is within the limit or no top-k step has one.
  EXPECT_EQ(decodeGraphColumns({p.cache}, 131072, 0), 16384);
  EXPECT_EQ(decodeGraphColumns({p.cache}, 131072, 16383), 16384);
  EXPECT_FALSE(topKGrid(p, 132, 1, decodeGraphColumns({p.cache}, 131072, 16383), 2048).multi());
  EXPECT_EQ(decodeGraphColumns({p.cache}, 131072, 16384), 131072);
  EXPECT_EQ(decodeGraphColumns({p.cache}, 8192, 100), 8192);
  EXPECT_EQ(decodeGraphColumns({0}, 131072, 100), 131072);
}

TEST(Launch, TopKChoosesCluster) {
  TopKParams p;
  p.threads = 512;
  p.rowSmem = 41472;
  p.collectSmem = 57856;
  p.cache = 8192;
  p.segElems = 16;
  p.maxK = 4096;
  p.page = 64;
  p.clusterKeys = 16384;
  FakeKernel k(topKParamList(p));
  auto back = topKParamsOf(*k.kernel);
  ASSERT_TRUE(back.isOk()) << back.status().message();
  EXPECT_EQ(back->clusterKeys, 16384);
  EXPECT_EQ(topKClusterCols(p, 8), 131072);
  EXPECT_EQ(topKClusterCols(p, 1), 0); // a device that cannot place a cluster: no such path
  // Eight rows of 128K: a cluster of 8 per row, each CTA an eighth of the row.
  TopKGrid g = topKGrid(p, 132, 8, 131072, 2048);
  EXPECT_EQ(g.cluster, 8);
  EXPECT_FALSE(g.multi());
  EXPECT_EQ(g.clusterSmem, topKClusterSmem(16384));
  EXPECT_EQ(topKClusterSmem(16384), 29840 + 65536);
  // 10001 columns over 4 CTAs: segments of 2504 keys (rounded up to a multiple of 4).
  EXPECT_EQ(topKGrid(p, 132, 1, 10001, 16, 4).clusterSmem, topKClusterSmem(2504));
  EXPECT_EQ(topKClusterLaunchSmem(10001, 4), topKClusterSmem(2504));
  // Rows within topk_row's cache, rows past the cluster's columns, a row within k, a device
  // without clusters, and rows past two waves of resident clusters (16 by default on 132 SMs;
  // the device's count when given) do not take it.
  EXPECT_EQ(topKGrid(p, 132, 1, 8192, 2048).cluster, 0);
  EXPECT_EQ(topKGrid(p, 132, 1, 131073, 2048).cluster, 0);
  EXPECT_TRUE(topKGrid(p, 132, 1, 131073, 2048).multi());
  EXPECT_EQ(topKGrid(p, 132, 1, 2048, 2048).cluster, 0);
  EXPECT_EQ(topKGrid(p, 132, 1, 65536, 2048, 1).cluster, 0);
  EXPECT_EQ(topKGrid(p, 132, 1, 131072, 2048).cluster, 8);
  EXPECT_EQ(topKGrid(p, 132, 32, 32768, 2048).cluster, 8);
  EXPECT_EQ(topKGrid(p, 132, 33, 32768, 2048).cluster, 0);
  EXPECT_EQ(topKGrid(p, 132, 60, 32768, 2048, 8, 30).cluster, 8);
  EXPECT_EQ(topKGrid(p, 132, 61, 32768, 2048, 8, 30).cluster, 0);
  // Decode graphs: one row takes the cluster up to its columns (8 x 16384).
  EXPECT_EQ(topKClusterRowCols(p, 8), 131072);
  EXPECT_EQ(topKClusterRowCols(p, 1), 0);
  EXPECT_EQ(decodeGraphColumns({p.cache, 131072}, 200000, 5000), 8192);
  EXPECT_EQ(decodeGraphColumns({p.cache, 131072}, 200000, 8192), 131072);
  EXPECT_EQ(decodeGraphColumns({p.cache, 131072}, 200000, 131072), 200000);
  EXPECT_EQ(decodeGraphColumns({p.cache, 131072}, 100000, 9000), 100000);
  // Hopper's 16K cache: the cluster from past topk_row's register path (512 x 16 positions).
  p.cache = 16384;
  EXPECT_EQ(topKRowCols(p), 8192);
  EXPECT_EQ(topKGrid(p, 132, 1, 8192, 2048).cluster, 0);
  EXPECT_EQ(topKGrid(p, 132, 1, 8193, 2048).cluster, 8);
  EXPECT_EQ(topKGrid(p, 132, 8, 16384, 2048).cluster, 8);
  // 32 rows of 16K whose clusters would share SMs: topk_grid where every CTA is resident.
  EXPECT_GT(topKGrid(p, 132, 32, 16384, 2048, 8, 0, 264).grid, 0);
}

TEST(Launch, TopKChoosesGrid) {
  TopKParams p;
  p.threads = 512;
  p.cache = 8192;
  p.segElems = 16;
  p.maxK = 4096;
  p.page = 64;
  p.clusterKeys = 16384;
  // CTAs per row: about the keys asked for each, while every row's CTAs are resident at once.
  EXPECT_EQ(topKGridCtas(1, 131072, 2048, 264), 64);
  EXPECT_EQ(topKGridCtas(8, 32768, 2048, 264), 16);
  EXPECT_EQ(topKGridCtas(8, 131072, 2048, 264), 33); // 264 resident: 3972 keys each
  EXPECT_EQ(topKGridCtas(32, 32768, 2048, 264), 8);
  EXPECT_EQ(topKGridCtas(32, 131072, 2048, 264), 0); // 8 CTAs a row would take 16K keys each
  EXPECT_EQ(topKGridCtas(300, 8192, 2048, 264), 0);  // not one CTA per row resident
  EXPECT_EQ(topKGridCtas(1, 100, 2048, 10), 1);
  EXPECT_EQ(topKGridCtas(1, 131072, 100000, 264), 16);    // at most kTopKGridKeys per CTA
  EXPECT_EQ(topKGridCtas(1, 3000000, 2048, 100000), 0);   // 256 CTAs would take 11719 keys
  EXPECT_EQ(topKGridCtas(1, 2000000, 2048, 100000), 256); // 7816 keys each
  EXPECT_EQ(topKGridLaunchSmem(131072, 64), topKGridSmem(2048));
  EXPECT_EQ(topKGridLaunchSmem(10001, 4), topKGridSmem(2504));
  EXPECT_EQ(topKGridSmem(kTopKGridKeys), 53760 + 4 * 8192);
  EXPECT_EQ(topKGridWorkspaceBytes(3), 3 * 13828 * 4);
  // With the device's residency given: rows past topk_row's cache take it from 64K columns, or
  // when the rows' clusters of 8 would share SMs.
  TopKGrid g = topKGrid(p, 132, 1, 131072, 2048, 8, 0, 264);
  EXPECT_EQ(g.grid, 64);
  EXPECT_EQ(g.cluster, 0);
  EXPECT_FALSE(g.multi());
  EXPECT_EQ(g.gridSmem, topKGridSmem(2048));
  EXPECT_EQ(g.workspaceBytes, topKGridWorkspaceBytes(1));
  EXPECT_EQ(topKGrid(p, 132, 1, 8192, 2048, 8, 0, 264).grid, 0);  // topk_row's cache
  EXPECT_EQ(topKGrid(p, 132, 1, 2048, 2048, 8, 0, 264).grid, 0);  // every position selected
  EXPECT_EQ(topKGrid(p, 132, 32, 131072, 2048, 8, 0, 264).grid, 0); // not resident at once
  EXPECT_EQ(topKGrid(p, 132, 32, 131072, 2048, 8, 0, 264).cluster, 8);
  EXPECT_EQ(topKGrid(p, 132, 1, 131072, 2048).grid, 0); // no residency given: not taken
  EXPECT_EQ(topKGrid(p, 132, 1, 65536, 2048, 8, 0, 264).grid, 32);
  EXPECT_EQ(topKGrid(p, 132, 1, 65535, 2048, 8, 0, 264).cluster, 8);
  EXPECT_EQ(topKGrid(p, 132, 16, 32768, 2048, 8, 0, 264).cluster, 8); // 128 CTAs: one per SM
  EXPECT_EQ(topKGrid(p, 132, 17, 32768, 2048, 8, 0, 264).grid, 15);   // 136 share SMs
  EXPECT_EQ(topKGrid(p, 132, 32, 16384, 2048, 8, 0, 264).grid, 8);
}

TEST(Launch, SparseMlaSplitsAndClusters) {
  SparseMlaParams p;
  p.threads = 128;
  p.dynamicSmem = 171520;
  p.headsPerCta = 16;
  p.tileN = 64;
  p.ctasPerSm = 1;
  p.topk = 2048;
  p.latent = 512;
  FakeKernel k(sparseMlaParamList(p));
  auto back = sparseMlaParamsOf(*k.kernel);
  ASSERT_TRUE(back.isOk()) << back.status().message();
  EXPECT_FALSE(back->f32);
  EXPECT_EQ(back->headsPerCta, 16);
  EXPECT_EQ(back->tileN, 64);
  EXPECT_EQ(back->topk, 2048);
  // One request, 64 heads: 4 groups -> about one CTA per SM: 132 / 4 = 33 -> 32 splits of 64
  // positions (one tile each), 128 CTAs that fit the device at once: the spread merge, no
  // cluster, a partial per split and one barrier counter per group.
  SparseMlaGrid g = sparseMlaGrid(p, 132, 1, 64);
  EXPECT_EQ(g.splits, 32);
  EXPECT_TRUE(g.spread);
  EXPECT_EQ(g.cluster, 1u);
  EXPECT_EQ(g.tokensPerSplit, 64);
  EXPECT_EQ(g.gridX, 128u);
  EXPECT_EQ(g.gridY, 1u);
  EXPECT_EQ(g.countersBytes, 4 * 4);
  EXPECT_EQ(g.oPartBytes, 64 * 32 * 512 * 2); // bf16 partials
  EXPECT_EQ(g.lsePartBytes, 64 * 32 * 4);
  // One request of 16 heads: one group, clusters of 8; splits for about half the SMs (132 / 2 =
  // 66 -> 64), at most one per tile: 32 splits, four clusters.
  g = sparseMlaGrid(p, 132, 1, 16);
  EXPECT_EQ(g.splits, 32);
  EXPECT_FALSE(g.spread);
  EXPECT_EQ(g.cluster, 8u);
  EXPECT_EQ(g.countersBytes, 8 * 4); // a counter per chunk
  EXPECT_EQ(g.oPartBytes, 16 * 4 * 512 * 2); // one partial per cluster
  // 128 rows of 8 heads: 264 / 128 -> 3 -> 2 splits of 1024 positions (16 tiles), a pair
  // cluster: it merges through distributed shared memory, no partials in global memory.
  g = sparseMlaGrid(p, 132, 128, 8);
  EXPECT_EQ(g.splits, 2);
  EXPECT_EQ(g.cluster, 2u);
  EXPECT_EQ(g.tokensPerSplit, 1024);
  EXPECT_EQ(g.gridX, 2u);
  EXPECT_EQ(g.gridY, 128u);
  EXPECT_FALSE(g.spread); // two splits: the pair cluster's merge is the whole merge
  EXPECT_EQ(g.countersBytes, 128 * 2 * 4);
  EXPECT_EQ(g.oPartBytes, 0);
  EXPECT_EQ(g.lsePartBytes, 0);
  // 3 splits (not a multiple of two): no cluster, partials per split.
  EXPECT_EQ(sparseMlaCluster(3, 128), 1);
  // 64 tiles of 32: one request spreads over 64 one-tile splits (8 clusters of 8); 32 requests
  // take unclustered splits for one wave; many groups: 1.
  SparseMlaParams p32 = p;
  p32.tileN = 32;
  EXPECT_EQ(sparseMlaSplits(p32, 132, 1, 8), 64);
  EXPECT_EQ(sparseMlaSplits(p32, 188, 1, 8), 64);
  EXPECT_EQ(sparseMlaSplits(p32, 132, 2, 8), 32); // two groups: clusters, half the SMs
  EXPECT_EQ(sparseMlaSplits(p32, 132, 8, 8), 16); // 8 groups: one CTA per SM
  EXPECT_EQ(sparseMlaSplits(p32, 188, 8, 8), 16);
  EXPECT_EQ(sparseMlaSplits(p32, 132, 32, 8), 4); // one wave of one CTA per SM
  SparseMlaParams two = p32;
  two.ctasPerSm = 2;
  EXPECT_EQ(sparseMlaSplits(two, 132, 32, 8), 8); // one wave of two CTAs per SM
  EXPECT_EQ(sparseMlaSplits(p32, 132, 128, 64), 1);
  EXPECT_EQ(sparseMlaCluster(64, 1), 8);
  EXPECT_EQ(sparseMlaCluster(12, 2), 4);
  EXPECT_EQ(sparseMlaCluster(12, 8), 2); // beyond two groups: pairs
  // The spread merge: beyond two groups, at least 4 splits, the grid resident at once.
  EXPECT_TRUE(sparseMlaSpread(16, 8, 1, 132));
  EXPECT_TRUE(sparseMlaSpread(8, 32, 2, 132));   // 256 CTAs, two per SM
  EXPECT_FALSE(sparseMlaSpread(8, 32, 1, 132));  // 256 CTAs, one per SM: not at once
  EXPECT_FALSE(sparseMlaSpread(64, 1, 2, 132));  // one group: clusters of 8
  EXPECT_FALSE(sparseMlaSpread(2, 128, 2, 132)); // two splits: a pair
  EXPECT_EQ(sparseMlaCluster(8, 32), 2); // many groups: pairs
  EXPECT_EQ(sparseMlaCluster(1, 128), 1);
  // The 32-heads-per-CTA kernel: one CTA per SM of the 16-head kernel, at least 32 heads, and
  // wide groups (rows x ceil(heads / 32)) of at least a twelfth of the SMs.
  EXPECT_FALSE(sparseMlaUseWide(1, 132, 5, 64));   // 10 groups: too few
  EXPECT_TRUE(sparseMlaUseWide(1, 132, 6, 64));    // 12 groups >= 132 / 12
  EXPECT_TRUE(sparseMlaUseWide(1, 132, 128, 64));
  EXPECT_TRUE(sparseMlaUseWide(1, 188, 8, 64));    // 16 groups >= 188 / 12
  EXPECT_FALSE(sparseMlaUseWide(1, 188, 7, 64));
  EXPECT_FALSE(sparseMlaUseWide(2, 132, 128, 64)); // two 16-head CTAs per SM
  EXPECT_FALSE(sparseMlaUseWide(1, 132, 128, 16)); // fewer heads than the layout's
  EXPECT_TRUE(sparseMlaUseWide(1, 132, 33, 32));
  // The op's kernels: the first while it runs two CTAs per SM; else the 32-head one at large
  // batches; else the two-CTAs-per-SM form where it gets two.
  const std::vector<SparseMlaCandidate> h200 = {{16, 2}, {16, 4}, {32, 1}};
  EXPECT_EQ(sparseMlaPick(h200, 132, 128, 64), 0);
  const std::vector<SparseMlaCandidate> sm120 = {{16, 1}, {16, 2}, {32, 1}};
  EXPECT_EQ(sparseMlaPick(sm120, 188, 1, 64), 0);   // 4 groups: too few for two per SM
  EXPECT_EQ(sparseMlaPick(sm120, 188, 128, 64), 2); // large batch, many heads: 32 per CTA
  EXPECT_EQ(sparseMlaPick({{8, 1}, {8, 2}}, 188, 128, 8), 1);
  EXPECT_EQ(sparseMlaPick({{8, 1}, {8, 2}}, 188, 94, 8), 1); // 94 groups: half of 188 SMs
  EXPECT_EQ(sparseMlaPick({{8, 1}, {8, 2}}, 188, 93, 8), 0);
  EXPECT_EQ(sparseMlaPick({{16, 1}, {16, 2}}, 132, 66, 16), 1);
  EXPECT_EQ(sparseMlaPick({{16, 1}, {16, 2}}, 132, 65, 16), 0);
  EXPECT_EQ(sparseMlaPick({{16, 1}, {16, 1}}, 188, 128, 16), 0); // the form did not get two
  EXPECT_EQ(sparseMlaPick({{16, 1}}, 188, 1, 16), 0);
  EXPECT_EQ(sparseMlaPick(h200, 132, 1, 64, SparseMlaForce::kTwoPerSm), 1);
  EXPECT_EQ(sparseMlaPick(h200, 132, 1, 64, SparseMlaForce::kWide), 2);
  EXPECT_EQ(sparseMlaPick(sm120, 188, 1, 64, SparseMlaForce::kBase), 0);
  EXPECT_EQ(sparseMlaPick({{16, 1}}, 188, 1, 16, SparseMlaForce::kWide), 0); // none: the first
  // A device that cannot place clusters of 8 (the runtime asks): the largest it can.
  EXPECT_EQ(sparseMlaCluster(64, 1, 4), 4);
  EXPECT_EQ(sparseMlaCluster(64, 1, 1), 1);
  SparseMlaParams small = p32;
  small.maxCluster = 2;
  g = sparseMlaGrid(small, 132, 1, 8);
  EXPECT_EQ(g.splits, 64);
  EXPECT_EQ(g.cluster, 2u);
  EXPECT_EQ(g.oPartBytes, 8 * 32 * 512 * 2); // 32 clusters' partials per head
  EXPECT_EQ(g.countersBytes, 2 * 4);
  // One cluster covers the whole range (8 splits, the fewest of two groups): no partials in
  // global memory.
  g = sparseMlaGrid(p32, 16, 2, 8);
  EXPECT_EQ(g.splits, 8);
  EXPECT_EQ(g.cluster, 8u);
  EXPECT_EQ(g.oPartBytes, 0);
  EXPECT_EQ(g.lsePartBytes, 0);
  // Eight groups on a device of 100 SMs at one CTA per SM: 100 / 8 -> 8 splits, 64 CTAs at
  // once: spread; on 40 SMs 4 splits, 32 CTAs.
  g = sparseMlaGrid(p32, 100, 8, 8);
  EXPECT_EQ(g.splits, 8);
  EXPECT_TRUE(g.spread);
  EXPECT_EQ(g.countersBytes, 8 * 4);
  g = sparseMlaGrid(p32, 40, 8, 8);
  EXPECT_EQ(g.splits, 4);
  EXPECT_TRUE(g.spread);
  // The spread merge switched off (glm5-run --mla-merge cluster): the same splits in pairs.
  SparseMlaParams noSpread = p32;
  noSpread.spreadMerge = false;
  g = sparseMlaGrid(noSpread, 100, 8, 8);
  EXPECT_EQ(g.splits, 8);
  EXPECT_FALSE(g.spread);
  EXPECT_EQ(g.cluster, 2u);
  EXPECT_EQ(g.countersBytes, 8 * 2 * 4);
  // The fp32 kernel: one CTA per (head, row), no splits.
  SparseMlaParams f;
  f.f32 = true;
  f.threads = 128;
  f.topk = 2048;
  FakeKernel fk(sparseMlaParamList(f));
  auto fb = sparseMlaParamsOf(*fk.kernel);
  ASSERT_TRUE(fb.isOk()) << fb.status().message();
  EXPECT_TRUE(fb->f32);
  g = sparseMlaGrid(*fb, 132, 3, 20);
  EXPECT_EQ(g.gridX, 20u);
  EXPECT_EQ(g.gridY, 3u);
  EXPECT_EQ(g.countersBytes, 0);
  // A bf16 kernel without its tile is refused naming the key.
  FakeKernel bad({{"f32", 0}, {"topk", 2048}, {"latent", 512}, {"heads_per_cta", 16}});
  auto st = sparseMlaParamsOf(*bad.kernel);
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.status().message().find("params.tile_n is missing"), std::string::npos);
}

} // namespace
} // namespace glm5rt::launch

// indexer_score + the top-k kernels against runtime/host indexerScore and topK: decode batches
// and prefill rows over a paged cache with a shuffled block table, k = 16 and 2048, both top-k
// variants, rows built of exact ties, and synthetic score rows (NaN, -0, -inf, duplicates).
#include "codegen/registry/Indexer.h"
#include "runtime/host/ops.h"
#include "test/gpu/gpu_test.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <iterator>

using namespace glm5c::gputest;
using namespace glm5c::codegen;

namespace {

constexpr int kDim = 128;
constexpr int kPage = 64;
constexpr float kScale = 0.08838834764831845f; // 128^-1/2; w stays unscaled

// A count that must be zero: one reporter line.
void expectZero(Reporter &report, const std::string &what, long long count) {
  bool ok = count == 0;
  (ok ? report.passed : report.failed)++;
  std::printf("  %-64s %lld mismatches %s\n", what.c_str(), count, ok ? "ok" : "FAILED");
}

struct TopKKernels {
  TopKConfig cfg;
  cu::Function row = nullptr, hist0 = nullptr, collect = nullptr, cluster = nullptr, grid = nullptr;
  int gridResident = 0; // topk_grid CTAs the device holds at once (at its largest segment)
};

struct ScoreKernel {
  IndexerScoreConfig cfg;
  cu::Function fn = nullptr;
};

// One problem: T query rows of `seqs` sequences (rowsPerSeq rows each) over nCols positions.
struct Problem {
  int T = 0, nCols = 0, heads = 32, seqs = 0, rowsPerSeq = 1;
  std::vector<int32_t> pos;             // [T]
  std::vector<float> q, w;              // [T, heads, kDim] (rounded to the act dtype), [T, heads]
  std::vector<std::vector<float>> keys; // per sequence, [nCols, kDim] in position order
  int pagesPerSeq = 0, numSlots = 0;
  std::vector<int32_t> table; // [seqs, pagesPerSeq], pages of a shuffled pool
};

float roundAct(float v, bool f32) { return f32 ? v : glm5rt::bf16ToFloat(glm5rt::floatToBf16(v)); }

// Shuffled physical pages: the pool has a few spare pages, so slots are not a permutation of
// logical positions in any simple way.
void makeTable(Problem &p, Rng &rng) {
  p.pagesPerSeq = (p.nCols + kPage - 1) / kPage;
  int pool = p.seqs * p.pagesPerSeq + 3;
  std::vector<int32_t> perm(pool);
  for (int i = 0; i < pool; ++i)
    perm[i] = i;
  for (int i = pool - 1; i > 0; --i)
    std::swap(perm[i], perm[rng.next() % (i + 1)]);
  p.table.assign(perm.begin(), perm.begin() + size_t(p.seqs) * p.pagesPerSeq);
  p.numSlots = pool * kPage;
}

int32_t slotOf(const Problem &p, int seq, int s) {
  return p.table[size_t(seq) * p.pagesPerSeq + s / kPage] * kPage + s % kPage;
}

// Random q, w, keys (uniform in [-1, 1)); every value rounded as the device will see it.
void fillRandom(Problem &p, Rng &rng, bool f32) {
  p.q.resize(size_t(p.T) * p.heads * kDim);
  for (float &v : p.q)
    v = roundAct(rng.uniform(), f32);
  p.w = rng.vec(size_t(p.T) * p.heads);
  for (float &v : p.w)
    v = roundAct(v, f32);
  p.keys.assign(p.seqs, std::vector<float>(size_t(p.nCols) * kDim));
  for (auto &k : p.keys)
    for (float &v : k)
      v = roundAct(rng.uniform(), f32);
}

// Exact ties: q > 0; 70% of the keys are < 0 (every head's dot product < 0, score exactly 0),
// the rest are copies of 40 positive rows (groups of exactly equal positive scores); w > 0.
void fillTies(Problem &p, Rng &rng, bool f32) {
  p.q.resize(size_t(p.T) * p.heads * kDim);
  for (float &v : p.q)
    v = roundAct(0.01f + std::fabs(rng.uniform()), f32);
  p.w.resize(size_t(p.T) * p.heads);
  for (float &v : p.w)
    v = roundAct(0.05f + std::fabs(rng.uniform()), f32);
  std::vector<float> pool(40 * kDim);
  for (float &v : pool)
    v = roundAct(0.01f + std::fabs(rng.uniform()), f32);
  p.keys.assign(p.seqs, std::vector<float>(size_t(p.nCols) * kDim));
  for (auto &k : p.keys)
    for (int s = 0; s < p.nCols; ++s) {
      uint64_t r = rng.next();
      for (int d = 0; d < kDim; ++d)
        k[size_t(s) * kDim + d] = r % 10 < 7 ? roundAct(-0.01f - std::fabs(rng.uniform()), f32)
                                             : pool[(r / 16 % 40) * kDim + d];
    }
}

// Host reference scores [T, nCols].
std::vector<float> hostScores(const Problem &p) {
  std::vector<float> ref(size_t(p.T) * p.nCols);
  for (int seq = 0; seq < p.seqs; ++seq) {
    int t0 = seq * p.rowsPerSeq;
    glm5rt::host::indexerScore(p.q.data() + size_t(t0) * p.heads * kDim,
                               p.w.data() + size_t(t0) * p.heads, p.rowsPerSeq, p.heads, kDim,
                               p.keys[seq].data(), p.nCols, p.pos.data() + t0, kScale,
                               ref.data() + size_t(t0) * p.nCols);
  }
  return ref;
}

std::vector<int32_t> hostTopK(const std::vector<float> &scores, const Problem &p, int k) {
  std::vector<int32_t> idx(size_t(p.T) * k);
  glm5rt::host::topK(scores.data(), p.T, p.nCols, p.pos.data(), k, idx.data());
  return idx;
}

// Positions in one index set and not the other, summed over rows; a row whose arrays differ
// only in order or padding counts 1.
long long setMismatch(const std::vector<int32_t> &a, const std::vector<int32_t> &b, int T, int k) {
  long long bad = 0;
  for (int t = 0; t < T; ++t) {
    std::vector<int32_t> x, y, d;
    for (int j = 0; j < k; ++j) {
      if (a[size_t(t) * k + j] >= 0)
        x.push_back(a[size_t(t) * k + j]);
      if (b[size_t(t) * k + j] >= 0)
        y.push_back(b[size_t(t) * k + j]);
    }
    std::vector<int32_t> xs = x, ys = y;
    std::sort(xs.begin(), xs.end());
    std::sort(ys.begin(), ys.end());
    std::set_symmetric_difference(xs.begin(), xs.end(), ys.begin(), ys.end(),
                                  std::back_inserter(d));
    bool same = std::equal(a.begin() + size_t(t) * k, a.begin() + size_t(t + 1) * k,
                           b.begin() + size_t(t) * k);
    bad += d.empty() && !same ? 1 : static_cast<long long>(d.size());
  }
  return bad;
}

// Device copies of a problem.
struct DeviceProblem {
  cu::DevicePtr q = 0, w = 0, cache = 0, table = 0, pos = 0, scores = 0;
};

DeviceProblem upload(Context &ctx, const Problem &p, bool f32) {
  DeviceProblem d;
  std::vector<float> cache(size_t(p.numSlots) * kDim);
  Rng junk(99);
  for (float &v : cache)
    v = roundAct(junk.uniform(), f32); // slots of spare pages hold junk, never read
  for (int seq = 0; seq < p.seqs; ++seq)
    for (int s = 0; s < p.nCols; ++s)
      std::memcpy(&cache[size_t(slotOf(p, seq, s)) * kDim], &p.keys[seq][size_t(s) * kDim],
                  kDim * sizeof(float));
  if (f32) {
    d.q = ctx.upload(p.q);
    d.cache = ctx.upload(cache);
    d.w = ctx.upload(p.w);
  } else {
    d.q = ctx.upload(toBf16(p.q));
    d.cache = ctx.upload(toBf16(cache));
    d.w = ctx.upload(toBf16(p.w)); // the indexer weights are activations (indexer.proj's output)
  }
  d.table = ctx.upload(p.table);
  d.pos = ctx.upload(p.pos);
  d.scores = ctx.alloc(size_t(p.T) * p.nCols * 4);
  return d;
}

void runScores(Context &ctx, const ScoreKernel &sk, const Problem &p, DeviceProblem &d, int chunk) {
  int ld = p.nCols, nCols = p.nCols, btStride = p.pagesPerSeq, rps = p.rowsPerSeq;
  int slots = p.numSlots;
  float scale = kScale;
  ctx.launch(sk.fn, (p.nCols + chunk - 1) / chunk, p.T, 1, sk.cfg.threads,
             static_cast<unsigned>(sk.cfg.dynamicSmem), &d.q, &d.w, &d.cache, &d.table, &btStride,
             &rps, &d.pos, &d.scores, &ld, &nCols, &slots, &chunk, &scale);
}

struct TopKResult {
  std::vector<int32_t> idx, slots;
};

// A launch form of the top-k: topk_row; the two multi-CTA kernels with segments of segLen;
// topk_cluster with clusters of `cluster` CTAs; topk_grid with `grid` CTAs per row.
struct TopKForm {
  int segLen = 0, cluster = 0, grid = 0;
  std::string name() const {
    return grid      ? " grid" + std::to_string(grid)
           : cluster ? " cluster" + std::to_string(cluster)
           : segLen  ? " multi" + std::to_string(segLen)
                     : " row";
  }
  bool isPlan(const TopKPlan &plan) const {
    if (grid || plan.grid)
      return grid == plan.grid;
    return cluster  ? plan.cluster == cluster
           : segLen ? plan.multi() && !plan.cluster
                    : !plan.multi() && !plan.cluster;
  }
};
// The forms a row of nCols positions can take: topk_row, multi-CTA segments of 2048, clusters of
// 8 and 2 where a cluster's shared memory holds the row, and topk_grid with about 1024 and 8192
// keys per CTA (one CTA per row too) where rows x CTAs are resident at once.
std::vector<TopKForm> topKForms(const TopKKernels &tk, int rows, int nCols,
                                std::vector<int> segLens) {
  std::vector<TopKForm> forms = {TopKForm{}};
  for (int seg : segLens)
    forms.push_back(TopKForm{seg, 0});
  for (int c : {8, 2})
    if ((nCols + c - 1) / c <= tk.cfg.clusterKeys)
      forms.push_back(TopKForm{0, c});
  std::vector<int> grids;
  for (int64_t keys : {int64_t(1024), int64_t(glm5rt::launch::kTopKGridKeys), int64_t(nCols)}) {
    const int g = glm5rt::launch::topKGridCtas(rows, nCols, keys, tk.gridResident);
    if (g > 0 && std::find(grids.begin(), grids.end(), g) == grids.end())
      grids.push_back(g);
  }
  for (int g : grids)
    forms.push_back(TopKForm{0, 0, g});
  return forms;
}

// The multi-CTA kernels' workspace is checked to be left zero, and a second run of them and of
// topk_cluster to give the same result.
TopKResult runTopK(Context &ctx, const TopKKernels &tk, const Problem &p, DeviceProblem &d, int k,
                   const TopKForm &form, Reporter &report, const std::string &what) {
  int ld = p.nCols, nCols = p.nCols, btStride = p.pagesPerSeq, rps = p.rowsPerSeq, kk = k;
  int segLen = form.segLen;
  cu::DevicePtr idx = ctx.alloc(size_t(p.T) * k * 4), slots = ctx.alloc(size_t(p.T) * k * 4);
  TopKResult r;
  // Runs `launch` twice, the indices poisoned before each: the first run's result, and a failure
  // when the second selects differently.
  auto twice = [&](const std::function<void()> &launch, const char *form) {
    for (int run = 0; run < 2; ++run) {
      Context::check(ctx.drv->memsetD8(idx, 0xff, size_t(p.T) * k * 4));
      launch();
      std::vector<int32_t> got = ctx.download<int32_t>(idx, size_t(p.T) * k);
      if (run == 0) {
        r.idx = got;
        r.slots = ctx.download<int32_t>(slots, size_t(p.T) * k);
      } else if (got != r.idx) {
        report.fail(what + " " + form + " rerun", "a second run selected differently");
      }
    }
  };
  if (form.grid) {
    const unsigned g = static_cast<unsigned>(form.grid);
    const int64_t smem = glm5rt::launch::topKGridLaunchSmem(p.nCols, form.grid);
    const size_t wsBytes = glm5rt::launch::topKGridWorkspaceBytes(p.T);
    cu::DevicePtr ws = ctx.alloc(wsBytes, false);
    Context::check(ctx.drv->memsetD8(ws, 0, wsBytes));
    twice(
        [&] {
          ctx.launch(tk.grid, g, p.T, 1, tk.cfg.threads, static_cast<unsigned>(smem), &d.scores,
                     &ld, &nCols, &d.pos, &kk, &idx, &slots, &d.table, &btStride, &rps, &ws);
        },
        "grid");
    // Histograms, arrivals, departures and the list's ticket (topk.cuh: the first 5123 of a
    // row's GLM_TK_GR_WS_ROW = 13828 words) are zero again after each launch.
    std::vector<uint32_t> wsHost = ctx.download<uint32_t>(ws, wsBytes / 4);
    long long dirty = 0;
    for (int t = 0; t < p.T; ++t)
      for (int b = 0; b < 5123; ++b)
        dirty += wsHost[size_t(t) * 13828 + b] != 0;
    expectZero(report, what + " workspace left zero", dirty);
    return r;
  }
  if (form.cluster) {
    const int c = form.cluster;
    const int64_t smem = glm5rt::launch::topKClusterLaunchSmem(p.nCols, c);
    twice(
        [&] {
          ctx.launchClustered(tk.cluster, c, p.T, c, tk.cfg.threads, static_cast<unsigned>(smem),
                              &d.scores, &ld, &nCols, &d.pos, &kk, &idx, &slots, &d.table,
                              &btStride, &rps);
        },
        "cluster");
    return r;
  }
  if (segLen == 0) {
    ctx.launch(tk.row, p.T, 1, 1, tk.cfg.threads, static_cast<unsigned>(tk.cfg.dynamicSmem),
               &d.scores, &ld, &nCols, &d.pos, &kk, &idx, &slots, &d.table, &btStride, &rps);
    r.idx = ctx.download<int32_t>(idx, size_t(p.T) * k);
    r.slots = ctx.download<int32_t>(slots, size_t(p.T) * k);
    return r;
  }
  int segs = (p.nCols + segLen - 1) / segLen;
  size_t wsBytes = topKWorkspaceBytes(p.T, p.nCols);
  cu::DevicePtr ws = ctx.alloc(wsBytes, false);
  Context::check(ctx.drv->memsetD8(ws, 0, wsBytes));
  twice(
      [&] {
        ctx.launch(tk.hist0, segs, p.T, 1, tk.cfg.threads, 0, &d.scores, &ld, &nCols, &d.pos, &kk,
                   &ws, &segLen);
        ctx.launch(tk.collect, segs, p.T, 1, tk.cfg.threads,
                   static_cast<unsigned>(tk.cfg.collectSmem), &d.scores, &ld, &nCols, &d.pos, &kk,
                   &ws, &segLen, &idx, &slots, &d.table, &btStride, &rps);
      },
      "multi-CTA");
  std::vector<uint32_t> wsHost = ctx.download<uint32_t>(ws, wsBytes / 4);
  long long dirty = 0;
  for (int t = 0; t < p.T; ++t)
    for (int b = 0; b < 2052; ++b) // histogram, tickets, append counters
      dirty += wsHost[size_t(t) * 2056 + b] != 0;
  expectZero(report, what + " workspace left zero", dirty);
  return r;
}

long long slotMismatch(const Problem &p, const TopKResult &r, int k) {
  long long bad = 0;
  for (int t = 0; t < p.T; ++t)
    for (int j = 0; j < k; ++j) {
      int32_t s = r.idx[size_t(t) * k + j], slot = r.slots[size_t(t) * k + j];
      bad += s < 0 ? slot != -1 : slot != slotOf(p, t / p.rowsPerSeq, s);
    }
  return bad;
}

// Scores vs the host (causal entries by relative error, the rest must be -inf), then each k and
// both top-k variants vs host topK on the DEVICE scores (identical sets required) and on the
// host scores (identical required when `exact`: scores that are exactly representable ties).
void checkProblem(Context &ctx, Reporter &report, const ScoreKernel &sk, const TopKKernels &tk,
                  const Problem &p, bool f32, int chunk, bool exact, const std::string &what) {
  DeviceProblem d = upload(ctx, p, f32);
  runScores(ctx, sk, p, d, chunk);
  std::vector<float> got = ctx.download<float>(d.scores, size_t(p.T) * p.nCols);
  std::vector<float> ref = hostScores(p);
  std::vector<float> gc, rc;
  long long badMask = 0;
  for (int t = 0; t < p.T; ++t)
    for (int s = 0; s < p.nCols; ++s) {
      size_t i = size_t(t) * p.nCols + s;
      if (s <= p.pos[t]) {
        gc.push_back(got[i]);
        rc.push_back(ref[i]);
      } else {
        badMask += !(std::isinf(got[i]) && got[i] < 0);
      }
    }
  report.expectRelErr("scores " + what, relErr(gc, rc), f32 ? 1e-5 : 1e-2);
  expectZero(report, "scores -inf past pos " + what, badMask);

  for (int k : {16, 2048}) {
    const TopKPlan plan = topKPlan(tk.cfg, ctx.tiles, p.T, p.nCols, k, 0, tk.gridResident);
    std::vector<int32_t> refDev = hostTopK(got, p, k), refHost = hostTopK(ref, p, k);
    // topk_row, the multi-CTA kernels with 2048-position segments and topk_cluster; "(plan)"
    // marks the registry's choice.
    for (const TopKForm &form : topKForms(tk, p.T, p.nCols, {2048})) {
      std::string name = what + " k=" + std::to_string(k) + form.name();
      if (form.isPlan(plan))
        name += " (plan)";
      TopKResult r = runTopK(ctx, tk, p, d, k, form, report, name);
      expectZero(report, "topk vs host on device scores " + name,
                 setMismatch(r.idx, refDev, p.T, k));
      expectZero(report, "topk slots " + name, slotMismatch(p, r, k));
      long long hostMis = setMismatch(r.idx, refHost, p.T, k);
      if (exact)
        expectZero(report, "topk vs host on host scores " + name, hostMis);
      else
        std::printf("  %-64s %lld (near-ties across the cut; informational)\n",
                    ("topk vs host on host scores " + name).c_str(), hostMis);
    }
  }
}

glm5rt::StatusOr<ScoreKernel> buildScore(Context &ctx, bool f32, int heads) {
  IndexerShape shape;
  shape.heads = heads;
  shape.dim = kDim;
  shape.page = kPage;
  shape.actF32 = f32;
  auto cfg = selectIndexerScore(ctx.tiles, shape);
  if (!cfg.isOk())
    return cfg.status();
  ScoreKernel sk;
  sk.cfg = *cfg;
  auto mod = ctx.build(cfg->variant, indexerScoreSource(*cfg));
  if (!mod.isOk())
    return mod.status();
  if (ctx.compileOnly)
    return sk;
  auto fn = ctx.function(*mod, "indexer_score", static_cast<int>(cfg->dynamicSmem));
  if (!fn.isOk())
    return fn.status();
  sk.fn = *fn;
  return sk;
}

glm5rt::StatusOr<TopKKernels> buildTopK(Context &ctx) {
  TopKShape shape;
  shape.page = kPage;
  auto cfg = selectTopK(ctx.tiles, shape);
  if (!cfg.isOk())
    return cfg.status();
  TopKKernels tk;
  tk.cfg = *cfg;
  auto mod = ctx.build(cfg->variant, topKSource(*cfg));
  if (!mod.isOk())
    return mod.status();
  if (ctx.compileOnly)
    return tk;
  const char *names[] = {"topk_row", "topk_seg_hist0", "topk_seg_collect", "topk_cluster",
                         "topk_grid"};
  cu::Function *fns[] = {&tk.row, &tk.hist0, &tk.collect, &tk.cluster, &tk.grid};
  const int64_t gridSmem = glm5rt::launch::topKGridSmem(glm5rt::launch::kTopKGridKeys);
  const int64_t smem[] = {cfg->dynamicSmem, 0, cfg->collectSmem,
                          glm5rt::launch::topKClusterSmem(cfg->clusterKeys), gridSmem};
  for (int i = 0; i < 5; ++i) {
    auto fn = ctx.function(*mod, names[i], static_cast<int>(smem[i]));
    if (!fn.isOk())
      return fn.status();
    *fns[i] = *fn;
  }
  // As the runtime asks: topk_grid's barriers need all its CTAs resident at once.
  int perSm = 0;
  Context::check(
      ctx.drv->occupancy(tk.grid, tk.cfg.threads, static_cast<size_t>(gridSmem), &perSm));
  tk.gridResident = perSm * ctx.drv->info().smCount;
  return tk;
}

std::string dtypeName(bool f32) { return f32 ? "f32" : "bf16"; }

} // namespace

// Decode: B requests of one token each (rows_per_seq 1), positions below, at and past the
// cache length, and -1.
GPU_TEST(indexer_decode) {
  GPU_TRY(tk, buildTopK(ctx));
  for (bool f32 : {false, true}) {
    GPU_TRY(sk, buildScore(ctx, f32, 32));
    if (f32) {
      // The tiny fixture's 8 heads (one m16 tile, half padding), bf16.
      GPU_TRY(tiny, buildScore(ctx, false, 8));
      if (!ctx.compileOnly) {
        Problem p;
        p.T = p.seqs = 2;
        p.heads = 8;
        p.nCols = 3000;
        p.pos = {2999, 1000};
        Rng rng(8);
        makeTable(p, rng);
        fillRandom(p, rng, false);
        checkProblem(ctx, report, tiny, tk, p, false,
                     indexerScoreChunk(tiny.cfg, ctx.tiles, p.T, p.nCols), false,
                     "bf16 heads=8 B=2 L=3000");
      }
    }
    if (ctx.compileOnly)
      continue;
    struct Case {
      int B, L, chunkTiles; // chunkTiles 0: the registry's chunk
      std::vector<int32_t> pos;
    } cases[] = {{1, 100, 0, {99}},
                 {4, 5000, 0, {4999, 3999, 2999, 1999}},
                 {4, 5000, 1, {4999, 3999, 2999, 1999}},
                 {1, 40000, 0, {39999}},
                 {2, 30000, 0, {29999, 21000}},
                 {4, 40000, 0, {39999, 31999, 23999, 15999}},
                 {3, 3000, 3, {5000, -1, 0}}};
    for (const Case &c : cases) {
      Problem p;
      p.T = p.seqs = c.B;
      p.nCols = c.L;
      p.pos = c.pos;
      Rng rng(c.B * 7919 + c.L + c.chunkTiles);
      makeTable(p, rng);
      fillRandom(p, rng, f32);
      int chunk = c.chunkTiles ? c.chunkTiles * sk.cfg.tileN
                               : indexerScoreChunk(sk.cfg, ctx.tiles, p.T, p.nCols);
      checkProblem(ctx, report, sk, tk, p, f32, chunk, false,
                   dtypeName(f32) + " B=" + std::to_string(c.B) + " L=" + std::to_string(c.L) +
                       " chunk=" + std::to_string(chunk));
    }
  }
}

// Prefill: 64 rows of one sequence at positions p0 .. p0 + 63 (rows_per_seq 64); p0 = 2000
// crosses k = 2048 (rows below it take every position), p0 = 9000 exceeds SM120's top-k cache.
GPU_TEST(indexer_prefill) {
  GPU_TRY(tk, buildTopK(ctx));
  for (bool f32 : {false, true}) {
    GPU_TRY(sk, buildScore(ctx, f32, 32));
    if (ctx.compileOnly)
      continue;
    for (int p0 : {2000, 9000}) {
      Problem p;
      p.T = p.rowsPerSeq = 64;
      p.seqs = 1;
      p.nCols = p0 + 64;
      for (int t = 0; t < 64; ++t)
        p.pos.push_back(p0 + t);
      Rng rng(p0 + f32);
      makeTable(p, rng);
      fillRandom(p, rng, f32);
      int chunk = indexerScoreChunk(sk.cfg, ctx.tiles, p.T, p.nCols);
      checkProblem(ctx, report, sk, tk, p, f32, chunk, false,
                   dtypeName(f32) + " prefill T=64 p0=" + std::to_string(p0));
    }
  }
}

// Exact ties (scores exactly 0, and groups of equal positive scores): the selected sets must be
// the host's own, computed from its own scores.
GPU_TEST(indexer_ties) {
  GPU_TRY(tk, buildTopK(ctx));
  for (bool f32 : {false, true}) {
    GPU_TRY(sk, buildScore(ctx, f32, 32));
    if (ctx.compileOnly)
      continue;
    Problem p;
    p.T = p.seqs = 3;
    p.nCols = 40000;
    p.pos = {39999, 4999, 20000};
    Rng rng(4242 + f32);
    makeTable(p, rng);
    fillTies(p, rng, f32);
    checkProblem(ctx, report, sk, tk, p, f32, indexerScoreChunk(sk.cfg, ctx.tiles, p.T, p.nCols),
                 true, dtypeName(f32) + " ties B=3 L=40000");
    Problem prefill;
    prefill.T = prefill.rowsPerSeq = 64;
    prefill.seqs = 1;
    prefill.nCols = 3064;
    for (int t = 0; t < 64; ++t)
      prefill.pos.push_back(3000 + t);
    makeTable(prefill, rng);
    fillTies(prefill, rng, f32);
    checkProblem(ctx, report, sk, tk, prefill, f32,
                 indexerScoreChunk(sk.cfg, ctx.tiles, prefill.T, prefill.nCols), true,
                 dtypeName(f32) + " ties prefill T=64 p0=3000");
  }
}

// The top-k kernels alone on score rows with NaN, -0 / +0, -inf, few distinct values, all
// equal, few keys per first-pass bin with ties: identical to host topK on the same scores.
GPU_TEST(indexer_topk_synthetic) {
  GPU_TRY(tk, buildTopK(ctx));
  if (ctx.compileOnly)
    return;
  // 30000 and 40000: topk_cluster's run emit of 32 and 16 keys per thread (clusters of 2 and
  // 8), or its per-warp emit (ties); 270000: past the collect bitmap (bitonic sort).
  for (int L : {3000, 30000, 40000, 270000}) {
    Problem p;
    p.T = p.seqs = 8;
    p.nCols = L;
    p.pos = {L - 1, L - 1, L - 1, L / 2, L - 1, L + 5, L - 1, L - 1};
    Rng rng(L);
    makeTable(p, rng);
    std::vector<float> scores(size_t(p.T) * L);
    for (int t = 0; t < p.T; ++t)
      for (int s = 0; s < L; ++s) {
        uint64_t r = rng.next();
        float &v = scores[size_t(t) * L + s];
        switch (t) {
        case 0:
          v = rng.uniform();
          break; // distinct
        case 1:
          v = static_cast<float>(r % 5) - 2.f;
          break; // 5 values
        case 2:
          v = 0.f;
          break; // all equal
        case 3:
          v = r % 3 == 0 ? -0.f : r % 3 == 1 ? 0.f : -1.f;
          break; // -0 ties +0
        case 4:
          v = r % 4 == 0 ? NAN : r % 4 == 1 ? -INFINITY : r % 4 == 2 ? 1e-30f : -1e30f;
          break;
        case 5:
          v = std::ldexp(1.f, static_cast<int>(r % 9) - 4) * (r & 16 ? 1.f : -1.f);
          break;
        case 6:
          // 160 bins of the first radix pass (40 exponents x the top 2 mantissa bits), each
          // of 2 values: ~19 keys, ties among them, in the cut's bin at 3000 positions (the
          // row kernel's rank finish after pass 0).
          v = std::ldexp(1.f + static_cast<float>((r >> 8) % 8) * 0.125f,
                         static_cast<int>(r % 40) - 20);
          break;
        default:
          // 1024 values in [1, 2): 4 first-pass bins of ~750 keys, each second-pass bin one
          // value of ~3 equal keys (the rank finish after pass 1, all tied).
          v = 1.f + static_cast<float>(r % 1024) * (1.f / 1024);
        }
      }
    DeviceProblem d;
    d.table = ctx.upload(p.table);
    d.pos = ctx.upload(p.pos);
    d.scores = ctx.upload(scores);
    for (int k : {16, 2048})
      for (const TopKForm &form : topKForms(tk, p.T, L, {2048, 8192})) {
        std::string name =
            "synthetic L=" + std::to_string(L) + " k=" + std::to_string(k) + form.name();
        TopKResult r = runTopK(ctx, tk, p, d, k, form, report, name);
        expectZero(report, "topk vs host " + name,
                   setMismatch(r.idx, hostTopK(scores, p, k), p.T, k));
        expectZero(report, "topk slots " + name, slotMismatch(p, r, k));
      }
  }
}

// indexer_score copies key rows below the first position its call appends before its grid
// chain's wait (indexer.cuh), while the append may still run. Here the append is a kernel that
// writes the call's new rows (each decode row's own position; a prefill's 64) 20 us after
// letting indexer_score in, which is launched overlapped with it; the cache held other values at
// those rows before. A tile with a new row copied before the wait would score the old values.
GPU_TEST(indexer_score_chained) {
  GPU_TRY(writer, lateWriter(ctx));
  for (bool f32 : {false, true}) {
    GPU_TRY(sk, buildScore(ctx, f32, 32));
    if (ctx.compileOnly)
      continue;
    struct Case {
      int B, rowsPerSeq, L, chunkTiles; // chunkTiles 0: the registry's chunk
      int p0;                           // decode: positions p0, p0 - 1000, ...; prefill: first
    } cases[] = {{4, 1, 5000, 0, 4999}, {4, 1, 5000, 3, 4990}, {1, 64, 3000, 0, 2000},
                 {1, 64, 3000, 2, 2030}};
    for (const Case &c : cases) {
      Problem p;
      p.T = c.B * c.rowsPerSeq;
      p.seqs = c.B;
      p.rowsPerSeq = c.rowsPerSeq;
      p.nCols = c.L;
      for (int t = 0; t < p.T; ++t)
        p.pos.push_back(c.rowsPerSeq == 1 ? c.p0 - 1000 * t : c.p0 + t);
      Rng rng(c.L + c.p0 + c.chunkTiles + f32);
      makeTable(p, rng);
      fillRandom(p, rng, f32);
      DeviceProblem d = upload(ctx, p, f32);
      // The new rows: their true keys go to the writer, the cache holds their negation.
      const int rowBytes = kDim * (f32 ? 4 : 2);
      std::vector<int32_t> slots;
      std::vector<unsigned char> fresh, stale;
      for (int t = 0; t < p.T; ++t) {
        const int seq = t / p.rowsPerSeq;
        std::vector<float> key(p.keys[seq].begin() + size_t(p.pos[t]) * kDim,
                               p.keys[seq].begin() + size_t(p.pos[t] + 1) * kDim);
        std::vector<float> neg(key);
        for (float &v : neg)
          v = -v;
        slots.push_back(slotOf(p, seq, p.pos[t]));
        for (const std::vector<float> *v : {&key, &neg}) {
          std::vector<unsigned char> &dst = v == &key ? fresh : stale;
          if (f32) {
            const auto *b = reinterpret_cast<const unsigned char *>(v->data());
            dst.insert(dst.end(), b, b + rowBytes);
          } else {
            std::vector<uint16_t> h = toBf16(*v);
            const auto *b = reinterpret_cast<const unsigned char *>(h.data());
            dst.insert(dst.end(), b, b + rowBytes);
          }
        }
      }
      for (int t = 0; t < p.T; ++t)
        Context::check(ctx.drv->copyToDevice(d.cache + size_t(slots[t]) * rowBytes,
                                             stale.data() + size_t(t) * rowBytes, rowBytes));
      cu::DevicePtr dFresh = ctx.upload(fresh), dSlots = ctx.upload(slots);
      launchLateWriter(ctx, writer, dFresh, d.cache, dSlots, p.T, rowBytes, 20000);
      int ld = p.nCols, nCols = p.nCols, btStride = p.pagesPerSeq, rps = p.rowsPerSeq;
      int numSlots = p.numSlots;
      int chunk = c.chunkTiles ? c.chunkTiles * sk.cfg.tileN
                               : indexerScoreChunk(sk.cfg, ctx.tiles, p.T, p.nCols);
      float scale = kScale;
      void *args[] = {&d.q,      &d.w,  &d.cache, &d.table,    &btStride, &rps,  &d.pos,
                      &d.scores, &ld,   &nCols,   &numSlots,   &chunk,    &scale};
      Context::check(ctx.drv->launchOverlapped(
          sk.fn, (p.nCols + chunk - 1) / chunk, p.T, 1, sk.cfg.threads, 1,
          static_cast<unsigned>(sk.cfg.dynamicSmem), ctx.stream, args, "indexer_score"));
      std::vector<float> got = ctx.download<float>(d.scores, size_t(p.T) * p.nCols);
      std::vector<float> ref = hostScores(p), gc, rc;
      for (int t = 0; t < p.T; ++t)
        for (int s = 0; s <= std::min(p.pos[t], p.nCols - 1); ++s) {
          gc.push_back(got[size_t(t) * p.nCols + s]);
          rc.push_back(ref[size_t(t) * p.nCols + s]);
        }
      report.expectRelErr(dtypeName(f32) + " scores after a late append, B=" +
                              std::to_string(c.B) + " rows/seq=" + std::to_string(c.rowsPerSeq) +
                              " chunk=" + std::to_string(chunk),
                          relErr(gc, rc), f32 ? 1e-5 : 1e-2);
    }
  }
}

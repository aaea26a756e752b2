// Lightning indexer + top-k at decode on the GPU: 32 heads x 128, top-k 2048, batch 1/8/32 x
// context 8K/32K/128K, bf16 key cache in shuffled 64-position pages; scores, top-k and both timed
// by CUDA-graph replay (median, inputs rotated beyond L2) against the bytes floor B·L·256 B at
// 4.23 TB/s, after a correctness check against runtime/host on the first set.
//
// usage: glm5c-bench-indexer [--check-only] [--tiles sm_120a,sm_90] [--reps N]
//                            [--topk plan|row|multi|cluster|grid] [--stages N]
//                            [--define NAME[=V]] [--pdl] [--score-ctas N] [--cluster N]
//                            [--grid-keys N] [--shapes B:L,...] [--parts] [--trace] [--chain]
// --topk forces a top-k variant (--cluster N: topk_cluster's CTAs per row, 8 by default;
// --grid-keys N: topk_grid's keys per CTA, the runtime's by default); --shapes picks shapes of
// the table (all nine by default);
// --stages sets the score kernel's ring depth (tuning); --score-ctas sizes the score grid for N
// CTAs per SM instead of the device's occupancy (tuning; more than the device holds makes more
// than one wave); --define (repeatable) puts `#define NAME V` before the kernel sources
// (experiments); --pdl launches the kernels of the "both" sequence after its first overlapped
// with the one before (programmatic dependent launch), as the runtime does (until 2026-12-03 the
// score kernel there was launched plain; the score and top-k columns still launch every kernel
// plain); --parts also times the multi-CTA top-k's two launches alone; --trace prints where the
// top-k's time goes (phase stamps of a traced build, last graph replay); --chain adds the decode
// step's chain as the runtime launches it -- per set the cache append (rope_cache_append, which
// lets its successor in early and writes each request's key at its position), the score kernel
// and the top-k, each after the first overlapped with --pdl -- and prints its time and that
// time less the appends' alone (their graph the same way): what indexer + top-k add to a step.
#include "bench/bench_util.h"
#include "codegen/kernels/EmbeddedKernels.h"
#include "codegen/nvrtc/Nvrtc.h"
#include "codegen/registry/Elementwise.h"
#include "codegen/registry/Indexer.h"
#include "runtime/cuda/Driver.h"
#include "runtime/host/ops.h"
#include "runtime/support/half.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace glm5c::codegen;
using glm5rt::Status;
namespace cu = glm5rt::cuda;

namespace {

using glm5c::bench::Rng;
using glm5c::bench::splitList;

constexpr int kHeads = 32, kDim = 128, kPage = 64, kTopK = 2048;
constexpr double kPeakGBs = 4230.0;
// Distinct random key rows; slot i holds pattern row i % kPatternRows (the check rebuilds keys).
constexpr int kPatternRows = 1 << 17;

struct Kernels {
  IndexerScoreConfig sc;
  TopKConfig tk;
  CacheAppendConfig ca; // --chain: the step's cache append before the score kernel
  cu::Function append = nullptr;
  cu::Function score = nullptr, row = nullptr, hist0 = nullptr, collect = nullptr,
               cluster = nullptr, grid = nullptr;
  cu::Function traceDump = nullptr; // --trace: the traced top-k module's topk_trace_dump
};

// --trace: the most CTAs per launch the traced top-k build records (topk.cuh GLM_TK_TRACE).
constexpr int kTraceCtas = 4096, kTraceSlots = 8;

std::string gDefines; // --define lines, before every kernel source
bool gPdl = false;    // --pdl: each kernel after the first of a sequence launched overlapped

cu::Module compile(cu::Driver &drv, const NvrtcCompiler &nvrtc, const std::string &name,
                   const std::string &source, const std::string &arch) {
  KernelSource src;
  src.name = name;
  src.source = gDefines + source;
  src.headers = embeddedKernelFiles();
  src.arch = arch;
  auto compiled = nvrtc.compile(src);
  CHECK_OK(compiled.status());
  std::string res;
  for (size_t p = compiled->log.find("Used"); p != std::string::npos;
       p = compiled->log.find("Used", p + 1))
    res += "    " + compiled->log.substr(p, compiled->log.find('\n', p) - p) + "\n";
  std::printf("  %s compiled as %s%s\n%s", name.c_str(), arch.c_str(),
              compiled->fromCache ? " (cache)" : "", res.c_str());
  cu::Module mod;
  CHECK_OK(drv.loadModule(compiled->cubin.data(), &mod, name));
  return mod;
}

Kernels build(cu::Driver &drv, const Target &tiles, const std::string &arch,
              const NvrtcCompiler &nvrtc, int stagesOverride, bool trace = false) {
  Kernels k;
  IndexerShape shape;
  shape.page = kPage;
  auto sc = selectIndexerScore(tiles, shape);
  CHECK_OK(sc.status());
  k.sc = *sc;
  if (stagesOverride > 0) { // tuning: the same tile with another ring depth
    k.sc.stages = stagesOverride;
    k.sc.dynamicSmem = indexerScoreSmem(shape, k.sc.tileN, stagesOverride);
    k.sc.ctasPerSm =
        static_cast<int>(std::min<int64_t>(4, tiles.sharedPerSM / (k.sc.dynamicSmem + 1024)));
    k.sc.variant += "_as_s" + std::to_string(stagesOverride);
  }
  TopKShape tshape;
  tshape.page = kPage;
  auto tk = selectTopK(tiles, tshape);
  CHECK_OK(tk.status());
  k.tk = *tk;
  std::printf("%s tiles: %s (%d B), %s (%d B)\n", tiles.name, k.sc.variant.c_str(),
              static_cast<int>(k.sc.dynamicSmem), k.tk.variant.c_str(),
              static_cast<int>(k.tk.dynamicSmem));
  cu::Module ms =
      compile(drv, nvrtc, k.sc.variant + "_" + tiles.name, indexerScoreSource(k.sc), arch);
  const std::string tsrc =
      (trace ? "#define GLM_TK_TRACE " + std::to_string(kTraceCtas) + "\n" : std::string()) +
      topKSource(k.tk);
  cu::Module mt =
      compile(drv, nvrtc, k.tk.variant + "_" + tiles.name + (trace ? "_trace" : ""), tsrc, arch);
  if (trace)
    CHECK_OK(drv.getFunction(mt, "topk_trace_dump", &k.traceDump));
  CacheAppendShape ashape;
  ashape.page = kPage;
  auto ca = selectCacheAppend(tiles, ashape);
  CHECK_OK(ca.status());
  k.ca = *ca;
  cu::Module ma =
      compile(drv, nvrtc, k.ca.variant + "_" + tiles.name, cacheAppendSource(k.ca), arch);
  CHECK_OK(drv.getFunction(ma, k.ca.entry.c_str(), &k.append));
  CHECK_OK(drv.getFunction(ms, "indexer_score", &k.score));
  CHECK_OK(drv.setMaxDynamicSmem(k.score, static_cast<int>(k.sc.dynamicSmem), "indexer_score"));
  CHECK_OK(drv.getFunction(mt, "topk_row", &k.row));
  CHECK_OK(drv.setMaxDynamicSmem(k.row, static_cast<int>(k.tk.dynamicSmem), "topk_row"));
  CHECK_OK(drv.getFunction(mt, "topk_seg_hist0", &k.hist0));
  CHECK_OK(drv.getFunction(mt, "topk_seg_collect", &k.collect));
  CHECK_OK(
      drv.setMaxDynamicSmem(k.collect, static_cast<int>(k.tk.collectSmem), "topk_seg_collect"));
  CHECK_OK(drv.getFunction(mt, "topk_cluster", &k.cluster));
  CHECK_OK(drv.setMaxDynamicSmem(
      k.cluster, static_cast<int>(glm5rt::launch::topKClusterSmem(k.tk.clusterKeys)),
      "topk_cluster"));
  CHECK_OK(drv.getFunction(mt, "topk_grid", &k.grid));
  CHECK_OK(drv.setMaxDynamicSmem(
      k.grid, static_cast<int>(glm5rt::launch::topKGridSmem(glm5rt::launch::kTopKGridKeys)),
      "topk_grid"));
  return k;
}

// One decode batch on the device: B requests at position L - 1 over their own pages.
struct Problem {
  int B = 0, L = 0, pagesPerSeq = 0, numSlots = 0, chunk = 0;
  TopKPlan plan;
  std::vector<int32_t> table, pos;
  std::vector<float> q, w; // q rounded to bf16
  cu::DevicePtr dq = 0, dw = 0, dcache = 0, dtable = 0, dpos = 0, dscores = 0, dws = 0, didx = 0,
                dslots = 0;
  // --chain: the append's inputs (B rows each of latent, rope key and indexer key; sequence ids
  // 0 .. B - 1) and the latent cache it writes besides the key cache.
  cu::DevicePtr dlat = 0, drope = 0, dik = 0, dseq = 0, dkv = 0;
};

void makeProblem(cu::Driver &drv, Problem &p, const std::vector<uint16_t> &pattern, uint64_t seed,
                 bool chain) {
  Rng rng{seed * 0x9e3779b97f4a7c15ull + 1};
  p.pagesPerSeq = (p.L + kPage - 1) / kPage;
  int pool = p.B * p.pagesPerSeq;
  std::vector<int32_t> perm(pool);
  for (int i = 0; i < pool; ++i)
    perm[i] = i;
  for (int i = pool - 1; i > 0; --i)
    std::swap(perm[i], perm[rng.next() % (i + 1)]);
  p.table = perm;
  p.numSlots = pool * kPage;
  p.pos.assign(p.B, p.L - 1);
  p.q.resize(size_t(p.B) * kHeads * kDim);
  std::vector<uint16_t> qb(p.q.size());
  for (size_t i = 0; i < p.q.size(); ++i) {
    qb[i] = glm5rt::floatToBf16(rng.uniform());
    p.q[i] = glm5rt::bf16ToFloat(qb[i]);
  }
  p.w.resize(size_t(p.B) * kHeads);
  std::vector<uint16_t> wb(p.w.size()); // the indexer weights are bf16 activations
  for (size_t i = 0; i < p.w.size(); ++i) {
    wb[i] = glm5rt::floatToBf16(rng.uniform() * 0.0883883f);
    p.w[i] = glm5rt::bf16ToFloat(wb[i]);
  }
  auto upload = [&](cu::DevicePtr *d, const void *src, size_t bytes, const char *what) {
    CHECK_OK(drv.malloc(d, bytes, what));
    CHECK_OK(drv.copyToDevice(*d, src, bytes));
  };
  upload(&p.dq, qb.data(), qb.size() * 2, "q");
  upload(&p.dw, wb.data(), wb.size() * 2, "w");
  upload(&p.dtable, p.table.data(), p.table.size() * 4, "block table");
  upload(&p.dpos, p.pos.data(), p.pos.size() * 4, "positions");
  const size_t rowBytes = kDim * 2, cacheBytes = size_t(p.numSlots) * rowBytes;
  CHECK_OK(drv.malloc(&p.dcache, cacheBytes, "key cache"));
  const size_t patBytes = size_t(kPatternRows) * rowBytes;
  for (size_t off = 0; off < cacheBytes; off += patBytes)
    CHECK_OK(
        drv.copyToDevice(p.dcache + off, pattern.data(), std::min(patBytes, cacheBytes - off)));
  CHECK_OK(drv.malloc(&p.dscores, size_t(p.B) * p.L * 4, "scores"));
  CHECK_OK(drv.malloc(&p.didx, size_t(p.B) * kTopK * 4, "indices"));
  CHECK_OK(drv.malloc(&p.dslots, size_t(p.B) * kTopK * 4, "slots"));
  if (p.plan.multi() || p.plan.grid) {
    CHECK_OK(drv.malloc(&p.dws, p.plan.workspaceBytes, "top-k workspace"));
    CHECK_OK(drv.memsetD8(p.dws, 0, p.plan.workspaceBytes)); // zero once (topk.cuh invariant)
  }
  if (chain) {
    std::vector<uint16_t> rows(size_t(p.B) * 512);
    for (uint16_t &v : rows)
      v = glm5rt::floatToBf16(rng.uniform());
    upload(&p.dlat, rows.data(), size_t(p.B) * 512 * 2, "latent rows");
    upload(&p.drope, rows.data(), size_t(p.B) * 64 * 2, "rope key rows");
    upload(&p.dik, rows.data(), size_t(p.B) * kDim * 2, "indexer key rows");
    std::vector<int32_t> seq(p.B);
    for (int b = 0; b < p.B; ++b)
      seq[b] = b;
    upload(&p.dseq, seq.data(), seq.size() * 4, "sequence ids");
    CHECK_OK(drv.malloc(&p.dkv, size_t(p.numSlots) * 576 * 2, "latent cache"));
  }
}

void freeProblem(cu::Driver &drv, Problem &p) {
  for (cu::DevicePtr d : {p.dq, p.dw, p.dcache, p.dtable, p.dpos, p.dscores, p.dws, p.didx,
                         p.dslots, p.dlat, p.drope, p.dik, p.dseq, p.dkv})
    if (d)
      (void)drv.free(d);
}

// A launch, overlapped with the kernel before it when --pdl asks and `overlap` (not the first of
// the timed sequence).
Status launchK(cu::Driver &drv, cu::Function f, unsigned gx, unsigned gy, unsigned threads,
               unsigned smem, cu::Stream s, void **args, const char *what, bool overlap) {
  if (gPdl && overlap)
    return drv.launchOverlapped(f, gx, gy, 1, threads, 1, smem, s, args, what);
  return drv.launch(f, gx, gy, 1, threads, 1, 1, smem, s, args, what);
}

// --chain: the step's cache append of each request's row at its position (after the check: it
// overwrites those keys).
void launchAppend(cu::Driver &drv, const Kernels &k, Problem &p, cu::Stream s, bool overlap) {
  long long ldLat = 512, ldRope = 64, ldIdx = kDim, slots = p.numSlots;
  int pagesPerSeq = p.pagesPerSeq, tokens = p.B;
  float theta = 1e6f;
  void *args[] = {&p.dlat, &ldLat,  &p.drope,  &ldRope,      &p.dik, &ldIdx,   &p.dpos, &p.dseq,
                  &p.dtable, &pagesPerSeq, &p.dkv, &p.dcache, &slots, &tokens, &theta};
  const auto grid = static_cast<unsigned>((p.B + k.ca.tokensPerCta - 1) / k.ca.tokensPerCta);
  CHECK_OK(launchK(drv, k.append, grid, 1, static_cast<unsigned>(k.ca.threads), 0, s, args,
                   "rope_cache_append", overlap));
}

// The score kernel; `overlap`: after another kernel in the timed sequence (the runtime launches
// it overlapped with the cache append before it).
void launchScore(cu::Driver &drv, const Kernels &k, Problem &p, cu::Stream s, bool overlap) {
  int ld = p.L, nCols = p.L, btStride = p.pagesPerSeq, rps = 1, slots = p.numSlots;
  float scale = 1.0f;
  void *args[] = {&p.dq,      &p.dw, &p.dcache, &p.dtable, &btStride, &rps,  &p.dpos,
                  &p.dscores, &ld,   &nCols,    &slots,    &p.chunk,  &scale};
  CHECK_OK(launchK(drv, k.score, (p.L + p.chunk - 1) / p.chunk, p.B, k.sc.threads,
                   static_cast<unsigned>(k.sc.dynamicSmem), s, args, "indexer_score", overlap));
}

void launchHist0(cu::Driver &drv, const Kernels &k, Problem &p, cu::Stream s, bool overlap) {
  int ld = p.L, nCols = p.L, kk = kTopK, segs = p.plan.segments, segLen = p.plan.segmentLen;
  void *hargs[] = {&p.dscores, &ld, &nCols, &p.dpos, &kk, &p.dws, &segLen};
  CHECK_OK(launchK(drv, k.hist0, segs, p.B, k.tk.threads, 0, s, hargs, "topk_seg_hist0", overlap));
}

// The top-k; `overlap`: after another kernel in the timed sequence. parts (multi-CTA plans): 0
// both launches, 1 hist0 alone, 2 collect alone (after a hist0 of the same set has run).
void launchTopK(cu::Driver &drv, const Kernels &k, Problem &p, cu::Stream s, bool overlap,
                int parts = 0) {
  int ld = p.L, nCols = p.L, kk = kTopK, btStride = p.pagesPerSeq, rps = 1;
  if (p.plan.grid > 0) {
    void *args[] = {&p.dscores, &ld,       &nCols,    &p.dpos, &kk,   &p.didx,
                    &p.dslots,  &p.dtable, &btStride, &rps,    &p.dws};
    const unsigned smem =
        static_cast<unsigned>(glm5rt::launch::topKGridLaunchSmem(p.L, p.plan.grid));
    CHECK_OK(launchK(drv, k.grid, static_cast<unsigned>(p.plan.grid), p.B, k.tk.threads, smem, s,
                     args, "topk_grid", overlap));
    return;
  }
  if (p.plan.cluster > 0) {
    void *args[] = {&p.dscores, &ld,       &nCols,    &p.dpos,   &kk,
                    &p.didx,    &p.dslots, &p.dtable, &btStride, &rps};
    const unsigned c = static_cast<unsigned>(p.plan.cluster);
    const unsigned smem =
        static_cast<unsigned>(glm5rt::launch::topKClusterLaunchSmem(p.L, p.plan.cluster));
    CHECK_OK(gPdl && overlap ? drv.launchOverlapped(k.cluster, c, p.B, 1, k.tk.threads, c, smem, s,
                                                    args, "topk_cluster")
                             : drv.launchClustered(k.cluster, c, p.B, 1, k.tk.threads, c, smem, s,
                                                   args, "topk_cluster"));
    return;
  }
  if (!p.plan.multi()) {
    void *args[] = {&p.dscores, &ld,       &nCols,    &p.dpos,   &kk,
                    &p.didx,    &p.dslots, &p.dtable, &btStride, &rps};
    CHECK_OK(launchK(drv, k.row, p.B, 1, k.tk.threads, static_cast<unsigned>(k.tk.dynamicSmem), s,
                     args, "topk_row", overlap));
    return;
  }
  if (parts != 2)
    launchHist0(drv, k, p, s, overlap);
  if (parts == 1)
    return;
  int segs = p.plan.segments, segLen = p.plan.segmentLen;
  void *cargs[] = {&p.dscores, &ld,     &nCols,    &p.dpos,   &kk,       &p.dws,
                   &segLen,    &p.didx, &p.dslots, &p.dtable, &btStride, &rps};
  CHECK_OK(launchK(drv, k.collect, segs, p.B, k.tk.threads, static_cast<unsigned>(k.tk.collectSmem),
                   s, cargs, "topk_seg_collect", overlap || parts != 2));
}

// Relative error of request 0's scores vs runtime/host, and top-k mismatches (every request) vs
// host topK on the device's own scores, plus slot mismatches. Runs both kernels once.
struct CheckResult {
  double scoreErr = 0;
  long long topkMismatch = 0, slotMismatch = 0;
  long long maxCand = 0; // largest count of a row's first-pass bin b0 (the top-k's candidates)
};

// Order-preserving key of a score, as topk.cuh's glm_tk_key.
uint32_t hostKey(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    u = 0xff800000u;
  if (u == 0x80000000u)
    u = 0u;
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

CheckResult check(cu::Driver &drv, const Kernels &k, Problem &p,
                  const std::vector<uint16_t> &pattern, cu::Stream s) {
  CHECK_OK(drv.memsetD8(p.dscores, 0xff, size_t(p.B) * p.L * 4));
  CHECK_OK(drv.memsetD8(p.didx, 0xff, size_t(p.B) * kTopK * 4));
  launchScore(drv, k, p, s, false);
  launchTopK(drv, k, p, s, true);
  CHECK_OK(drv.synchronize(s));
  std::vector<float> scores(size_t(p.B) * p.L);
  std::vector<int32_t> idx(size_t(p.B) * kTopK), slots(idx.size());
  CHECK_OK(drv.copyToHost(scores.data(), p.dscores, scores.size() * 4));
  CHECK_OK(drv.copyToHost(idx.data(), p.didx, idx.size() * 4));
  CHECK_OK(drv.copyToHost(slots.data(), p.dslots, slots.size() * 4));
  CheckResult r;
  // Request 0 against the host reference, its keys rebuilt from the page table and the pattern.
  std::vector<float> keys(size_t(p.L) * kDim), ref(p.L);
  for (int sPos = 0; sPos < p.L; ++sPos) {
    int slot = p.table[sPos / kPage] * kPage + sPos % kPage;
    const uint16_t *src = &pattern[size_t(slot % kPatternRows) * kDim];
    for (int d = 0; d < kDim; ++d)
      keys[size_t(sPos) * kDim + d] = glm5rt::bf16ToFloat(src[d]);
  }
  glm5rt::host::indexerScore(p.q.data(), p.w.data(), 1, kHeads, kDim, keys.data(), p.L,
                             p.pos.data(), 1.0f, ref.data());
  double e2 = 0, r2 = 0;
  for (int sPos = 0; sPos < p.L; ++sPos) {
    double g = scores[sPos], h = ref[sPos];
    e2 += std::isfinite(g) ? (g - h) * (g - h) : 1e30;
    r2 += h * h;
  }
  r.scoreErr = std::sqrt(e2 / r2);
  for (int b = 0; b < p.B; ++b) { // the multi-CTA top-k's candidates: row b's bin b0
    std::vector<long long> hist(2048, 0);
    const int n = std::min(p.pos[b] + 1, p.L);
    for (int sPos = 0; sPos < n; ++sPos)
      ++hist[hostKey(scores[size_t(b) * p.L + sPos]) >> 21];
    long long above = 0;
    for (int bin = 2047; bin >= 0 && n > kTopK; --bin) {
      if (above + hist[bin] >= kTopK) {
        r.maxCand = std::max(r.maxCand, hist[bin]);
        break;
      }
      above += hist[bin];
    }
  }
  std::vector<int32_t> host(idx.size());
  glm5rt::host::topK(scores.data(), p.B, p.L, p.pos.data(), kTopK, host.data());
  for (size_t i = 0; i < idx.size(); ++i)
    r.topkMismatch += idx[i] != host[i];
  for (int b = 0; b < p.B; ++b)
    for (int j = 0; j < kTopK; ++j) {
      int32_t sPos = idx[size_t(b) * kTopK + j];
      int32_t want =
          sPos < 0 ? -1 : p.table[size_t(b) * p.pagesPerSeq + sPos / kPage] * kPage + sPos % kPage;
      r.slotMismatch += slots[size_t(b) * kTopK + j] != want;
    }
  return r;
}

// --trace: where the top-k's time goes, from the stamps of the traced build's last launches
// (topk.cuh GLM_TK_TRACE). Multi-CTA: in us from hist0's first CTA start, each launch's first
// and last CTA start, last ticket and last end; the finishing CTAs' phases (medians over the
// rows). topk_row with the row in registers (8K positions): each phase, medians over the CTAs.
void printTrace(cu::Driver &drv, const Kernels &k, const Problem &p, cu::Stream s) {
  const int ctas = std::min(p.plan.multi()   ? p.plan.segments * p.B
                            : p.plan.cluster ? p.plan.cluster * p.B
                            : p.plan.grid    ? p.plan.grid * p.B
                                             : p.B,
                            kTraceCtas);
  const size_t n = size_t(3) * kTraceCtas * kTraceSlots;
  cu::DevicePtr d = 0;
  CHECK_OK(drv.malloc(&d, n * 8, "trace"));
  void *args[] = {&d};
  CHECK_OK(drv.launch(k.traceDump, 64, 1, 1, 256, 1, 1, 0, s, args, "topk_trace_dump"));
  CHECK_OK(drv.synchronize(s));
  std::vector<unsigned long long> t(n);
  CHECK_OK(drv.copyToHost(t.data(), d, n * 8));
  (void)drv.free(d);
  auto at = [&](int launch, int c, int slot) {
    return t[(size_t(launch) * kTraceCtas + c) * kTraceSlots + slot];
  };
  if (!p.plan.multi()) { // topk_row, topk_cluster, topk_grid: phases per CTA, medians and maxima
    const char *kn = p.plan.grid ? "topk_grid" : p.plan.cluster ? "topk_cluster" : "topk_row";
    // The phases' ends by slot: topk_grid (with the list after pass 0, the decode rows) stamps
    // the last barrier at 6 and the list's passes at 7.
    const int order[] = {0, 1, 2, p.plan.grid ? 6 : 3, p.plan.grid ? 7 : 4, 5};
    const char *rn[] = {"keys loaded", "pass 0 selected",
                        p.plan.grid ? "counts + barrier" : "pass 1 selected",
                        p.plan.grid ? "list passes" : "pass 2 selected", "positions written"};
    unsigned long long first = ~0ull, lastStart = 0, lastEnd = 0;
    std::vector<std::vector<double>> ph(5);
    for (int c = 0; c < ctas; ++c) {
      first = std::min(first, at(2, c, 0));
      lastStart = std::max(lastStart, at(2, c, 0));
      lastEnd = std::max(lastEnd, at(2, c, 5));
      for (int i = 0; i < 5; ++i)
        ph[i].push_back((double(at(2, c, order[i + 1])) - double(at(2, c, order[i]))) * 1e-3);
    }
    std::printf("    trace %s: starts %.2f .. %.2f us, last end %.2f\n", kn, 0.0,
                (double(lastStart) - double(first)) * 1e-3,
                (double(lastEnd) - double(first)) * 1e-3);
    for (int i = 0; i < 5; ++i) {
      std::sort(ph[i].begin(), ph[i].end());
      std::printf("    %s %-18s +%.2f us (median of %d CTAs; max %.2f)\n", kn, rn[i],
                  ph[i][ph[i].size() / 2], ctas, ph[i].back());
    }
    // topk_cluster's gathered finish: pass 1's phase split at slots 6 (collect scanned) and 7
    // (cluster synced), for the CTAs that took it.
    std::vector<std::vector<double>> sub(3);
    for (int c = 0; p.plan.cluster && c < ctas; ++c)
      if (at(2, c, 6) && at(2, c, 7)) {
        sub[0].push_back((double(at(2, c, 6)) - double(at(2, c, 2))) * 1e-3);
        sub[1].push_back((double(at(2, c, 7)) - double(at(2, c, 6))) * 1e-3);
        sub[2].push_back((double(at(2, c, 3)) - double(at(2, c, 7))) * 1e-3);
      }
    const char *sn[] = {"collect scanned", "cluster synced", "gathered pass 1"};
    for (int i = 0; i < 3; ++i) {
      if (sub[i].empty())
        continue;
      std::sort(sub[i].begin(), sub[i].end());
      std::printf("    %s   of which %-16s +%.2f us (median of %zu CTAs; max %.2f)\n", kn, sn[i],
                  sub[i][sub[i].size() / 2], sub[i].size(), sub[i].back());
    }
    return;
  }
  const double t0 = double(at(0, 0, 0));
  auto us = [&](unsigned long long v) { return (double(v) - t0) * 1e-3; };
  for (int launch = 0; launch < 2; ++launch) {
    unsigned long long first = ~0ull, lastStart = 0, lastTicket = 0, lastEnd = 0;
    for (int c = 0; c < ctas; ++c) {
      first = std::min(first, at(launch, c, 0));
      lastStart = std::max(lastStart, at(launch, c, 0));
      lastTicket = std::max(lastTicket, at(launch, c, 1));
      lastEnd = std::max(lastEnd, at(launch, c, 2));
    }
    std::printf("    trace %s: starts %.2f .. %.2f us, last ticket %.2f, last end %.2f\n",
                launch ? "collect" : "hist0", us(first), us(lastStart), us(lastTicket),
                us(lastEnd));
  }
  // The finishing CTA of each row: the one whose slot 3 was written after its ticket.
  std::vector<std::vector<double>> ph(5);
  const char *names[] = {"candidates loaded", "K* found", "merged", "positions written", "slots"};
  for (int c = 0; c < ctas; ++c) {
    if (at(1, c, 3) < at(1, c, 1))
      continue;
    const unsigned long long v[6] = {at(1, c, 1), at(1, c, 3), at(1, c, 4),
                                     at(1, c, 5), at(1, c, 6), at(1, c, 2)};
    for (int i = 0; i < 5; ++i)
      ph[i].push_back((double(v[i + 1]) - double(v[i])) * 1e-3);
  }
  for (int i = 0; i < 5; ++i) {
    std::vector<double> &v = ph[i];
    if (v.empty())
      continue;
    std::sort(v.begin(), v.end());
    std::printf("    finishing CTA, %-18s +%.2f us (median of %zu rows; max %.2f)\n", names[i],
                v[v.size() / 2], v.size(), v.back());
  }
}

// Median microseconds per set of a graph of `fn` over every set.
template <typename Fn>
double timeGraph(cu::Driver &drv, cu::Stream stream, std::vector<Problem> &ps, int reps, Fn fn) {
  return glm5c::bench::timeGraph(drv, stream, ps.size(), reps, [&](size_t i) { fn(ps[i]); });
}

} // namespace

int main(int argc, char **argv) {
  bool checkOnly = false, parts = false, trace = false, chain = false;
  int reps = 30;
  std::string topkMode = "plan"; // the registry's top-k plan, or force topk_row / multi-CTA
  int stagesOverride = 0;        // the score kernel's ring depth instead of the registry's
  int scoreCtas = 0;             // --score-ctas: the score grid's CTAs per SM (0: the device's)
  int forcedCluster = 8;         // --cluster: CTAs per row of a forced topk_cluster
  int64_t gridKeys = glm5rt::launch::kTopKGridTargetKeys; // --grid-keys: forced topk_grid's
  std::vector<std::pair<int, int>> shapes;                // --shapes (empty: all nine)
  std::vector<std::string> tileNames = {"sm_120a", "sm_90"};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--check-only")
      checkOnly = true;
    else if (a == "--pdl")
      gPdl = true;
    else if (a == "--parts")
      parts = true;
    else if (a == "--trace")
      trace = true;
    else if (a == "--chain")
      chain = true;
    else if (a == "--topk" && i + 1 < argc &&
             (std::string(argv[i + 1]) == "plan" || std::string(argv[i + 1]) == "row" ||
              std::string(argv[i + 1]) == "multi" || std::string(argv[i + 1]) == "cluster" ||
              std::string(argv[i + 1]) == "grid"))
      topkMode = argv[++i];
    else if (a == "--stages" && i + 1 < argc)
      stagesOverride = glm5c::bench::optionInt("--stages", argv[++i], 2, 16);
    else if (a == "--score-ctas" && i + 1 < argc)
      scoreCtas = glm5c::bench::optionInt("--score-ctas", argv[++i], 1, 64);
    else if (a == "--cluster" && i + 1 < argc)
      forcedCluster = glm5c::bench::optionInt("--cluster", argv[++i], 1, 8);
    else if (a == "--grid-keys" && i + 1 < argc)
      gridKeys =
          glm5c::bench::optionInt("--grid-keys", argv[++i], 4, glm5rt::launch::kTopKGridKeys);
    else if (a == "--shapes" && i + 1 < argc) {
      for (const std::string &s : splitList(argv[++i])) {
        const size_t c = s.find(':');
        if (c == std::string::npos) {
          std::fprintf(stderr, "--shapes wants B:L pairs, got '%s'\n", s.c_str());
          return 2;
        }
        shapes.emplace_back(
            glm5c::bench::optionInt("--shapes", s.substr(0, c).c_str(), 1, 1024),
            glm5c::bench::optionInt("--shapes", s.substr(c + 1).c_str(), 1, 1 << 24));
      }
    } else if (a == "--reps" && i + 1 < argc)
      reps = glm5c::bench::optionInt("--reps", argv[++i], 1, 1000000);
    else if (a == "--define" && i + 1 < argc)
      gDefines += glm5c::bench::defineLine(argv[++i]);
    else if (a == "--tiles" && i + 1 < argc) {
      tileNames.clear();
      std::string list = argv[++i];
      for (size_t p = 0; p <= list.size();) {
        size_t c = list.find(',', p);
        tileNames.push_back(list.substr(p, c == std::string::npos ? std::string::npos : c - p));
        p = c == std::string::npos ? list.size() + 1 : c + 1;
      }
    } else {
      std::fprintf(stderr,
                   "usage: %s [--check-only] [--tiles sm_120a,sm_90] [--reps N] "
                   "[--topk plan|row|multi|cluster|grid] "
                   "[--stages N] [--define NAME[=V]] [--pdl] [--score-ctas N] [--cluster N] "
                   "[--grid-keys N] [--shapes B:L,...] [--parts] [--trace] [--chain]\n",
                   argv[0]);
      return 2;
    }
  }
  std::string codeArch;
  cu::Driver &drv = glm5c::bench::openDevice(&codeArch);
  NvrtcCompiler nvrtc(NvrtcCompiler::defaultCacheDir());
  cu::Stream stream;
  CHECK_OK(drv.streamCreate(&stream));
  // Plans use the device's own SM count (tiles only choose the variants).
  const Target *devTarget = findTarget(codeArch);

  std::vector<uint16_t> pattern(size_t(kPatternRows) * kDim);
  Rng prng{12345};
  for (uint16_t &v : pattern)
    v = glm5rt::floatToBf16(prng.uniform());

  bool failed = false;
  std::vector<std::string> table;
  for (const std::string &tn : tileNames) {
    const Target *tiles = glm5c::bench::findTileTarget(tn);
    if (!tiles)
      return 2;
    const Target &plans = devTarget ? *devTarget : *tiles;
    Kernels k = build(drv, *tiles, codeArch, nvrtc, stagesOverride);
    Kernels kt;
    if (trace)
      kt = build(drv, *tiles, codeArch, nvrtc, stagesOverride, true);
    // As the runtime: one wave of the CTAs this device holds of the score kernel.
    IndexerScoreConfig scoreOnDevice = k.sc;
    CHECK_OK(drv.occupancy(k.score, k.sc.threads, static_cast<size_t>(k.sc.dynamicSmem),
                           &scoreOnDevice.ctasPerSm));
    scoreOnDevice.ctasPerSm = scoreCtas > 0 ? scoreCtas : std::max(scoreOnDevice.ctasPerSm, 1);
    // As the runtime: topk_grid CTAs the device holds at once at its largest shared memory.
    int gridPerSm = 0;
    CHECK_OK(drv.occupancy(
        k.grid, k.tk.threads,
        static_cast<size_t>(glm5rt::launch::topKGridSmem(glm5rt::launch::kTopKGridKeys)),
        &gridPerSm));
    const int gridResident = gridPerSm * plans.smCount;
    std::vector<std::pair<int, int>> todo = shapes;
    if (todo.empty())
      for (int B : {1, 8, 32})
        for (int L : {8192, 32768, 131072})
          todo.emplace_back(B, L);
    for (const auto &[B, L] : todo) {
      double keyBytes = double(B) * L * kDim * 2;
      int sets = checkOnly ? 1 : std::clamp(static_cast<int>(std::ceil(256e6 / keyBytes)), 1, 16);
      std::vector<Problem> ps(sets);
      for (int si = 0; si < sets; ++si) {
        ps[si].B = B;
        ps[si].L = L;
        ps[si].chunk = indexerScoreChunk(scoreOnDevice, plans, B, L);
        int resident = 0; // as the runtime asks: clusters of 8 held at once at this size
        const size_t csmem = static_cast<size_t>(glm5rt::launch::topKClusterLaunchSmem(L, 8));
        if (!drv.clusterOccupancy(k.cluster, 8, k.tk.threads, csmem, 8, &resident).isOk())
          resident = 0;
        ps[si].plan = topKPlan(k.tk, plans, B, L, kTopK, resident, gridResident);
        if (topkMode == "grid") {
          ps[si].plan = TopKPlan{};
          ps[si].plan.grid = glm5rt::launch::topKGridCtas(B, L, gridKeys, gridResident);
          ps[si].plan.workspaceBytes = glm5rt::launch::topKGridWorkspaceBytes(B);
        } else if (topkMode == "row") {
          ps[si].plan = TopKPlan{};
        } else if (topkMode == "cluster") {
          ps[si].plan = TopKPlan{};
          const int c = forcedCluster;
          ps[si].plan.cluster = (L + c - 1) / c <= k.tk.clusterKeys ? c : 0;
        } else if (topkMode == "multi" && !ps[si].plan.multi()) {
          ps[si].plan.cluster = ps[si].plan.grid = 0;
          ps[si].plan.segmentLen = topKSegmentLen(k.tk, plans, B, L);
          ps[si].plan.segments = (L + ps[si].plan.segmentLen - 1) / ps[si].plan.segmentLen;
          ps[si].plan.workspaceBytes = topKWorkspaceBytes(B, L);
        }
        makeProblem(drv, ps[si], pattern, 1000 + si, chain);
      }
      CheckResult cr = check(drv, k, ps[0], pattern, stream);
      bool ok = cr.scoreErr <= 1e-2 && cr.topkMismatch == 0 && cr.slotMismatch == 0;
      failed |= !ok;
      std::printf("  check %-8s B=%-2d L=%-6d score rel err %.2e, top-k mismatches %lld, slot "
                  "mismatches %lld, first-bin candidates <= %lld  %s\n",
                  tn.c_str(), B, L, cr.scoreErr, cr.topkMismatch, cr.slotMismatch, cr.maxCand,
                  ok ? "ok" : "FAILED");
      if (!checkOnly) {
        double tScore = timeGraph(drv, stream, ps, reps,
                                  [&](Problem &p) { launchScore(drv, k, p, stream, false); });
        double tTopK = timeGraph(drv, stream, ps, reps,
                                 [&](Problem &p) { launchTopK(drv, k, p, stream, false); });
        double tBoth = timeGraph(drv, stream, ps, reps, [&](Problem &p) {
          launchScore(drv, k, p, stream, &p != &ps[0]); // after the previous set's top-k
          launchTopK(drv, k, p, stream, true);
        });
        // --chain (after every check: the appends overwrite each request's key at its position).
        double tAppend = 0, tChain = 0;
        if (chain) {
          tAppend = timeGraph(drv, stream, ps, reps,
                              [&](Problem &p) { launchAppend(drv, k, p, stream, &p != &ps[0]); });
          tChain = timeGraph(drv, stream, ps, reps, [&](Problem &p) {
            launchAppend(drv, k, p, stream, &p != &ps[0]);
            launchScore(drv, k, p, stream, true);
            launchTopK(drv, k, p, stream, true);
          });
        }
        if (parts && ps[0].plan.multi()) {
          double tH = timeGraph(drv, stream, ps, reps,
                                [&](Problem &p) { launchTopK(drv, k, p, stream, false, 1); });
          for (Problem &p : ps) // every set's workspace holds its b0 for collect alone
            launchHist0(drv, k, p, stream, false);
          double tC = timeGraph(drv, stream, ps, reps,
                                [&](Problem &p) { launchTopK(drv, k, p, stream, false, 2); });
          std::printf("  parts %-8s B=%-2d L=%-6d hist0 %.1f us, collect %.1f us\n", tn.c_str(), B,
                      L, tH, tC);
        }
        if (trace && (ps[0].plan.multi() || ps[0].plan.cluster || ps[0].plan.grid || L <= 8192)) {
          double tT = timeGraph(drv, stream, ps, 3,
                                [&](Problem &p) { launchTopK(drv, kt, p, stream, false); });
          std::printf("  trace %-8s B=%-2d L=%-6d (traced top-k %.1f us; the last set's "
                      "launches)\n",
                      tn.c_str(), B, L, tT);
          printTrace(drv, kt, ps.back(), stream);
        }
        double floorUs = keyBytes / (kPeakGBs * 1e3);
        std::string mode = ps[0].plan.grid      ? "grid x" + std::to_string(ps[0].plan.grid)
                           : ps[0].plan.cluster ? "cluster x" + std::to_string(ps[0].plan.cluster)
                           : ps[0].plan.multi() ? "multi x" + std::to_string(ps[0].plan.segments)
                                                : std::string("row");
        char line[320], chained[64] = "";
        if (chain)
          std::snprintf(chained, sizeof chained, " %9.1f %9.1f", tChain, tChain - tAppend);
        std::snprintf(line, sizeof line,
                      "  %-8s %3d %7d %6d %-10s %9.1f %9.1f %9.1f %8.1f %6.2fx %7.0f%s%s",
                      tn.c_str(), B, L, ps[0].chunk, mode.c_str(), tScore, tTopK, tBoth, floorUs,
                      tBoth / floorUs, keyBytes / tScore / 1e3, chained,
                      ok ? "" : "  (check FAILED)");
        table.push_back(line);
      }
      for (Problem &p : ps)
        freeProblem(drv, p);
    }
  }
  if (!table.empty()) {
    std::printf("\n  %-8s %3s %7s %6s %-10s %9s %9s %9s %8s %7s %7s%s\n", "tiles", "B", "L",
                "chunk", "top-k", "score us", "top-k us", "both us", "floor us", "both/fl", "GB/s",
                chain ? "  chain us -append" : "");
    for (const std::string &l : table)
      std::printf("%s\n", l.c_str());
  }
  return failed ? 1 : 0;
}

// Sparse-MLA decode on the GPU: correctness against the host reference (runtime/host) and timing
// at the shapes of docs/kernels.md (heads 8/16/64 x batch 1/8/32/128, top-k 2048, context 8192,
// bf16 cache), for the tile configurations of each target compiled for the device's own arch
// (sm_120a tiles run on an H200 as sm_90 code). CUDA-graph replay, median of many replays,
// inputs rotated so small shapes do not run out of L2.
//
// usage: glm5c-bench-sparse-mla [--check-only] [--no-sweep] [--shapes H:B,...] [--tiles T,...]
//                               [--reps N] [--warps N,...]
//                               [--splits N [--cluster C]] [--variants T:S,...] [--no-gather]
//                               [--pdl]
// --skip-checks leaves out the correctness cases before the timed shapes, so that a profiler's
// first kernel launch is the first timed shape's (checked) launch: bench/device_mla.sh.
// --warps builds each tile configuration with these warp counts (4 or 8; 16 with 32 heads per
// CTA, other layouts skip it) instead of the registry's (tuning: kSparseMlaWarps); --min-ctas
// with these __launch_bounds__ minimum CTAs per SM (registers capped so that many fit).
// --sm120-occupancy pads each CTA's shared memory so one CTA per SM fits, as on SM120 (where the
// tiles leave room for one), instead of the two an H200's 228 KB would take. --splits/--cluster
// time one split count and cluster size only (profiling; --cluster 0: the spread merge, see
// sparse_mla_decode.cuh); --variants TILE_N:RING,... builds those tile shapes (ring in 16-row
// entries) instead of the registry's first fit (tuning kSparseMlaTiles); --no-gather times every
// shape with all slots masked (no row loaded, every product computed: the kernel's work without its
// memory traffic);
// --gather-probe also times, at each shape, a kernel that only reads the selected rows;
// --heads-per-cta 8 builds the layout with 8 heads per CTA (tokens as the mma M), 32 the one with
// two m16 tiles of heads per CTA; auto (the default) builds 8 and 16 and times each shape with
// the registry's for its head count (sparseMlaHeadsPerCta: what the runtime runs, but for the
// 32-head form it may take per batch).
// --bulk auto|0|1 (or a list): the gathers as one bulk copy per row (GLM_MLA_BULK) or as cp.async;
// auto (the default) builds both and times each shape with the registry's choice
// (sparseMlaDecodeBulk: bulk where a request has several head groups, or the tile target holds
// one CTA of the layout per SM).
// --trace builds the kernels with phase stamps (GLM_MLA_TRACE) and prints, for each shape's
// launch geometry (or --splits), where a CTA's time goes, and each SM's latest CTA end.
// --define NAME=V (repeatable) puts `#define NAME V` before the kernel source (experiments).
// --pdl launches every call overlapped with the one before it (programmatic dependent launch),
// as the cuda backend launches kernels: the graph's calls then overlap launch and drain.
// --sets N times N launches per graph (each on its own problem, time divided by N) instead of as
// many as rotate 256 MB of cache rows through L2 (1 from batch 32 on): how much of a call's time
// is the graph's launch and drain rather than the kernel.
// The sweep otherwise tries each power-of-two split count with every cluster size up to the
// largest that divides it, and the spread merge where the grid is resident at once. In the
// trace, a spread merge's "cluster merge" phase is its group barrier. Every clustered launch
// timed first prints how many of its clusters the device holds at once against how many it
// launches (cuOccupancyMaxActiveClusters).
#include "bench/bench_util.h"
#include "codegen/kernels/EmbeddedKernels.h"
#include "codegen/nvrtc/Nvrtc.h"
#include "codegen/registry/SparseMla.h"
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

struct Kernel {
  SparseMlaDecodeConfig cfg;
  const Target *tiles;
  cu::Function decode;
  int64_t launchSmem = 0;          // dynamic shared memory per launch (>= cfg.dynamicSmem)
  cu::Function traceDump = nullptr; // --trace: sparse_mla_trace_dump of the traced build
};

// --trace: the largest grid (CTAs) the traced build records, and the stamps per CTA
// (sparse_mla_decode.cuh GLM_TRACE_SLOTS).
constexpr int kTraceCtas = 1 << 16;
std::string gDefines, gDefineTag; // --define lines before the kernel source, and their tag
constexpr int kTraceSlots = 13;

bool gTwoPerSm = false; // --two-per-sm: the one-tile-ring form that fits two CTAs per SM

// The layout the options ask for on `tiles` (ctasPerSm: the tile target's), or nothing where
// --two-per-sm has no such form for these heads on these tiles.
std::optional<SparseMlaDecodeConfig> layoutFor(const Target &tiles, int warps, int tileN, int ring,
                                               int heads, bool bulk) {
  auto cfg = selectSparseMlaDecode(tiles, MlaShape{});
  CHECK_OK(cfg.status());
  if (tileN > 0) { // --variants: a tile shape other than the registry's first fit
    cfg->tileN = tileN;
    cfg->ring = ring;
  }
  if (warps > 0)
    cfg->threads = 32 * warps;
  cfg->bulk = bulk;
  *cfg = sparseMlaDecodeWithHeads(*cfg, heads, tiles); // name and shared memory for the above
  if (gTwoPerSm)
    return sparseMlaDecodeTwoPerSm(*cfg, tiles);
  return *cfg;
}

Kernel build(cu::Driver &drv, const Target &tiles, const std::string &codeArch,
             const NvrtcCompiler &nvrtc, SparseMlaDecodeConfig cfg, int minCtas, bool trace) {
  // minCtas < 0: the register budget of as many CTAs per SM as the tile target holds.
  if (minCtas != 0)
    cfg.minCtas = minCtas > 0 ? minCtas : cfg.ctasPerSm;
  cfg.variant += "_w" + std::to_string(cfg.threads / 32) + "_m" + std::to_string(cfg.minCtas);
  KernelSource src;
  src.name = cfg.variant + "_" + tiles.name;
  src.source = gDefines + sparseMlaDecodeSource(cfg);
  src.name += gDefineTag;
  if (trace) {
    src.name += "_trace";
    src.source = "#define GLM_MLA_TRACE " + std::to_string(kTraceCtas) + "\n" + src.source;
  }
  src.headers = embeddedKernelFiles();
  src.arch = codeArch;
  auto compiled = nvrtc.compile(src);
  CHECK_OK(compiled.status());
  std::string res;
  for (size_t p = compiled->log.find("Used"); p != std::string::npos;
       p = compiled->log.find("Used", p + 1))
    res += "    " + compiled->log.substr(p, compiled->log.find('\n', p) - p) + "\n";
  std::printf("%s tiles (%s): compiled as %s, %d B dynamic shared memory%s\n%s", tiles.name,
              cfg.variant.c_str(), codeArch.c_str(), static_cast<int>(cfg.dynamicSmem),
              compiled->fromCache ? " (cache)" : "", res.c_str());
  cu::Module mod;
  CHECK_OK(drv.loadModule(compiled->cubin.data(), &mod, src.name));
  Kernel k{cfg, &tiles, nullptr, cfg.dynamicSmem};
  CHECK_OK(drv.getFunction(mod, "sparse_mla_decode", &k.decode));
  if (trace)
    CHECK_OK(drv.getFunction(mod, "sparse_mla_trace_dump", &k.traceDump));
  // Room for the padded launches of --sm120-occupancy (the static shared memory is small).
  CHECK_OK(drv.setMaxDynamicSmem(k.decode, drv.info().maxSharedOptin - 1024, src.name));
  return k;
}

// A bench-local kernel `name` (source with extern "C" entry `name`), compiled for the device.
cu::Function benchKernel(cu::Driver &drv, const std::string &codeArch, const NvrtcCompiler &nvrtc,
                         const char *name, const char *source) {
  KernelSource src;
  src.name = name;
  src.source = source;
  src.arch = codeArch;
  auto compiled = nvrtc.compile(src);
  CHECK_OK(compiled.status());
  cu::Module mod;
  CHECK_OK(drv.loadModule(compiled->cubin.data(), &mod, name));
  cu::Function f;
  CHECK_OK(drv.getFunction(mod, name, &f));
  return f;
}

// Graph replay time of an empty kernel: the fixed cost every timed launch carries (reported
// once, as the floor the small shapes are measured against; eight launches per graph, as the
// small shapes have).
double emptyKernelUs(cu::Driver &drv, const std::string &codeArch, const NvrtcCompiler &nvrtc,
                     cu::Stream stream, int reps) {
  cu::Function f =
      benchKernel(drv, codeArch, nvrtc, "empty", "extern \"C\" __global__ void empty() {}\n");
  return glm5c::bench::timeGraph(drv, stream, 8, reps, [&](size_t) {
    CHECK_OK(drv.launch(f, 1, 1, 1, 32, 1, 1, 0, stream, nullptr, "empty"));
  });
}

// The gather alone (--gather-probe): every selected row of every request read once with 16-byte
// loads, 64 rows per CTA, many CTAs per SM, nothing computed -- what the memory system gives this
// access pattern, the bar the kernel's time is measured against.
cu::Function gatherProbe(cu::Driver &drv, const std::string &codeArch, const NvrtcCompiler &nvrtc) {
  return benchKernel(drv, codeArch, nvrtc, "gather_probe", R"(
extern "C" __global__ void __launch_bounds__(256) gather_probe(const uint4 *__restrict__ kv,
    const int *__restrict__ idx, int num_slots, unsigned *sink) {
  const int *rows = idx + blockIdx.y * 2048 + blockIdx.x * 64;
  unsigned acc = 0;
#pragma unroll 6
  for (int c = threadIdx.x; c < 64 * 72; c += 256) {
    const int slot = __ldg(rows + c / 72);
    if (slot >= 0 && slot < num_slots) {
      const uint4 v = __ldcs(kv + static_cast<long long>(slot) * 72 + c % 72);
      acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
  }
  if (acc == 0x9e3779b9u) // keeps the loads; practically never true
    sink[0] = acc;
}
)");
}

// One problem instance on the device: inputs, partial buffers, outputs.
struct Problem {
  int B = 0, H = 0, ctx = 0, splits = 0, cluster = 1; // cluster 0: the spread merge
  std::vector<uint16_t> q = {}, kv = {};
  std::vector<int32_t> idx = {};
  cu::DevicePtr dq = 0, dqr = 0, dkv = 0, didx = 0, dopart = 0, dlpart = 0, dout = 0, dlse = 0;
  cu::DevicePtr dcount = 0; // merge counters per (request, head group, chunk), zeroed once
};

// (Re)allocates the split partials for p.splits.
void allocPartials(cu::Driver &drv, Problem &p) {
  for (cu::DevicePtr d : {p.dopart, p.dlpart})
    if (d)
      (void)drv.free(d);
  // fp32-sized per split: it also fits --define GLM_MLA_PART_BF16=0 (the runtime sizes bf16 per
  // cluster).
  CHECK_OK(drv.malloc(&p.dopart, size_t(p.B) * p.H * p.splits * 512 * 4, "o_part"));
  CHECK_OK(drv.malloc(&p.dlpart, size_t(p.B) * p.H * p.splits * 4, "lse_part"));
}

void makeProblem(cu::Driver &drv, Problem &p, uint64_t seed, bool holes) {
  const int D = 576, topk = 2048;
  Rng rng{seed * 0x9e3779b97f4a7c15ull + 1};
  p.q.resize(size_t(p.B) * p.H * D);
  p.kv.resize(size_t(p.B) * p.ctx * D);
  for (auto &v : p.q)
    v = glm5rt::floatToBf16(rng.uniform());
  for (auto &v : p.kv)
    v = glm5rt::floatToBf16(rng.uniform());
  p.idx.assign(size_t(p.B) * topk, -1);
  std::vector<int32_t> perm(p.ctx);
  for (int b = 0; b < p.B; ++b) {
    for (int i = 0; i < p.ctx; ++i)
      perm[i] = i;
    int n = std::min(topk, p.ctx);
    for (int i = 0; i < n; ++i) {
      std::swap(perm[i], perm[i + rng.next() % (p.ctx - i)]);
      // `holes`: some -1 and out-of-range slots, as a short context or a bad index would give.
      bool hole = holes && rng.next() % 7 == 0;
      p.idx[size_t(b) * topk + i] = hole ? (rng.next() % 2 ? -1 : 1 << 30) : b * p.ctx + perm[i];
    }
  }
  auto upload = [&](cu::DevicePtr *d, const void *src, size_t bytes, const char *what) {
    CHECK_OK(drv.malloc(d, bytes, what));
    CHECK_OK(drv.copyToDevice(*d, src, bytes));
  };
  // The kernel reads q_latent [B, H, 512] and q_rope [B, H, 64] from their own buffers.
  std::vector<uint16_t> ql, qr;
  for (size_t r = 0; r < size_t(p.B) * p.H; ++r) {
    ql.insert(ql.end(), p.q.begin() + r * D, p.q.begin() + r * D + 512);
    qr.insert(qr.end(), p.q.begin() + r * D + 512, p.q.begin() + (r + 1) * D);
  }
  upload(&p.dq, ql.data(), ql.size() * 2, "q_latent");
  upload(&p.dqr, qr.data(), qr.size() * 2, "q_rope");
  upload(&p.dkv, p.kv.data(), p.kv.size() * 2, "kv");
  upload(&p.didx, p.idx.data(), p.idx.size() * 4, "indices");
  allocPartials(drv, p);
  // Enough for 8 heads per CTA (--heads-per-cta 8) as well as 16.
  const size_t counterBytes =
      size_t(p.B) * ((p.H + 7) / 8) * 4 * glm5rt::launch::kSparseMlaMaxCluster;
  CHECK_OK(drv.malloc(&p.dcount, counterBytes, "merge counters"));
  CHECK_OK(drv.memsetD8(p.dcount, 0, counterBytes));
  CHECK_OK(drv.malloc(&p.dout, size_t(p.B) * p.H * 512 * 2, "out")); // bf16
  CHECK_OK(drv.malloc(&p.dlse, size_t(p.B) * p.H * 4, "lse"));
}

void freeProblem(cu::Driver &drv, Problem &p) {
  for (cu::DevicePtr d : {p.dq, p.dqr, p.dkv, p.didx, p.dopart, p.dlpart, p.dout, p.dlse, p.dcount})
    (void)drv.free(d);
}

bool gPdl = false; // --pdl
int gSets = 0;      // --sets N: launches per timed graph (0: enough problems to exceed L2 4x)

void launch(cu::Driver &drv, const Kernel &k, Problem &p, cu::Stream s) {
  const int topk = 2048;
  int groups = (p.H + k.cfg.heads - 1) / k.cfg.heads;
  int perSplit = (topk + p.splits - 1) / p.splits;
  perSplit = (perSplit + k.cfg.tileN - 1) / k.cfg.tileN * k.cfg.tileN;
  int slots = p.B * p.ctx;
  float scaleLog2 = (1.0f / 16.0f) * 1.4426950408889634f;
  int spread = p.cluster == 0 ? 1 : 0;
  const unsigned cluster = static_cast<unsigned>(std::max(p.cluster, 1));
  void *args[] = {&p.dq,     &p.dqr, &p.dkv,   &p.didx,   &p.dopart,  &p.dlpart, &p.dout, &p.dlse,
                  &p.dcount, &p.H,   &slots,   &p.splits, &perSplit, &scaleLog2, &spread};
  if (gPdl) // as the cuda backend launches it: overlapped with the kernel before it
    CHECK_OK(drv.launchOverlapped(k.decode, groups * p.splits, p.B, 1, k.cfg.threads, cluster,
                                  static_cast<unsigned>(k.launchSmem), s, args,
                                  "sparse_mla_decode"));
  else
    CHECK_OK(drv.launchClustered(k.decode, groups * p.splits, p.B, 1, k.cfg.threads, cluster,
                                 static_cast<unsigned>(k.launchSmem), s, args,
                                 "sparse_mla_decode"));
}

// Relative errors of the output and the LSE against the host reference.
std::pair<double, double> check(cu::Driver &drv, const Kernel &k, Problem &p, cu::Stream s) {
  const int D = 576, L = 512, R = 64, topk = 2048;
  CHECK_OK(drv.memsetD8(p.dout, 0xff, size_t(p.B) * p.H * L * 2)); // poison: NaN
  CHECK_OK(drv.memsetD8(p.dlse, 0xff, size_t(p.B) * p.H * 4));
  launch(drv, k, p, s);
  CHECK_OK(drv.synchronize(s));
  std::vector<uint16_t> outBf16(size_t(p.B) * p.H * L);
  std::vector<float> out(outBf16.size()), lse(size_t(p.B) * p.H);
  CHECK_OK(drv.copyToHost(outBf16.data(), p.dout, outBf16.size() * 2));
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = glm5rt::bf16ToFloat(outBf16[i]);
  CHECK_OK(drv.copyToHost(lse.data(), p.dlse, lse.size() * 4));
  size_t slots = size_t(p.B) * p.ctx;
  std::vector<float> latent(slots * L), rope(slots * R);
  for (size_t i = 0; i < slots; ++i)
    for (int c = 0; c < D; ++c) {
      float v = glm5rt::bf16ToFloat(p.kv[i * D + c]);
      (c < L ? latent[i * L + c] : rope[i * R + c - L]) = v;
    }
  double e2 = 0, r2 = 0, le2 = 0, lr2 = 0;
  std::vector<float> qLat(size_t(p.H) * L), qRope(size_t(p.H) * R), ref(size_t(p.H) * L),
      refLse(p.H);
  std::vector<int32_t> idx(topk);
  for (int b = 0; b < p.B; ++b) {
    for (int h = 0; h < p.H; ++h)
      for (int c = 0; c < D; ++c) {
        float v = glm5rt::bf16ToFloat(p.q[(size_t(b) * p.H + h) * D + c]);
        (c < L ? qLat[size_t(h) * L + c] : qRope[size_t(h) * R + c - L]) = v;
      }
    for (int i = 0; i < topk; ++i) {
      int32_t v = p.idx[size_t(b) * topk + i];
      idx[i] = v >= 0 && size_t(v) < slots ? v : -1; // the kernel skips out-of-range slots
    }
    glm5rt::host::sparseMla(qLat.data(), qRope.data(), 1, p.H, L, R, latent.data(), rope.data(),
                            static_cast<int64_t>(slots), idx.data(), topk, 1.0f / 16.0f, ref.data(),
                            refLse.data());
    for (int h = 0; h < p.H; ++h) {
      for (int c = 0; c < L; ++c) {
        double o = out[(size_t(b) * p.H + h) * L + c], r = ref[size_t(h) * L + c];
        e2 += std::isnan(o) ? 1e30 : (o - r) * (o - r);
        r2 += r * r;
      }
      double o = lse[size_t(b) * p.H + h], r = refLse[h];
      le2 += std::isnan(o) ? 1e30 : (o - r) * (o - r);
      lr2 += r * r;
    }
  }
  return {std::sqrt(e2 / r2), std::sqrt(le2 / lr2)};
}

// The traced CTAs' ends by SM (slot 12: %smid; slot 7: the end's %globaltimer): per SM the CTAs
// it ran and the latest end, in us after the first start -- whether the slow CTAs share SMs.
void printSmEnds(const std::vector<unsigned long long> &t, int ctas) {
  unsigned long long first = ~0ull;
  for (int c = 0; c < ctas; ++c)
    first = std::min(first, t[size_t(c) * kTraceSlots]);
  std::vector<int> count(256, 0);
  std::vector<double> end(256, 0);
  for (int c = 0; c < ctas; ++c) {
    const unsigned long long *r = &t[size_t(c) * kTraceSlots];
    const int sm = static_cast<int>(r[12] & 255);
    count[sm] += 1;
    end[sm] = std::max(end[sm], (r[7] - first) / 1e3);
  }
  std::printf("    ends by SM (sm:CTAs:latest end, us):");
  for (int sm = 0; sm < 256; ++sm)
    if (count[sm] > 0)
      std::printf("%s %d:%d:%.1f", sm % 16 == 0 ? "\n     " : "", sm, count[sm], end[sm]);
  std::printf("\n");
}

// Where a merge's barrier waits (--trace): per barrier group -- a cluster's C consecutive
// splits, or with the spread merge (cluster 0) the group's splits -- the spread of the CTAs'
// arrivals and each CTA's time from the group's last arrival to its own exit, on the
// %globaltimer scale (a CTA's start plus its stamps' cycles over the implied clock). Arrival:
// stamp 3 (tile loop done; the staging before the cluster barrier is shared-memory stores) or,
// for the spread merge, 4 (partial written); exit: 4 (past the cluster barrier) or 5.
void printMergeSkew(const std::vector<unsigned long long> &t, int ctas, int perRow, int splits,
                    int cluster, double ghz) {
  const int size = cluster == 0 ? splits : cluster;
  const int arriveSlot = cluster == 0 ? 4 : 3, exitSlot = arriveSlot + 1;
  if (size <= 1)
    return;
  unsigned long long t0 = ~0ull; // the first start: ns since it stay exact as doubles
  for (int c = 0; c < ctas; ++c)
    t0 = std::min(t0, t[size_t(c) * kTraceSlots]);
  auto at = [&](int c, int slot) {
    const unsigned long long *r = &t[size_t(c) * kTraceSlots];
    return double(r[0] - t0) + double(r[slot]) / ghz; // ns after the first start
  };
  std::vector<double> spread, after;
  for (int c0 = 0; c0 + size <= ctas; c0 += size) {
    if ((c0 % perRow) % splits % size != 0)
      continue; // not the start of a barrier group
    double first = 1e300, last = 0;
    for (int c = c0; c < c0 + size; ++c) {
      first = std::min(first, at(c, arriveSlot));
      last = std::max(last, at(c, arriveSlot));
    }
    spread.push_back(last - first);
    for (int c = c0; c < c0 + size; ++c)
      after.push_back(at(c, exitSlot) - last);
  }
  auto pct = [](std::vector<double> v, double q) {
    if (v.empty())
      return 0.0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, size_t(q * v.size()))];
  };
  std::printf("    merge barrier groups of %d: arrivals spread median %.2f max %.2f us; last "
              "arrival to exit median %.2f max %.2f us\n",
              size, pct(spread, 0.5) / 1e3, pct(spread, 1.0) / 1e3, pct(after, 0.5) / 1e3,
              pct(after, 1.0) / 1e3);
}

// --trace: where a launch's time goes, from the phase stamps of the traced build
// (sparse_mla_decode.cuh GLM_MLA_TRACE) left by the last launch: per phase the median and the
// largest over the CTAs, in SM cycles and in us at the clock the stamps imply (cycles over
// %globaltimer ns, median over the CTAs), plus the spread of the CTAs' start times and the span
// from the first start to the last end.
void printTrace(cu::Driver &drv, const Kernel &k, const Problem &p, cu::Stream s) {
  const int groups = (p.H + k.cfg.heads - 1) / k.cfg.heads;
  int ctas = std::min(groups * p.splits * p.B, kTraceCtas);
  cu::DevicePtr d = 0;
  CHECK_OK(drv.malloc(&d, size_t(ctas) * kTraceSlots * 8, "trace"));
  void *args[] = {&d, &ctas};
  CHECK_OK(drv.launch(k.traceDump, 64, 1, 1, 256, 1, 1, 0, s, args, "sparse_mla_trace_dump"));
  CHECK_OK(drv.synchronize(s));
  std::vector<unsigned long long> t(size_t(ctas) * kTraceSlots);
  CHECK_OK(drv.copyToHost(t.data(), d, t.size() * 8));
  (void)drv.free(d);
  int perSplit = (2048 + p.splits - 1) / p.splits;
  perSplit = (perSplit + k.cfg.tileN - 1) / k.cfg.tileN * k.cfg.tileN;
  const char *names[] = {"prologue issued",
                         "Q + tile 0 landed",
                         "per tile",
                         "  ring wait + refill",
                         "  S + hand-off",
                         "  softmax",
                         "  P V",
                         "partials staged",
                         "cluster merge",
                         "global merge (last CTAs)",
                         "whole CTA"};
  std::vector<std::vector<double>> ph(11);
  std::vector<double> ghz;
  unsigned long long first = ~0ull, lastStart = 0, lastEnd = 0;
  for (int c = 0; c < ctas; ++c) {
    const unsigned long long *r = &t[size_t(c) * kTraceSlots]; // slots: sparse_mla_decode.cuh
    const int split = (c % (groups * p.splits)) % p.splits;
    const int begin = split * perSplit, end = std::min(begin + perSplit, 2048);
    const int tiles = end > begin ? (end - begin + k.cfg.tileN - 1) / k.cfg.tileN : 0;
    ph[0].push_back(double(r[1]));
    ph[1].push_back(double(r[2]) - double(r[1]));
    if (tiles > 0) {
      ph[2].push_back((double(r[3]) - double(r[2])) / tiles);
      for (int i = 0; i < 4; ++i)
        ph[3 + i].push_back(double(r[8 + i]) / tiles);
    }
    ph[7].push_back(double(r[4]) - double(r[3]));
    ph[8].push_back(double(r[5]) - double(r[4]));
    if (r[6] > r[5])
      ph[9].push_back(double(r[6]) - double(r[5]));
    ph[10].push_back(double(r[6]));
    if (r[7] > r[0])
      ghz.push_back(double(r[6]) / double(r[7] - r[0]));
    first = std::min(first, r[0]);
    lastStart = std::max(lastStart, r[0]);
    lastEnd = std::max(lastEnd, r[7]);
  }
  auto median = [](std::vector<double> v) {
    if (v.empty())
      return 0.0;
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
  };
  const double clock = median(ghz);
  std::printf("    trace: %d CTAs, %.2f GHz implied, starts spread over %.2f us, first start to "
              "last end %.2f us\n",
              ctas, clock, (lastStart - first) / 1e3, (lastEnd - first) / 1e3);
  for (int i = 0; i < 11; ++i) {
    if (ph[i].empty())
      continue;
    const double med = median(ph[i]), mx = *std::max_element(ph[i].begin(), ph[i].end());
    std::printf("    %-26s median %8.0f cycles %6.2f us, max %8.0f cycles %6.2f us\n", names[i],
                med, clock > 0 ? med / clock / 1e3 : 0.0, mx, clock > 0 ? mx / clock / 1e3 : 0.0);
  }
  if (clock > 0)
    printMergeSkew(t, ctas, groups * p.splits, p.splits, p.cluster, clock);
  printSmEnds(t, ctas);
}

} // namespace

int main(int argc, char **argv) {
  bool checkOnly = false, sweep = true, sm120Occupancy = false, skipChecks = false,
       noGather = false, probe = false, trace = false;
  int forcedSplits = 0, forcedCluster = -1; // --cluster 0: the spread merge
  int reps = 50;
  std::vector<std::string> tileNames = {"sm_120a", "sm_90"}, shapes, warpList = {"0"},
                           minCtasList = {"0"}, variantList = {"0:0"}, headsList = {"auto"},
                           bulkList = {"auto"};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--check-only")
      checkOnly = true;
    else if (a == "--splits" && i + 1 < argc) // time this split count only (profiling)
      forcedSplits = glm5c::bench::optionInt("--splits", argv[++i], 1, 1024);
    else if (a == "--cluster" && i + 1 < argc)
      forcedCluster = glm5c::bench::optionInt("--cluster", argv[++i], 0, 8);
    else if (a == "--no-sweep")
      sweep = false;
    else if (a == "--pdl") // every launch overlapped with the one before (programmatic)
      gPdl = true;
    else if (a == "--sets" && i + 1 < argc) // launches per graph, each its own problem
      gSets = glm5c::bench::optionInt("--sets", argv[++i], 1, 1024);
    else if (a == "--reps" && i + 1 < argc)
      reps = glm5c::bench::optionInt("--reps", argv[++i], 1, 1000000);
    else if (a == "--shapes" && i + 1 < argc) // H:B,H:B,... any heads and batch (default: twelve)
      shapes = splitList(argv[++i]);
    else if (a == "--tiles" && i + 1 < argc)
      tileNames = splitList(argv[++i]);
    else if (a == "--warps" && i + 1 < argc)
      warpList = splitList(argv[++i]);
    else if (a == "--min-ctas" && i + 1 < argc)
      minCtasList = splitList(argv[++i]);
    else if (a == "--variants" && i + 1 < argc) // TILE_N:RING,...
      variantList = splitList(argv[++i]);
    else if (a == "--heads-per-cta" && i + 1 < argc) // auto (the registry's), 16, 32 and/or 8
      headsList = splitList(argv[++i]);
    else if (a == "--bulk" && i + 1 < argc) // auto (the registry's choice per shape), 0, 1
      bulkList = splitList(argv[++i]);
    else if (a == "--no-gather") // time with every slot masked: the kernel's work without loads
      noGather = true;
    else if (a == "--trace") // phase stamps of each shape's launch geometry (traced build)
      trace = true;
    else if (a == "--gather-probe") // also time the gather alone at each shape
      probe = true;
    else if (a == "--sm120-occupancy")
      sm120Occupancy = true;
    else if (a == "--two-per-sm") // the one-tile-ring form where it fits two CTAs per SM
      gTwoPerSm = true;
    else if (a == "--skip-checks") // profiling: the first launch is the first shape's check
      skipChecks = true;
    else if (a == "--define" && i + 1 < argc) { // `#define NAME V` before the source
      gDefines += glm5c::bench::defineLine(argv[++i]);
      gDefineTag += std::string("+") + argv[i];
    }
    else {
      std::fprintf(stderr,
                   "usage: %s [--check-only] [--no-sweep] [--shapes H:B,...] [--tiles "
                   "sm_120a,sm_90] [--reps N] [--warps 4,8,16] [--min-ctas 1,2] "
                   "[--sm120-occupancy] "
                   "[--splits N [--cluster C]] [--skip-checks] [--variants T:S,...] "
                   "[--no-gather] [--gather-probe] [--heads-per-cta auto,16,32,8] [--trace] "
                   "[--define NAME=V] [--pdl] [--two-per-sm] [--sets N] [--bulk auto,0,1]\n",
                   argv[0]);
      return 2;
    }
  }
  std::string codeArch;
  cu::Driver &drv = glm5c::bench::openDevice(&codeArch);
  NvrtcCompiler nvrtc(NvrtcCompiler::defaultCacheDir());
  cu::Stream stream;
  CHECK_OK(drv.streamCreate(&stream));
  const Target *devTarget = findTarget(codeArch);
  bool failed = false;
  std::vector<std::pair<int, int>> shapeList; // (H, B): --shapes in order, or PERF.md's twelve
  for (const std::string &sh : shapes) {
    const size_t colon = sh.find(':');
    if (colon == std::string::npos) {
      std::fprintf(stderr, "--shapes takes H:B, heads 1-128, batch 1-1024 ('%s')\n", sh.c_str());
      return 2;
    }
    const int H = glm5c::bench::optionInt("--shapes (heads)", sh.substr(0, colon), 1, 128);
    const int B = glm5c::bench::optionInt("--shapes (batch)", sh.substr(colon + 1), 1, 1024);
    shapeList.push_back({H, B});
  }
  if (shapeList.empty())
    for (int H : {8, 16, 64})
      for (int B : {1, 8, 32, 128})
        shapeList.push_back({H, B});
  struct BulkChoice {
    bool bulk, asRegistry; // asRegistry: only the shapes sparseMlaDecodeBulk gives this choice
  };
  std::vector<BulkChoice> bulkChoices;
  for (const std::string &b : bulkList) {
    if (b == "auto") {
      bulkChoices.push_back({false, true});
      bulkChoices.push_back({true, true});
    } else if (b == "0" || b == "1") {
      bulkChoices.push_back({b == "1", false});
    } else {
      std::fprintf(stderr, "--bulk takes auto, 0 or 1\n");
      return 2;
    }
  }
  struct HeadsChoice {
    int heads;
    bool asRegistry; // only the shapes sparseMlaHeadsPerCta gives these heads per CTA
  };
  std::vector<HeadsChoice> headsChoices;
  for (const std::string &h : headsList) {
    if (h == "auto") {
      headsChoices.push_back({8, true});
      headsChoices.push_back({16, true});
    } else if (h == "8" || h == "16" || h == "32") {
      headsChoices.push_back({glm5c::bench::optionInt("--heads-per-cta", h, 8, 32), false});
    } else {
      std::fprintf(stderr, "--heads-per-cta takes auto, 16, 32 or 8\n");
      return 2;
    }
  }
  if (!checkOnly)
    std::printf("empty kernel, graph replay: %.1f us\n",
                emptyKernelUs(drv, codeArch, nvrtc, stream, reps));
  cu::Function probeFn = probe ? gatherProbe(drv, codeArch, nvrtc) : nullptr;
  cu::DevicePtr sink = 0;
  if (probe)
    CHECK_OK(drv.malloc(&sink, 16, "probe sink"));

  for (const std::string &tn : tileNames)
    for (const std::string &wn : warpList)
      for (const std::string &mn : minCtasList)
        for (const std::string &vn : variantList)
          for (const HeadsChoice &hc : headsChoices)
            for (const BulkChoice &bc : bulkChoices) {
              const Target *tiles = glm5c::bench::findTileTarget(tn);
              if (!tiles)
                return 2;
              const int warps = glm5c::bench::optionInt("--warps", wn, 0, 16);
              if (warps != 0 && warps != 4 && warps != 8 && warps != 16) {
                std::fprintf(stderr, "--warps takes 4, 8 or 16 (16: with 32 heads per CTA)\n");
                return 2;
              }
              // SM120 occupancy implies SM120's register budget: as many CTAs per SM as the tile
              // target holds (-1; unless --min-ctas).
              const int minCtasAsked = glm5c::bench::optionInt("--min-ctas", mn, 0, 8);
              const int minCtas = minCtasAsked > 0 ? minCtasAsked : sm120Occupancy ? -1 : 0;
              const size_t vColon = vn.find(':');
              if (vColon == std::string::npos) {
                std::fprintf(stderr, "--variants takes TILE_N:RING\n");
                return 2;
              }
              const int vTile = glm5c::bench::optionInt("--variants (tile)", vn.substr(0, vColon),
                                                        0, 64),
                        vRing = glm5c::bench::optionInt("--variants (ring)",
                                                        vn.substr(vColon + 1), 0, 64);
              if (vTile != 0 && (vTile % 32 != 0 || vRing < vTile / 16)) {
                std::fprintf(stderr, "--variants takes TILE_N:RING, TILE_N 32 or 64, RING (16-row "
                                     "entries) >= one tile\n");
                return 2;
              }
              const int heads = hc.heads;
              if (warps == 16 && heads != 32)
                continue; // 16 warps: the 32-heads-per-CTA layout only
              // The shapes (of those asked for) this kernel times: with --bulk auto, those whose
              // head count the registry gives this gather form.
              const auto plain = layoutFor(*tiles, warps, vTile, vRing, heads, false);
              if (!plain)
                continue; // --two-per-sm: no such form for these heads
              auto timesShape = [&](int H) {
                return (!bc.asRegistry ||
                        sparseMlaDecodeBulk(H, heads, plain->ctasPerSm) == bc.bulk) &&
                       (!hc.asRegistry || sparseMlaHeadsPerCta(H) == heads);
              };
              bool any = false;
              for (auto [H, B] : shapeList)
                any |= timesShape(H);
              if (!any && !checkOnly)
                continue;
              Kernel k =
                  build(drv, *tiles, codeArch, nvrtc,
                        *layoutFor(*tiles, warps, vTile, vRing, heads, bc.bulk), minCtas, trace);
              if (k.cfg.dynamicSmem > int64_t(drv.info().maxSharedOptin) - 1024) {
                std::printf("%s: %lld B shared memory does not fit this device\n",
                            k.cfg.variant.c_str(), static_cast<long long>(k.cfg.dynamicSmem));
                continue;
              }
              // As many CTAs per SM as the tile target holds (k.cfg.ctasPerSm, from its shared
              // memory per SM): each launch pads its shared memory so that one more does not fit
              // this device's SM (opt-in maximum + the 1 KB the system reserves).
              if (sm120Occupancy)
                k.launchSmem = std::max<int64_t>(k.cfg.dynamicSmem,
                                                 (int64_t(drv.info().maxSharedOptin) + 1024) /
                                                         (k.cfg.ctasPerSm + 1) -
                                                     1024 + 64);
              int ctas =
                  1; // the split heuristic wants the device's occupancy, as the runtime's does
              CHECK_OK(
                  drv.occupancy(k.decode, k.cfg.threads, static_cast<size_t>(k.launchSmem), &ctas));
              k.cfg.ctasPerSm = std::max(ctas, 1);
              std::printf("  %d CTA(s) per SM\n", k.cfg.ctasPerSm);
              const std::string label =
                  tn + (heads == 8 ? "/h8" : "") + "/t" + std::to_string(k.cfg.tileN) + "r" +
                  std::to_string(k.cfg.ring) + "w" + std::to_string(k.cfg.threads / 32) + "m" +
                  std::to_string(k.cfg.minCtas) +
                  (sm120Occupancy ? "o" + std::to_string(k.cfg.ctasPerSm) : "") +
                  (k.cfg.qGlobal ? "qg" : "") + (k.cfg.bulk ? "bk" : "");
              // Correctness: holes in the index lists, head counts that do not fill a
              // group, 1..many splits.
              struct Case {
                int B, H, ctx, splits, cluster;
              } cases[] = {{1, 8, 4096, 1, 1},   {2, 16, 3000, 5, 1}, {3, 64, 8192, 16, 8},
                           {2, 20, 2048, 64, 8}, {1, 8, 100, 3, 1},   {1, 16, 8192, 64, 1},
                           {2, 12, 4096, 4, 2},  {32, 8, 8192, 8, 1}, {128, 8, 8192, 2, 1},
                           {8, 64, 8192, 8, 1},  {2, 40, 4096, 2, 2}, {3, 24, 8192, 8, 4}};
              for (const Case &c : cases) {
                if (skipChecks)
                  break;
                Problem p{c.B, c.H, c.ctx, c.splits, c.cluster};
                makeProblem(drv, p, 7 + c.B * 31 + c.H, true);
                auto [eo, el] = check(drv, k, p, stream);
                bool ok = eo <= 1e-2 && el <= 1e-2;
                failed |= !ok;
                std::printf("  check %-11s B=%d H=%-2d ctx=%-5d splits=%-2d cluster=%d  rel err "
                            "out %.2e lse "
                            "%.2e  %s\n",
                            label.c_str(), c.B, c.H, c.ctx, c.splits, c.cluster, eo, el,
                            ok ? "ok" : "FAILED");
                freeProblem(drv, p);
              }
              if (checkOnly)
                continue;

              // Each shape at the launch geometry's split count (marked *), then at the other
              // powers of two up to top-k / tile (the tuning sweep behind that heuristic;
              // --no-sweep skips it).
              std::printf("\n  %-19s %3s %4s %6s %7s %9s %9s %7s %9s\n", "tiles", "H", "B",
                          "splits", "cluster", "us", "GB/s", "% bw", "TFLOP/s");
              for (auto [H, B] : shapeList) {
                if (!timesShape(H))
                  continue;
                const int ctx = 8192, topk = 2048;
                const int chosen =
                    sparseMlaDecodeSplits(k.cfg, devTarget ? *devTarget : *tiles, B, H);
                double kvBytes = double(B) * ctx * 1152;
                int sets = gSets > 0
                               ? gSets
                               : std::clamp(static_cast<int>(std::ceil(256e6 / kvBytes)), 1, 8);
                const int64_t groups = int64_t(B) * ((H + k.cfg.heads - 1) / k.cfg.heads);
                const bool chosenSpread = glm5rt::launch::sparseMlaSpread(
                    chosen, groups, k.cfg.ctasPerSm, drv.info().smCount);
                const int chosenCluster =
                    chosenSpread ? 0 : glm5rt::launch::sparseMlaCluster(chosen, groups);
                std::vector<Problem> ps(sets, Problem{B, H, ctx, chosen, chosenCluster});
                for (int s = 0; s < sets; ++s) {
                  makeProblem(drv, ps[s], 1000 + s, false);
                  if (noGather) { // every slot masked: no row is loaded, every product still runs
                    std::fill(ps[s].idx.begin(), ps[s].idx.end(), -1);
                    CHECK_OK(drv.copyToDevice(ps[s].didx, ps[s].idx.data(), ps[s].idx.size() * 4));
                  }
                }
                if (probe) {
                  double us = glm5c::bench::timeGraph(drv, stream, ps.size(), reps, [&](size_t i) {
                    int slots = ps[i].B * ps[i].ctx;
                    void *args[] = {&ps[i].dkv, &ps[i].didx, &slots, &sink};
                    CHECK_OK(drv.launch(probeFn, 2048 / 64, ps[i].B, 1, 256, 1, 1, 0, stream, args,
                                        "gather_probe"));
                  });
                  const double rowBytes = double(B) * topk * 1152;
                  std::printf("  %-19s %3d %4d gather probe %9.1f us %9.0f GB/s %7.1f %% bw\n", "",
                              H, B, us, rowBytes / us / 1e3, 100.0 * rowBytes / us / 1e3 / 4230.0);
                }
                std::vector<std::pair<int, int>> cands; // (splits, cluster)
                if (forcedSplits > 0)
                  cands.push_back(
                      {forcedSplits, forcedCluster >= 0
                                         ? forcedCluster
                                         : glm5rt::launch::sparseMlaCluster(forcedSplits, 1)});
                else
                  cands.push_back({chosen, chosenCluster});
                for (int sp = 1; forcedSplits == 0 && sweep && sp <= topk / k.cfg.tileN; sp *= 2) {
                  if (double(B) * H * sp * 2048 * sets > 1e9)
                    continue;
                  // every cluster size up to the largest that divides sp, and the spread
                  // merge (0) where the grid is resident at once
                  const bool oneWave =
                      sp > 1 && glm5rt::launch::sparseMlaResidentAtOnce(
                                    groups * sp, k.cfg.ctasPerSm, drv.info().smCount);
                  for (int cl = glm5rt::launch::sparseMlaCluster(sp, 1); cl >= (oneWave ? 0 : 1);
                       cl = cl > 1 ? cl / 2 : cl - 1)
                    if (std::find(cands.begin(), cands.end(), std::make_pair(sp, cl)) ==
                        cands.end())
                      cands.push_back({sp, cl});
                }
                double best = 1e30;
                std::pair<int, int> bestCand = cands[0];
                for (auto [splits, cluster] : cands) {
                  for (Problem &p : ps) {
                    p.splits = splits;
                    p.cluster = cluster;
                    allocPartials(drv, p);
                  }
                  if (cluster > 1) { // a one-wave grid of clusters needs them all resident
                    int resident = 0;
                    const int64_t gx = groups / B * splits;
                    if (drv.clusterOccupancy(k.decode, static_cast<unsigned>(gx), k.cfg.threads,
                                             static_cast<size_t>(k.launchSmem),
                                             static_cast<unsigned>(cluster), &resident)
                            .isOk())
                      std::printf("  (clusters of %d: %d resident at once, %lld launched)\n",
                                  cluster, resident,
                                  static_cast<long long>(groups * splits / cluster));
                  }
                  auto [eo, el] =
                      noGather ? std::pair<double, double>{0, 0} : check(drv, k, ps[0], stream);
                  bool ok = eo <= 1e-2 && el <= 1e-2;
                  failed |= !ok;
                  double us = glm5c::bench::timeGraph(drv, stream, ps.size(), reps, [&](size_t i) {
                    launch(drv, k, ps[i], stream);
                  });
                  double bytes =
                      double(B) * topk * 1152 + double(B) * H * 576 * 2 + double(B) * H * 512 * 2;
                  double flops = 2.0 * B * H * topk * (576 + 512);
                  const bool isChosen = splits == chosen && cluster == chosenCluster;
                  std::printf("  %-19s %3d %4d %5d%s %7d %9.1f %9.0f %7.1f %9.1f%s\n",
                              label.c_str(), H, B, splits, isChosen ? "*" : " ", cluster, us,
                              bytes / us / 1e3, 100.0 * bytes / us / 1e3 / 4230.0, flops / us / 1e6,
                              ok ? "" : "  (check FAILED)");
                  if (!ok)
                    std::printf("    rel err out %.2e lse %.2e\n", eo, el);
                  if (trace && (isChosen || forcedSplits > 0))
                    printTrace(drv, k, ps[0], stream);
                  if (us < best) {
                    best = us;
                    bestCand = {splits, cluster};
                  }
                }
                if (cands.size() > 1)
                  std::printf("  %-19s %3d %4d best splits %d cluster %d: %.1f us\n", label.c_str(),
                              H, B, bestCand.first, bestCand.second, best);
                for (Problem &p : ps)
                  freeProblem(drv, p);
              }
            }
  return failed ? 1 : 0;
}

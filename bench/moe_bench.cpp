// MoE routed experts at decode (qlinear.cuh kinds 3 and 4: moe_expert_decode_gate_up, then
// moe_expert_decode_down) on the GPU at GLM-5's shape: 256 experts of width 2048 over hidden
// 6144, one token's 8 pairs. A (--active) of the pairs are routed to this device's experts and
// the others to other ranks (id -1: their CTAs exit at once), as on a rank of an expert-parallel
// plan. One launch pair per configuration is checked against a double-precision host product
// first; then CUDA-graph replay over sets of distinct experts (every set reads new weights);
// median µs of gate/up, down and the pair of launches, GB/s of the active experts' quantized
// bytes and % of the H200's 4230 GB/s copy bandwidth.
//
// usage: glm5c-bench-moe [--check-only] [--tiles sm_90,sm_120a] [--types q4_k:q6_k,...]
//                        [--active 8,1] [--splits 0,2,...] [--reps N] [--pdl]
//                        [--mv-tiles reg,W:S:KC,...] [--define NAME=V] [--sm120-occupancy]
// --types lists gate/up:down weight types. --splits times each listed K split (both phases): 0
// is the runtime's choice for the active pairs (runtime/launch moeDecodeGrid, from each phase
// kernel's CTAs per SM on this device as the driver reports them), N forces N.
// --sm120-occupancy pads each phase's launch so that this device's SM holds as many CTAs as the
// tile target's shared memory does (3 gate/up and 2 down CTAs on SM120), and the rule uses that.
// --mv-tiles times each listed tile choice (both phases): `reg` is the registry's, W:S:KC forces
// W warps, an S-step ring and KC-element x chunks (the launch's L2 prefetch then follows one
// product's bytes). --define (repeatable) puts `#define NAME V` before the kernel source.
// --pdl launches each kernel overlapped with the one before it, as the cuda backend does.
#include "bench/bench_util.h"
#include "codegen/kernels/EmbeddedKernels.h"
#include "codegen/nvrtc/Nvrtc.h"
#include "codegen/registry/MoeExperts.h"
#include "codegen/registry/QLinear.h"
#include "runtime/cuda/Driver.h"
#include "runtime/gguf/quant.h"
#include "runtime/host/ops.h"
#include "runtime/launch/Moe.h"
#include "runtime/support/half.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <strings.h>
#include <vector>

using namespace glm5c::codegen;
using glm5rt::gguf::GgmlType;
namespace cu = glm5rt::cuda;
namespace launch = glm5rt::launch;

namespace {

using glm5c::bench::Rng;
using glm5c::bench::splitList;

constexpr int kE = 256, kTopk = 8, kH = 6144, kF = 2048;
constexpr int kPool = 61; // distinct random rows per matrix kind, tiled over every expert

std::optional<GgmlType> typeOf(const std::string &name) {
  for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K,
                     GgmlType::BF16, GgmlType::F16})
    if (strcasecmp(qlinearTypeName(uint32_t(t)).c_str(), name.c_str()) == 0)
      return t;
  return std::nullopt;
}

// Row r of expert e of a stacked matrix is pool row (7 r + e) % kPool.
int poolRow(int64_t r, int e) { return static_cast<int>((7 * r + e) % kPool); }

// kPool random rows of K elements quantized to `type`, and their dequantized values.
void makePool(GgmlType type, int64_t K, Rng &rng, std::vector<uint8_t> *bytes,
              std::vector<float> *values) {
  const int64_t rowBytes = qlinearRowBytes(uint32_t(type), K);
  bytes->assign(size_t(kPool * rowBytes), 0);
  std::vector<float> row(static_cast<size_t>(K));
  const float scale = 3.f / std::sqrt(float(K)); // keeps the products of order 1
  for (int p = 0; p < kPool; ++p) {
    for (float &v : row)
      v = rng.uniform() * scale;
    CHECK_OK(glm5rt::gguf::quantizeRow(type, row.data(), uint64_t(K), bytes->data() + p * rowBytes,
                                       size_t(rowBytes)));
  }
  values->resize(size_t(kPool * K));
  glm5rt::host::Weight w =
      glm5rt::host::makeWeight(type, bytes->data(), {uint64_t(K), uint64_t(kPool)});
  CHECK_OK(glm5rt::host::dequantRows(w, 0, uint64_t(kPool), values->data()));
}

// Every expert's rows from the pool, uploaded: E * N rows of K elements.
cu::DevicePtr uploadStacked(cu::Driver &drv, GgmlType type, int64_t K, int64_t N,
                            const std::vector<uint8_t> &pool) {
  const int64_t rowBytes = qlinearRowBytes(uint32_t(type), K);
  std::vector<uint8_t> expert(size_t(N * rowBytes));
  cu::DevicePtr d = 0;
  CHECK_OK(drv.malloc(&d, size_t(kE * N * rowBytes), "experts"));
  for (int e = 0; e < kE; ++e) {
    for (int64_t r = 0; r < N; ++r)
      std::memcpy(expert.data() + r * rowBytes, pool.data() + poolRow(r, e) * rowBytes,
                  size_t(rowBytes));
    CHECK_OK(drv.copyToDevice(d + uint64_t(e) * N * rowBytes, expert.data(), expert.size()));
  }
  return d;
}

struct Row {
  std::string tiles, types;
  int active, splitsGu, splitsDn;
  double usGu, usDn, usBoth, gbs, err;
  bool ok;
};

} // namespace

int main(int argc, char **argv) {
  bool checkOnly = false, pdl = false, sm120Occupancy = false;
  int reps = 30;
  std::vector<std::string> tileNames, typePairs = {"q4_k:q6_k"};
  std::vector<int> actives = {8, 1}, splitChoices = {0};
  std::vector<std::string> mvTiles = {"reg"};
  std::string defines;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--check-only")
      checkOnly = true;
    else if (a == "--pdl")
      pdl = true;
    else if (a == "--sm120-occupancy")
      sm120Occupancy = true;
    else if (a == "--reps" && i + 1 < argc)
      reps = glm5c::bench::optionInt("--reps", argv[++i], 1, 1000000);
    else if (a == "--tiles" && i + 1 < argc)
      tileNames = splitList(argv[++i]);
    else if (a == "--types" && i + 1 < argc)
      typePairs = splitList(argv[++i]);
    else if (a == "--mv-tiles" && i + 1 < argc)
      mvTiles = splitList(argv[++i]);
    else if (a == "--define" && i + 1 < argc)
      defines += glm5c::bench::defineLine(argv[++i]);
    else if ((a == "--active" || a == "--splits") && i + 1 < argc) {
      std::vector<int> &v = a == "--active" ? actives : splitChoices;
      v = a == "--active" ? glm5c::bench::optionInts("--active", argv[++i], 1, kTopk)
                          : glm5c::bench::optionInts("--splits", argv[++i], 0, 64);
    } else {
      std::fprintf(stderr,
                   "usage: %s [--check-only] [--tiles sm_90,sm_120a] [--types q4_k:q6_k,...] "
                   "[--active 8,1] [--splits 0,2,...] [--reps N] [--pdl] "
                   "[--mv-tiles reg,W:S:KC,...] [--define NAME=V] [--sm120-occupancy]\n",
                   argv[0]);
      return 2;
    }
  }
  std::string codeArch;
  cu::Driver &drv = glm5c::bench::openDevice(&codeArch);
  if (tileNames.empty())
    tileNames = {codeArch};
  const Target *devTarget = findTarget(codeArch);
  NvrtcCompiler nvrtc(NvrtcCompiler::defaultCacheDir());
  cu::Stream stream;
  CHECK_OK(drv.streamCreate(&stream));
  std::vector<Row> rows;
  bool failed = false;

  for (const std::string &tp : typePairs) {
    const size_t colon = tp.find(':');
    const auto gu = typeOf(tp.substr(0, colon));
    const auto dn = colon == std::string::npos ? gu : typeOf(tp.substr(colon + 1));
    if (!gu || !dn) {
      std::fprintf(stderr, "--types: '%s' is not GATEUP:DOWN of quantized types\n", tp.c_str());
      return 2;
    }
    Rng rng{uint64_t(uint32_t(*gu)) * 131 + uint32_t(*dn)};
    std::vector<uint8_t> gPool, uPool, dPool;
    std::vector<float> gVal, uVal, dVal;
    makePool(*gu, kH, rng, &gPool, &gVal);
    makePool(*gu, kH, rng, &uPool, &uVal);
    makePool(*dn, kF, rng, &dPool, &dVal);
    const cu::DevicePtr wg = uploadStacked(drv, *gu, kH, kF, gPool);
    const cu::DevicePtr wu = uploadStacked(drv, *gu, kH, kF, uPool);
    const cu::DevicePtr wd = uploadStacked(drv, *dn, kF, kH, dPool);
    const int64_t pairBytes =
        2 * kF * qlinearRowBytes(uint32_t(*gu), kH) + kH * qlinearRowBytes(uint32_t(*dn), kF);

    // x (one token) and its bf16 values.
    std::vector<uint16_t> xh(kH);
    std::vector<float> xf(kH);
    for (int i = 0; i < kH; ++i) {
      xh[size_t(i)] = glm5rt::floatToBf16(rng.uniform());
      xf[size_t(i)] = glm5rt::bf16ToFloat(xh[size_t(i)]);
    }
    cu::DevicePtr dx = 0, dh = 0, dout = 0, ws = 0, ctr = 0;
    CHECK_OK(drv.malloc(&dx, size_t(kH) * 2, "x"));
    CHECK_OK(drv.copyToDevice(dx, xh.data(), size_t(kH) * 2));
    CHECK_OK(drv.malloc(&dh, size_t(kTopk) * kF * 2, "h"));
    CHECK_OK(drv.malloc(&dout, size_t(kTopk) * kH * 4, "out"));
    const size_t counters = size_t(kTopk) * (kH / 16); // at least one row block per 16 rows
    CHECK_OK(drv.malloc(&ctr, counters * 4, "counters"));
    CHECK_OK(drv.memsetD8(ctr, 0, counters * 4));
    // Sets of 8 distinct experts (each set's weights are new to L2).
    const int sets = 24;
    std::vector<int32_t> perm(kE);
    for (int e = 0; e < kE; ++e)
      perm[size_t(e)] = e;

    for (const std::string &tn : tileNames) {
      const Target *tiles = glm5c::bench::findTileTarget(tn);
      if (!tiles)
        return 2;
      const Target &sizing = devTarget ? *devTarget : *tiles;
      auto cfgs = selectMoeExpertFfn(*tiles, uint32_t(*gu), uint32_t(*gu), uint32_t(*dn), kE, kTopk,
                                     kH, kF, false);
      CHECK_OK(cfgs.status());
      for (const std::string &mt : mvTiles) {
        QLinearConfig cGu = cfgs->decodeGateUp, cDn = cfgs->decodeDown;
        bool skip = false;
        if (mt != "reg") {
          int wv = 0, sv = 0;
          long long kv = 0;
          int used = -1; // the whole text, nothing after KC
          if (std::sscanf(mt.c_str(), "%d:%d:%lld%n", &wv, &sv, &kv, &used) != 3 ||
              used != static_cast<int>(mt.size())) {
            std::fprintf(stderr, "--mv-tiles: '%s' is not reg or W:S:KC\n", mt.c_str());
            return 2;
          }
          // The registry's config of each phase with the tiles swapped in.
          for (QLinearConfig *c : {&cGu, &cDn}) {
            const bool isGu = c == &cGu;
            auto q = qlinearDecodeWith(*tiles, isGu ? uint32_t(*gu) : uint32_t(*dn), isGu ? kH : kF,
                                       isGu ? kF : kH, 1, wv, sv, kv);
            if (!q.isOk()) {
              std::printf("  skipped: %s\n", q.status().message().c_str());
              skip = true;
              break;
            }
            *c = moeDecodePhase(*q, isGu);
          }
        }
        if (skip)
          continue;
        const std::string tag = defines.empty() ? "" : "_def" + std::to_string(defines.size());
        const cu::Function fGu =
            glm5c::bench::buildKernel(drv, nvrtc, cGu.variant + tag, defines + qlinearSource(cGu),
                                      codeArch, cGu.entry, cGu.dynamicSmem);
        const cu::Function fDn =
            glm5c::bench::buildKernel(drv, nvrtc, cDn.variant + tag, defines + qlinearSource(cDn),
                                      codeArch, cDn.entry, cDn.dynamicSmem);
        const launch::QLinearParams pGu = qlinearLaunchParams(cGu);
        const launch::QLinearParams pDn = qlinearLaunchParams(cDn);
        // Each phase's CTAs per SM (the split rule's input) and launch shared memory.
        int64_t smemGu = cGu.dynamicSmem, smemDn = cDn.dynamicSmem;
        int occGu = 1, occDn = 1;
        if (sm120Occupancy) {
          occGu = glm5c::bench::padToTileOccupancy(drv, fGu, *tiles, cGu.dynamicSmem, cGu.variant,
                                                   &smemGu);
          occDn = glm5c::bench::padToTileOccupancy(drv, fDn, *tiles, cDn.dynamicSmem, cDn.variant,
                                                   &smemDn);
        } else {
          CHECK_OK(drv.occupancy(fGu, pGu.threads, size_t(smemGu), &occGu));
          CHECK_OK(drv.occupancy(fDn, pDn.threads, size_t(smemDn), &occDn));
        }
        std::printf("  CTAs per SM: gate/up %d, down %d%s\n", occGu, occDn,
                    sm120Occupancy ? " (the tile target's)" : "");
        for (int active : actives) {
          std::vector<cu::DevicePtr> ids(sets);
          std::vector<std::vector<int32_t>> idHost(sets);
          for (int s = 0; s < sets; ++s) {
            for (int e = kE - 1; e > 0; --e)
              std::swap(perm[size_t(e)], perm[size_t(rng.next() % uint64_t(e + 1))]);
            idHost[size_t(s)].assign(perm.begin(), perm.begin() + kTopk);
            for (int j = active; j < kTopk; ++j)
              idHost[size_t(s)][size_t(j)] = -1; // another rank's expert
            CHECK_OK(drv.malloc(&ids[size_t(s)], kTopk * 4, "ids"));
            CHECK_OK(drv.copyToDevice(ids[size_t(s)], idHost[size_t(s)].data(), kTopk * 4));
          }
          // The host's out rows of set 0's active pairs, in double precision.
          std::vector<double> ref(size_t(active) * kH);
          for (int j = 0; j < active; ++j) {
            const int e = idHost[0][size_t(j)];
            std::vector<double> h(kF);
            for (int f = 0; f < kF; ++f) {
              const float *g = gVal.data() + size_t(poolRow(f, e)) * kH;
              const float *u = uVal.data() + size_t(poolRow(f, e)) * kH;
              double sg = 0, su = 0;
              for (int c = 0; c < kH; ++c) {
                sg += double(g[c]) * xf[size_t(c)];
                su += double(u[c]) * xf[size_t(c)];
              }
              // h is stored as bf16 between the phases: round it as the kernel does.
              h[size_t(f)] =
                  glm5rt::bf16ToFloat(glm5rt::floatToBf16(float(sg / (1 + std::exp(-sg)) * su)));
            }
            for (int n = 0; n < kH; ++n) {
              const float *d = dVal.data() + size_t(poolRow(n, e)) * kF;
              double s = 0;
              for (int f = 0; f < kF; ++f)
                s += double(d[f]) * h[size_t(f)];
              ref[size_t(j) * kH + size_t(n)] = s;
            }
          }
          for (int forced : splitChoices) {
            launch::MoeDecodeGrid a = launch::moeDecodeGrid(pGu, true, sizing.smCount, kTopk,
                                                            active, kF, kH, occGu, forced);
            launch::MoeDecodeGrid b = launch::moeDecodeGrid(pDn, false, sizing.smCount, kTopk,
                                                            active, kH, kF, occDn, forced);
            a.smem = static_cast<unsigned>(smemGu);
            b.smem = static_cast<unsigned>(smemDn);
            if (size_t(std::max(a.counters, b.counters)) > counters) {
              std::fprintf(stderr, "more split counters than allocated\n");
              return 1;
            }
            if (ws)
              (void)drv.free(ws);
            CHECK_OK(drv.malloc(&ws,
                                size_t(std::max<int64_t>({a.workspaceBytes, b.workspaceBytes, 4})),
                                "workspace"));
            int first = 0, E = kE, k = kTopk, F = kF, H = kH, kpsA = a.kPerSplit,
                kpsB = b.kPerSplit;
            auto run = [&](const launch::MoeDecodeGrid &g, cu::Function f, void **args,
                           const char *what) {
              CHECK_OK(pdl ? drv.launchOverlapped(f, g.gridX, g.gridY, g.gridZ, g.threads, 1,
                                                  g.smem, stream, args, what)
                           : drv.launch(f, g.gridX, g.gridY, g.gridZ, g.threads, 1, 1, g.smem,
                                        stream, args, what));
            };
            cu::DevicePtr wgv = wg, wuv = wu, wdv = wd;
            auto launchGu = [&](size_t s) {
              void *args[] = {&wgv,   &wuv, &dx, &ids[s], &dh, &ws,  &ctr,
                              &first, &E,   &k,  &F,      &H,  &kpsA};
              run(a, fGu, args, "moe_expert_decode_gate_up");
            };
            auto launchDn = [&](size_t s) {
              void *args[] = {&wdv, &dh, &ids[s], &dout, &ws, &ctr, &first, &E, &F, &H, &kpsB};
              run(b, fDn, args, "moe_expert_decode_down");
            };

            // Correctness: set 0, output poisoned first.
            CHECK_OK(drv.memsetD8(dout, 0xff, size_t(kTopk) * kH * 4));
            launchGu(0);
            launchDn(0);
            CHECK_OK(drv.synchronize(stream));
            std::vector<float> got(size_t(kTopk) * kH);
            CHECK_OK(drv.copyToHost(got.data(), dout, got.size() * 4));
            double e2 = 0, r2 = 0;
            for (size_t i = 0; i < ref.size(); ++i) {
              const double d = std::isfinite(got[i]) ? got[i] - ref[i] : 1e30;
              e2 += d * d;
              r2 += ref[i] * ref[i];
            }
            Row row{tn,
                    mt == "reg" ? tp : tp + " " + mt,
                    active,
                    int(a.gridZ),
                    int(b.gridZ),
                    0,
                    0,
                    0,
                    0,
                    std::sqrt(e2 / r2),
                    false};
            row.ok = row.err <= 1e-2;
            failed |= !row.ok;
            if (!checkOnly) {
              row.usGu = glm5c::bench::timeGraph(drv, stream, size_t(sets), reps, launchGu);
              row.usDn = glm5c::bench::timeGraph(drv, stream, size_t(sets), reps, launchDn);
              row.usBoth = glm5c::bench::timeGraph(drv, stream, size_t(sets), reps, [&](size_t s) {
                launchGu(s);
                launchDn(s);
              });
              row.gbs = double(active * pairBytes) / row.usBoth / 1e3;
            }
            std::printf(
                "  %-7s %-10s active %d splits %d/%d rel err %.1e %s  %.1f + %.1f -> %.1f us\n",
                tn.c_str(), tp.c_str(), active, row.splitsGu, row.splitsDn, row.err,
                row.ok ? "ok" : "FAILED", row.usGu, row.usDn, row.usBoth);
            rows.push_back(row);
          }
          for (cu::DevicePtr d : ids)
            (void)drv.free(d);
        }
      }
    }
    for (cu::DevicePtr d : {wg, wu, wd, dx, dh, dout, ctr})
      (void)drv.free(d);
  }

  std::printf("\n%-8s %-10s %6s %6s %8s %8s %8s %7s %6s %s\n", "tiles", "types", "active", "splits",
              "gu us", "down us", "both us", "GB/s", "% bw", "check");
  for (const Row &r : rows)
    std::printf("%-8s %-10s %6d %3d/%-2d %8.1f %8.1f %8.1f %7.0f %6.1f %s\n", r.tiles.c_str(),
                r.types.c_str(), r.active, r.splitsGu, r.splitsDn, r.usGu, r.usDn, r.usBoth, r.gbs,
                100.0 * r.gbs / 4230.0, r.ok ? "ok" : "FAILED");
  return failed ? 1 : 0;
}

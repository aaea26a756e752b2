// Quantized decode matrix-vector (qlinear_decode) on the GPU at GLM-5's linear shapes, for every
// supported weight type, batch 1 and 8, bf16 activations: one launch per shape checked against
// the host reference on sampled rows first, then CUDA-graph replay over weight copies rotated
// beyond L2; median time, GB/s of quantized weight bytes and % of the H200's 4230 GB/s copy
// bandwidth.
//
// usage: glm5c-bench-qlinear [--check-only] [--tiles sm_90,sm_120a] [--types q4_k,q8_0,...]
//                            [--shapes lm_head,o,...] [--tokens 1,8] [--define NAME=V]
//                            [--reps N] [--mv-tiles reg,fp32,W:S:KC,...] [--splits 0,3,...]
//                            [--sm120-occupancy] [--pdl] [--trace] [--gate-up] [--linears]
// --shapes and --tokens narrow the run (profiling one launch: the check launch comes first);
// --define (repeatable) puts `#define NAME V` before the kernel source (experiments).
// --mv-tiles times each mma decode product with every listed tile choice: `reg` is the registry's,
// W:S:KC is W warps, an S-deep ring and KC-element x chunks (qlinearDecodeWith), W:S:KC:X with X
// 0-4 forcing bf16 staged by the product warps, fp16, int8, or bf16 staged by an x warp into two
// or three buffers (GLM_MV_XF16, GLM_MV_XI8, GLM_MV_XWARP) instead of the registry's rules;
// `reg:X` the registry's tiles for x form X (qlinearDecodeXForm); `fp32` is the fp32 path's
// kernel (qlinearDecodeFp32) where the registry takes the mma path.
// --splits times each listed split of K: 0 is the launch's own choice, N forces N splits.
// --sm120-occupancy pads each launch's shared memory so that this device's SM holds as many CTAs
// as the tile target's would (its shared memory per SM; registers bind alike on both), as
// SM120's 100 KB run them, instead of the H200's 228 KB ("o<N>" in the variant column).
// --pdl launches each product overlapped with the one before it in the timed graph (programmatic
// dependent launch), as the cuda backend launches kernels.
// --gate-up also times glm.gate_up's kernel (qlinear_decode_gate_up: the shape's rows as gate and
// as up, SwiGLU in its epilogue; GB/s on both weights' bytes) at one token, at each of --splits
// (0: the runtime's choice, qlinearSplits' load model over the row tiles).
// --linears times, per type, GLM-5's decode products that read one activation (q_a, kv_a and the
// indexer's key; q_b and the indexer's query) as one glm.linears launch (qlinear_decode_multi)
// and as separate launches, at one token (instead of the --shapes table).
// --trace builds the decode kernels with their phase stamps (qlinear.cuh GLM_QL_TRACE) and prints,
// after each timed row, where the last timed launch's time went.
#include "bench/bench_util.h"
#include "codegen/kernels/EmbeddedKernels.h"
#include "codegen/nvrtc/Nvrtc.h"
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
#include <map>
#include <string>
#include <vector>

using namespace glm5c::codegen;
using glm5rt::Status;
using glm5rt::gguf::GgmlType;
namespace cu = glm5rt::cuda;

namespace {

using glm5c::bench::Rng;
using glm5c::bench::splitList;

// GLM-5's decode linears, in -> out (K -> N).
struct Shape {
  int64_t K, N;
  const char *what;
};
const Shape kShapes[] = {{6144, 2048, "q_a"},         {2048, 16384, "q_b"},
                         {6144, 576, "kv_a"},         {16384, 6144, "o"},
                         {6144, 2048, "shared gate"}, {2048, 6144, "shared down"},
                         {6144, 12288, "dense gate"}, {12288, 6144, "dense down"},
                         {6144, 154880, "lm_head"}};

const GgmlType kTypes[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q4_0,
                           GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};

struct Row {
  std::string tiles, type, shape;
  int64_t K, N;
  int T, splits;
  std::string variant;
  double us, gbs, err;
  bool ok;
};

// `pool` random rows of K elements quantized to `type` (bytes) and their dequantized values; the
// benchmarks tile weights from such rows and check sampled outputs against them.
void makePool(GgmlType type, int64_t K, int64_t pool, Rng &rng, std::vector<uint8_t> &bytes,
              std::vector<float> &values) {
  const int64_t rowBytes = qlinearRowBytes(uint32_t(type), K);
  bytes.assign(size_t(pool * rowBytes), 0);
  std::vector<float> rowF(static_cast<size_t>(K));
  for (int64_t p = 0; p < pool; ++p) {
    for (float &v : rowF)
      v = rng.uniform();
    CHECK_OK(glm5rt::gguf::quantizeRow(type, rowF.data(), uint64_t(K),
                                       bytes.data() + p * rowBytes, size_t(rowBytes)));
  }
  values.resize(size_t(pool * K));
  CHECK_OK(glm5rt::host::dequantRows(
      glm5rt::host::makeWeight(type, bytes.data(), {uint64_t(K), uint64_t(pool)}), 0,
      uint64_t(pool), values.data()));
}

// n random bf16 activations (h) and their values (f).
void randomX(Rng &rng, size_t n, std::vector<uint16_t> &h, std::vector<float> &f) {
  h.resize(n);
  f.resize(n);
  for (size_t i = 0; i < n; ++i) {
    h[i] = glm5rt::floatToBf16(rng.uniform());
    f[i] = glm5rt::bf16ToFloat(h[i]);
  }
}

// --trace: the most CTAs a traced launch records, and the stamps per CTA (qlinear.cuh).
constexpr int kTraceCtas = 4096, kTraceSlots = 6;

// --trace: the stamps of the traced build's last launch, in us from its first CTA's start: each
// stamp's median and latest over the CTAs, each phase's median and longest, and how the CTAs and
// their ends spread over the SMs.
void printTrace(cu::Driver &drv, cu::Function dump, int ctas, cu::Stream s) {
  ctas = std::min(ctas, kTraceCtas);
  const size_t n = size_t(kTraceCtas) * kTraceSlots;
  cu::DevicePtr d = 0;
  CHECK_OK(drv.malloc(&d, n * 8, "trace"));
  void *args[] = {&d};
  CHECK_OK(drv.launch(dump, 64, 1, 1, 256, 1, 1, 0, s, args, "ql_trace_dump"));
  CHECK_OK(drv.synchronize(s));
  std::vector<unsigned long long> t(n);
  CHECK_OK(drv.copyToHost(t.data(), d, n * 8));
  (void)drv.free(d);
  auto at = [&](int c, int slot) { return t[size_t(c) * kTraceSlots + slot]; };
  unsigned long long t0 = ~0ull;
  for (int c = 0; c < ctas; ++c)
    t0 = std::min(t0, at(c, 0));
  auto med = [](std::vector<double> v, double *mx) {
    std::sort(v.begin(), v.end());
    *mx = v.back();
    return v[v.size() / 2];
  };
  const char *stamp[] = {"start", "chain passed", "x staged", "steps done", "end"};
  std::printf("    trace (%d CTAs, us from the first start):", ctas);
  for (int slot = 0; slot < 5; ++slot) {
    std::vector<double> v;
    for (int c = 0; c < ctas; ++c)
      v.push_back((double(at(c, slot)) - double(t0)) * 1e-3);
    double mx;
    const double m = med(v, &mx);
    std::printf(" %s %.2f/%.2f", stamp[slot], m, mx);
  }
  std::printf("\n    phases (median/longest):");
  const char *phase[] = {"chain wait", "x staging", "steps", "fixup"};
  for (int p = 0; p < 4; ++p) {
    std::vector<double> v;
    for (int c = 0; c < ctas; ++c)
      v.push_back((double(at(c, p + 1)) - double(at(c, p))) * 1e-3);
    double mx;
    const double m = med(v, &mx);
    std::printf(" %s %.2f/%.2f", phase[p], m, mx);
  }
  std::map<unsigned long long, std::pair<int, double>> sm; // CTAs, last end
  for (int c = 0; c < ctas; ++c) {
    auto &e = sm[at(c, 5)];
    e.first += 1;
    e.second = std::max(e.second, (double(at(c, 4)) - double(t0)) * 1e-3);
  }
  std::map<int, int> perSm;
  std::vector<double> ends;
  for (const auto &e : sm) {
    perSm[e.second.first] += 1;
    ends.push_back(e.second.second);
  }
  double mx;
  const double m = med(ends, &mx);
  std::printf("\n    SMs (%zu): last end median %.2f, first %.2f, last %.2f; CTAs per SM:",
              sm.size(), m, *std::min_element(ends.begin(), ends.end()), mx);
  for (const auto &e : perSm)
    std::printf(" %dx%d", e.second, e.first);
  std::printf("\n");
}

// --linears: GLM-5's decode products that read one activation, as one qlinear_decode_multi
// launch against the same products launched one after another.
struct LinearsGroup {
  const char *what;
  int64_t K;
  std::vector<int64_t> N;
};
const LinearsGroup kLinearsGroups[] = {{"q_a+kv_a+idx_k", 6144, {2048, 576, 128}},
                                       {"q_b+idx_q", 2048, {16384, 4096}}};

// Times one group for `type` at one token (checked first against a double-precision host product
// of 16 sampled rows per product); returns false if the check fails.
bool timeLinears(cu::Driver &drv, NvrtcCompiler &nvrtc, cu::Stream stream, const Target &tiles,
                 const Target &sizing, const std::string &codeArch, const std::string &defines,
                 GgmlType type, const LinearsGroup &grp, int reps, bool pdl,
                 std::vector<Row> &rows) {
  const std::string tname = qlinearTypeName(uint32_t(type));
  const int64_t K = grp.K, rowBytes = qlinearRowBytes(uint32_t(type), K), pool = 61;
  Rng rng{uint64_t(K) * 13 + uint32_t(type)};
  std::vector<uint8_t> poolBytes;
  std::vector<float> poolF;
  makePool(type, K, pool, rng, poolBytes, poolF);
  int64_t sumN = 0;
  for (int64_t n : grp.N)
    sumN += n;
  const int64_t bytes = sumN * rowBytes;
  const int sets = static_cast<int>(std::clamp<int64_t>((256ll << 20) / bytes + 1, 1, 64));
  const size_t P = grp.N.size();
  // Product m's rows: the pool from offset 7 m, so the products differ.
  std::vector<std::vector<cu::DevicePtr>> w(P, std::vector<cu::DevicePtr>(size_t(sets)));
  for (size_t m = 0; m < P; ++m) {
    std::vector<uint8_t> host(size_t(grp.N[m] * rowBytes));
    for (int64_t n = 0; n < grp.N[m]; ++n)
      std::memcpy(host.data() + n * rowBytes,
                  poolBytes.data() + ((n + 7 * int64_t(m)) % pool) * rowBytes, size_t(rowBytes));
    for (int s = 0; s < sets; ++s) {
      CHECK_OK(drv.malloc(&w[m][size_t(s)], host.size(), "weights"));
      CHECK_OK(drv.copyToDevice(w[m][size_t(s)], host.data(), host.size()));
    }
  }
  std::vector<uint16_t> xh;
  std::vector<float> xf;
  randomX(rng, static_cast<size_t>(K), xh, xf);
  cu::DevicePtr dx = 0, ws = 0, cnt = 0;
  std::vector<cu::DevicePtr> dy(P);
  CHECK_OK(drv.malloc(&dx, xh.size() * 2, "x"));
  CHECK_OK(drv.copyToDevice(dx, xh.data(), xh.size() * 2));
  for (size_t m = 0; m < P; ++m)
    CHECK_OK(drv.malloc(&dy[m], size_t(grp.N[m]) * 2, "y"));
  auto cfg = selectLinears(tiles, uint32_t(type), K, sumN, 1, false);
  CHECK_OK(cfg.status());
  cu::Function fn =
      glm5c::bench::buildKernel(drv, nvrtc, cfg->variant + "_" + tiles.name,
                                defines + qlinearSource(*cfg), codeArch, cfg->entry,
                                cfg->dynamicSmem);
  const auto g = glm5rt::launch::qlinearMultiGrid(qlinearLaunchParams(*cfg), sizing.smCount,
                                                  grp.N, K);
  // The separate products: each one's registry kernel and launch.
  std::vector<cu::Function> one(P);
  std::vector<QLinearLaunch> oneL(P);
  int64_t wsBytes = g.workspaceBytes, counters = g.counters;
  for (size_t m = 0; m < P; ++m) {
    auto c = selectQLinear(tiles, uint32_t(type), K, grp.N[m], 1, false);
    CHECK_OK(c.status());
    one[m] = glm5c::bench::buildKernel(drv, nvrtc, c->variant + "_" + tiles.name,
                                       defines + qlinearSource(*c), codeArch, c->entry,
                                       c->dynamicSmem);
    oneL[m] = qlinearLaunch(*c, sizing, 1, grp.N[m], K);
    wsBytes = std::max(wsBytes, oneL[m].workspaceBytes);
    counters = std::max(counters, oneL[m].counters);
  }
  CHECK_OK(drv.malloc(&ws, size_t(std::max<int64_t>(wsBytes, 4)), "workspace"));
  CHECK_OK(drv.malloc(&cnt, size_t(std::max<int64_t>(counters, 1)) * 4, "counters"));
  CHECK_OK(drv.memsetD8(cnt, 0, size_t(std::max<int64_t>(counters, 1)) * 4));
  int Ki = static_cast<int>(K), kps = g.kPerSplit;
  auto go = [&](cu::Function f, unsigned gx, unsigned gy, unsigned threads, unsigned smem,
                void **args, const char *what) {
    CHECK_OK(pdl ? drv.launchOverlapped(f, gx, gy, 1, threads, 1, smem, stream, args, what)
                 : drv.launch(f, gx, gy, 1, threads, 1, 1, smem, stream, args, what));
  };
  auto fused = [&](size_t s) {
    glm5rt::launch::QLinearMultiArgs a;
    for (size_t m = 0; m < P; ++m) {
      a.w[m] = w[m][s];
      a.y[m] = dy[m];
      a.n[m] = static_cast<int32_t>(grp.N[m]);
    }
    void *args[] = {&a, &dx, &ws, &cnt, &Ki, &kps};
    go(fn, g.gridX, g.gridY, g.threads, g.smem, args, "qlinear_decode_multi");
  };
  auto separate = [&](size_t s) {
    for (size_t m = 0; m < P; ++m) {
      int N = static_cast<int>(grp.N[m]), kp = oneL[m].kPerSplit;
      void *args[] = {&w[m][s], &dx, &dy[m], &ws, &cnt, &N, &Ki, &kp};
      go(one[m], oneL[m].gridX, oneL[m].gridY, oneL[m].threads, oneL[m].smem, args,
         "qlinear_decode");
    }
  };
  for (size_t m = 0; m < P; ++m)
    CHECK_OK(drv.memsetD8(dy[m], 0xff, size_t(grp.N[m]) * 2));
  fused(0);
  CHECK_OK(drv.synchronize(stream));
  double e2 = 0, r2 = 0;
  for (size_t m = 0; m < P; ++m) {
    std::vector<uint16_t> yh(static_cast<size_t>(grp.N[m]));
    CHECK_OK(drv.copyToHost(yh.data(), dy[m], yh.size() * 2));
    for (int i = 0; i < 16; ++i) {
      const int64_t n = i * (grp.N[m] - 1) / 15;
      const float *wr = poolF.data() + ((n + 7 * int64_t(m)) % pool) * K;
      double ref = 0;
      for (int64_t k = 0; k < K; ++k)
        ref += double(wr[k]) * xf[size_t(k)];
      const double got = glm5rt::bf16ToFloat(yh[size_t(n)]);
      e2 += std::isfinite(got) ? (got - ref) * (got - ref) : 1e30;
      r2 += ref * ref;
    }
  }
  const double err = std::sqrt(e2 / r2);
  Row fusedRow{tiles.name, tname, grp.what, K, sumN, 1, g.splits, cfg->variant, 0, 0, err,
               err <= 1e-2};
  Row sepRow{tiles.name, tname, grp.what, K, sumN, 1, 0, "separate qlinear_decode launches", 0,
             0, 0, true};
  fusedRow.us = glm5c::bench::timeGraph(drv, stream, size_t(sets), reps, fused);
  sepRow.us = glm5c::bench::timeGraph(drv, stream, size_t(sets), reps, separate);
  for (Row *r : {&fusedRow, &sepRow}) {
    r->gbs = double(bytes) / r->us / 1e3;
    std::printf("  %-7s %-5s %-15s %5lld -> %-6lld %-34s rel err %.1e %s  %8.1f us %5.1f%%\n",
                r->tiles.c_str(), tname.c_str(), grp.what, static_cast<long long>(K),
                static_cast<long long>(sumN), r->variant.c_str(), r->err, r->ok ? "ok" : "FAILED",
                r->us, 100.0 * r->gbs / 4230.0);
    rows.push_back(*r);
  }
  for (auto &v : w)
    for (cu::DevicePtr d : v)
      (void)drv.free(d);
  for (cu::DevicePtr d : dy)
    (void)drv.free(d);
  for (cu::DevicePtr d : {dx, ws, cnt})
    (void)drv.free(d);
  return fusedRow.ok;
}

} // namespace

int main(int argc, char **argv) {
  bool trace = false, gateUp = false, linears = false;
  bool checkOnly = false, sm120Occupancy = false;
  int reps = 30;
  std::vector<std::string> tileNames, typeNames, shapeNames;
  std::vector<int> tokenCounts = {1, 8};
  std::string defines, defineTag;
  std::vector<std::string> mvTiles = {"reg"};
  bool pdl = false;
  std::vector<int> splitChoices = {0};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--check-only")
      checkOnly = true;
    else if (a == "--sm120-occupancy")
      sm120Occupancy = true;
    else if (a == "--reps" && i + 1 < argc)
      reps = glm5c::bench::optionInt("--reps", argv[++i], 1, 1000000);
    else if (a == "--tiles" && i + 1 < argc)
      tileNames = splitList(argv[++i]);
    else if (a == "--types" && i + 1 < argc)
      typeNames = splitList(argv[++i]);
    else if (a == "--define" && i + 1 < argc) {
      defines += glm5c::bench::defineLine(argv[++i]);
      defineTag += std::string("+") + argv[i];
    } else if (a == "--trace")
      trace = true;
    else if (a == "--gate-up")
      gateUp = true;
    else if (a == "--linears")
      linears = true;
    else if (a == "--pdl") // each launch overlapped with the one before, as the runtime's
      pdl = true;
    else if (a == "--mv-tiles" && i + 1 < argc)
      mvTiles = splitList(argv[++i]);
    else if (a == "--splits" && i + 1 < argc) {
      splitChoices = glm5c::bench::optionInts("--splits", argv[++i], 0, 64);
    } else if (a == "--shapes" && i + 1 < argc)
      shapeNames = splitList(argv[++i]);
    else if (a == "--tokens" && i + 1 < argc) {
      tokenCounts = glm5c::bench::optionInts("--tokens", argv[++i], 1, 8);
    } else {
      std::fprintf(stderr,
                   "usage: %s [--check-only] [--tiles sm_90,sm_120a] [--types q4_k,...] "
                   "[--shapes lm_head,o,...] [--tokens 1,8] [--define NAME=V] [--reps N] "
                   "[--mv-tiles reg,fp32,W:S:KC[:X],...] [--splits 0,3,...] [--sm120-occupancy] "
                   "[--pdl] [--trace] [--gate-up] [--linears]\n",
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
  std::map<std::string, std::pair<cu::Function, cu::Function>> kernels; // entry, trace dump
  const std::string traceDefine =
      trace ? "#define GLM_QL_TRACE " + std::to_string(kTraceCtas) + "\n" : std::string();
  std::vector<Row> rows;
  bool failed = false;

  for (const std::string &tn : tileNames) {
    const Target *tiles = glm5c::bench::findTileTarget(tn);
    if (!tiles)
      return 2;
    const Target &sizing = devTarget ? *devTarget : *tiles;
    for (GgmlType type : kTypes) {
      std::string tname = qlinearTypeName(uint32_t(type));
      if (!typeNames.empty()) {
        bool want = false;
        for (const std::string &n : typeNames)
          want |= strcasecmp(n.c_str(), tname.c_str()) == 0;
        if (!want)
          continue;
      }
      if (linears) {
        for (const LinearsGroup &grp : kLinearsGroups)
          failed |= !timeLinears(drv, nvrtc, stream, *tiles, sizing, codeArch, defines, type, grp,
                                 reps, pdl, rows);
        continue;
      }
      for (const Shape &sh : kShapes) {
        if (!shapeNames.empty() &&
            std::find(shapeNames.begin(), shapeNames.end(), sh.what) == shapeNames.end())
          continue;
        const int64_t K = sh.K, N = sh.N, rowBytes = qlinearRowBytes(uint32_t(type), K);
        const int64_t bytes = rowBytes * N;
        // A pool of quantized random rows, tiled over the N rows (the host checks sampled rows).
        const int64_t pool = 61;
        Rng rng{uint64_t(K) * 7919 + N + uint32_t(type)};
        std::vector<uint8_t> poolBytes;
        std::vector<float> poolF;
        makePool(type, K, pool, rng, poolBytes, poolF);
        std::vector<uint8_t> host(static_cast<size_t>(bytes));
        for (int64_t n = 0; n < N; ++n)
          std::memcpy(host.data() + n * rowBytes, poolBytes.data() + (n % pool) * rowBytes,
                      size_t(rowBytes));
        const int sets = static_cast<int>(std::clamp<int64_t>((256ll << 20) / bytes + 1, 1, 64));
        std::vector<cu::DevicePtr> w(sets);
        for (int s = 0; s < sets; ++s) {
          CHECK_OK(drv.malloc(&w[s], size_t(bytes), "weights"));
          CHECK_OK(drv.copyToDevice(w[s], host.data(), size_t(bytes)));
        }

        for (int T : tokenCounts)
          for (const std::string &mt : mvTiles) {
            auto cfg = selectQLinear(*tiles, uint32_t(type), K, N, T, false);
            CHECK_OK(cfg.status());
            if (mt == "fp32") {
              if (!cfg->mma)
                continue; // the registry's own choice: timed under "reg"
              cfg = qlinearDecodeFp32(*tiles, uint32_t(type), K, N, T);
              CHECK_OK(cfg.status());
            } else if (mt.size() == 5 && mt.compare(0, 4, "reg:") == 0) {
              const bool regMma = cfg->mma;
              cfg = qlinearDecodeXForm(*tiles, uint32_t(type), K, N, T, mt[4] - '0');
              if (!cfg.isOk() && !regMma)
                continue;
              if (!cfg.isOk()) {
                std::printf("  skipped: %s\n", cfg.status().message().c_str());
                continue;
              }
            } else if (mt != "reg") {
              int wv = 0, sv = 0, xv = -1;
              long long kv = 0;
              int used = -1; // the whole text, nothing after the last field
              const int got =
                  std::sscanf(mt.c_str(), "%d:%d:%lld%n:%d%n", &wv, &sv, &kv, &used, &xv, &used);
              if (got < 3 || used != static_cast<int>(mt.size()) ||
                  (got == 4 && (xv < 0 || xv > 4))) {
                std::fprintf(stderr,
                             "--mv-tiles: '%s' is not reg, reg:X, fp32, W:S:KC or W:S:KC:X\n",
                             mt.c_str());
                return 2;
              }
              const bool regMma = cfg->mma;
              cfg = qlinearDecodeWith(*tiles, uint32_t(type), K, N, T, wv, sv, kv, xv);
              if (!cfg.isOk() && !regMma)
                continue; // no mma step: the registry's config was timed under "reg"
              if (!cfg.isOk()) {
                std::printf("  skipped: %s\n", cfg.status().message().c_str());
                continue;
              }
            }
            auto it = kernels.find(cfg->variant + tn);
            if (it == kernels.end()) {
              cu::Function dump = nullptr;
              cu::Function f = glm5c::bench::buildKernel(
                  drv, nvrtc, cfg->variant + "_" + tn + (trace ? "_trace" : ""),
                  defines + traceDefine + qlinearSource(*cfg), codeArch, cfg->entry,
                  cfg->dynamicSmem, trace && cfg->mma ? "ql_trace_dump" : nullptr, &dump);
              it = kernels.emplace(cfg->variant + tn, std::make_pair(f, dump)).first;
            }
            cu::Function fn = it->second.first;
            // --sm120-occupancy: the CTAs per SM of the tile target's shared memory.
            int64_t launchSmem = cfg->dynamicSmem;
            std::string occTag;
            if (sm120Occupancy)
              occTag = " o" + std::to_string(glm5c::bench::padToTileOccupancy(
                                  drv, fn, *tiles, cfg->dynamicSmem, cfg->variant, &launchSmem));
            for (int forced : splitChoices) {
              QLinearLaunch l = qlinearLaunch(*cfg, sizing, T, N, K, forced);
              l.smem = static_cast<unsigned>(launchSmem);

              std::vector<uint16_t> xh;
              std::vector<float> xf;
              randomX(rng, size_t(T * K), xh, xf);
              cu::DevicePtr dx = 0, dy = 0, ws = 0, cnt = 0;
              CHECK_OK(drv.malloc(&dx, xh.size() * 2, "x"));
              CHECK_OK(drv.copyToDevice(dx, xh.data(), xh.size() * 2));
              CHECK_OK(drv.malloc(&dy, size_t(T * N) * 2, "y"));
              CHECK_OK(
                  drv.malloc(&ws, size_t(std::max<int64_t>(l.workspaceBytes, 4)), "workspace"));
              CHECK_OK(drv.malloc(&cnt, size_t(std::max<int64_t>(l.counters, 1)) * 4, "counters"));
              CHECK_OK(drv.memsetD8(cnt, 0, size_t(std::max<int64_t>(l.counters, 1)) * 4));
              int Ni = static_cast<int>(N), Ki = static_cast<int>(K), kps = l.kPerSplit;
              auto launch = [&](cu::DevicePtr wp) {
                void *args[] = {&wp, &dx, &dy, &ws, &cnt, &Ni, &Ki, &kps};
                CHECK_OK(pdl ? drv.launchOverlapped(fn, l.gridX, l.gridY, 1, l.threads, 1, l.smem,
                                                    stream, args, "qlinear_decode")
                             : drv.launch(fn, l.gridX, l.gridY, 1, l.threads, 1, 1, l.smem, stream,
                                          args, "qlinear_decode"));
              };

              // Correctness: one launch, 64 sampled rows against a double-precision host product.
              CHECK_OK(drv.memsetD8(dy, 0xff, size_t(T * N) * 2));
              launch(w[0]);
              CHECK_OK(drv.synchronize(stream));
              std::vector<uint16_t> yh(size_t(T * N));
              CHECK_OK(drv.copyToHost(yh.data(), dy, yh.size() * 2));
              double e2 = 0, r2 = 0;
              for (int i = 0; i < 64; ++i) {
                const int64_t n = i * (N - 1) / 63;
                const float *wr = poolF.data() + (n % pool) * K;
                for (int t = 0; t < T; ++t) {
                  double ref = 0;
                  for (int64_t k = 0; k < K; ++k)
                    ref += double(wr[k]) * xf[size_t(t * K + k)];
                  double got = glm5rt::bf16ToFloat(yh[size_t(t * N + n)]);
                  e2 += std::isfinite(got) ? (got - ref) * (got - ref) : 1e30;
                  r2 += ref * ref;
                }
              }
              const double err = std::sqrt(e2 / r2);
              const bool ok = err <= 1e-2;
              failed |= !ok;
              Row row{tn, tname, sh.what, K, N, T, l.splits, cfg->variant + defineTag + occTag,
                      0,  0,     err,     ok};
              if (!checkOnly) {
                row.us = glm5c::bench::timeGraph(drv, stream, static_cast<size_t>(sets), reps,
                                                 [&](size_t s) { launch(w[s]); });
                row.gbs = double(bytes) / row.us / 1e3;
              }
              std::printf("  %-7s %-5s %-11s %5lld -> %-6lld T=%d splits=%-2d rel err %.1e %s",
                          tn.c_str(), tname.c_str(), sh.what, static_cast<long long>(K),
                          static_cast<long long>(N), T, l.splits, err, ok ? "ok" : "FAILED");
              if (!checkOnly)
                std::printf("  %8.1f us %6.0f GB/s %5.1f%%", row.us, row.gbs,
                            100.0 * row.gbs / 4230.0);
              std::printf("\n");
              if (trace && !checkOnly && it->second.second)
                printTrace(drv, it->second.second, l.gridX * l.gridY, stream);
              rows.push_back(row);
              for (cu::DevicePtr d : {dx, dy, ws, cnt})
                (void)drv.free(d);
            }
          }
        if (gateUp && std::find(tokenCounts.begin(), tokenCounts.end(), 1) != tokenCounts.end()) {
          // glm.gate_up at one token: gate = this shape's rows, up = the pool's rows shifted by
          // 7 (different values, so a swapped pair would show), both rotated over the sets.
          auto cfg = selectGateUp(*tiles, uint32_t(type), K, N, false);
          CHECK_OK(cfg.status());
          std::vector<uint8_t> upHost(static_cast<size_t>(bytes));
          for (int64_t n = 0; n < N; ++n)
            std::memcpy(upHost.data() + n * rowBytes,
                        poolBytes.data() + ((n + 7) % pool) * rowBytes, size_t(rowBytes));
          std::vector<cu::DevicePtr> wu(sets);
          for (int s = 0; s < sets; ++s) {
            CHECK_OK(drv.malloc(&wu[s], size_t(bytes), "up weights"));
            CHECK_OK(drv.copyToDevice(wu[s], upHost.data(), size_t(bytes)));
          }
          cu::Function fn = glm5c::bench::buildKernel(drv, nvrtc, cfg->variant + "_" + tn,
                                                      defines + qlinearSource(*cfg), codeArch,
                                                      cfg->entry, cfg->dynamicSmem);
          const glm5rt::launch::QLinearParams gp = qlinearLaunchParams(*cfg);
          int64_t launchSmem = cfg->dynamicSmem;
          if (sm120Occupancy)
            glm5c::bench::padToTileOccupancy(drv, fn, *tiles, cfg->dynamicSmem, cfg->variant,
                                             &launchSmem);
          std::vector<uint16_t> xh;
          std::vector<float> xf;
          randomX(rng, static_cast<size_t>(K), xh, xf);
          cu::DevicePtr dx = 0, dy = 0;
          CHECK_OK(drv.malloc(&dx, xh.size() * 2, "x"));
          CHECK_OK(drv.copyToDevice(dx, xh.data(), xh.size() * 2));
          CHECK_OK(drv.malloc(&dy, size_t(N) * 2, "h"));
          for (int forced : splitChoices) {
            glm5rt::launch::MoeDecodeGrid g =
                glm5rt::launch::moeDecodeGrid(gp, true, sizing.smCount, 1, 1, N, K, 0, forced);
            g.smem = static_cast<unsigned>(launchSmem);
            cu::DevicePtr ws = 0, cnt = 0;
            CHECK_OK(
                drv.malloc(&ws, size_t(std::max<int64_t>(g.workspaceBytes, 4)), "workspace"));
            CHECK_OK(drv.malloc(&cnt, size_t(std::max<int64_t>(g.counters, 1)) * 4, "counters"));
            CHECK_OK(drv.memsetD8(cnt, 0, size_t(std::max<int64_t>(g.counters, 1)) * 4));
            int Ni = static_cast<int>(N), Ki = static_cast<int>(K), kps = g.kPerSplit;
            auto launch = [&](size_t s) {
              void *args[] = {&w[s], &wu[s], &dx, &dy, &ws, &cnt, &Ni, &Ki, &kps};
              CHECK_OK(pdl ? drv.launchOverlapped(fn, g.gridX, g.gridY, g.gridZ, g.threads, 1,
                                                  g.smem, stream, args, "qlinear_decode_gate_up")
                           : drv.launch(fn, g.gridX, g.gridY, g.gridZ, g.threads, 1, 1, g.smem,
                                        stream, args, "qlinear_decode_gate_up"));
            };
            CHECK_OK(drv.memsetD8(dy, 0xff, size_t(N) * 2));
            launch(0);
            CHECK_OK(drv.synchronize(stream));
            std::vector<uint16_t> yh(static_cast<size_t>(N));
            CHECK_OK(drv.copyToHost(yh.data(), dy, yh.size() * 2));
            double e2 = 0, r2 = 0;
            for (int i = 0; i < 64; ++i) {
              const int64_t n = i * (N - 1) / 63;
              const float *gr = poolF.data() + (n % pool) * K,
                          *ur = poolF.data() + ((n + 7) % pool) * K;
              double sg = 0, su = 0;
              for (int64_t k = 0; k < K; ++k) {
                sg += double(gr[k]) * xf[size_t(k)];
                su += double(ur[k]) * xf[size_t(k)];
              }
              const double ref = sg / (1 + std::exp(-sg)) * su;
              const double got = glm5rt::bf16ToFloat(yh[size_t(n)]);
              e2 += std::isfinite(got) ? (got - ref) * (got - ref) : 1e30;
              r2 += ref * ref;
            }
            const double err = std::sqrt(e2 / r2);
            const bool ok = err <= 1e-2;
            failed |= !ok;
            Row row{tn, tname, sh.what, K, N, 1, int(g.gridZ), cfg->variant + defineTag,
                    0,  0,     err,     ok};
            if (!checkOnly) {
              row.us =
                  glm5c::bench::timeGraph(drv, stream, static_cast<size_t>(sets), reps, launch);
              row.gbs = double(2 * bytes) / row.us / 1e3;
            }
            std::printf("  %-7s %-5s %-11s %5lld -> %-6lld gate_up splits=%-2d rel err %.1e %s",
                        tn.c_str(), tname.c_str(), sh.what, static_cast<long long>(K),
                        static_cast<long long>(N), int(g.gridZ), err, ok ? "ok" : "FAILED");
            if (!checkOnly)
              std::printf("  %8.1f us %6.0f GB/s %5.1f%%", row.us, row.gbs,
                          100.0 * row.gbs / 4230.0);
            std::printf("\n");
            rows.push_back(row);
            for (cu::DevicePtr d : {ws, cnt})
              (void)drv.free(d);
          }
          for (cu::DevicePtr d : wu)
            (void)drv.free(d);
          for (cu::DevicePtr d : {dx, dy})
            (void)drv.free(d);
        }
        for (cu::DevicePtr d : w)
          (void)drv.free(d);
      }
    }
  }

  std::printf("\n%-8s %-5s %-12s %6s %7s %2s %6s %9s %7s %6s %-8s %s\n", "tiles", "type", "shape",
              "in", "out", "T", "splits", "us", "GB/s", "% bw", "check", "variant");
  for (const Row &r : rows)
    std::printf("%-8s %-5s %-12s %6lld %7lld %2d %6d %9.1f %7.0f %6.1f %-8s %s\n", r.tiles.c_str(),
                r.type.c_str(), r.shape.c_str(), static_cast<long long>(r.K),
                static_cast<long long>(r.N), r.T, r.splits, r.us, r.gbs, 100.0 * r.gbs / 4230.0,
                r.ok ? "ok" : "FAILED", r.variant.c_str());
  return failed ? 1 : 0;
}

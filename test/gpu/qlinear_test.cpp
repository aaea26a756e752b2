// qlinear_decode, qlinear_prefill, qlinear_embed, qlinear_decode_gate_up and qlinear_decode_multi
// against runtime/host linear, embed and gateUp, for every supported weight type with bf16 and f32
// activations: K and
// N that are not multiples of the tiles, split-K with its counter re-armed across launches, a
// small-chunk single-split variant that wraps the weight ring and restages x many times, and
// out-of-range tokens.
#include "codegen/registry/QLinear.h"
#include "runtime/gguf/quant.h"
#include "runtime/host/ops.h"
#include "runtime/launch/Moe.h"
#include "test/gpu/gpu_test.h"

#include <algorithm>
#include <cmath>

using namespace glm5c::gputest;
using namespace glm5c::codegen;
using glm5rt::gguf::GgmlType;

namespace {

const GgmlType kTypes[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q4_0,
                           GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};

bool isKQuant(GgmlType t) {
  return t == GgmlType::Q4_K || t == GgmlType::Q5_K || t == GgmlType::Q6_K;
}

// A K that is a whole number of blocks but not of the tiles (576 = 2.25 x 256 steps, 9 x 64).
int64_t testK(GgmlType t) { return isKQuant(t) ? 512 : 576; }

// A random {K, N} weight quantized row by row; the host reference reads the same bytes.
struct QWeight {
  GgmlType type;
  int64_t K, N;
  std::vector<uint8_t> bytes;
  glm5rt::host::Weight w() const {
    return glm5rt::host::makeWeight(type, bytes.data(), {uint64_t(K), uint64_t(N)});
  }
};

bool makeWeight(QWeight &q, Rng &rng, Reporter &report) {
  const int64_t rowBytes = qlinearRowBytes(uint32_t(q.type), q.K);
  q.bytes.assign(size_t(rowBytes * q.N), 0);
  for (int64_t n = 0; n < q.N; ++n) {
    std::vector<float> row = rng.vec(size_t(q.K));
    auto st = glm5rt::gguf::quantizeRow(q.type, row.data(), uint64_t(q.K),
                                        q.bytes.data() + n * rowBytes, size_t(rowBytes));
    if (!st.isOk()) {
      report.fail("quantizeRow", st.message());
      return false;
    }
  }
  return true;
}

// Compares [T, N] outputs; on failure names the worst element, so a wrong mapping is visible.
void compare(Reporter &report, const std::string &what, const std::vector<float> &got,
             const std::vector<float> &ref, int64_t N, double bound, bool guardOk) {
  double err = relErr(got, ref);
  report.expectRelErr(what, err, bound);
  if (!guardOk)
    report.fail(what, "wrote past the end of the output");
  if (err > bound) {
    size_t worst = 0;
    double wd = -1;
    for (size_t i = 0; i < got.size(); ++i) {
      double d = std::isfinite(got[i]) ? std::fabs(double(got[i]) - ref[i]) : INFINITY;
      if (d > wd) {
        wd = d;
        worst = i;
      }
    }
    std::printf("    worst at t=%lld n=%lld: got %g, host %g\n", static_cast<long long>(worst / N),
                static_cast<long long>(worst % N), double(got[worst]), double(ref[worst]));
  }
}

std::string caseName(const char *kind, GgmlType t, bool f32, int64_t T, int64_t K, int64_t N) {
  return std::string(kind) + " " + qlinearTypeName(uint32_t(t)) + (f32 ? " f32" : " bf16") +
         " T=" + std::to_string(T) + " K=" + std::to_string(K) + " N=" + std::to_string(N);
}

// Runs a decode config for x [T, K] with the given split (splits == 0: the registry's launch)
// twice, the second time after re-poisoning the output: the split-K counters must be re-armed.
// widen (optional) edits x before it is uploaded; each token's row is then compared on its own.
void runDecode(Context &ctx, Reporter &report, const QLinearConfig &cfg, cu::Function fn,
               const QWeight &qw, int T, bool f32, bool forceOneSplit, const std::string &what,
               void (*widen)(std::vector<float> &, int64_t K) = nullptr) {
  Rng rng(uint64_t(qw.K) * 31 + T * 7 + uint32_t(qw.type));
  std::vector<float> xv = rng.vec(size_t(T) * qw.K);
  if (widen)
    widen(xv, qw.K);
  Acts x = actsFrom(ctx, std::move(xv), f32);
  std::vector<float> ref(size_t(T) * qw.N);
  auto st = glm5rt::host::linear(x.ref.data(), T, qw.K, qw.w(), ref.data());
  if (!st.isOk()) {
    report.fail("host linear " + what, st.message());
    return;
  }
  const QLinearLaunch l = qlinearLaunch(cfg, ctx.tiles, T, qw.N, qw.K, forceOneSplit ? 1 : 0);
  cu::DevicePtr dw = ctx.upload(qw.bytes);
  cu::DevicePtr ws = ctx.alloc(size_t(std::max<int64_t>(l.workspaceBytes, 4)));
  cu::DevicePtr cnt =
      ctx.upload(std::vector<uint32_t>(size_t(std::max<int64_t>(l.counters, 1)), 0));
  size_t n = size_t(T) * qw.N;
  int N = static_cast<int>(qw.N), K = static_cast<int>(qw.K), kps = l.kPerSplit;
  for (int rep = 0; rep < 2; ++rep) {
    cu::DevicePtr y = allocOut(ctx, n, f32);
    ctx.launch(fn, l.gridX, l.gridY, 1, l.threads, l.smem, &dw, &x.dev, &y, &ws, &cnt, &N, &K,
               &kps);
    bool guardOk = false;
    std::vector<float> got = downloadOut(ctx, y, n, f32, &guardOk);
    const std::string name =
        what + " splits=" + std::to_string(l.splits) + (rep ? " (relaunch)" : "");
    if (!widen) {
      compare(report, name, got, ref, qw.N, f32 ? 1e-5 : 1e-2, guardOk);
      continue;
    }
    for (int t = 0; t < T; ++t) {
      auto row = [&](const std::vector<float> &v) {
        return std::vector<float>(v.begin() + t * qw.N, v.begin() + (t + 1) * qw.N);
      };
      compare(report, name + " token " + std::to_string(t), row(got), row(ref), qw.N,
              f32 ? 1e-5 : 1e-2, guardOk);
    }
  }
}

// Builds `cfg` and, unless compiling only, runs it through runDecode at one split and at the
// registry's. False (reported) when the build or the entry lookup failed.
bool buildAndRunDecode(Context &ctx, Reporter &report, const QLinearConfig &cfg, const QWeight &qw,
                       int T, bool f32, const std::string &what,
                       void (*widen)(std::vector<float> &, int64_t K) = nullptr) {
  auto mod = ctx.build(cfg.variant, qlinearSource(cfg));
  if (!mod.isOk()) {
    report.fail("ctx.build(cfg.variant, qlinearSource(cfg))", mod.status().message());
    return false;
  }
  if (ctx.compileOnly)
    return true;
  auto fn = ctx.function(*mod, cfg.entry.c_str(), static_cast<int>(cfg.dynamicSmem));
  if (!fn.isOk()) {
    report.fail("ctx.function(mod, cfg.entry)", fn.status().message());
    return false;
  }
  runDecode(ctx, report, cfg, *fn, qw, T, f32, true, what, widen);
  runDecode(ctx, report, cfg, *fn, qw, T, f32, false, what, widen);
  return true;
}

// The 256-element-chunk, 2-stage variant of a decode config (every step restages x), its mma
// copies with the L2 prefetch that large products take (the registry's own tests run without).
QLinearConfig kc256(QLinearConfig cfg, int T) {
  cfg.kChunk = 256;
  if (cfg.mma)
    cfg.stages = 2;
  cfg.l2Prefetch = cfg.mma ? 128 : 0;
  cfg.dynamicSmem = qlinearDecodeSmem(cfg.type, cfg.mma, T, cfg.warps, cfg.stages, 256, cfg.xf16,
                                      cfg.rows16, cfg.xi8, cfg.xWarp);
  cfg.variant = cfg.variant.substr(0, cfg.variant.rfind("_kc")) + "_kc256" +
                (cfg.mma ? "_s2" : "") + qlinearDecodeSuffix(cfg);
  return cfg;
}

// x past fp16's range in some chunks (K = 4096, 256-element chunks): token 0 one value of
// 65536 (the first bf16 that fp16 cannot hold) in chunk 11, token 1 values up to 2.5e6 in chunks
// 3 and 9, token 2 none -- but it shares the chunks' scale.
void widenX(std::vector<float> &x, int64_t K) {
  x[size_t(3000)] = 65536.f;
  if (x.size() < size_t(2 * K))
    return; // one token
  x[size_t(K + 800)] = 3.0e5f;
  x[size_t(K + 801)] = -7.0e4f;
  x[size_t(K + 2400)] = -2.5e6f;
}

} // namespace

GPU_TEST(qlinear_decode) {
  const int64_t N = 1000;
  for (GgmlType type : kTypes)
    for (bool f32 : {false, true}) {
      QWeight qw{type, testK(type), N, {}};
      Rng rng(uint32_t(type) + 100);
      if (!ctx.compileOnly && !makeWeight(qw, rng, report))
        return;
      // The registry's choice at 1, 3 and 8 tokens, and the fp32 path with bf16 activations at
      // one and two, which BF16 and F16 weights take on large products (selectQLinear; this
      // shape takes the mma path).
      struct Case {
        int T;
        bool fp32Path;
      };
      const Case cases[] = {{1, false}, {3, false}, {8, false}, {1, true}, {2, true}};
      for (Case c : cases) {
        if (c.fp32Path && (f32 || (type != GgmlType::F16 && type != GgmlType::BF16)))
          continue;
        const int T = c.T;
        GPU_TRY(cfg, c.fp32Path ? qlinearDecodeFp32(ctx.tiles, uint32_t(type), qw.K, N, T)
                                : selectQLinear(ctx.tiles, uint32_t(type), qw.K, N, T, f32));
        GPU_TRY(mod, ctx.build(cfg.variant, qlinearSource(cfg)));
        if (ctx.compileOnly)
          continue;
        GPU_TRY(fn, ctx.function(mod, cfg.entry.c_str(), static_cast<int>(cfg.dynamicSmem)));
        runDecode(ctx, report, cfg, fn, qw, T, f32, false,
                  caseName(c.fp32Path ? "qlinear_decode fp32 path" : "qlinear_decode", type, f32,
                           T, qw.K, N));
      }
    }
}

// 256-element x chunks and (mma) a 2-deep ring over a long K in one split: every step restages
// x, the ring wraps many times, and for 32-element blocks the last step is partial (K = 4160,
// rows 2-byte aligned) or every row starts 16-byte aligned (K = 4096: the _r16 copies, as for
// Q6_K at K = 4096).
GPU_TEST(qlinear_decode_chunks) {
  const int64_t N = 200;
  const int T = 3;
  for (GgmlType type : kTypes)
    for (int64_t K : {int64_t(4096), int64_t(4160)})
      for (bool f32 : {false, true}) {
        if (isKQuant(type) && K % 256 != 0)
          continue;
        QWeight qw{type, K, N, {}};
        Rng rng(uint32_t(type) + 200);
        if (!ctx.compileOnly && !makeWeight(qw, rng, report))
          return;
        GPU_TRY(base, selectQLinear(ctx.tiles, uint32_t(type), qw.K, N, T, f32));
        if (!buildAndRunDecode(ctx, report, kc256(base, T), qw, T, f32,
                               caseName("qlinear_decode kc256", type, f32, T, qw.K, N)))
          return;
      }
}

// The late first fill (qlinear.cuh GLM_MV_LATE_FILL: Q6_K at one token, rows 16-byte aligned):
// the ring's first steps issued after the first x chunk is staged, at the registry's chunks and
// at 256-element chunks (x restaged every step), one split and the registry's.
GPU_TEST(qlinear_decode_late_fill) {
  const int64_t N = 200;
  for (int64_t K : {int64_t(2048), int64_t(4096)}) {
    QWeight qw{GgmlType::Q6_K, K, N, {}};
    Rng rng(uint32_t(K) + 250);
    if (!ctx.compileOnly && !makeWeight(qw, rng, report))
      return;
    GPU_TRY(base, selectQLinear(ctx.tiles, uint32_t(GgmlType::Q6_K), K, N, 1, false));
    if (!base.lateFill) {
      report.fail("qlinear_decode_late_fill K=" + std::to_string(K),
                  base.variant + " does not take the late first fill");
      return;
    }
    for (const QLinearConfig &cfg : {base, kc256(base, 1)})
      if (!buildAndRunDecode(ctx, report, cfg, qw, 1, false,
                             caseName("qlinear_decode late fill", GgmlType::Q6_K, false, 1, K, N)))
        return;
  }
}

GPU_TEST(qlinear_prefill) {
  const int64_t N = 1000;
  for (GgmlType type : kTypes)
    for (bool f32 : {false, true}) {
      QWeight qw{type, testK(type), N, {}};
      Rng rng(uint32_t(type) + 300);
      GPU_TRY(cfg, selectQLinear(ctx.tiles, uint32_t(type), qw.K, N, 16, f32));
      GPU_TRY(mod, ctx.build(cfg.variant, qlinearSource(cfg)));
      if (ctx.compileOnly)
        continue;
      GPU_TRY(fn, ctx.function(mod, cfg.entry.c_str(), static_cast<int>(cfg.dynamicSmem)));
      if (!makeWeight(qw, rng, report))
        return;
      cu::DevicePtr dw = ctx.upload(qw.bytes);
      for (int T : {16, 100}) {
        std::string what = caseName("qlinear_prefill", type, f32, T, qw.K, N);
        Acts x = makeActs(ctx, rng, size_t(T) * qw.K, f32);
        std::vector<float> ref(size_t(T) * N);
        auto st = glm5rt::host::linear(x.ref.data(), T, qw.K, qw.w(), ref.data());
        if (!st.isOk()) {
          report.fail("host linear " + what, st.message());
          return;
        }
        QLinearLaunch l = qlinearLaunch(cfg, ctx.tiles, T, N, qw.K);
        size_t n = size_t(T) * N;
        cu::DevicePtr y = allocOut(ctx, n, f32);
        int Ti = T, Ni = static_cast<int>(N), Ki = static_cast<int>(qw.K);
        ctx.launch(fn, l.gridX, l.gridY, 1, l.threads, l.smem, &dw, &x.dev, &y, &Ti, &Ni, &Ki);
        bool guardOk = false;
        std::vector<float> got = downloadOut(ctx, y, n, f32, &guardOk);
        compare(report, what, got, ref, N, f32 ? 1e-5 : 1e-2, guardOk);
      }
    }
}

// Exact rows (bound 0 with f32 activations: dequantization must match the host bit for bit),
// zeros and the error flag for out-of-range tokens.
GPU_TEST(qlinear_embed) {
  const int64_t V = 300;
  for (GgmlType type : kTypes)
    for (bool f32 : {false, true}) {
      QWeight qw{type, testK(type), V, {}};
      Rng rng(uint32_t(type) + 400);
      GPU_TRY(cfg, selectQEmbed(ctx.tiles, uint32_t(type), qw.K, f32));
      GPU_TRY(mod, ctx.build(cfg.variant, qlinearSource(cfg)));
      if (ctx.compileOnly)
        continue;
      GPU_TRY(fn, ctx.function(mod, cfg.entry.c_str(), 0));
      if (!makeWeight(qw, rng, report))
        return;
      const int T = 37;
      std::vector<int32_t> tokens(T);
      for (int t = 0; t < T; ++t)
        tokens[t] = static_cast<int32_t>(rng.next() % V);
      tokens[0] = V - 1;
      tokens[5] = -1;
      tokens[20] = static_cast<int32_t>(V);
      tokens[T - 3] = 1 << 30;
      const int lastBad = T - 3;
      std::vector<int32_t> clean = tokens;
      for (int32_t &tk : clean)
        if (tk < 0 || tk >= V)
          tk = 0;
      const int64_t H = qw.K;
      std::vector<float> ref(size_t(T) * H);
      auto st = glm5rt::host::embed(clean.data(), T, qw.w(), ref.data());
      if (!st.isOk()) {
        report.fail("host embed", st.message());
        return;
      }
      for (int t = 0; t < T; ++t)
        if (tokens[t] != clean[t])
          std::fill(ref.begin() + t * H, ref.begin() + (t + 1) * H, 0.f);
      cu::DevicePtr dw = ctx.upload(qw.bytes), dt = ctx.upload(tokens);
      cu::DevicePtr err = ctx.upload(std::vector<int32_t>{0});
      size_t n = size_t(T) * H;
      cu::DevicePtr out = allocOut(ctx, n, f32);
      QLinearLaunch l = qlinearLaunch(cfg, ctx.tiles, T, 0, H);
      int Vi = static_cast<int>(V), Hi = static_cast<int>(H);
      ctx.launch(fn, l.gridX, 1, 1, l.threads, 0, &dw, &dt, &out, &err, &Vi, &Hi);
      bool guardOk = false;
      std::vector<float> got = downloadOut(ctx, out, n, f32, &guardOk);
      std::string what = std::string("qlinear_embed ") + qlinearTypeName(uint32_t(type)) +
                         (f32 ? " f32" : " bf16") + " H=" + std::to_string(H);
      compare(report, what, got, ref, H, f32 ? 0.0 : 1e-2, guardOk);
      int32_t flag = ctx.download<int32_t>(err, 1)[0];
      report.expectRelErr(what + " error flag " + std::to_string(flag), flag == lastBad + 1 ? 0 : 1,
                          0);
    }
}

// Activations beyond fp16's range: the 4-bit types stage x as fp16 (dequant.cuh GLM_MV_XF16)
// and scale a chunk holding such values by a power of two; every bf16 path must still match
// the host, token by token (one split, and the registry's splits), at one and three tokens.
GPU_TEST(qlinear_decode_wide_x) {
  const int64_t N = 200, K = 4096;
  for (GgmlType type : kTypes)
    for (int T : {1, 3}) {
      GPU_TRY(base, selectQLinear(ctx.tiles, uint32_t(type), K, N, T, false));
      if (!base.mma)
        continue; // F32, F16: fp32 products
      QWeight qw{type, K, N, {}};
      Rng rng(uint32_t(type) + 300);
      if (!ctx.compileOnly && !makeWeight(qw, rng, report))
        return;
      if (!buildAndRunDecode(ctx, report, kc256(base, T), qw, T, false,
                             caseName("qlinear_decode wide x", type, false, T, K, N), widenX))
        return;
    }
}

// Tokens of different magnitudes for int8 x, which scales per token and 32-element sub-block:
// token t times 2^(5t); token 0's elements 256..511 zeros (their scales are 0). With K >= 4096
// token 1 holds one value 20 times its range: its sub-block's other values keep four levels,
// the rest of its step full resolution (measured 0.64e-2 of the token's norm; one scale per 256
// elements, as a first form had, is estimated at 1.7e-2 here, over the bound 1e-2).
void spreadX(std::vector<float> &x, int64_t K) {
  const int64_t T = int64_t(x.size()) / K;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t k = 0; k < K; ++k)
      x[size_t(t * K + k)] *= std::ldexp(1.f, int(5 * t));
  std::fill(x.begin() + 256, x.begin() + 512, 0.f);
  if (T > 1 && K >= 4096)
    x[size_t(K + 300)] = 20.f * 32.f;
}

// int8 x (dequant.cuh GLM_MV_XI8: Q4_0, Q4_K, Q5_K, Q6_K) forced at 2, 5 and 8 tokens (the
// registry takes it at 2-4), in the registry's tiles (K = 512; Q4_0 576, whose last step is
// partial) and in 256-element chunks over K = 4096 (every step restages x), at one split and the
// registry's, each launched twice, with spreadX's tokens compared one by one. The bound is
// bf16's: int8 per sub-block costs random data about 0.4% of the norm.
GPU_TEST(qlinear_decode_xi8) {
  const int64_t N = 1000;
  for (GgmlType type : {GgmlType::Q4_0, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K})
    for (int64_t K : {isKQuant(type) ? int64_t(512) : int64_t(576), int64_t(4096)})
      for (int T : {2, 5, 8}) {
        QWeight qw{type, K, N, {}};
        Rng rng(uint32_t(type) + 500);
        if (!ctx.compileOnly && !makeWeight(qw, rng, report))
          return;
        GPU_TRY(base, selectQLinear(ctx.tiles, uint32_t(type), K, N, T, false));
        GPU_TRY(forced, qlinearDecodeWith(ctx.tiles, uint32_t(type), K, N, T, base.warps,
                                          base.stages, base.kChunk, 2));
        if (!buildAndRunDecode(ctx, report, K >= 4096 ? kc256(forced, T) : forced, qw, T, false,
                               caseName("qlinear_decode int8 x", type, false, T, K, N), spreadX))
          return;
      }
}

// The x warp (qlinear.cuh GLM_MV_XWARP: one more warp stages x into two or three buffers handed
// over through shared-memory barriers) at 5 and 8 tokens, forced for every type with an mma step
// and scales (the registry takes it for Q8_0 and Q4_0): two buffers in the registry's tiles and
// three in 256-element chunks; and both in 256-element chunks over K = 4096 (16 chunks: every
// buffer's barriers go through many phases; 4160 for the 32-element blocks, whose last chunk
// and step are partial). One split and the registry's, launched twice.
GPU_TEST(qlinear_decode_xwarp) {
  const int64_t N = 1000;
  for (GgmlType type :
       {GgmlType::Q4_0, GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K})
    for (int64_t K : {testK(type), isKQuant(type) ? int64_t(4096) : int64_t(4160)})
      for (int T : {5, 8}) {
        QWeight qw{type, K, N, {}};
        Rng rng(uint32_t(type) + 600);
        if (!ctx.compileOnly && !makeWeight(qw, rng, report))
          return;
        GPU_TRY(base, selectQLinear(ctx.tiles, uint32_t(type), K, N, T, false));
        const bool ruled = type == GgmlType::Q8_0 || type == GgmlType::Q4_0;
        if (ruled && K == testK(type) && base.xWarp == 0) {
          report.fail(caseName("qlinear_decode x warp", type, false, T, K, N),
                      base.variant + ": the registry takes no x warp for Q8_0 and Q4_0 above "
                                     "four tokens");
          continue;
        }
        for (int xform : {3, 4}) {
          const int64_t kc = K >= 4096 || xform == 4 ? 256 : base.kChunk;
          GPU_TRY(cfg, qlinearDecodeWith(ctx.tiles, uint32_t(type), K, N, T, base.warps,
                                         base.stages, kc, xform));
          if (!buildAndRunDecode(ctx, report, cfg, qw, T, false,
                                 caseName("qlinear_decode x warp", type, false, T, K, N) + " (" +
                                     cfg.variant + ")"))
            return;
        }
      }
}

// glm.gate_up at decode: h = silu(gate x) * (up x) of one token, gate and up {K, N} of one type,
// at the registry's split and at forced 1, 2 and 3 splits, each launched twice (the second
// after re-poisoning h: the split counters must be re-armed). N = 1000 is not a whole number of
// row blocks; K = 2304 (Q4_K / Q5_K / Q6_K: 9 steps, splits of 5 + 4 and 3 x 3) or 2368 for the
// 32-element blocks (a partial last step).
GPU_TEST(qlinear_decode_gate_up) {
  const int64_t N = 1000;
  for (GgmlType type : kTypes)
    for (bool f32 : {false, true}) {
      const int64_t K = isKQuant(type) ? 2304 : 2368;
      QWeight gate{type, K, N, {}}, up{type, K, N, {}};
      Rng rng(uint32_t(type) + 300);
      if (!ctx.compileOnly && (!makeWeight(gate, rng, report) || !makeWeight(up, rng, report)))
        return;
      GPU_TRY(cfg, selectGateUp(ctx.tiles, uint32_t(type), K, N, f32));
      GPU_TRY(mod, ctx.build(cfg.variant, qlinearSource(cfg)));
      if (ctx.compileOnly)
        continue;
      GPU_TRY(fn, ctx.function(mod, cfg.entry.c_str(), static_cast<int>(cfg.dynamicSmem)));
      Acts x = makeActs(ctx, rng, size_t(K), f32);
      std::vector<float> ref(static_cast<size_t>(N));
      auto st = glm5rt::host::gateUp(x.ref.data(), 1, gate.w(), up.w(), ref.data());
      if (!st.isOk()) {
        report.fail("host gateUp", st.message());
        return;
      }
      cu::DevicePtr dg = ctx.upload(gate.bytes), du = ctx.upload(up.bytes);
      const glm5rt::launch::QLinearParams lp = qlinearLaunchParams(cfg);
      for (int forced : {0, 1, 2, 3}) {
        const auto g =
            glm5rt::launch::moeDecodeGrid(lp, true, ctx.tiles.smCount, 1, 1, N, K, 0, forced);
        cu::DevicePtr ws = ctx.alloc(size_t(std::max<int64_t>(g.workspaceBytes, 4)));
        cu::DevicePtr cnt =
            ctx.upload(std::vector<uint32_t>(size_t(std::max<int64_t>(g.counters, 1)), 0));
        int Ni = static_cast<int>(N), Ki = static_cast<int>(K), kps = g.kPerSplit;
        for (int rep = 0; rep < 2; ++rep) {
          cu::DevicePtr h = allocOut(ctx, size_t(N), f32);
          ctx.launch(fn, g.gridX, g.gridY, g.gridZ, g.threads, g.smem, &dg, &du, &x.dev, &h, &ws,
                     &cnt, &Ni, &Ki, &kps);
          bool guardOk = false;
          std::vector<float> got = downloadOut(ctx, h, size_t(N), f32, &guardOk);
          compare(report,
                  caseName("qlinear_decode_gate_up", type, f32, 1, K, N) +
                      " splits=" + std::to_string(g.gridZ) + (rep ? " (relaunch)" : ""),
                  got, ref, N, f32 ? 1e-5 : 1e-2, guardOk);
        }
      }
    }
}

// glm.linears at decode: two to four products of one x, product m's rows in its own output, at
// one and three tokens, the registry's split and forced 2 and 3, each launched twice (the second
// after re-poisoning: the counters must be re-armed). The products' N are not whole row tiles.
GPU_TEST(qlinear_decode_multi) {
  const std::vector<std::vector<int64_t>> groups = {{1000, 300, 130}, {200, 77}, {64, 17, 100, 33}};
  for (GgmlType type : kTypes)
    for (bool f32 : {false, true})
      for (const std::vector<int64_t> &Ns : groups) {
        const int64_t K = testK(type);
        std::vector<QWeight> qw;
        int64_t sumN = 0;
        Rng rng(uint32_t(type) + 400 + Ns.size());
        for (int64_t n : Ns) {
          qw.push_back({type, K, n, {}});
          sumN += n;
          if (!ctx.compileOnly && !makeWeight(qw.back(), rng, report))
            return;
        }
        for (int T : {1, 3}) {
          GPU_TRY(cfg, selectLinears(ctx.tiles, uint32_t(type), K, sumN, T, f32));
          GPU_TRY(mod, ctx.build(cfg.variant, qlinearSource(cfg)));
          if (ctx.compileOnly)
            continue;
          GPU_TRY(fn, ctx.function(mod, cfg.entry.c_str(), static_cast<int>(cfg.dynamicSmem)));
          Acts x = makeActs(ctx, rng, size_t(T) * K, f32);
          std::vector<std::vector<float>> ref;
          glm5rt::launch::QLinearMultiArgs a;
          for (size_t m = 0; m < qw.size(); ++m) {
            ref.emplace_back(size_t(T) * qw[m].N);
            auto st = glm5rt::host::linear(x.ref.data(), T, K, qw[m].w(), ref.back().data());
            if (!st.isOk()) {
              report.fail("host linear", st.message());
              return;
            }
            a.w[m] = ctx.upload(qw[m].bytes);
            a.n[m] = static_cast<int32_t>(qw[m].N);
          }
          const glm5rt::launch::QLinearParams lp = qlinearLaunchParams(cfg);
          for (int forced : {0, 2, 3}) {
            const auto g =
                glm5rt::launch::qlinearMultiGrid(lp, ctx.tiles.smCount, Ns, K, forced);
            cu::DevicePtr ws = ctx.alloc(size_t(std::max<int64_t>(g.workspaceBytes, 4)));
            cu::DevicePtr cnt =
                ctx.upload(std::vector<uint32_t>(size_t(std::max<int64_t>(g.counters, 1)), 0));
            int Ki = static_cast<int>(K), kps = g.kPerSplit;
            for (int rep = 0; rep < 2; ++rep) {
              for (size_t m = 0; m < qw.size(); ++m)
                a.y[m] = allocOut(ctx, size_t(T) * qw[m].N, f32);
              ctx.launch(fn, g.gridX, g.gridY, 1, g.threads, g.smem, &a, &x.dev, &ws, &cnt, &Ki,
                         &kps);
              for (size_t m = 0; m < qw.size(); ++m) {
                bool guardOk = false;
                std::vector<float> got =
                    downloadOut(ctx, a.y[m], size_t(T) * qw[m].N, f32, &guardOk);
                compare(report,
                        caseName("qlinear_decode_multi", type, f32, T, K, qw[m].N) + " product " +
                            std::to_string(m) + " of " + std::to_string(qw.size()) + " splits=" +
                            std::to_string(g.splits) + (rep ? " (relaunch)" : ""),
                        got, ref[m], qw[m].N, f32 ? 1e-5 : 1e-2, guardOk);
              }
            }
          }
        }
      }
}

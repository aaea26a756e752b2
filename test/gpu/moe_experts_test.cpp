// moe_router and the routed-expert kernels (moe_experts.cuh) against runtime/host: router logits
// against linear, the selection against moeGate on the same logits, and every (token, slot) row
// against swiglu on its expert's slice (and moeExperts), for F32, Q8_0 and K-quant weights.
//
// The router's ids are compared with host moeGate run on the GPU's own logits (which the kernel
// always writes): GPU fp32 dot products and the host's double ones differ in the last bits, which
// could flip a near-tie in the selection; with identical logits only the fp32 (GPU) versus double
// (host) comparison of s + bias remains, a difference of one rounding. The logits themselves are
// checked against host linear separately.
#include "codegen/registry/MoeExperts.h"
#include "codegen/registry/QLinear.h"
#include "runtime/gguf/quant.h"
#include "runtime/host/ops.h"
#include "test/gpu/gpu_test.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace glm5c::gputest;
using namespace glm5c::codegen;
using glm5rt::gguf::GgmlType;

namespace {

// `rows` rows of `cols` values uniform in [-scale, scale), quantized row by row to `type`.
bool quantRows(GgmlType type, int64_t rows, int64_t cols, float scale, Rng &rng,
               std::vector<uint8_t> &bytes, Reporter &report) {
  const int64_t rowBytes = qlinearRowBytes(uint32_t(type), cols);
  bytes.assign(size_t(rowBytes * rows), 0);
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<float> row = rng.vec(size_t(cols), scale);
    auto st = glm5rt::gguf::quantizeRow(type, row.data(), uint64_t(cols),
                                        bytes.data() + r * rowBytes, size_t(rowBytes));
    if (!st.isOk()) {
      report.fail("quantizeRow", st.message());
      return false;
    }
  }
  return true;
}

std::string typeName(GgmlType t) { return qlinearTypeName(uint32_t(t)); }

// Compares the P out rows of H with the reference (raw: P + 1 rows, the last a poisoned guard);
// on failure names the worst element's pair and expert. Returns the rows as floats.
std::vector<float> compareRows(Reporter &report, const std::string &what,
                               const std::vector<uint32_t> &raw, int P, int H,
                               const std::vector<float> &ref, const std::vector<int32_t> &ids,
                               double bound) {
  std::vector<float> got(static_cast<size_t>(P) * H);
  std::memcpy(got.data(), raw.data(), got.size() * 4);
  const double err = relErr(got, ref);
  report.expectRelErr(what + " rows", err, bound);
  if (!std::all_of(raw.begin() + got.size(), raw.end(), [](uint32_t b) { return b == ~0u; }))
    report.fail(what, "wrote past the last pair's row");
  if (err > bound) {
    size_t worst = 0;
    double wd = -1;
    for (size_t i = 0; i < got.size(); ++i) {
      const double d = std::isfinite(got[i]) ? std::fabs(double(got[i]) - ref[i]) : INFINITY;
      if (d > wd) {
        wd = d;
        worst = i;
      }
    }
    std::printf("    worst at pair %zu (expert %d) column %zu: got %g, host %g\n", worst / H,
                ids[worst / H], worst % H, double(got[worst]), double(ref[worst]));
  }
  return got;
}

// The per-pair decode kernels (qlinear.cuh kinds 3 and 4) of `cfgs`, built and loaded.
struct DecodePath {
  cu::Function gateUp = nullptr, down = nullptr;
  glm5rt::launch::QLinearParams gateParams, downParams;
  // Each phase kernel's CTAs per SM on this device (the runtime's split rule's input).
  int gateCtas = 1, downCtas = 1;
  // Split-K counters, zeroed once: every launch must leave them re-armed for the next.
  cu::DevicePtr counters = 0;
};
constexpr size_t kDecodeCounters = 1 << 14;

bool loadDecodePath(Context &ctx, Reporter &report, const MoeFfnConfigs &cfgs, DecodePath *d) {
  const QLinearConfig *qs[] = {&cfgs.decodeGateUp, &cfgs.decodeDown};
  for (int i = 0; i < 2; ++i) {
    auto mod = ctx.build(qs[i]->variant, qlinearSource(*qs[i]));
    if (!mod.isOk()) {
      report.fail("build " + qs[i]->variant, mod.status().message());
      return false;
    }
    if (ctx.compileOnly)
      continue;
    auto f = ctx.function(*mod, qs[i]->entry.c_str(), static_cast<int>(qs[i]->dynamicSmem));
    if (!f.isOk()) {
      report.fail("load " + qs[i]->variant, f.status().message());
      return false;
    }
    (i == 0 ? d->gateUp : d->down) = *f;
    (i == 0 ? d->gateParams : d->downParams) = qlinearLaunchParams(*qs[i]);
    int &ctas = i == 0 ? d->gateCtas : d->downCtas;
    Context::check(ctx.drv->occupancy(*f, static_cast<int>(qs[i]->threads),
                                      static_cast<size_t>(qs[i]->dynamicSmem), &ctas));
    ctas = std::max(ctas, 1);
  }
  if (!ctx.compileOnly)
    d->counters = ctx.upload(std::vector<uint32_t>(kDecodeCounters, 0u));
  return true;
}

// Runs the decode path on pairs `ids` (T k of them) of experts [first, first + E) and returns
// the out rows (P + 1 of H, the last a poisoned guard) as raw bits. splits > 0 forces that many K
// splits in both phases; 0 takes the runtime's choice with every pair active (each phase's
// splits from its kernel's occupancy on this device, as the cuda backend asks for it).
std::vector<uint32_t> runDecodePath(Context &ctx, const DecodePath &d, cu::DevicePtr x,
                                    cu::DevicePtr wg, cu::DevicePtr wu, cu::DevicePtr wd,
                                    const std::vector<int32_t> &ids, int first, int E, int k,
                                    int H, int F, bool f32, int splits = 0) {
  const int P = static_cast<int>(ids.size());
  const int sm = ctx.tiles.smCount;
  const auto a =
      glm5rt::launch::moeDecodeGrid(d.gateParams, true, sm, P, P, F, H, d.gateCtas, splits);
  const auto b =
      glm5rt::launch::moeDecodeGrid(d.downParams, false, sm, P, P, H, F, d.downCtas, splits);
  if (size_t(std::max(a.counters, b.counters)) > kDecodeCounters) {
    std::fprintf(stderr, "moe decode test: %lld split counters, %zu allocated\n",
                 static_cast<long long>(std::max(a.counters, b.counters)), kDecodeCounters);
    std::abort();
  }
  cu::DevicePtr did = ctx.upload(ids);
  cu::DevicePtr dh = ctx.alloc(size_t(P) * F * (f32 ? 4 : 2));
  cu::DevicePtr dout = ctx.alloc(size_t(P + 1) * H * 4);
  cu::DevicePtr ws = ctx.alloc(size_t(std::max<int64_t>({a.workspaceBytes, b.workspaceBytes, 4})));
  cu::DevicePtr ctr = d.counters;
  int kpsA = a.kPerSplit, kpsB = b.kPerSplit;
  ctx.launch(d.gateUp, a.gridX, a.gridY, a.gridZ, a.threads, a.smem, &wg, &wu, &x, &did, &dh, &ws,
             &ctr, &first, &E, &k, &F, &H, &kpsA);
  ctx.launch(d.down, b.gridX, b.gridY, b.gridZ, b.threads, b.smem, &wd, &dh, &did, &dout, &ws,
             &ctr, &first, &E, &F, &H, &kpsB);
  return ctx.download<uint32_t>(dout, size_t(P + 1) * H);
}

} // namespace

GPU_TEST(moe_experts_router) {
  struct Case {
    int E, k, H;
    GgmlType type;
    bool normalize;
  } cases[] = {{16, 2, 256, GgmlType::F32, true},
               {16, 2, 256, GgmlType::BF16, true},
               {256, 8, 6144, GgmlType::F32, true},
               {64, 6, 512, GgmlType::BF16, false}};
  for (const Case &c : cases)
    for (bool f32 : {false, true}) {
      GPU_TRY(cfg, selectMoeRouter(ctx.tiles, uint32_t(c.type), c.E, c.k, c.H, c.normalize, f32));
      GPU_TRY(mod, ctx.build(cfg.variant, moeRouterSource(cfg)));
      if (ctx.compileOnly)
        continue;
      GPU_TRY(fn, ctx.function(mod, cfg.entry.c_str(), static_cast<int>(cfg.dynamicSmem)));
      Rng rng(uint64_t(c.E) * 7 + c.H + (f32 ? 1 : 0));
      // Logits of std ~3; rows 0 and 1 and their biases are equal (boosted, so they are often
      // chosen): experts 0 and 1 tie exactly in every token and 0 must come first.
      std::vector<float> w = rng.vec(size_t(c.E) * c.H, 9.f / std::sqrt(float(c.H)));
      std::copy(w.begin(), w.begin() + c.H, w.begin() + c.H);
      std::vector<uint8_t> wbytes;
      if (c.type == GgmlType::F32) {
        wbytes.resize(w.size() * 4);
        std::memcpy(wbytes.data(), w.data(), wbytes.size());
      } else {
        std::vector<uint16_t> b = toBf16(w);
        wbytes.resize(b.size() * 2);
        std::memcpy(wbytes.data(), b.data(), wbytes.size());
      }
      std::vector<float> bias = rng.vec(size_t(c.E), 0.1f);
      bias[0] = bias[1] = 0.3f;
      const glm5rt::host::Weight W =
          glm5rt::host::makeWeight(c.type, wbytes.data(), {uint64_t(c.H), uint64_t(c.E)});
      const glm5rt::host::Weight B =
          glm5rt::host::makeWeight(GgmlType::F32, bias.data(), {uint64_t(c.E)});
      cu::DevicePtr dw = ctx.upload(wbytes), db = ctx.upload(bias);
      float scale = 2.5f;
      for (int T : {1, 37}) {
        const std::string what = "moe_router " + typeName(c.type) + (f32 ? " f32" : " bf16") +
                                 " E=" + std::to_string(c.E) + " k=" + std::to_string(c.k) +
                                 " H=" + std::to_string(c.H) + " T=" + std::to_string(T);
        Acts x = makeActs(ctx, rng, size_t(T) * c.H, f32);
        std::vector<float> refLogits(size_t(T) * c.E);
        auto st = glm5rt::host::linear(x.ref.data(), T, c.H, W, refLogits.data());
        if (!st.isOk()) {
          report.fail("host linear " + what, st.message());
          return;
        }
        const MoeRouterLaunch l = moeRouterLaunch(cfg, ctx.tiles, T);
        cu::DevicePtr cnt = ctx.upload(std::vector<uint32_t>(size_t(T), 0u));
        // Runs 0 and 1: the registry's split (1 finds the counters re-armed by 0); 2: one CTA
        // per token, which gates from shared memory.
        for (int run = 0; run < 3; ++run) {
          const unsigned gy = run == 2 ? 1u : l.gridY;
          const std::string name =
              what + " splits=" + std::to_string(gy) + (run == 1 ? " (relaunch)" : "");
          cu::DevicePtr dlog = ctx.alloc(refLogits.size() * 4);
          cu::DevicePtr dwt = ctx.alloc(size_t(T) * c.k * 4), did = ctx.alloc(size_t(T) * c.k * 4);
          ctx.launch(fn, l.gridX, gy, 1, l.threads, l.smem, &x.dev, &dw, &db, &dlog, &cnt, &dwt,
                     &did, &scale);
          std::vector<float> gotLogits = ctx.download<float>(dlog, refLogits.size());
          std::vector<float> gotW = ctx.download<float>(dwt, size_t(T) * c.k);
          std::vector<int32_t> gotIds = ctx.download<int32_t>(did, size_t(T) * c.k);
          report.expectRelErr(name + " logits", relErr(gotLogits, refLogits), 1e-5);
          std::vector<float> refW(gotW.size());
          std::vector<int32_t> refIds(gotIds.size());
          st = glm5rt::host::moeGate(gotLogits.data(), T, c.E, B, c.k, c.normalize, scale,
                                     refW.data(), refIds.data());
          if (!st.isOk()) {
            report.fail("host moeGate " + name, st.message());
            return;
          }
          int mismatch = 0;
          for (size_t i = 0; i < refIds.size(); ++i)
            mismatch += gotIds[i] != refIds[i];
          if (mismatch)
            report.fail(name + " ids", std::to_string(mismatch) + " ids differ from host moeGate");
          report.expectRelErr(name + " weights", relErr(gotW, refW), 1e-5);
        }
      }
    }
}

GPU_TEST(moe_experts_ffn) {
  struct Case {
    GgmlType gateUp, down;
    int H, F;
  } cases[] = {
      {GgmlType::F32, GgmlType::F32, 512, 768},   {GgmlType::Q8_0, GgmlType::Q8_0, 544, 288},
      {GgmlType::Q4_K, GgmlType::Q4_K, 512, 768}, {GgmlType::Q4_K, GgmlType::Q6_K, 512, 768},
      {GgmlType::Q4_K, GgmlType::Q8_0, 768, 256}, {GgmlType::Q8_0, GgmlType::Q4_K, 256, 512}};
  const int E = 16, k = 4;
  for (const Case &c : cases)
    for (bool f32 : {false, true}) {
      GPU_TRY(cfgs, selectMoeExpertFfn(ctx.tiles, uint32_t(c.gateUp), uint32_t(c.gateUp),
                                       uint32_t(c.down), E, k, c.H, c.F, f32));
      GPU_TRY(modA, ctx.build(cfgs.gateUp.variant, moeFfnSource(cfgs.gateUp)));
      GPU_TRY(modB, ctx.build(cfgs.down.variant, moeFfnSource(cfgs.down)));
      DecodePath dp;
      if (!loadDecodePath(ctx, report, cfgs, &dp))
        return;
      if (ctx.compileOnly)
        continue;
      GPU_TRY(fnA, ctx.function(modA, cfgs.gateUp.entry.c_str(),
                                static_cast<int>(cfgs.gateUp.dynamicSmem)));
      GPU_TRY(fnB,
              ctx.function(modB, cfgs.down.entry.c_str(), static_cast<int>(cfgs.down.dynamicSmem)));
      Rng rng(uint64_t(c.gateUp) * 100 + uint64_t(c.down) * 7 + c.H + (f32 ? 1 : 0));
      // Gate and up {H, F, E}: E F rows of H; down {F, H, E}: E H rows of F. Scales keep the
      // products of order 1.
      std::vector<uint8_t> gb, ub, dbytes;
      const float su = 3.f / std::sqrt(float(c.H)), sd = 3.f / std::sqrt(float(c.F));
      if (!quantRows(c.gateUp, int64_t(E) * c.F, c.H, su, rng, gb, report) ||
          !quantRows(c.gateUp, int64_t(E) * c.F, c.H, su, rng, ub, report) ||
          !quantRows(c.down, int64_t(E) * c.H, c.F, sd, rng, dbytes, report))
        return;
      const uint64_t H = uint64_t(c.H), F = uint64_t(c.F);
      const glm5rt::host::Weight gW = glm5rt::host::makeWeight(c.gateUp, gb.data(), {H, F, E});
      const glm5rt::host::Weight uW = glm5rt::host::makeWeight(c.gateUp, ub.data(), {H, F, E});
      const glm5rt::host::Weight dW = glm5rt::host::makeWeight(c.down, dbytes.data(), {F, H, E});
      const int64_t guRow = qlinearRowBytes(uint32_t(c.gateUp), c.H);
      const int64_t dRow = qlinearRowBytes(uint32_t(c.down), c.F);
      cu::DevicePtr dg = ctx.upload(gb), du = ctx.upload(ub), dd = ctx.upload(dbytes);
      for (int T : {1, 4, 37, 70}) {
        const std::string what = "moe_expert " + typeName(c.gateUp) + "/" + typeName(c.down) +
                                 (f32 ? " f32" : " bf16") + " H=" + std::to_string(c.H) +
                                 " F=" + std::to_string(c.F) + " T=" + std::to_string(T);
        const int P = T * k;
        // k distinct experts per token; with T = 70 slot 0 is always expert 5, which then holds
        // more than one 64-position tile.
        std::vector<int32_t> ids(static_cast<size_t>(P));
        for (int t = 0; t < T; ++t) {
          std::vector<int32_t> perm(E);
          for (int e = 0; e < E; ++e)
            perm[e] = e;
          for (int e = E - 1; e > 0; --e)
            std::swap(perm[e], perm[rng.next() % uint64_t(e + 1)]);
          if (T == 70)
            std::swap(perm[0], *std::find(perm.begin(), perm.end(), 5));
          std::copy(perm.begin(), perm.begin() + k, ids.begin() + size_t(t) * k);
        }
        // moe_group's output: expert-major positions, stable in pair order.
        std::vector<int32_t> pairOf(static_cast<size_t>(P)), offsets(static_cast<size_t>(E) + 1, 0);
        for (int p = 0; p < P; ++p)
          pairOf[p] = p;
        std::stable_sort(pairOf.begin(), pairOf.end(),
                         [&](int a, int b) { return ids[a] < ids[b]; });
        for (int p = 0; p < P; ++p)
          ++offsets[size_t(ids[p]) + 1];
        for (int e = 0; e < E; ++e)
          offsets[size_t(e) + 1] += offsets[size_t(e)];

        Acts x = makeActs(ctx, rng, size_t(T) * c.H, f32);
        // Reference: each pair's row from swiglu on its expert's slice.
        std::vector<float> ref(static_cast<size_t>(P) * c.H);
        for (int e = 0; e < E; ++e) {
          const int n = offsets[size_t(e) + 1] - offsets[size_t(e)];
          if (n == 0)
            continue;
          std::vector<float> xs(size_t(n) * c.H), ys(xs.size());
          for (int r = 0; r < n; ++r) {
            const int t = pairOf[size_t(offsets[size_t(e)] + r)] / k;
            std::copy(x.ref.begin() + size_t(t) * c.H, x.ref.begin() + size_t(t + 1) * c.H,
                      xs.begin() + size_t(r) * c.H);
          }
          auto st = glm5rt::host::swiglu(
              xs.data(), n, glm5rt::host::makeWeight(c.gateUp, gb.data() + e * F * guRow, {H, F}),
              glm5rt::host::makeWeight(c.gateUp, ub.data() + e * F * guRow, {H, F}),
              glm5rt::host::makeWeight(c.down, dbytes.data() + e * H * dRow, {F, H}), ys.data());
          if (!st.isOk()) {
            report.fail("host swiglu " + what, st.message());
            return;
          }
          for (int r = 0; r < n; ++r) {
            const int p = pairOf[size_t(offsets[size_t(e)] + r)];
            std::copy(ys.begin() + size_t(r) * c.H, ys.begin() + size_t(r + 1) * c.H,
                      ref.begin() + size_t(p) * c.H);
          }
        }

        cu::DevicePtr doff = ctx.upload(offsets), dpair = ctx.upload(pairOf);
        cu::DevicePtr dh = ctx.alloc(size_t(P) * c.F * (f32 ? 4 : 2));
        cu::DevicePtr dout = ctx.alloc(size_t(P + 1) * c.H * 4); // one guard row, poisoned
        const MoeFfnLaunch la = moeFfnLaunch(cfgs.gateUp, T), lb = moeFfnLaunch(cfgs.down, T);
        ctx.launch(fnA, la.gridX, la.gridY, 1, la.threads, la.smem, &x.dev, &dg, &du, &doff, &dpair,
                   &dh);
        ctx.launch(fnB, lb.gridX, lb.gridY, 1, lb.threads, lb.smem, &dh, &dd, &doff, &dpair, &dout);
        const double bound = f32 ? 1e-5 : 1e-2;
        const std::vector<float> got =
            compareRows(report, what, ctx.download<uint32_t>(dout, size_t(P + 1) * c.H), P, c.H,
                        ref, ids, bound);
        // The same rows through host moeExperts with every weight 1: per-token slot sums.
        std::vector<float> ones(static_cast<size_t>(P), 1.f), refSum(static_cast<size_t>(T) * c.H);
        std::vector<float> gotSum(refSum.size());
        auto st = glm5rt::host::moeExperts(x.ref.data(), T, ones.data(), ids.data(), k, gW, uW, dW,
                                           refSum.data());
        if (!st.isOk()) {
          report.fail("host moeExperts " + what, st.message());
          return;
        }
        for (int t = 0; t < T; ++t)
          for (int col = 0; col < c.H; ++col) {
            double s = 0;
            for (int j = 0; j < k; ++j)
              s += got[(size_t(t) * k + j) * c.H + col];
            gotSum[size_t(t) * c.H + col] = float(s);
          }
        report.expectRelErr(what + " slot sums vs moeExperts", relErr(gotSum, refSum), bound);
        if (T <= 4) {
          // The per-pair decode path on the same pairs; then as a rank holding experts [4, 12)
          // only (the others' pairs, and id -1, write nothing: their rows stay poisoned).
          compareRows(report, what + " decode path",
                      runDecodePath(ctx, dp, x.dev, dg, du, dd, ids, 0, E, k, c.H, c.F, f32), P,
                      c.H, ref, ids, bound);
          // K split in 3 (H and F of 256 to 768: 1-3 steps per split), twice: the second
          // launch finds the counters re-armed by the first.
          for (int run = 0; run < 2; ++run)
            compareRows(report, what + " decode path, 3 splits" + (run ? " (relaunch)" : ""),
                        runDecodePath(ctx, dp, x.dev, dg, du, dd, ids, 0, E, k, c.H, c.F, f32, 3),
                        P, c.H, ref, ids, bound);
          std::vector<int32_t> shardIds = ids;
          shardIds[0] = -1;
          const size_t boxOff = size_t(4) * size_t(c.F);
          const std::vector<uint32_t> raw =
              runDecodePath(ctx, dp, x.dev, dg + boxOff * guRow, du + boxOff * guRow,
                            dd + size_t(4) * size_t(c.H) * dRow, shardIds, 4, 8, k, c.H, c.F,
                            f32, 2);
          std::vector<float> got2(size_t(P) * c.H), ref2(got2.size());
          size_t kept = 0;
          bool untouched = true;
          for (int q = 0; q < P; ++q) {
            const bool mine = shardIds[q] >= 4 && shardIds[q] < 12;
            for (int col = 0; col < c.H; ++col) {
              const size_t i = size_t(q) * c.H + col;
              if (mine) {
                std::memcpy(&got2[kept], &raw[i], 4);
                ref2[kept++] = ref[i];
              } else {
                untouched &= raw[i] == ~0u;
              }
            }
          }
          got2.resize(kept);
          ref2.resize(kept);
          report.expectRelErr(what + " decode path, experts [4, 12)", relErr(got2, ref2), bound);
          if (!untouched)
            report.fail(what + " decode path, experts [4, 12)", "wrote a pair of another rank");
        }
      }
    }
}

// GLM-5's shape (E = 256, k = 8, H = 6144, F = 2048; Q4_K gate/up with Q6_K down, a published
// mix) at decode, T = 1: only the 8 routed experts' slices are uploaded and the rest of the
// stacked tensors stay poisoned (NaN), so reading any other expert's rows shows in the result.
GPU_TEST(moe_experts_glm5) {
  const int E = 256, k = 8, H = 6144, F = 2048, T = 1, P = T * k;
  const GgmlType gu = GgmlType::Q4_K, down = GgmlType::Q6_K;
  for (bool f32 : {false, true}) {
    GPU_TRY(cfgs, selectMoeExpertFfn(ctx.tiles, uint32_t(gu), uint32_t(gu), uint32_t(down), E, k, H,
                                     F, f32));
    GPU_TRY(modA, ctx.build(cfgs.gateUp.variant, moeFfnSource(cfgs.gateUp)));
    GPU_TRY(modB, ctx.build(cfgs.down.variant, moeFfnSource(cfgs.down)));
    DecodePath dp;
    if (!loadDecodePath(ctx, report, cfgs, &dp))
      return;
    if (ctx.compileOnly)
      continue;
    GPU_TRY(fnA, ctx.function(modA, cfgs.gateUp.entry.c_str(),
                              static_cast<int>(cfgs.gateUp.dynamicSmem)));
    GPU_TRY(fnB,
            ctx.function(modB, cfgs.down.entry.c_str(), static_cast<int>(cfgs.down.dynamicSmem)));
    const std::string what =
        std::string("moe_expert GLM-5 Q4_K/Q6_K") + (f32 ? " f32" : " bf16") + " T=1";
    Rng rng(f32 ? 5 : 4);
    // Slot j routes to a distinct random expert; grouping sorts the 8 pairs by expert.
    std::vector<int32_t> perm(E);
    for (int e = 0; e < E; ++e)
      perm[e] = e;
    for (int e = E - 1; e > 0; --e)
      std::swap(perm[e], perm[rng.next() % uint64_t(e + 1)]);
    std::vector<int32_t> ids(perm.begin(), perm.begin() + k);
    std::vector<int32_t> pairOf(static_cast<size_t>(P)), offsets(static_cast<size_t>(E) + 1, 0);
    for (int p = 0; p < P; ++p)
      pairOf[p] = p;
    std::sort(pairOf.begin(), pairOf.end(), [&](int a, int b) { return ids[a] < ids[b]; });
    for (int p = 0; p < P; ++p)
      ++offsets[size_t(ids[p]) + 1];
    for (int e = 0; e < E; ++e)
      offsets[size_t(e) + 1] += offsets[size_t(e)];

    const int64_t guRow = qlinearRowBytes(uint32_t(gu), H),
                  dRow = qlinearRowBytes(uint32_t(down), F);
    const size_t guExpert = size_t(F) * guRow, dExpert = size_t(H) * dRow;
    cu::DevicePtr dg = ctx.alloc(guExpert * E), du = ctx.alloc(guExpert * E);
    cu::DevicePtr dd = ctx.alloc(dExpert * E);
    Acts x = makeActs(ctx, rng, size_t(T) * H, f32);
    std::vector<float> ref(static_cast<size_t>(P) * H);
    const float su = 3.f / std::sqrt(float(H)), sd = 3.f / std::sqrt(float(F));
    for (int j = 0; j < k; ++j) {
      const int e = ids[size_t(j)];
      std::vector<uint8_t> gb, ub, db;
      if (!quantRows(gu, F, H, su, rng, gb, report) || !quantRows(gu, F, H, su, rng, ub, report) ||
          !quantRows(down, H, F, sd, rng, db, report))
        return;
      Context::check(ctx.drv->copyToDevice(dg + e * guExpert, gb.data(), gb.size()));
      Context::check(ctx.drv->copyToDevice(du + e * guExpert, ub.data(), ub.size()));
      Context::check(ctx.drv->copyToDevice(dd + e * dExpert, db.data(), db.size()));
      auto st = glm5rt::host::swiglu(
          x.ref.data(), 1, glm5rt::host::makeWeight(gu, gb.data(), {uint64_t(H), uint64_t(F)}),
          glm5rt::host::makeWeight(gu, ub.data(), {uint64_t(H), uint64_t(F)}),
          glm5rt::host::makeWeight(down, db.data(), {uint64_t(F), uint64_t(H)}),
          ref.data() + size_t(j) * H);
      if (!st.isOk()) {
        report.fail("host swiglu " + what, st.message());
        return;
      }
    }
    cu::DevicePtr doff = ctx.upload(offsets), dpair = ctx.upload(pairOf);
    cu::DevicePtr dh = ctx.alloc(size_t(P) * F * (f32 ? 4 : 2));
    cu::DevicePtr dout = ctx.alloc(size_t(P + 1) * H * 4);
    const MoeFfnLaunch la = moeFfnLaunch(cfgs.gateUp, T), lb = moeFfnLaunch(cfgs.down, T);
    ctx.launch(fnA, la.gridX, la.gridY, 1, la.threads, la.smem, &x.dev, &dg, &du, &doff, &dpair,
               &dh);
    ctx.launch(fnB, lb.gridX, lb.gridY, 1, lb.threads, lb.smem, &dh, &dd, &doff, &dpair, &dout);
    compareRows(report, what, ctx.download<uint32_t>(dout, size_t(P + 1) * H), P, H, ref, ids,
                f32 ? 1e-5 : 1e-2);
    compareRows(report, what + " decode path",
                runDecodePath(ctx, dp, x.dev, dg, du, dd, ids, 0, E, k, H, F, f32), P, H, ref, ids,
                f32 ? 1e-5 : 1e-2);
    // As on a rank holding one of the token's experts: the split count for one active pair.
    compareRows(report, what + " decode path, 8 splits",
                runDecodePath(ctx, dp, x.dev, dg, du, dd, ids, 0, E, k, H, F, f32, 8), P, H, ref,
                ids, f32 ? 1e-5 : 1e-2);
  }
}

// The decode phases with forced tiles (qlinearDecodeWith, as glm5c-bench-moe --mv-tiles makes
// them) at GLM-5's shape: Q6_K at one token is a product qlinearLateFill gives the late first
// fill as a lone qlinear_decode, which an expert kernel must not take (qlinear.cuh asserts it).
// Each phase builds, without it.
GPU_TEST(moe_experts_forced_tiles) {
  const int64_t H = 6144, F = 2048;
  const struct {
    GgmlType type;
    bool gateUp;
  } phases[] = {{GgmlType::Q4_K, true},
                {GgmlType::Q6_K, true},
                {GgmlType::Q6_K, false},
                {GgmlType::Q8_0, false}};
  for (const auto &ph : phases) {
    GPU_TRY(q, qlinearDecodeWith(ctx.tiles, uint32_t(ph.type), ph.gateUp ? H : F,
                                 ph.gateUp ? F : H, 1, 4, 4, 1024));
    const QLinearConfig cfg = moeDecodePhase(q, ph.gateUp);
    if (cfg.lateFill || cfg.variant.find("_lf") != std::string::npos)
      report.fail(cfg.variant, "an expert kernel with the late first fill");
    GPU_TRY(mod, ctx.build(cfg.variant, qlinearSource(cfg)));
    (void)mod;
  }
}

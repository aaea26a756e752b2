// The elementwise family (rms_norm, add_rms_norm, layer_norm, rope, rope_cache_append,
// cache_append, swiglu_mul, add) against runtime/host, with bf16 and f32 activations: GLM-5's
// widths and a tiny one, RoPE at positions up to 202751, paged caches with shuffled block tables.
#include "codegen/registry/Elementwise.h"
#include "runtime/host/ops.h"
#include "test/gpu/gpu_test.h"

#include <algorithm>
#include <set>
#include <utility>

using namespace glm5c::gputest;
using namespace glm5c::codegen;
namespace host = glm5rt::host;
using glm5rt::gguf::GgmlType;

namespace {

// Activations of one instantiation: bf16 or f32 on the device, float on the host.
struct Act {
  bool f32;
  size_t bytes(size_t n) const { return n * (f32 ? 4 : 2); }
  // The values the device holds for v (bf16 rounds); references are computed from these.
  std::vector<float> round(const std::vector<float> &v) const {
    return f32 ? v : fromBf16(toBf16(v));
  }
  cu::DevicePtr upload(Context &ctx, const std::vector<float> &v) const {
    return f32 ? ctx.upload(v) : ctx.upload(toBf16(v));
  }
  std::vector<float> download(Context &ctx, cu::DevicePtr p, size_t n) const {
    return f32 ? ctx.download<float>(p, n) : fromBf16(ctx.download<uint16_t>(p, n));
  }
  double bound() const { return f32 ? 1e-5 : 1e-2; }
  std::string name() const { return f32 ? "f32" : "bf16"; }
};

constexpr float kTheta = 1.0e6f;

unsigned grid(int64_t n) { return static_cast<unsigned>(n); }

// Launches after the buffers are ready. Context::alloc's poison (cuMemsetD8) and upload
// (cuMemcpyHtoD from pageable memory) are asynchronous on the legacy default stream, which does
// not order with the test's non-blocking stream: without this wait a late poison can land over
// a kernel's output (seen on the H200 as a NaN cache row).
template <typename... Args>
void launch(Context &ctx, cu::Function f, unsigned blocks, unsigned threads, Args *...args) {
  Context::check(ctx.drv->synchronize(nullptr));
  ctx.launch(f, blocks, 1, 1, threads, 0, args...);
}

} // namespace

GPU_TEST(elementwise_norms) {
  struct Case {
    NormKind kind;
    int64_t D;
    int rows;
    int64_t ld; // input row stride (rms_norm, layer_norm)
    bool alias; // add_rms_norm writes h over a
  } cases[] = {
      {NormKind::Rms, 6144, 13, 6144, false},    {NormKind::Rms, 2048, 13, 2048, false},
      {NormKind::Rms, 512, 13, 576, false},      {NormKind::Rms, 256, 29, 256, false},
      {NormKind::AddRms, 6144, 13, 6144, false}, {NormKind::AddRms, 2048, 13, 2048, true},
      {NormKind::AddRms, 512, 13, 512, false},   {NormKind::AddRms, 256, 29, 256, false},
      {NormKind::Layer, 6144, 13, 6144, false},  {NormKind::Layer, 2048, 13, 2048, false},
      {NormKind::Layer, 512, 13, 576, false},    {NormKind::Layer, 256, 29, 256, false},
      {NormKind::Layer, 128, 37, 128, false},
  };
  for (bool f32 : {false, true}) {
    const Act act{f32};
    for (const Case &c : cases) {
      NormShape shape;
      shape.kind = c.kind;
      shape.width = c.D;
      shape.actF32 = f32;
      GPU_TRY(cfg, selectNorm(ctx.tiles, shape));
      GPU_TRY(mod, ctx.build(cfg.variant, normSource(cfg)));
      if (ctx.compileOnly)
        continue;
      GPU_TRY(fn, ctx.function(mod, cfg.entry.c_str()));
      const int64_t D = c.D;
      const size_t n = size_t(c.rows) * D;
      Rng rng(uint64_t(D) * 17 + c.rows + static_cast<int>(c.kind) * 1000 + f32);
      // Non-trivial weights (never all ones) and bias; layer-norm input with a non-zero mean.
      std::vector<float> w(static_cast<size_t>(D)), bias(w.size());
      for (int64_t i = 0; i < D; ++i) {
        w[i] = 1.f + 0.5f * rng.uniform();
        bias[i] = 0.25f * rng.uniform();
      }
      const host::Weight hw = host::makeWeight(GgmlType::F32, w.data(), {uint64_t(D)});
      const host::Weight hb = host::makeWeight(GgmlType::F32, bias.data(), {uint64_t(D)});
      std::string what = cfg.variant + " rows=" + std::to_string(c.rows) +
                         (c.ld != D ? " ld=" + std::to_string(c.ld) : "") + (c.alias ? " h=a" : "");
      cu::DevicePtr dw = ctx.upload(w), dbias = ctx.upload(bias);
      cu::DevicePtr dy = ctx.alloc(act.bytes(n));
      int rows = c.rows;
      std::vector<float> ref(n);

      if (c.kind == NormKind::AddRms) {
        std::vector<float> a = act.round(rng.vec(n, 2.f)), b = act.round(rng.vec(n, 2.f));
        std::vector<float> h(n);
        host::add(a.data(), b.data(), int64_t(n), h.data());
        h = act.round(h); // the device writes h as glm_act and normalizes that
        float eps = 1e-5f;
        auto st = host::rmsNorm(h.data(), c.rows, D, hw, eps, ref.data());
        if (!st.isOk()) {
          report.fail(what, st.message());
          continue;
        }
        cu::DevicePtr da = act.upload(ctx, a), db = act.upload(ctx, b);
        cu::DevicePtr dh = c.alias ? da : ctx.alloc(act.bytes(n));
        launch(ctx, fn, grid(normGrid(cfg, rows)), cfg.threads, &da, &db, &dh, &dw, &dy, &rows,
               &eps);
        report.expectRelErr(what + " h", relErr(act.download(ctx, dh, n), h), act.bound());
        report.expectRelErr(what + " y", relErr(act.download(ctx, dy, n), ref), act.bound());
        continue;
      }

      const bool layer = c.kind == NormKind::Layer;
      std::vector<float> x = rng.vec(n, 2.f);
      if (layer)
        for (float &v : x)
          v += 0.75f;
      x = act.round(x);
      // The device input has row stride ld; the columns past D hold other data.
      std::vector<float> xs = act.round(rng.vec(size_t(c.rows) * c.ld, 2.f));
      for (int r = 0; r < c.rows; ++r)
        std::copy(x.begin() + r * D, x.begin() + (r + 1) * D, xs.begin() + r * c.ld);
      float eps = layer ? 1e-6f : 1e-5f;
      auto st = layer ? host::layerNorm(x.data(), c.rows, D, hw, hb, eps, ref.data())
                      : host::rmsNorm(x.data(), c.rows, D, hw, eps, ref.data());
      if (!st.isOk()) {
        report.fail(what, st.message());
        continue;
      }
      cu::DevicePtr dx = act.upload(ctx, xs);
      long long ld = c.ld;
      if (layer)
        launch(ctx, fn, grid(normGrid(cfg, rows)), cfg.threads, &dx, &dw, &dbias, &dy, &rows, &ld,
               &eps);
      else
        launch(ctx, fn, grid(normGrid(cfg, rows)), cfg.threads, &dx, &dw, &dy, &rows, &ld, &eps);
      report.expectRelErr(what, relErr(act.download(ctx, dy, n), ref), act.bound());
    }
  }
}

GPU_TEST(elementwise_rope) {
  // q_pe (64 heads x 256, rope last), indexer queries (32 x 128, rope first), k_pe alone, and a
  // tiny shape with another rotated width (the frequencies depend on it).
  const RopeShape shapes[] = {{256, 64, 192, 64, false},
                              {128, 32, 0, 64, false},
                              {64, 1, 0, 64, false},
                              {96, 3, 16, 32, false}};
  // Positions 0 .. 200000 in steps of about 5000, plus 1, 2 and the last of the context.
  const int T = 41;
  std::vector<int32_t> pos(T);
  Rng prng(7);
  for (int t = 0; t < T; ++t)
    pos[t] = t == T - 1 ? 200000 : t * 5000 + static_cast<int32_t>(prng.next() % 5000);
  pos[0] = 0;
  pos[1] = 1;
  pos[2] = 2;
  pos[3] = 202751;
  for (bool f32 : {false, true}) {
    const Act act{f32};
    for (RopeShape shape : shapes) {
      shape.actF32 = f32;
      GPU_TRY(cfg, selectRope(ctx.tiles, shape));
      GPU_TRY(mod, ctx.build(cfg.variant, ropeSource(cfg)));
      if (ctx.compileOnly)
        continue;
      GPU_TRY(fn, ctx.function(mod, "rope"));
      const int64_t W = shape.width, R = shape.rowsPerToken;
      const size_t n = size_t(T) * R * W;
      Rng rng(uint64_t(W) * 31 + R + f32);
      std::vector<float> x = act.round(rng.vec(n));
      std::vector<float> ref = x;
      host::rope(ref.data(), T, R, W, pos.data(), kTheta, shape.dim, shape.offset);
      cu::DevicePtr dx = act.upload(ctx, x), dpos = ctx.upload(pos);
      float theta = kTheta;
      launch(ctx, fn, grid(T), cfg.threads, &dx, &dpos, &theta);
      std::vector<float> got = act.download(ctx, dx, n);
      report.expectRelErr(cfg.variant + " rows", relErr(got, ref), act.bound());
      // The rotated slice alone at positions >= 100000, where a float angle or fast-math sine
      // would be off by ~1e-2 rad.
      std::vector<float> gs, rs;
      for (int t = 0; t < T; ++t) {
        if (pos[t] < 100000)
          continue;
        for (int64_t r = 0; r < R; ++r)
          for (int64_t d = 0; d < shape.dim; ++d) {
            size_t i = (size_t(t) * R + r) * W + shape.offset + d;
            gs.push_back(got[i]);
            rs.push_back(ref[i]);
          }
      }
      report.expectRelErr(cfg.variant + " slice at pos >= 100000", relErr(gs, rs), act.bound());
    }
  }
}

GPU_TEST(elementwise_cache_append) {
  const int64_t L = 512, RK = 64, IX = 128, RD = 64, KV = L + RK, CTX = 202752;
  for (bool f32 : {false, true})
    for (int64_t page : {int64_t{1}, int64_t{16}})
      for (bool rotate : {true, false}) {
        const Act act{f32};
        CacheAppendShape shape;
        shape.page = page;
        shape.rotate = rotate;
        shape.actF32 = f32;
        GPU_TRY(cfg, selectCacheAppend(ctx.tiles, shape));
        GPU_TRY(mod, ctx.build(cfg.variant, cacheAppendSource(cfg)));
        if (ctx.compileOnly)
          continue;
        GPU_TRY(fn, ctx.function(mod, cfg.entry.c_str()));
        Rng rng(uint64_t(page) * 5 + rotate * 2 + f32);

        // Page 1: one sequence, seq_ids null. Page 16: two sequences with their own table rows.
        const int seqs = page == 1 ? 1 : 2;
        const int pagesPerSeq = static_cast<int>((CTX + page - 1) / page);
        std::vector<std::pair<int, int32_t>> tokens; // (seq, position)
        for (int s = 0; s < seqs; ++s) {
          std::set<int32_t> ps = {0, int32_t(CTX - 1)};
          int32_t p0 = static_cast<int32_t>(rng.next() % (CTX - 40)); // a run crossing pages
          for (int32_t p = p0; p < p0 + 37; ++p)
            ps.insert(p);
          for (int i = 0; i < 9; ++i)
            ps.insert(static_cast<int32_t>(rng.next() % CTX));
          for (int32_t p : ps)
            tokens.push_back({s, p});
        }
        for (size_t i = tokens.size() - 1; i > 0; --i) // arrival order unrelated to position
          std::swap(tokens[i], tokens[rng.next() % (i + 1)]);

        // Block table: -1 everywhere but the touched pages, which get a shuffled subset of the
        // physical pages; 3 physical pages stay unused and must stay poisoned.
        std::vector<int32_t> table(size_t(seqs) * pagesPerSeq, -1);
        std::vector<int64_t> touched;
        for (auto &[s, p] : tokens) {
          int64_t e = int64_t(s) * pagesPerSeq + p / page;
          if (table[e] == -1) {
            table[e] = 0;
            touched.push_back(e);
          }
        }
        const int64_t physPages = int64_t(touched.size()) + 3;
        std::vector<int32_t> perm(static_cast<size_t>(physPages));
        for (int64_t i = 0; i < physPages; ++i)
          perm[i] = static_cast<int32_t>(i);
        for (size_t i = perm.size() - 1; i > 0; --i)
          std::swap(perm[i], perm[rng.next() % (i + 1)]);
        for (size_t i = 0; i < touched.size(); ++i)
          table[touched[i]] = perm[i];
        // One more token of sequence 0 on an unmapped page: it must write nothing.
        int32_t lost = 0;
        do
          lost = static_cast<int32_t>(rng.next() % CTX);
        while (table[lost / page] != -1);
        tokens.push_back({0, lost});

        const int T = static_cast<int>(tokens.size());
        std::vector<int32_t> pos(T), seqIds(T), slot(T, -1);
        for (int t = 0; t < T; ++t) {
          seqIds[t] = tokens[t].first;
          pos[t] = tokens[t].second;
          int32_t phys = table[size_t(seqIds[t]) * pagesPerSeq + pos[t] / page];
          if (phys >= 0)
            slot[t] = static_cast<int32_t>(phys * page + pos[t] % page);
        }
        const int64_t numSlots = physPages * page;

        // Inputs: latent [T, 512]; the rope key read out of a [T, 576] kv_a-like row at 512;
        // index key [T, 128].
        std::vector<float> latent = act.round(rng.vec(size_t(T) * L));
        std::vector<float> ckv = act.round(rng.vec(size_t(T) * KV));
        std::vector<float> ikey = act.round(rng.vec(size_t(T) * IX));
        std::vector<float> rkey(size_t(T) * RK);
        for (int t = 0; t < T; ++t)
          std::copy(ckv.begin() + t * KV + L, ckv.begin() + (t + 1) * KV, rkey.begin() + t * RK);
        std::vector<float> rkRef = rkey, ikRef = ikey;
        if (rotate) {
          host::rope(rkRef.data(), T, 1, RK, pos.data(), kTheta, RD, 0);
          host::rope(ikRef.data(), T, 1, IX, pos.data(), kTheta, RD, 0);
        }
        // The reference cache is indexed by physical slot: append the written tokens there.
        auto refCache = host::KVCache::create(1, numSlots, L, RK, IX);
        if (!refCache.isOk()) {
          report.fail(cfg.variant, refCache.status().message());
          return;
        }
        std::vector<int32_t> wslot;
        std::vector<float> wl, wr, wi;
        for (int t = 0; t < T; ++t) {
          if (slot[t] < 0)
            continue;
          wslot.push_back(slot[t]);
          wl.insert(wl.end(), latent.begin() + t * L, latent.begin() + (t + 1) * L);
          wr.insert(wr.end(), rkRef.begin() + t * RK, rkRef.begin() + (t + 1) * RK);
          wi.insert(wi.end(), ikRef.begin() + t * IX, ikRef.begin() + (t + 1) * IX);
        }
        auto st = refCache->append(0, wslot.data(), int64_t(wslot.size()), wl.data(), wr.data(),
                                   wi.data());
        if (!st.isOk()) {
          report.fail(cfg.variant, st.message());
          return;
        }

        cu::DevicePtr dlat = act.upload(ctx, latent), dckv = act.upload(ctx, ckv);
        cu::DevicePtr dik = act.upload(ctx, ikey), dpos = ctx.upload(pos);
        cu::DevicePtr dseq = seqs > 1 ? ctx.upload(seqIds) : cu::DevicePtr(0);
        cu::DevicePtr dtable = ctx.upload(table);
        cu::DevicePtr dkv = ctx.alloc(act.bytes(size_t(numSlots) * KV));
        cu::DevicePtr dix = ctx.alloc(act.bytes(size_t(numSlots) * IX));
        cu::DevicePtr drk = dckv + act.bytes(size_t(L));
        long long ldLat = L, ldRope = KV, ldIdx = IX, slots = numSlots;
        int pps = pagesPerSeq, nt = T;
        float theta = kTheta;
        launch(ctx, fn, grid(glm5rt::launch::cacheAppendGrid(cacheAppendLaunchParams(cfg), T)), cfg.threads, &dlat,
               &ldLat, &drk, &ldRope, &dik, &ldIdx, &dpos, &dseq, &dtable, &pps, &dkv, &dix, &slots,
               &nt, &theta);

        // Read the whole cache back: written slots against the reference, the rest still poison.
        std::vector<float> kv, ix;
        std::vector<bool> poisoned;
        if (f32) {
          auto kb = ctx.download<uint32_t>(dkv, size_t(numSlots) * KV);
          auto ib = ctx.download<uint32_t>(dix, size_t(numSlots) * IX);
          for (uint32_t v : kb)
            poisoned.push_back(v == 0xffffffffu);
          for (uint32_t v : ib)
            poisoned.push_back(v == 0xffffffffu);
          kv = ctx.download<float>(dkv, size_t(numSlots) * KV);
          ix = ctx.download<float>(dix, size_t(numSlots) * IX);
        } else {
          auto kb = ctx.download<uint16_t>(dkv, size_t(numSlots) * KV);
          auto ib = ctx.download<uint16_t>(dix, size_t(numSlots) * IX);
          for (uint16_t v : kb)
            poisoned.push_back(v == 0xffff);
          for (uint16_t v : ib)
            poisoned.push_back(v == 0xffff);
          kv = fromBf16(kb);
          ix = fromBf16(ib);
        }
        std::vector<bool> written(static_cast<size_t>(numSlots), false);
        for (int32_t s : wslot)
          written[s] = true;
        std::vector<float> gotLat, refLat, gotKey, refKey;
        size_t stray = 0;
        for (int64_t s = 0; s < numSlots; ++s) {
          if (!written[s]) {
            for (int64_t d = 0; d < KV; ++d)
              stray += !poisoned[s * KV + d];
            for (int64_t d = 0; d < IX; ++d)
              stray += !poisoned[numSlots * KV + s * IX + d];
            continue;
          }
          const float *rl = refCache->latent(0) + s * L, *rr = refCache->ropeKey(0) + s * RK;
          const float *ri = refCache->indexKey(0) + s * IX;
          gotLat.insert(gotLat.end(), kv.begin() + s * KV, kv.begin() + s * KV + L);
          refLat.insert(refLat.end(), rl, rl + L);
          gotKey.insert(gotKey.end(), kv.begin() + s * KV + L, kv.begin() + (s + 1) * KV);
          refKey.insert(refKey.end(), rr, rr + RK);
          gotKey.insert(gotKey.end(), ix.begin() + s * IX, ix.begin() + (s + 1) * IX);
          refKey.insert(refKey.end(), ri, ri + IX);
        }
        std::string what =
            cfg.variant + " seqs=" + std::to_string(seqs) + " tokens=" + std::to_string(T);
        report.expectRelErr(what + " latent rows", relErr(gotLat, refLat), act.bound());
        report.expectRelErr(what + " key rows", relErr(gotKey, refKey), act.bound());
        if (stray)
          report.fail(what, std::to_string(stray) + " values written outside the tokens' slots");
      }
}

GPU_TEST(elementwise_pointwise) {
  const int64_t sizes[] = {256, 6144 * 13, 1000003};
  for (bool f32 : {false, true}) {
    const Act act{f32};
    GPU_TRY(cfg, selectPointwise(ctx.tiles, f32));
    GPU_TRY(mod, ctx.build(cfg.variant, pointwiseSource(cfg)));
    if (ctx.compileOnly)
      continue;
    GPU_TRY(swiglu, ctx.function(mod, "swiglu_mul"));
    GPU_TRY(addFn, ctx.function(mod, "add"));
    for (int64_t n : sizes) {
      Rng rng(uint64_t(n) + f32);
      std::vector<float> g = act.round(rng.vec(size_t(n), 4.f)), u = act.round(rng.vec(size_t(n)));
      std::vector<float> ref(static_cast<size_t>(n)), sum(ref.size());
      for (size_t i = 0; i < ref.size(); ++i) { // silu(g) * u in double, as runtime/host does
        const double z = g[i];
        ref[i] = static_cast<float>(z / (1.0 + std::exp(-z)) * static_cast<double>(u[i]));
      }
      host::add(g.data(), u.data(), n, sum.data());
      cu::DevicePtr dg = act.upload(ctx, g), du = act.upload(ctx, u);
      cu::DevicePtr dy = ctx.alloc(act.bytes(size_t(n))), ds = ctx.alloc(act.bytes(size_t(n)));
      long long nn = n;
      const unsigned blocks = grid(pointwiseGrid(cfg, ctx.tiles, n));
      launch(ctx, swiglu, blocks, cfg.threads, &dg, &du, &dy, &nn);
      launch(ctx, addFn, blocks, cfg.threads, &dg, &du, &ds, &nn);
      const std::string what = cfg.variant + " n=" + std::to_string(n);
      report.expectRelErr("swiglu_mul " + what, relErr(act.download(ctx, dy, size_t(n)), ref),
                          act.bound());
      report.expectRelErr("add " + what, relErr(act.download(ctx, ds, size_t(n)), sum),
                          act.bound());
      // In place (y = u): the residual-update form.
      launch(ctx, addFn, blocks, cfg.threads, &dg, &du, &du, &nn);
      report.expectRelErr("add in place " + what, relErr(act.download(ctx, du, size_t(n)), sum),
                          act.bound());
    }
  }
}

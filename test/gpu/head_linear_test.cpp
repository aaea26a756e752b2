// head_linear against runtime/host headLinear (GLM-5's attn_k_b and attn_v_b shapes at 8 and 64
// heads, per-head and shared inputs, odd shapes for every weight type, token chunks looped inside
// a CTA) and slice_copy against a host loop (vector and scalar paths, misaligned bases).
#include "codegen/registry/HeadLinear.h"
#include "codegen/registry/QLinear.h"
#include "runtime/gguf/quant.h"
#include "runtime/host/ops.h"
#include "test/gpu/gpu_test.h"

#include <algorithm>
#include <cstring>

using namespace glm5c::gputest;
using namespace glm5c::codegen;
using glm5rt::gguf::GgmlType;

namespace {

bool isKQuant(GgmlType t) {
  return t == GgmlType::Q4_K || t == GgmlType::Q5_K || t == GgmlType::Q6_K;
}

// A random stacked weight {a, b, heads} quantized row by row (heads * b rows of a elements).
struct HeadWeight {
  GgmlType type;
  int64_t a, b, heads;
  std::vector<uint8_t> bytes;
  glm5rt::host::Weight w() const {
    return glm5rt::host::makeWeight(type, bytes.data(),
                                    {uint64_t(a), uint64_t(b), uint64_t(heads)});
  }
};

bool makeHeadWeight(HeadWeight &q, Rng &rng, Reporter &report) {
  const int64_t rowBytes = qlinearRowBytes(uint32_t(q.type), q.a);
  const int64_t rows = q.b * q.heads;
  q.bytes.assign(size_t(rowBytes * rows), 0);
  std::vector<float> row;
  for (int64_t r = 0; r < rows; ++r) {
    row = rng.vec(size_t(q.a));
    auto st = glm5rt::gguf::quantizeRow(q.type, row.data(), uint64_t(q.a),
                                        q.bytes.data() + r * rowBytes, size_t(rowBytes));
    if (!st.isOk()) {
      report.fail("quantizeRow", st.message());
      return false;
    }
  }
  return true;
}

// Compares outputs of rows `width` wide, `inner` rows per outer index; on failure names the worst
// element as (outer, inner, column), so a wrong mapping is visible.
void compare(Reporter &report, const std::string &what, const std::vector<float> &got,
             const std::vector<float> &ref, int64_t inner, int64_t width, double bound,
             bool guardOk) {
  const double err = relErr(got, ref);
  report.expectRelErr(what, err, bound);
  if (!guardOk)
    report.fail(what, "wrote past the end of the output");
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
    const long long col = static_cast<long long>(worst % width);
    const long long row = static_cast<long long>(worst / width);
    std::printf("    worst at [%lld, %lld, %lld]: got %g, host %g\n", row / inner, row % inner, col,
                double(got[worst]), double(ref[worst]));
  }
}

// Runs head_linear on T tokens against the host; gridZ > 0 overrides the launch's chunk split
// (gridZ = 1: one CTA loops over every chunk of its rows).
void runHeadLinear(Context &ctx, Reporter &report, const HeadLinearConfig &cfg, cu::Function fn,
                   const HeadWeight &hw, cu::DevicePtr dw, int T, unsigned gridZ) {
  const bool f32 = cfg.actF32;
  Rng rng(uint64_t(hw.a) * 131 + uint64_t(hw.b) * 7 + T * 3 + uint32_t(hw.type) + f32);
  const int64_t inRows = cfg.sharedInput ? 1 : hw.heads;
  Acts x = makeActs(ctx, rng, size_t(T * inRows * hw.a), f32);
  const size_t n = size_t(T * hw.heads * hw.b);
  std::vector<float> ref(n);
  std::string what = "head_linear " + qlinearTypeName(uint32_t(hw.type)) +
                     (f32 ? " f32" : " bf16") + (cfg.sharedInput ? " shared" : "") + " {" +
                     std::to_string(hw.a) + ", " + std::to_string(hw.b) + ", " +
                     std::to_string(hw.heads) + "} T=" + std::to_string(T);
  auto st = glm5rt::host::headLinear(x.ref.data(), T, cfg.sharedInput, hw.w(), false, ref.data());
  if (!st.isOk()) {
    report.fail("host headLinear " + what, st.message());
    return;
  }
  HeadLinearLaunch l = headLinearLaunch(cfg, ctx.tiles, T);
  if (gridZ)
    l.gridZ = gridZ;
  what += " grid " + std::to_string(l.gridX) + "x" + std::to_string(l.gridY) + "x" +
          std::to_string(l.gridZ);
  cu::DevicePtr y = allocOut(ctx, n, f32);
  int Ti = T, bi = static_cast<int>(hw.b), Hi = static_cast<int>(hw.heads);
  ctx.launch(fn, l.gridX, l.gridY, l.gridZ, l.threads, l.smem, &dw, &x.dev, &y, &Ti, &bi, &Hi);
  bool guardOk = false;
  std::vector<float> got = downloadOut(ctx, y, n, f32, &guardOk);
  compare(report, what, got, ref, hw.heads, hw.b, f32 ? 1e-5 : 1e-2, guardOk);
}

// Builds the variant for (weight, act, input form) and runs it for each T; T > the chunk also
// runs with gridZ = 1. The weight is made and uploaded by the first variant that runs (dw == 0
// until then).
void headLinearCases(Context &ctx, Reporter &report, HeadWeight &hw, cu::DevicePtr &dw, bool f32,
                     bool shared, std::initializer_list<int> tokens) {
  auto cfgOr = selectHeadLinear(ctx.tiles, uint32_t(hw.type), hw.a, hw.b, hw.heads, shared, f32);
  if (!cfgOr.isOk()) {
    report.fail("selectHeadLinear", cfgOr.status().message());
    return;
  }
  const HeadLinearConfig cfg = *cfgOr;
  auto mod = ctx.build(cfg.variant, headLinearSource(cfg));
  if (!mod.isOk()) {
    report.fail(cfg.variant, mod.status().message());
    return;
  }
  if (ctx.compileOnly)
    return;
  auto fn = ctx.function(*mod, cfg.entry.c_str(), static_cast<int>(cfg.dynamicSmem));
  if (!fn.isOk()) {
    report.fail(cfg.variant, fn.status().message());
    return;
  }
  if (!dw) {
    Rng rng(uint64_t(hw.a) * 1000003 + uint64_t(hw.b) * 101 + uint64_t(hw.heads) +
            uint32_t(hw.type));
    if (!makeHeadWeight(hw, rng, report))
      return;
    dw = ctx.upload(hw.bytes);
  }
  for (int T : tokens) {
    runHeadLinear(ctx, report, cfg, *fn, hw, dw, T, 0);
    if (T > cfg.tokensPerChunk)
      runHeadLinear(ctx, report, cfg, *fn, hw, dw, T, 1);
  }
}

} // namespace

// GLM-5's absorbed-MLA products: attn_k_b {192, 512, H} (q_nope -> latent) and attn_v_b
// {512, 256, H} (latent -> value), at 8 heads (also with a shared input) and 64 heads.
GPU_TEST(head_linear) {
  struct Shape {
    int64_t a, b, heads;
  };
  const Shape shapes[] = {{192, 512, 8}, {512, 256, 8}, {192, 512, 64}, {512, 256, 64}};
  const GgmlType types[] = {GgmlType::F32, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_K};
  for (const Shape &s : shapes)
    for (GgmlType type : types) {
      if (isKQuant(type) && s.a % 256 != 0)
        continue; // K-quant rows are whole 256-element blocks
      HeadWeight hw{type, s.a, s.b, s.heads, {}};
      cu::DevicePtr dw = 0;
      for (bool f32 : {false, true})
        for (bool shared : {false, true}) {
          if (shared && s.heads > 8)
            continue;
          headLinearCases(ctx, report, hw, dw, f32, shared, {1, 3, 20});
        }
    }
}

// Every weight type, b not a multiple of the CTA's rows, one lane per row (a = 96: three
// sub-blocks), two lanes (a = 64), eight (a = 256), and a token tail of one in a second chunk.
GPU_TEST(head_linear_edges) {
  struct Shape {
    int64_t a, b, heads;
  };
  const GgmlType all[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q4_0,
                          GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};
  for (GgmlType type : all)
    for (const Shape &s : {Shape{256, 70, 3}, Shape{96, 40, 5}, Shape{64, 100, 3}}) {
      if (isKQuant(type) && s.a % 256 != 0)
        continue;
      HeadWeight hw{type, s.a, s.b, s.heads, {}};
      cu::DevicePtr dw = 0;
      for (bool f32 : {false, true})
        for (bool shared : {false, true})
          headLinearCases(ctx, report, hw, dw, f32, shared, {5, 9});
    }
}

// The registry's rejections (host only: also runs with --compile-only).
GPU_TEST(head_linear_select) {
  struct Bad {
    uint32_t type;
    int64_t a, b, heads;
    const char *why;
  };
  const Bad bad[] = {{uint32_t(GgmlType::Q4_K), 192, 512, 8, "Q4_K with a % 256 != 0"},
                     {uint32_t(GgmlType::Q8_0), 48, 512, 8, "a not a multiple of 32"},
                     {uint32_t(GgmlType::IQ4_XS), 256, 512, 8, "unsupported type"},
                     {uint32_t(GgmlType::F32), 192, 0, 8, "b = 0"},
                     {uint32_t(GgmlType::F32), 1 << 20, 8, 8, "x stage beyond shared memory"}};
  for (const Bad &c : bad) {
    auto r = selectHeadLinear(ctx.tiles, c.type, c.a, c.b, c.heads, false, false);
    report.expectRelErr(std::string("head_linear rejects ") + c.why, r.isOk() ? 1 : 0, 0);
    if (!r.isOk())
      std::printf("    %s\n", r.status().message().c_str());
  }
}

// slice_copy against a host loop, bit for bit: GLM-5's q and kv splits, unaligned shapes, bases
// one element off 16 bytes, and a grid-stride loop of several rounds.
GPU_TEST(head_linear_slice_copy) {
  struct Case {
    int64_t rows, widthIn, widthOut, offset;
    int baseShift; // elements added to both bases (1: misaligned, the scalar path)
  };
  const Case cases[] = {
      {3 * 64, 256, 192, 0, 0},  // q -> q_nope
      {3 * 64, 256, 64, 192, 0}, // q -> q_pe
      {37, 576, 512, 0, 0},      // kv -> latent
      {37, 576, 64, 512, 0},     // kv -> rope key
      {50, 100, 37, 5, 0},       // nothing aligned
      {7, 20, 12, 4, 0},         // vectors for f32 only
      {3 * 64, 256, 64, 192, 1}, // aligned shape, misaligned bases
      {50000, 576, 128, 448, 0}, // more vectors than the grid's threads
  };
  for (bool f32 : {false, true}) {
    GPU_TRY(cfg, selectSlice(ctx.tiles, f32));
    GPU_TRY(mod, ctx.build(cfg.variant, sliceSource(cfg)));
    if (ctx.compileOnly)
      continue;
    GPU_TRY(fn, ctx.function(mod, cfg.entry.c_str(), 0));
    const size_t es = f32 ? 4 : 2;
    for (const Case &c : cases) {
      Rng rng(uint64_t(c.rows) * 17 + c.offset + c.baseShift);
      Acts x = makeActs(ctx, rng, size_t(c.rows * c.widthIn + c.baseShift), f32);
      const size_t n = size_t(c.rows * c.widthOut);
      std::vector<float> ref(n);
      for (int64_t r = 0; r < c.rows; ++r)
        for (int64_t col = 0; col < c.widthOut; ++col)
          ref[size_t(r * c.widthOut + col)] =
              x.ref[size_t(c.baseShift + r * c.widthIn + c.offset + col)];
      cu::DevicePtr ybuf = allocOut(ctx, n + c.baseShift, f32);
      cu::DevicePtr xd = x.dev + c.baseShift * es, yd = ybuf + c.baseShift * es;
      SliceLaunch l = sliceLaunch(cfg, ctx.tiles, c.rows, c.widthIn, c.widthOut, c.offset);
      long long rows = c.rows;
      int wi = static_cast<int>(c.widthIn), wo = static_cast<int>(c.widthOut);
      int off = static_cast<int>(c.offset);
      ctx.launch(fn, l.gridX, 1, 1, l.threads, 0, &xd, &yd, &rows, &wi, &wo, &off);
      bool guardOk = false;
      std::vector<float> got = downloadOut(ctx, ybuf, n + c.baseShift, f32, &guardOk);
      got.erase(got.begin(), got.begin() + c.baseShift);
      const std::string what = std::string("slice_copy ") + (f32 ? "f32" : "bf16") +
                               " rows=" + std::to_string(c.rows) + " " + std::to_string(c.widthIn) +
                               "[" + std::to_string(c.offset) + ":+" + std::to_string(c.widthOut) +
                               "]" + (c.baseShift ? " misaligned" : "");
      compare(report, what, got, ref, 1, c.widthOut, 0.0, guardOk);
    }
  }
}

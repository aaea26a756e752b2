// MoE routing kernels against runtime/host: the gate (selection with the correction bias, ties to
// the lower id, normalized scaled weights), expert-major grouping, and the weighted combine.
#include "codegen/registry/Moe.h"
#include "runtime/host/ops.h"
#include "test/gpu/gpu_test.h"

#include <algorithm>

using namespace glm5c::gputest;
using namespace glm5c::codegen;

GPU_TEST(moe_routing) {
  struct Case {
    int E, k, T, H;
    bool normalize;
  } cases[] = {{16, 2, 5, 256, true}, {256, 8, 37, 6144, true}, {256, 8, 3, 512, false}};
  for (const Case &c : cases) {
    MoeShape shape{c.E, c.k, c.H, c.normalize, false};
    GPU_TRY(src, moeRoutingSource(shape));
    GPU_TRY(mod, ctx.build("moe_routing_e" + std::to_string(c.E), src));
    if (ctx.compileOnly)
      continue;
    GPU_TRY(gate, ctx.function(mod, "moe_gate"));
    GPU_TRY(group, ctx.function(mod, "moe_group"));
    GPU_TRY(combine, ctx.function(mod, "moe_combine"));
    Rng rng(c.E * 3 + c.T);
    std::vector<float> logits = rng.vec(size_t(c.T) * c.E, 3.f), bias = rng.vec(c.E, 0.1f);
    // Ties: two experts with identical logits and bias in the first row.
    logits[1] = logits[0];
    bias[1] = bias[0];
    glm5rt::host::Weight bw = glm5rt::host::makeWeight(glm5rt::gguf::GgmlType::F32,
                                                       bias.data(),
                                                       {uint64_t(c.E)});
    std::vector<float> refW(size_t(c.T) * c.k);
    std::vector<int32_t> refIds(size_t(c.T) * c.k);
    auto st = glm5rt::host::moeGate(logits.data(), c.T, c.E, bw, c.k, c.normalize, 2.5f,
                                    refW.data(), refIds.data());
    if (!st.isOk()) {
      report.fail("host moeGate", st.message());
      return;
    }
    cu::DevicePtr dl = ctx.upload(logits), db = ctx.upload(bias);
    cu::DevicePtr dw = ctx.alloc(refW.size() * 4), di = ctx.alloc(refIds.size() * 4);
    int tokens = c.T;
    float scale = 2.5f;
    ctx.launch(gate, (c.T + 3) / 4, 1, 1, 128, 0, &dl, &db, &dw, &di, &tokens, &scale);
    std::vector<float> gotW = ctx.download<float>(dw, refW.size());
    std::vector<int32_t> gotIds = ctx.download<int32_t>(di, refIds.size());
    int idMismatch = 0;
    for (size_t i = 0; i < refIds.size(); ++i)
      idMismatch += gotIds[i] != refIds[i];
    std::string what = "E=" + std::to_string(c.E) + " k=" + std::to_string(c.k) +
                       " T=" + std::to_string(c.T);
    if (idMismatch)
      report.fail("moe_gate ids " + what, std::to_string(idMismatch) + " ids differ from the host");
    report.expectRelErr("moe_gate weights " + what, relErr(gotW, refW), 1e-5);

    // Grouping: offsets and expert-major order, stable in token order.
    int pairs = c.T * c.k;
    cu::DevicePtr doff = ctx.alloc((c.E + 1) * 4), dpair = ctx.alloc(pairs * 4);
    ctx.launch(group, 1, 1, 1, 256, 0, &di, &pairs, &doff, &dpair);
    std::vector<int32_t> off = ctx.download<int32_t>(doff, c.E + 1);
    std::vector<int32_t> pairOf = ctx.download<int32_t>(dpair, pairs);
    std::vector<int32_t> refPairs(pairs);
    for (int p = 0; p < pairs; ++p)
      refPairs[p] = p;
    std::stable_sort(refPairs.begin(), refPairs.end(),
                     [&](int a, int b) { return refIds[a] < refIds[b]; });
    bool groupOk = pairOf == refPairs && off[0] == 0 && off[c.E] == pairs;
    for (int e = 0; groupOk && e < c.E; ++e)
      for (int p = off[e]; p < off[e + 1]; ++p)
        groupOk &= refIds[pairOf[p]] == e;
    if (!groupOk)
      report.fail("moe_group " + what, "offsets or expert-major order differ from a stable sort");
    else
      report.expectRelErr("moe_group " + what, 0.0, 0.0);

    // Combine: y[t] = sum_j w[t,j] * out[t*k+j] (f32 partials, bf16 output).
    std::vector<float> partial = rng.vec(size_t(pairs) * c.H);
    cu::DevicePtr dp = ctx.upload(partial), dy = ctx.alloc(size_t(c.T) * c.H * 2);
    ctx.launch(combine, c.T, 1, 1, 256, 0, &dp, &dw, &dy, &tokens);
    std::vector<float> gotY = fromBf16(ctx.download<uint16_t>(dy, size_t(c.T) * c.H));
    std::vector<float> refY(size_t(c.T) * c.H, 0.f);
    for (int t = 0; t < c.T; ++t)
      for (int j = 0; j < c.k; ++j)
        for (int h = 0; h < c.H; ++h)
          refY[size_t(t) * c.H + h] += gotW[t * c.k + j] * partial[(size_t(t) * c.k + j) * c.H + h];
    report.expectRelErr("moe_combine " + what, relErr(gotY, refY), 1e-2);
  }
}

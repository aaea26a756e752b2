// Op -> kernel family routing (see Registry.h).
#include "codegen/registry/Registry.h"

#include "codegen/registry/SparseMla.h"

namespace glm5c::codegen {

namespace {

int64_t dim(const KernelQuery &q, const char *name, int64_t fallback) {
  auto it = q.dims.find(name);
  return it == q.dims.end() ? fallback : it->second;
}

KernelChoice sparseMla(const KernelQuery &q, const Target &tiles) {
  KernelChoice c;
  c.family = "sparse_mla_decode";
  MlaShape shape;
  shape.latent = dim(q, "latent", 512);
  shape.rope = dim(q, "rope", 64);
  shape.topk = dim(q, "topk", 2048);
  if (q.actF32) {
    c.rejected.push_back({"sparse_mla_decode_bf16", "needs bf16 activations and cache"});
    auto src = sparseMlaF32Source(shape);
    if (!src.isOk()) {
      c.rejected.push_back({"sparse_mla_f32", src.status().message()});
      return c;
    }
    c.ok = true;
    c.variant = "sparse_mla_f32";
    c.threads = 128;
    c.source = *src;
    c.entries = {"sparse_mla_f32"};
    return c;
  }
  auto cfg = selectSparseMlaDecode(tiles, shape);
  if (!cfg.isOk()) {
    // The family's message lists its candidates, one per line after the first.
    const std::string &m = cfg.status().message();
    size_t nl = m.find('\n');
    if (nl == std::string::npos) {
      c.rejected.push_back({"sparse_mla_decode_bf16", m});
    } else {
      for (size_t p = nl + 1; p < m.size();) {
        size_t e = m.find('\n', p);
        std::string line = m.substr(p, e == std::string::npos ? std::string::npos : e - p);
        size_t colon = line.find(": ");
        std::string name = line.substr(0, colon);
        name.erase(0, name.find_first_not_of(' '));
        c.rejected.push_back({name, colon == std::string::npos ? "" : line.substr(colon + 2)});
        p = e == std::string::npos ? m.size() : e + 1;
      }
    }
    return c;
  }
  c.ok = true;
  c.variant = cfg->variant;
  c.threads = cfg->threads;
  c.dynamicSmem = cfg->dynamicSmem;
  c.source = sparseMlaDecodeSource(*cfg);
  c.entries = {"sparse_mla_decode", "sparse_mla_combine"};
  // Larger variants the target could not hold are still worth listing in explain output.
  for (const auto &cand : {std::pair<int, int>{64, 3}, {64, 2}, {32, 4}, {32, 3}}) {
    int64_t smem = sparseMlaDecodeSmem(shape, cand.first, cand.second);
    if (smem > tiles.maxSharedPerBlock)
      c.rejected.push_back({"sparse_mla_decode_bf16_t" + std::to_string(cand.first) + "_s" +
                                std::to_string(cand.second),
                            "needs " + std::to_string(smem) + " B shared memory, " + tiles.name +
                                " allows " + std::to_string(tiles.maxSharedPerBlock) + " B"});
  }
  return c;
}

} // namespace

std::vector<std::pair<std::string, bool>> registryOps() {
  return {{"glm.sparse_mla", true},     {"glm.embed", false},        {"glm.rms_norm", false},
          {"glm.layer_norm", false},    {"glm.linear", false},       {"glm.head_linear", false},
          {"glm.slice", false},         {"glm.rope", false},         {"glm.cache_append", false},
          {"glm.rope_cache_append", false}, {"glm.cache_read", false},
          {"glm.indexer_score", false}, {"glm.topk", false},         {"glm.attention", false},
          {"glm.moe_gate", false},      {"glm.moe_router", false},   {"glm.moe_experts", false},
          {"glm.swiglu", false},        {"glm.add", false},          {"glm.logits", false}};
}

KernelChoice selectKernel(const KernelQuery &q, const Target &tiles) {
  if (q.op == "glm.sparse_mla")
    return sparseMla(q, tiles);
  KernelChoice c;
  c.family = q.op;
  if (q.op == "glm.attention" || q.op == "glm.cache_read")
    c.rejected.push_back({q.op, "the naive attention form has no kernel: run glm-absorb-mla "
                                "first (glm-pipeline does)"});
  else
    c.rejected.push_back({q.op, "no kernel family implements this op yet"});
  return c;
}

} // namespace glm5c::codegen

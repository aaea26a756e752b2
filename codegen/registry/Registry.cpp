// Op -> kernel family routing (see Registry.h).
#include "codegen/registry/Registry.h"

#include "codegen/registry/Elementwise.h"
#include "codegen/registry/HeadLinear.h"
#include "codegen/registry/Indexer.h"
#include "codegen/registry/Moe.h"
#include "codegen/registry/MoeExperts.h"
#include "codegen/registry/QLinear.h"
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
    glm5rt::launch::SparseMlaParams lp;
    lp.f32 = true;
    lp.topk = shape.topk;
    lp.latent = shape.latent;
    c.params = glm5rt::launch::sparseMlaParamList(lp);
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
  // Heads per CTA and the gathers' form for the op's heads (8 heads per CTA for at most 8).
  const int64_t opHeads = dim(q, "heads", 0);
  const SparseMlaDecodeConfig base = *cfg;
  *cfg = sparseMlaDecodeForOp(*cfg, opHeads, tiles);
  c.ok = true;
  c.variant = cfg->variant;
  c.threads = cfg->threads;
  c.dynamicSmem = cfg->dynamicSmem;
  c.source = sparseMlaDecodeSource(*cfg);
  c.entries = {"sparse_mla_decode"};
  c.params = glm5rt::launch::sparseMlaParamList(sparseMlaDecodeLaunchParams(*cfg));
  // Where the tile target holds one CTA of this kernel per SM (SM120): with many heads the
  // 32-heads-per-CTA kernel too, else the kernel's two-CTAs-per-SM form (one-tile ring). The
  // runtime picks per device and batch (launch::sparseMlaPick; with both, the 32-head kernel
  // would take every batch the form would, so only one is compiled).
  const auto two = opHeads < glm5rt::launch::kSparseMlaWideHeads
                       ? sparseMlaDecodeTwoPerSm(*cfg, tiles)
                       : std::nullopt;
  if (two) {
    c.extra.push_back({two->variant, sparseMlaDecodeSource(*two), {"sparse_mla_decode"},
                       two->threads, two->dynamicSmem,
                       glm5rt::launch::sparseMlaParamList(sparseMlaDecodeLaunchParams(*two))});
    const int64_t groupsPerRow = (std::max<int64_t>(opHeads, 1) + two->heads - 1) / two->heads;
    const int64_t from = (tiles.smCount + 2 * groupsPerRow - 1) / (2 * groupsPerRow);
    c.notes.push_back(two->variant + " (two CTAs per SM) from B=" + std::to_string(from) +
                      " on " + std::to_string(tiles.smCount) +
                      " SMs where the first kernel runs one CTA per SM");
  }
  if (opHeads >= glm5rt::launch::kSparseMlaWideHeads) {
    const SparseMlaDecodeConfig wide = sparseMlaDecodeForOp(
        base, opHeads, tiles, static_cast<int>(glm5rt::launch::kSparseMlaWideHeads));
    if (wide.dynamicSmem <= tiles.maxSharedPerBlock) {
      c.extra.push_back({wide.variant, sparseMlaDecodeSource(wide), {"sparse_mla_decode"},
                         wide.threads, wide.dynamicSmem,
                         glm5rt::launch::sparseMlaParamList(sparseMlaDecodeLaunchParams(wide))});
      int64_t from = 1; // the first batch launch::sparseMlaUseWide takes it at
      while (!glm5rt::launch::sparseMlaUseWide(1, tiles.smCount, from, opHeads))
        ++from;
      c.notes.push_back(wide.variant + " from B=" + std::to_string(from) + " on " +
                        std::to_string(tiles.smCount) +
                        " SMs where the first kernel runs one CTA per SM");
    }
  }
  // The split geometry this choice gives on the tile target, per batch (the runtime redoes it
  // with the device's SM count and occupancy).
  const int64_t heads = dim(q, "heads", 0);
  if (heads > 0) {
    std::string note = "splits of the top-k range at " + std::to_string(heads) + " heads on " +
                       std::to_string(tiles.smCount) + " SMs (" +
                       std::to_string(cfg->ctasPerSm) +
                       (cfg->ctasPerSm == 1 ? " CTA per SM):" : " CTAs per SM):");
    for (int64_t batch : {1, 8, 32, 128}) {
      const int splits = sparseMlaDecodeSplits(*cfg, tiles, batch, heads);
      const int64_t groups = batch * ((heads + cfg->heads - 1) / cfg->heads);
      const bool spread =
          glm5rt::launch::sparseMlaSpread(splits, groups, cfg->ctasPerSm, tiles.smCount);
      const int cluster = glm5rt::launch::sparseMlaCluster(splits, groups);
      note += " B=" + std::to_string(batch) + " " + std::to_string(splits) +
              (spread        ? std::string(" (spread merge)")
               : cluster > 1 ? " (clusters of " + std::to_string(cluster) + ")"
                             : std::string()) +
              (batch == 128 ? "" : ",");
    }
    c.notes.push_back(note);
  }
  // Larger variants the target could not hold are still worth listing in explain output.
  for (const auto &cand : kSparseMlaTiles) {
    int64_t smem = sparseMlaDecodeSmem(shape, cand[0], cand[1], kSparseMlaWarps);
    if (smem > tiles.maxSharedPerBlock)
      c.rejected.push_back({sparseMlaDecodeVariant(cand[0], cand[1]),
                            "needs " + std::to_string(smem) + " B shared memory, " + tiles.name +
                                " allows " + std::to_string(tiles.maxSharedPerBlock) + " B"});
  }
  return c;
}

// Splits a family's "no variant fits ...:\n  candidate: reason\n..." status into rejections.
void addRejections(KernelChoice &c, const glm5rt::Status &st, const std::string &fallback) {
  const std::string &m = st.message();
  size_t nl = m.find('\n');
  if (nl == std::string::npos) {
    c.rejected.push_back({fallback, m});
    return;
  }
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

// `params`, when given, records the config's launch parameters for the runtime (runtime/launch).
template <typename Config>
KernelChoice fromConfig(const char *family, const glm5rt::StatusOr<Config> &cfg,
                        std::string (*source)(const Config &), std::vector<std::string> entries,
                        glm5rt::launch::ParamList (*params)(const Config &) = nullptr) {
  KernelChoice c;
  c.family = family;
  if (!cfg.isOk()) {
    addRejections(c, cfg.status(), family);
    return c;
  }
  c.ok = true;
  c.variant = cfg->variant;
  c.threads = cfg->threads;
  c.dynamicSmem = cfg->dynamicSmem;
  c.source = source(*cfg);
  c.entries = std::move(entries);
  if (params)
    c.params = params(*cfg);
  return c;
}

KernelChoice elementwise(const KernelQuery &q, const Target &tiles) {
  uint32_t w0 = q.weightTypes.size() > 0 ? q.weightTypes[0] : 0;
  uint32_t w1 = q.weightTypes.size() > 1 ? q.weightTypes[1] : 0;
  if (q.op == "glm.rms_norm" || q.op == "glm.layer_norm") {
    NormShape shape;
    shape.kind = q.op == "glm.rms_norm" ? NormKind::Rms : NormKind::Layer;
    shape.width = dim(q, "width", 0);
    // layer_norm's attributes sort as bias, weight.
    shape.weightType = shape.kind == NormKind::Layer ? w1 : w0;
    shape.biasType = shape.kind == NormKind::Layer ? w0 : 0;
    shape.actF32 = q.actF32;
    auto cfg = selectNorm(tiles, shape);
    return fromConfig("norm", cfg, normSource,
                      {shape.kind == NormKind::Rms ? "rms_norm" : "layer_norm"},
                      +[](const NormConfig &c) {
                        return glm5rt::launch::normParamList(normLaunchParams(c));
                      });
  }
  if (q.op == "glm.rope") {
    RopeShape shape;
    shape.width = dim(q, "width", 0);
    shape.rowsPerToken = dim(q, "rows_per_token", 1);
    shape.offset = dim(q, "offset", 0);
    shape.dim = dim(q, "dim", 0);
    shape.actF32 = q.actF32;
    return fromConfig("rope", selectRope(tiles, shape), ropeSource, {"rope"});
  }
  if (q.op == "glm.rope_cache_append" || q.op == "glm.cache_append") {
    CacheAppendShape shape;
    shape.latent = dim(q, "latent", 512);
    shape.rope = dim(q, "rope", 64);
    shape.index = dim(q, "index", 128);
    shape.ropeDim = dim(q, "rope_dim", shape.rope);
    shape.page = dim(q, "page", 64);
    shape.rotate = q.op == "glm.rope_cache_append";
    shape.actF32 = q.actF32;
    return fromConfig("cache_append", selectCacheAppend(tiles, shape), cacheAppendSource,
                      {shape.rotate ? "rope_cache_append" : "cache_append"},
                      +[](const CacheAppendConfig &c) {
                        return glm5rt::launch::cacheAppendParamList(cacheAppendLaunchParams(c));
                      });
  }
  // glm.add, glm.swiglu_mul
  return fromConfig("pointwise", selectPointwise(tiles, q.actF32), pointwiseSource,
                    {"swiglu_mul", "add"});
}

KernelChoice indexer(const KernelQuery &q, const Target &tiles) {
  if (q.op == "glm.indexer_score") {
    IndexerShape shape;
    shape.heads = dim(q, "heads", 32);
    shape.dim = dim(q, "index_dim", 128);
    shape.page = dim(q, "page", 64);
    shape.actF32 = q.actF32;
    return fromConfig("indexer_score", selectIndexerScore(tiles, shape), indexerScoreSource,
                      {"indexer_score"}, +[](const IndexerScoreConfig &c) {
                        return glm5rt::launch::indexerScoreParamList(indexerScoreLaunchParams(c));
                      });
  }
  TopKShape shape;
  shape.k = dim(q, "k", 2048);
  shape.page = dim(q, "page", 64);
  return fromConfig("topk", selectTopK(tiles, shape), topKSource,
                    {"topk_row", "topk_seg_hist0", "topk_seg_collect", "topk_cluster", "topk_grid"},
                    +[](const TopKConfig &c) {
                      return glm5rt::launch::topKParamList(topKLaunchParams(c));
                    });
}

// Linear products and logits read their GGUF weight {in, out} directly; decode steps (one token)
// take the matrix-vector kernel, prefill the tiled one; the embedding gathers rows.
KernelChoice qlinear(const KernelQuery &q, const Target &tiles) {
  uint32_t type = q.weightTypes.empty() ? 0 : q.weightTypes[0];
  // The decode-only forms (one token): glm.gate_up (glm-lower-swiglu) and glm.linears
  // (glm-fuse-linears); prefill keeps their products apart.
  if (q.op == "glm.gate_up" || q.op == "glm.linears") {
    const bool gu = q.op == "glm.gate_up";
    const char *entry = gu ? "qlinear_decode_gate_up" : "qlinear_decode_multi";
    if (!q.decode) {
      KernelChoice c;
      c.family = "qlinear";
      c.rejected.push_back({entry, "takes one token (decode); prefill keeps the products apart"});
      return c;
    }
    const int64_t K = dim(q, "in", 0), N = dim(q, "out", 0);
    return fromConfig("qlinear",
                      gu ? selectGateUp(tiles, type, K, N, q.actF32)
                         : selectLinears(tiles, type, K, N, 1, q.actF32),
                      qlinearSource, {entry}, +[](const QLinearConfig &c) {
                        return glm5rt::launch::qlinearParamList(qlinearLaunchParams(c));
                      });
  }
  const bool embed = q.op == "glm.embed";
  const int tokens = q.decode ? 1 : 16;
  auto cfg = embed ? selectQEmbed(tiles, type, dim(q, "width", 0), q.actF32)
                   : selectQLinear(tiles, type, dim(q, "in", 0), dim(q, "out", 0), tokens,
                                   q.actF32);
  std::string entry = cfg.isOk() ? cfg->entry : "qlinear";
  return fromConfig("qlinear", cfg, qlinearSource, {entry}, +[](const QLinearConfig &c) {
    return glm5rt::launch::qlinearParamList(qlinearLaunchParams(c));
  });
}

// The router: projection and gate in one kernel. The routed experts: moe.cuh's grouping and
// combine, then the gate/up and down phases, each its own instantiation (their weight types
// differ), launched in that order for one op.
KernelChoice moe(const KernelQuery &q, const Target &tiles) {
  if (q.op == "glm.moe_router") {
    uint32_t wtype = q.weightTypes.size() > 1 ? q.weightTypes[1] : 0; // attrs sort: bias, weight
    return fromConfig("moe_router",
                      selectMoeRouter(tiles, wtype, dim(q, "experts", 0), dim(q, "topk", 0),
                                      dim(q, "hidden", 0), dim(q, "normalize", 1) != 0, q.actF32),
                      moeRouterSource, {"moe_router"}, +[](const MoeRouterConfig &c) {
                        return glm5rt::launch::moeRouterParamList(moeRouterLaunchParams(c));
                      });
  }
  // glm.moe_experts: attributes sort down, gate, up.
  KernelChoice c;
  c.family = "moe_experts";
  uint32_t down = q.weightTypes.size() > 0 ? q.weightTypes[0] : 0;
  uint32_t gate = q.weightTypes.size() > 1 ? q.weightTypes[1] : 0;
  uint32_t up = q.weightTypes.size() > 2 ? q.weightTypes[2] : 0;
  MoeShape routing{dim(q, "experts", 0), dim(q, "topk", 0), dim(q, "hidden", 0), true, q.actF32,
                   dim(q, "shard", 0) != 0};
  auto routeSrc = moeRoutingSource(routing);
  if (!routeSrc.isOk()) {
    c.rejected.push_back({"moe_routing", routeSrc.status().message()});
    return c;
  }
  auto ffn = selectMoeExpertFfn(tiles, gate, up, down, routing.experts, routing.topk,
                                routing.hidden, dim(q, "ffn", 0), q.actF32);
  if (!ffn.isOk()) {
    addRejections(c, ffn.status(), "moe_expert_ffn");
    return c;
  }
  c.ok = true;
  c.variant = "moe_routing_e" + std::to_string(routing.experts) + "_k" +
              std::to_string(routing.topk) + "_h" + std::to_string(routing.hidden) +
              (q.actF32 ? "_f32" : "_bf16") + (routing.shard ? "_shard" : "");
  c.threads = 256;
  c.source = *routeSrc;
  c.entries = {"moe_group", "moe_combine"};
  if (routing.shard) // the launcher passes the rank's first expert (and the ids to the combine)
    c.params = {{"shard", 1}};
  for (const MoeFfnConfig *f : {&ffn->gateUp, &ffn->down})
    c.extra.push_back({f->variant, moeFfnSource(*f), {f->entry}, f->threads, f->dynamicSmem,
                       glm5rt::launch::moeFfnParamList(moeFfnLaunchParams(*f))});
  // Extra kernels 3 and 4: the per-pair decode path (the runtime picks it for few tokens).
  for (const QLinearConfig *d : {&ffn->decodeGateUp, &ffn->decodeDown})
    c.extra.push_back({d->variant, qlinearSource(*d), {d->entry}, d->threads, d->dynamicSmem,
                       glm5rt::launch::qlinearParamList(qlinearLaunchParams(*d))});
  return c;
}

// Per-head products (attn_k_b folded into q, attn_v_b on the latent output) and slices.
KernelChoice headLinear(const KernelQuery &q, const Target &tiles) {
  if (q.op == "glm.slice")
    return fromConfig("slice", selectSlice(tiles, q.actF32), sliceSource, {"slice_copy"},
                      +[](const SliceConfig &c) {
                        return glm5rt::launch::sliceParamList(sliceLaunchParams(c));
                      });
  if (dim(q, "transpose", 0))
    return [&] {
      KernelChoice c;
      c.family = "head_linear";
      c.rejected.push_back({"head_linear", "the transposed product belongs to the naive attention "
                                           "form: run glm-absorb-mla first (glm-pipeline does)"});
      return c;
    }();
  uint32_t type = q.weightTypes.empty() ? 0 : q.weightTypes[0];
  return fromConfig("head_linear",
                    selectHeadLinear(tiles, type, dim(q, "in", 0), dim(q, "out", 0),
                                     dim(q, "heads", 0), dim(q, "shared_input", 0) != 0,
                                     q.actF32),
                    headLinearSource, {"head_linear"}, +[](const HeadLinearConfig &c) {
                      return glm5rt::launch::headLinearParamList(headLinearLaunchParams(c));
                    });
}

} // namespace

std::vector<std::pair<std::string, bool>> registryOps() {
  return {{"glm.sparse_mla", true},     {"glm.embed", true},        {"glm.rms_norm", true},
          {"glm.layer_norm", true},     {"glm.linear", true},       {"glm.head_linear", true},
          {"glm.slice", true},         {"glm.rope", true},          {"glm.cache_append", true},
          {"glm.rope_cache_append", true}, {"glm.cache_read", false},
          {"glm.indexer_score", true},  {"glm.topk", true},         {"glm.attention", false},
          {"glm.moe_gate", false},      {"glm.moe_router", true},   {"glm.moe_experts", true},
          {"glm.swiglu", false},        {"glm.add", true},          {"glm.swiglu_mul", true},
          {"glm.gate_up", true},        {"glm.linears", true},      {"glm.logits", true}};
}

KernelChoice selectKernel(const KernelQuery &q, const Target &tiles) {
  if (q.op == "glm.sparse_mla")
    return sparseMla(q, tiles);
  if (q.op == "glm.head_linear" || q.op == "glm.slice")
    return headLinear(q, tiles);
  if (q.op == "glm.moe_router" || q.op == "glm.moe_experts")
    return moe(q, tiles);
  if (q.op == "glm.linear" || q.op == "glm.logits" || q.op == "glm.embed" ||
      q.op == "glm.gate_up" || q.op == "glm.linears")
    return qlinear(q, tiles);
  if (q.op == "glm.indexer_score" || q.op == "glm.topk")
    return indexer(q, tiles);
  if (q.op == "glm.rms_norm" || q.op == "glm.layer_norm" || q.op == "glm.rope" ||
      q.op == "glm.rope_cache_append" || q.op == "glm.cache_append" || q.op == "glm.add" ||
      q.op == "glm.swiglu_mul")
    return elementwise(q, tiles);
  KernelChoice c;
  c.family = q.op;
  if (q.op == "glm.attention" || q.op == "glm.cache_read")
    c.rejected.push_back({q.op, "the naive attention form has no kernel: run glm-absorb-mla "
                                "first (glm-pipeline does)"});
  else if (q.op == "glm.swiglu")
    c.rejected.push_back({q.op, "run glm-lower-swiglu first: its projections are qlinear "
                                "kernels and the gate product a pointwise one"});
  else
    c.rejected.push_back({q.op, "no kernel family implements this op yet"});
  return c;
}

} // namespace glm5c::codegen

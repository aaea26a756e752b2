// glm-dsa metadata keys and tensor table (docs/model.md "GGUF layout").
#include "runtime/gguf/glm5_layout.h"

#include "runtime/gguf/gguf_writer.h"

#include <cinttypes>
#include <unordered_set>

namespace glm5rt::gguf {

namespace {

std::string key(const char *suffix) { return std::string(kGlmDsaArch) + "." + suffix; }

struct U32Key {
  const char *suffix;
  uint32_t Glm5Config::*field;
};

// Every u32 hyper-parameter and its glm-dsa key.
const U32Key kU32Keys[] = {
    {"context_length", &Glm5Config::contextLength},
    {"embedding_length", &Glm5Config::hidden},
    {"block_count", &Glm5Config::blockCount},
    {"nextn_predict_layers", &Glm5Config::nextnLayers},
    {"feed_forward_length", &Glm5Config::denseFfn},
    {"attention.head_count", &Glm5Config::heads},
    {"attention.q_lora_rank", &Glm5Config::qLoraRank},
    {"attention.kv_lora_rank", &Glm5Config::kvLoraRank},
    {"rope.dimension_count", &Glm5Config::qkRopeDim},
    {"expert_count", &Glm5Config::experts},
    {"expert_used_count", &Glm5Config::expertsUsed},
    {"expert_shared_count", &Glm5Config::sharedExperts},
    {"expert_feed_forward_length", &Glm5Config::expertFfn},
    {"leading_dense_block_count", &Glm5Config::leadingDense},
    {"vocab_size", &Glm5Config::vocab},
    {"attention.indexer.head_count", &Glm5Config::indexerHeads},
    {"attention.indexer.key_length", &Glm5Config::indexerHeadDim},
    {"attention.indexer.top_k", &Glm5Config::indexerTopK},
    {"expert_gating_func", &Glm5Config::gatingFunc},
    {"expert_group_count", &Glm5Config::expertGroups},
    {"expert_group_used_count", &Glm5Config::expertGroupsUsed},
};

bool isOptionalKey(uint32_t Glm5Config::*field) {
  return field == &Glm5Config::gatingFunc || field == &Glm5Config::expertGroups ||
         field == &Glm5Config::expertGroupsUsed;
}

Status mismatch(const GgufFile &f, const std::string &what) {
  return makeStatus(StatusCode::kDataLoss, "%s: %s", f.path().c_str(), what.c_str());
}

} // namespace

StatusOr<Glm5Config> readGlm5Config(const GgufFile &file) {
  StatusOr<std::string_view> arch = file.getString("general.architecture");
  if (!arch.isOk())
    return arch.status();
  if (*arch != kGlmDsaArch)
    return makeStatus(StatusCode::kInvalidArgument,
                      "%s: general.architecture is '%.*s', expected '%s' (GLM-5)",
                      file.path().c_str(), static_cast<int>(arch->size()), arch->data(),
                      kGlmDsaArch);
  Glm5Config c;
  for (const U32Key &k : kU32Keys) {
    // As llama.cpp's loader: a file without the gating or group keys has GLM-5's sigmoid gating
    // and no expert groups (the defaults in Glm5Config).
    if (isOptionalKey(k.field) && !file.find(key(k.suffix)))
      continue;
    StatusOr<uint64_t> v = file.getU64(key(k.suffix));
    if (!v.isOk())
      return v.status();
    if (*v > UINT32_MAX)
      return mismatch(file, strFormat("key '%s' is %" PRIu64 ", beyond u32", key(k.suffix).c_str(),
                                      *v));
    c.*k.field = static_cast<uint32_t>(*v);
  }
  struct {
    const char *suffix;
    float *field;
  } floats[] = {{"attention.layer_norm_rms_epsilon", &c.rmsEps},
                {"rope.freq_base", &c.ropeTheta},
                {"expert_weights_scale", &c.expertWeightsScale}};
  for (auto &k : floats) {
    StatusOr<double> v = file.getF64(key(k.suffix));
    if (!v.isOk())
      return v.status();
    *k.field = static_cast<float>(*v);
  }
  StatusOr<bool> norm = file.getBool(key("expert_weights_norm"));
  if (!norm.isOk())
    return norm.status();
  c.expertWeightsNorm = *norm;

  // Derived widths, stored redundantly by llama.cpp's converter; they must agree.
  StatusOr<uint64_t> kMla = file.getU64(key("attention.key_length_mla"));
  StatusOr<uint64_t> vMla = file.getU64(key("attention.value_length_mla"));
  StatusOr<uint64_t> kLen = file.getU64(key("attention.key_length"));
  StatusOr<uint64_t> vLen = file.getU64(key("attention.value_length"));
  for (auto *s : {&kMla, &vMla, &kLen, &vLen})
    if (!s->isOk())
      return s->status();
  if (*kMla <= c.qkRopeDim)
    return mismatch(file, strFormat("key_length_mla %" PRIu64 " must exceed rope.dimension_count %u",
                                    *kMla, c.qkRopeDim));
  c.qkNopeDim = static_cast<uint32_t>(*kMla - c.qkRopeDim);
  c.vHeadDim = static_cast<uint32_t>(*vMla);
  if (*kLen != c.kvLoraRank + c.qkRopeDim)
    return mismatch(file, strFormat("attention.key_length is %" PRIu64
                                    ", expected kv_lora_rank + rope = %u",
                                    *kLen, c.kvLoraRank + c.qkRopeDim));
  if (*vLen != c.kvLoraRank)
    return mismatch(file, strFormat("attention.value_length is %" PRIu64
                                    ", expected kv_lora_rank = %u", *vLen, c.kvLoraRank));
  if (c.nextnLayers >= c.blockCount)
    return mismatch(file, strFormat("nextn_predict_layers %u leaves no main layers of %u blocks",
                                    c.nextnLayers, c.blockCount));
  if (c.leadingDense > c.mainLayers())
    return mismatch(file, strFormat("leading_dense_block_count %u exceeds the %u main layers",
                                    c.leadingDense, c.mainLayers()));
  if (c.expertsUsed == 0 || c.expertsUsed > c.experts)
    return mismatch(file, strFormat("expert_used_count %u must be in 1..expert_count (%u)",
                                    c.expertsUsed, c.experts));
  if (c.qkRopeDim % 2 != 0 || c.indexerHeadDim < c.qkRopeDim)
    return mismatch(file, strFormat("rope.dimension_count %u must be even and at most the "
                                    "indexer key length %u", c.qkRopeDim, c.indexerHeadDim));
  for (const U32Key &k : kU32Keys)
    if (c.*k.field == 0 && k.field != &Glm5Config::leadingDense &&
        k.field != &Glm5Config::nextnLayers && k.field != &Glm5Config::sharedExperts &&
        !isOptionalKey(k.field))
      return mismatch(file, strFormat("key '%s' is 0", key(k.suffix).c_str()));
  // What the graph implements: GLM-5's sigmoid gating, and group-limited routing only where it
  // keeps every group (GLM-5: 1 of 1), which makes it a no-op. Anything else would run as
  // something the file does not describe.
  if (c.gatingFunc != 2)
    return mismatch(file, strFormat("key '%s' is %u; glm5c implements GLM-5's sigmoid gating (2)",
                                    key("expert_gating_func").c_str(), c.gatingFunc));
  if (c.expertGroupsUsed < c.expertGroups)
    return mismatch(file, strFormat("expert routing keeps %u of %u expert groups; glm5c "
                                    "implements no group-limited routing (GLM-5: 1 of 1)",
                                    c.expertGroupsUsed, c.expertGroups));
  if (c.qkNopeDim == 0 || c.vHeadDim == 0)
    return mismatch(file, "attention.key_length_mla and value_length_mla must leave positive "
                          "nope and v head dims");
  // Plausibility limits: far above GLM-5's values, low enough that the tensor table and every
  // size derived from the config stay small and overflow-free whatever the file claims.
  struct Limit {
    const char *suffix;
    uint32_t value, max;
  } limits[] = {{"block_count", c.blockCount, 4096},
                {"expert_count", c.experts, 1u << 16},
                {"vocab_size", c.vocab, 1u << 24},
                {"attention.head_count", c.heads, 1u << 12},
                {"attention.indexer.head_count", c.indexerHeads, 1u << 12},
                {"embedding_length", c.hidden, 1u << 18},
                {"feed_forward_length", c.denseFfn, 1u << 20},
                {"expert_feed_forward_length", c.expertFfn, 1u << 20},
                {"attention.q_lora_rank", c.qLoraRank, 1u << 18},
                {"attention.kv_lora_rank", c.kvLoraRank, 1u << 16},
                {"attention.key_length_mla", c.qkNopeDim + c.qkRopeDim, 1u << 16},
                {"attention.value_length_mla", c.vHeadDim, 1u << 16},
                {"attention.indexer.key_length", c.indexerHeadDim, 1u << 16},
                {"attention.indexer.top_k", c.indexerTopK, kMaxIndexerTopK},
                {"context_length", c.contextLength, INT32_MAX}}; // the plan's field: int32
  for (const Limit &l : limits)
    if (l.value > l.max)
      return mismatch(file, strFormat("key '%s' is %u, beyond the plausible limit %u",
                                      key(l.suffix).c_str(), l.value, l.max));
  struct {
    const char *suffix;
    float value;
  } positive[] = {{"attention.layer_norm_rms_epsilon", c.rmsEps},
                  {"rope.freq_base", c.ropeTheta},
                  {"expert_weights_scale", c.expertWeightsScale}};
  for (auto &p : positive)
    if (!(p.value > 0) || p.value > 1e30f)
      return mismatch(file, strFormat("key '%s' is %g, expected a positive finite number",
                                      key(p.suffix).c_str(), p.value));
  return c;
}

void writeGlm5Config(GgufWriter &w, const Glm5Config &c) {
  w.setString("general.architecture", kGlmDsaArch);
  for (const U32Key &k : kU32Keys)
    w.setU32(key(k.suffix), c.*k.field);
  w.setU32(key("attention.head_count_kv"), 1); // MLA runs as MQA over the latent
  w.setU32(key("attention.key_length"), c.kvLoraRank + c.qkRopeDim);
  w.setU32(key("attention.value_length"), c.kvLoraRank);
  w.setU32(key("attention.key_length_mla"), c.qHeadDim());
  w.setU32(key("attention.value_length_mla"), c.vHeadDim);
  w.setF32(key("attention.layer_norm_rms_epsilon"), c.rmsEps);
  w.setF32(key("rope.freq_base"), c.ropeTheta);
  w.setF32(key("expert_weights_scale"), c.expertWeightsScale);
  w.setBool(key("expert_weights_norm"), c.expertWeightsNorm);
}

std::vector<ExpectedTensor> glm5Tensors(const Glm5Config &c) {
  std::vector<ExpectedTensor> out;
  const uint64_t H = c.hidden;
  auto add = [&](std::string name, std::vector<uint64_t> ne, TensorRole role, int32_t layer,
                 bool optional = false) {
    out.push_back({std::move(name), std::move(ne), role, layer, optional});
  };
  add("token_embd.weight", {H, c.vocab}, TensorRole::Embedding, -1);
  add("output_norm.weight", {H}, TensorRole::Norm, -1);
  add("output.weight", {H, c.vocab}, TensorRole::Output, -1);
  for (uint32_t L = 0; L < c.blockCount; ++L) {
    const std::string b = "blk." + std::to_string(L) + ".";
    const int32_t l = static_cast<int32_t>(L);
    add(b + "attn_norm.weight", {H}, TensorRole::Norm, l);
    add(b + "attn_q_a.weight", {H, c.qLoraRank}, TensorRole::Attention, l);
    add(b + "attn_q_a_norm.weight", {c.qLoraRank}, TensorRole::Norm, l);
    add(b + "attn_q_b.weight", {c.qLoraRank, uint64_t(c.heads) * c.qHeadDim()},
        TensorRole::Attention, l);
    add(b + "attn_kv_a_mqa.weight", {H, uint64_t(c.kvLoraRank) + c.qkRopeDim},
        TensorRole::Attention, l);
    add(b + "attn_kv_a_norm.weight", {c.kvLoraRank}, TensorRole::Norm, l);
    add(b + "attn_k_b.weight", {c.qkNopeDim, c.kvLoraRank, c.heads}, TensorRole::Attention, l);
    add(b + "attn_v_b.weight", {c.kvLoraRank, c.vHeadDim, c.heads}, TensorRole::Attention, l);
    add(b + "attn_output.weight", {uint64_t(c.heads) * c.vHeadDim, H}, TensorRole::Attention, l);
    add(b + "ffn_norm.weight", {H}, TensorRole::Norm, l);
    add(b + "indexer.attn_q_b.weight", {c.qLoraRank, uint64_t(c.indexerHeads) * c.indexerHeadDim},
        TensorRole::Indexer, l);
    add(b + "indexer.attn_k.weight", {H, c.indexerHeadDim}, TensorRole::Indexer, l);
    add(b + "indexer.k_norm.weight", {c.indexerHeadDim}, TensorRole::Norm, l);
    add(b + "indexer.k_norm.bias", {c.indexerHeadDim}, TensorRole::NormBias, l);
    add(b + "indexer.proj.weight", {H, c.indexerHeads}, TensorRole::IndexerGate, l);
    if (!c.isMoeLayer(L)) {
      add(b + "ffn_gate.weight", {H, c.denseFfn}, TensorRole::DenseFfn, l);
      add(b + "ffn_up.weight", {H, c.denseFfn}, TensorRole::DenseFfn, l);
      add(b + "ffn_down.weight", {c.denseFfn, H}, TensorRole::DenseFfn, l);
    } else {
      add(b + "ffn_gate_inp.weight", {H, c.experts}, TensorRole::Router, l);
      add(b + "exp_probs_b.bias", {c.experts}, TensorRole::RouterBias, l);
      add(b + "ffn_gate_exps.weight", {H, c.expertFfn, c.experts}, TensorRole::ExpertGateUp, l);
      add(b + "ffn_up_exps.weight", {H, c.expertFfn, c.experts}, TensorRole::ExpertGateUp, l);
      add(b + "ffn_down_exps.weight", {c.expertFfn, H, c.experts}, TensorRole::ExpertDown, l);
      if (c.sharedExperts > 0) {
        const uint64_t S = uint64_t(c.expertFfn) * c.sharedExperts;
        add(b + "ffn_gate_shexp.weight", {H, S}, TensorRole::SharedExpert, l);
        add(b + "ffn_up_shexp.weight", {H, S}, TensorRole::SharedExpert, l);
        add(b + "ffn_down_shexp.weight", {S, H}, TensorRole::SharedExpert, l);
      }
    }
    if (L >= c.mainLayers()) {
      add(b + "nextn.eh_proj.weight", {2 * H, H}, TensorRole::NextnProj, l);
      add(b + "nextn.enorm.weight", {H}, TensorRole::Norm, l);
      add(b + "nextn.hnorm.weight", {H}, TensorRole::Norm, l);
      add(b + "nextn.shared_head_norm.weight", {H}, TensorRole::Norm, l);
      add(b + "nextn.embed_tokens.weight", {H, c.vocab}, TensorRole::Embedding, l, true);
      add(b + "nextn.shared_head_head.weight", {H, c.vocab}, TensorRole::Output, l, true);
    }
  }
  return out;
}

static std::string shapeOf(const std::vector<uint64_t> &ne) {
  std::string s = "{";
  for (size_t i = 0; i < ne.size(); ++i)
    s += strFormat(i ? ", %" PRIu64 : "%" PRIu64, ne[i]);
  return s + "}";
}

std::vector<const TensorInfo *> tensorsOutsideLayout(const GgufFile &file,
                                                     const std::vector<ExpectedTensor> &layout) {
  std::unordered_set<std::string_view> known;
  for (const ExpectedTensor &e : layout)
    known.insert(e.name);
  std::vector<const TensorInfo *> out;
  for (const TensorInfo &t : file.tensors())
    if (!known.count(t.name))
      out.push_back(&t);
  return out;
}

std::vector<std::string> checkGlm5Tensors(const GgufFile &file, const Glm5Config &config) {
  std::vector<std::string> problems;
  std::vector<ExpectedTensor> want = glm5Tensors(config);
  for (const ExpectedTensor &e : want) {
    const TensorInfo *t = file.findTensor(e.name);
    if (!t) {
      if (!e.optional)
        problems.push_back(strFormat("missing tensor '%s' (expected shape %s)", e.name.c_str(),
                                     shapeOf(e.ne).c_str()));
      continue;
    }
    bool same = t->nDims == e.ne.size();
    for (size_t d = 0; same && d < e.ne.size(); ++d)
      same = t->ne[d] == e.ne[d];
    if (!same)
      problems.push_back(strFormat("tensor '%s' has shape %s, expected %s", e.name.c_str(),
                                   t->shapeString().c_str(), shapeOf(e.ne).c_str()));
  }
  for (const TensorInfo *t : tensorsOutsideLayout(file, want))
    problems.push_back(strFormat("unexpected tensor '%.*s' %s", static_cast<int>(t->name.size()),
                                 t->name.data(), t->shapeString().c_str()));
  return problems;
}

} // namespace glm5rt::gguf

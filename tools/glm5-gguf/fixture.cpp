// Fixture GGUF generation (see fixture.h). Every tensor draws from its own stream, seeded by the
// fixture seed and the tensor's name, split into fixed row chunks with their own sub-streams, so
// the bytes do not depend on the thread count or the order the chunks run in.
#include "tools/glm5-gguf/fixture.h"

#include "runtime/gguf/gguf_writer.h"
#include "runtime/gguf/quant.h"
#include "runtime/support/parallel.h"
#include "runtime/support/progress.h"
#include "tools/glm5-gguf/bpe_train.h"
#include "tools/glm5-gguf/fixture_text.h"
#include "tools/glm5-gguf/prng.h"

#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <memory>

namespace glm5c::fixture {

using glm5rt::Status;
using glm5rt::StatusCode;
using glm5rt::makeStatus;
using glm5rt::strFormat;
using namespace glm5rt::gguf;

const std::vector<Preset> &presets() {
  static const std::vector<Preset> kPresets = [] {
    std::vector<Preset> v;
    {
      Preset p;
      p.name = "tiny";
      p.description = "hidden 256, 8 heads, q_lora 256, kv_lora 512, qk_nope 192, qk_rope 64, "
                      "v 256, indexer 8 x 128 top-k 16, 4 layers (1 dense + 3 MoE) + 1 MTP, "
                      "16 experts top-2 + 1 shared of width 128, dense width 512, vocab 1024";
      Glm5Config &c = p.config;
      c.contextLength = 4096;
      c.hidden = 256;
      c.blockCount = 5;
      c.nextnLayers = 1;
      c.denseFfn = 512;
      c.heads = 8;
      c.qLoraRank = 256;
      c.kvLoraRank = 512;
      c.qkNopeDim = 192;
      c.qkRopeDim = 64;
      c.vHeadDim = 256;
      c.experts = 16;
      c.expertsUsed = 2;
      c.sharedExperts = 1;
      c.expertFfn = 128;
      c.leadingDense = 1;
      c.vocab = 1024;
      c.indexerHeads = 8;
      c.indexerHeadDim = 128;
      c.indexerTopK = 16;
      p.defaultMix = QuantMix::F32;
      v.push_back(p);
    }
    // Two more small configurations for fidelity runs: other head, indexer-head, expert,
    // top-k and dense-layer counts than tiny (each with at least 8 indexer heads).
    {
      Preset p;
      p.name = "small";
      p.description = "hidden 512, 16 heads, q_lora 512, kv_lora 512, qk_nope 192, qk_rope 64, "
                      "v 256, indexer 16 x 128 top-k 32, 5 layers (2 dense + 3 MoE), 32 experts "
                      "top-4 + 1 shared of width 256, dense width 1024, vocab 1024";
      Glm5Config &c = p.config;
      c.contextLength = 4096;
      c.hidden = 512;
      c.blockCount = 5;
      c.nextnLayers = 0;
      c.denseFfn = 1024;
      c.heads = 16;
      c.qLoraRank = 512;
      c.kvLoraRank = 512;
      c.qkNopeDim = 192;
      c.qkRopeDim = 64;
      c.vHeadDim = 256;
      c.experts = 32;
      c.expertsUsed = 4;
      c.sharedExperts = 1;
      c.expertFfn = 256;
      c.leadingDense = 2;
      c.vocab = 1024;
      c.indexerHeads = 16;
      c.indexerHeadDim = 128;
      c.indexerTopK = 32;
      p.defaultMix = QuantMix::F32;
      v.push_back(p);
    }
    {
      Preset p;
      p.name = "narrow";
      p.description = "hidden 256, 4 heads, q_lora 256, kv_lora 512, qk_nope 192, qk_rope 64, "
                      "v 256, indexer 12 x 128 top-k 24, 3 layers (1 dense + 2 MoE), 8 experts "
                      "top-3 + 1 shared of width 256, dense width 768, vocab 1024";
      Glm5Config &c = p.config;
      c.contextLength = 4096;
      c.hidden = 256;
      c.blockCount = 3;
      c.nextnLayers = 0;
      c.denseFfn = 768;
      c.heads = 4;
      c.qLoraRank = 256;
      c.kvLoraRank = 512;
      c.qkNopeDim = 192;
      c.qkRopeDim = 64;
      c.vHeadDim = 256;
      c.experts = 8;
      c.expertsUsed = 3;
      c.sharedExperts = 1;
      c.expertFfn = 256;
      c.leadingDense = 1;
      c.vocab = 1024;
      c.indexerHeads = 12;
      c.indexerHeadDim = 128;
      c.indexerTopK = 24;
      p.defaultMix = QuantMix::F32;
      v.push_back(p);
    }
    {
      Preset p;
      p.name = "full-shape";
      p.description = "GLM-5's real shapes: 78 layers (3 dense + 75 MoE) + 1 MTP, hidden 6144, "
                      "64 heads, 256 experts top-8, vocab 154880; data left as holes (zeros), "
                      "for compiling, not running";
      p.sparse = true;
      p.defaultMix = QuantMix::Mixed;
      v.push_back(p); // Glm5Config's defaults are GLM-5
    }
    {
      Preset p;
      p.name = "width";
      p.description = "GLM-5's real widths (hidden 6144, 64 heads, q_lora 2048, 256 experts of "
                      "width 2048, vocab 154880) with --layers N real layers (default 2: 1 dense "
                      "+ 1 MoE), no MTP, random data, for benchmarks";
      p.config.blockCount = 2;
      p.config.nextnLayers = 0;
      p.config.leadingDense = 1;
      p.defaultMix = QuantMix::Mixed;
      v.push_back(p);
    }
    return v;
  }();
  return kPresets;
}

const Preset *findPreset(const std::string &name) {
  for (const Preset &p : presets())
    if (p.name == name)
      return &p;
  return nullptr;
}

std::optional<QuantMix> parseQuantMix(const std::string &name) {
  if (name == "f32") return QuantMix::F32;
  if (name == "bf16") return QuantMix::BF16;
  if (name == "q8_0") return QuantMix::Q8_0;
  if (name == "mixed") return QuantMix::Mixed;
  return std::nullopt;
}

const char *quantMixName(QuantMix mix) {
  switch (mix) {
  case QuantMix::F32: return "f32";
  case QuantMix::BF16: return "bf16";
  case QuantMix::Q8_0: return "q8_0";
  case QuantMix::Mixed: return "mixed";
  }
  return "?";
}

// llama.cpp's general.file_type (llama_ftype) for each mix.
static uint32_t fileType(QuantMix mix) {
  switch (mix) {
  case QuantMix::F32: return 0;   // ALL_F32
  case QuantMix::BF16: return 32; // MOSTLY_BF16
  case QuantMix::Q8_0: return 7;  // MOSTLY_Q8_0
  case QuantMix::Mixed: return 15; // MOSTLY_Q4_K_M
  }
  return 0;
}

GgmlType tensorType(const ExpectedTensor &t, QuantMix mix) {
  // Norms, biases, the router and the indexer's head gate stay F32 in every mix, as in
  // published files (llama.cpp never quantizes 1-D tensors or ffn_gate_inp).
  switch (t.role) {
  case TensorRole::Norm:
  case TensorRole::NormBias:
  case TensorRole::RouterBias:
    return GgmlType::F32;
  case TensorRole::Router:
  case TensorRole::IndexerGate:
    if (mix != QuantMix::BF16)
      return GgmlType::F32;
    break;
  default:
    break;
  }
  GgmlType want = GgmlType::F32;
  switch (mix) {
  case QuantMix::F32: want = GgmlType::F32; break;
  case QuantMix::BF16: want = GgmlType::BF16; break;
  case QuantMix::Q8_0: want = GgmlType::Q8_0; break;
  case QuantMix::Mixed:
    want = t.role == TensorRole::ExpertGateUp ? GgmlType::Q4_K
           : t.role == TensorRole::ExpertDown || t.role == TensorRole::Output ? GgmlType::Q6_K
                                                                              : GgmlType::Q8_0;
    break;
  }
  if (t.ne[0] % ggmlTypeTraits(want).blockElems == 0)
    return want;
  switch (want) {
  case GgmlType::Q4_K: return GgmlType::Q5_0;
  case GgmlType::Q5_K: return GgmlType::Q5_1;
  case GgmlType::Q6_K: return GgmlType::Q8_0;
  default: return GgmlType::F32;
  }
}

namespace {

// Fixtures this large get a progress line while their data are written.
constexpr uint64_t kProgressBytes = 256u << 20;

// Standard deviation (or range) of a tensor's initial values, by role.
struct Init {
  enum Kind { Normal, UniformAroundOne } kind;
  double scale;
};

Init initFor(const ExpectedTensor &t) {
  switch (t.role) {
  case TensorRole::Norm: return {Init::UniformAroundOne, 0.4}; // in [0.6, 1.4)
  case TensorRole::NormBias: return {Init::Normal, 0.1};
  case TensorRole::RouterBias: return {Init::Normal, 0.1};
  case TensorRole::Embedding: return {Init::Normal, 1.0};
  default: break;
  }
  // Linear maps: unit-variance outputs for unit-variance inputs. attn_k_b {nope, kv_lora, heads}
  // reduces over kv_lora (ne[1]) when it expands the latent; every other weight over ne[0].
  uint64_t fanIn = t.name.find("attn_k_b") != std::string::npos ? t.ne[1] : t.ne[0];
  return {Init::Normal, 1.0 / std::sqrt(static_cast<double>(fanIn))};
}

// Rows per work item: chunks of about 1M elements, whole rows (quantizers work on rows).
uint64_t rowsPerChunk(uint64_t rowElems) {
  return std::max<uint64_t>(1, (1u << 20) / std::max<uint64_t>(rowElems, 1));
}

// Per-thread sample buffer, reused across chunks.
std::vector<float> &scratch() {
  thread_local std::vector<float> buf;
  return buf;
}

struct Job {
  size_t tensor;
  uint64_t firstRow, rows;
};

} // namespace

Status makeFixture(const MakeOptions &opt, void (*log)(const std::string &)) {
  const Preset *preset = findPreset(opt.preset);
  if (!preset) {
    std::string names;
    for (const Preset &p : presets())
      names += (names.empty() ? "" : ", ") + p.name;
    return makeStatus(StatusCode::kInvalidArgument, "unknown preset '%s' (known: %s)",
                      opt.preset.c_str(), names.c_str());
  }
  Glm5Config c = preset->config;
  if (opt.nextn)
    c.nextnLayers = *opt.nextn;
  uint32_t mainLayers = opt.layers ? *opt.layers : c.mainLayers();
  if (mainLayers == 0)
    return makeStatus(StatusCode::kInvalidArgument, "--layers must be at least 1");
  c.leadingDense = std::min(c.leadingDense, mainLayers);
  c.blockCount = mainLayers + c.nextnLayers;
  QuantMix mix = opt.mix.value_or(preset->defaultMix);

  auto tok = buildGlmTokenizer(kFixtureText, preset->vocabMerges, c.vocab);
  if (!tok.isOk())
    return tok.status().withContext("tokenizer for preset " + preset->name);

  GgufWriter w;
  writeGlm5Config(w, c);
  w.setString("general.name", "GLM-5 " + preset->name + " fixture");
  w.setU32("general.file_type", fileType(mix));
  w.setU32("general.quantization_version", 2);
  w.setString("glm5c.fixture.preset", preset->name);
  w.setU64("glm5c.fixture.seed", opt.seed);
  w.setString("glm5c.fixture.quant_mix", quantMixName(mix));
  w.setString("tokenizer.ggml.model", "gpt2");
  w.setString("tokenizer.ggml.pre", "glm4");
  w.setStringArray("tokenizer.ggml.tokens", tok->tokens);
  w.setI32Array("tokenizer.ggml.token_type", tok->tokenTypes);
  w.setStringArray("tokenizer.ggml.merges", tok->merges);
  w.setU32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(tok->bosId));
  w.setU32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(tok->eosId));
  w.setU32("tokenizer.ggml.eot_token_id", static_cast<uint32_t>(tok->eotId));
  w.setU32("tokenizer.ggml.eom_token_id", static_cast<uint32_t>(tok->eomId));
  w.setU32("tokenizer.ggml.unknown_token_id", static_cast<uint32_t>(tok->unkId));
  w.setU32("tokenizer.ggml.padding_token_id", static_cast<uint32_t>(tok->padId));
  w.setBool("tokenizer.ggml.add_bos_token", false);

  // The optional nextn tensors (embed_tokens, shared_head_head) are left out, as in GLM-5's files.
  std::vector<ExpectedTensor> tensors;
  for (ExpectedTensor &t : glm5Tensors(c))
    if (!t.optional)
      tensors.push_back(std::move(t));
  std::vector<GgmlType> types;
  for (const ExpectedTensor &t : tensors) {
    types.push_back(tensorType(t, mix));
    GLM5_RETURN_IF_ERROR(w.addTensor(t.name, types.back(), t.ne));
  }
  bool sparse = preset->sparse;
  GLM5_RETURN_IF_ERROR(w.create(opt.output, opt.shards, sparse));
  uint64_t totalBytes = 0;
  for (size_t i = 0; i < tensors.size(); ++i)
    totalBytes += w.tensorBytes(i);
  log(strFormat("%s: preset %s, %s, seed %" PRIu64 ", %zu tensors, %.3f GB%s", opt.output.c_str(),
                preset->name.c_str(), quantMixName(mix), opt.seed, tensors.size(),
                static_cast<double>(totalBytes) / 1e9, sparse ? " (sparse: data are holes)" : ""));
  if (sparse)
    return w.finish();

  std::vector<Job> jobs;
  for (size_t i = 0; i < tensors.size(); ++i) {
    uint64_t rowElems = tensors[i].ne[0];
    uint64_t rows = 1;
    for (size_t d = 1; d < tensors[i].ne.size(); ++d)
      rows *= tensors[i].ne[d];
    uint64_t step = rowsPerChunk(rowElems);
    for (uint64_t r = 0; r < rows; r += step)
      jobs.push_back({i, r, std::min(step, rows - r)});
  }
  // Files of 256 MB and more take seconds to minutes: show bytes, rate and ETA on stderr.
  std::unique_ptr<glm5rt::Progress> progress;
  if (totalBytes >= kProgressBytes)
    progress = std::make_unique<glm5rt::Progress>(opt.output + ": writing", totalBytes, stderr,
                                                  isatty(fileno(stderr)) != 0);
  GLM5_RETURN_IF_ERROR(glm5rt::parallelFor(jobs.size(), opt.threads, [&](size_t j) -> Status {
    std::vector<float> &buf = scratch();
    const Job &job = jobs[j];
    const ExpectedTensor &t = tensors[job.tensor];
    const uint64_t rowElems = t.ne[0];
    Init init = initFor(t);
    // Stream per (tensor, chunk): chunk boundaries depend only on the shape.
    Rng rng(opt.seed ^ hashName(t.name), job.firstRow);
    buf.resize(rowElems * job.rows);
    for (float &x : buf)
      x = static_cast<float>(init.kind == Init::Normal
                                 ? init.scale * rng.normal()
                                 : 1.0 - init.scale + 2.0 * init.scale * rng.uniform());
    const uint64_t rowBytes = *ggmlRowBytes(types[job.tensor], rowElems);
    uint8_t *dst = w.tensorData(job.tensor) + job.firstRow * rowBytes;
    Status status = quantizeRow(types[job.tensor], buf.data(), rowElems * job.rows, dst,
                                rowBytes * job.rows)
                        .withContext(t.name);
    if (progress)
      progress->advance(rowBytes * job.rows);
    return status;
  }));
  if (progress)
    progress->finish();
  return w.finish();
}

} // namespace glm5c::fixture

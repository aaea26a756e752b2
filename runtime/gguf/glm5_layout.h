// GLM-5 in llama.cpp's `glm-dsa` GGUF layout: the hyper-parameters as metadata keys, and the full
// list of tensors (names, shapes, roles) a complete file holds. One definition shared by the
// fixture writer, `glm5-gguf inspect`, the importer and the runtime (docs/model.md "GGUF layout").
#pragma once

#include "runtime/gguf/gguf_reader.h"
#include "runtime/support/status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace glm5rt::gguf {

class GgufWriter;

inline constexpr const char *kGlmDsaArch = "glm-dsa";

// The largest indexer top-k a GGUF or a plan may state (GLM-5: 2048): the per-token selections
// are sized by it.
constexpr uint32_t kMaxIndexerTopK = 1u << 16;

struct Glm5Config {
  uint32_t contextLength = 202752;
  uint32_t hidden = 6144;          // embedding_length
  uint32_t blockCount = 79;        // main layers + nextn layers
  uint32_t nextnLayers = 1;        // MTP blocks stored after the main layers
  uint32_t denseFfn = 12288;       // feed_forward_length (dense layers)
  uint32_t heads = 64;
  uint32_t qLoraRank = 2048;
  uint32_t kvLoraRank = 512;
  uint32_t qkNopeDim = 192;
  uint32_t qkRopeDim = 64;         // rope.dimension_count
  uint32_t vHeadDim = 256;
  uint32_t experts = 256;
  uint32_t expertsUsed = 8;
  uint32_t sharedExperts = 1;
  uint32_t expertFfn = 2048;
  uint32_t leadingDense = 3;
  uint32_t vocab = 154880;
  uint32_t indexerHeads = 32;
  uint32_t indexerHeadDim = 128;
  uint32_t indexerTopK = 2048;
  uint32_t gatingFunc = 2;         // 2 = sigmoid (llama.cpp's LLAMA_EXPERT_GATING_FUNC_TYPE_SIGMOID)
  uint32_t expertGroups = 1;
  uint32_t expertGroupsUsed = 1;
  float rmsEps = 1e-5f;
  float ropeTheta = 1e6f;
  float expertWeightsScale = 2.5f;
  bool expertWeightsNorm = true;

  uint32_t mainLayers() const { return blockCount - nextnLayers; }
  uint32_t qHeadDim() const { return qkNopeDim + qkRopeDim; } // 256
  bool isMoeLayer(uint32_t layer) const { return layer >= leadingDense; }
};

// What a tensor is for; the fixture writer picks its quant type and initialization from it.
enum class TensorRole {
  Norm,          // RMSNorm/LayerNorm weights: F32, random around 1
  NormBias,      // LayerNorm bias: F32, small random
  RouterBias,    // exp_probs_b (selection-only correction bias): F32, random
  Router,        // ffn_gate_inp
  Embedding,     // token_embd
  Output,        // output (lm head)
  Attention,     // MLA projections: q_a, q_b, kv_a, k_b, v_b, o
  Indexer,       // indexer q_b and k projections
  IndexerGate,   // indexer.proj (per-head weights; kept high precision)
  DenseFfn,      // dense layers' gate/up/down
  ExpertGateUp,  // stacked routed experts, gate and up
  ExpertDown,    // stacked routed experts, down
  SharedExpert,  // shared expert gate/up/down
  NextnProj,     // nextn.eh_proj
};

struct ExpectedTensor {
  std::string name;
  std::vector<uint64_t> ne; // GGUF order, ne[0] = input dim
  TensorRole role;
  int32_t layer;            // -1 for global tensors
  bool optional = false;    // nextn.embed_tokens / nextn.shared_head_head
};

// Reads and cross-checks the glm-dsa hyper-parameters. Errors name the key and what was expected.
StatusOr<Glm5Config> readGlm5Config(const GgufFile &file);
// Writes the keys readGlm5Config reads (general.architecture included).
void writeGlm5Config(GgufWriter &writer, const Glm5Config &config);

// Every tensor of a complete glm-dsa file for `config`, in llama.cpp's order (globals, then blocks
// 0..blockCount-1), optional nextn tensors included and marked.
std::vector<ExpectedTensor> glm5Tensors(const Glm5Config &config);

// Compares a file's tensor table with glm5Tensors: one line per missing, misshapen or unexpected
// tensor, naming it and what was expected. Empty when the file is complete.
std::vector<std::string> checkGlm5Tensors(const GgufFile &file, const Glm5Config &config);

// The file's tensors that `layout` (glm5Tensors of the file's config) does not name, in file order.
std::vector<const TensorInfo *> tensorsOutsideLayout(const GgufFile &file,
                                                     const std::vector<ExpectedTensor> &layout);

} // namespace glm5rt::gguf

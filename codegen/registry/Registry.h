// The kernel registry's front door: given an op kind, its shapes, weight quant types, the token
// class and the activation dtype, pick a kernel variant for a target, or explain, candidate by
// candidate, why none fits. Families (SparseMla, QLinear, Elementwise, Indexer, ...) implement
// the selection; this file routes an op to its family. No MLIR: the compiler's
// glm-specialize-kernels pass and `glm5c explain` both call it.
#pragma once

#include "codegen/target/Target.h"

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace glm5c::codegen {

struct KernelQuery {
  std::string op;                     // "glm.sparse_mla"
  std::map<std::string, int64_t> dims; // named sizes: "heads", "latent", "rope", "topk", "in", ...
  std::vector<uint32_t> weightTypes;  // ggml type ids of the op's weights
  bool decode = false;                // one token per step (matrix-vector class)
  bool actF32 = false;                // --activation-dtype f32
};

struct Rejection {
  std::string candidate;
  std::string reason;
};

// A further kernel an op needs (its own instantiation), launched with the primary one.
struct KernelPart {
  std::string variant;
  std::string source;
  std::vector<std::string> entries;
  int threads = 0;
  int64_t dynamicSmem = 0;
  std::vector<std::pair<std::string, int64_t>> params = {}; // launch parameters (runtime/launch)
};

struct KernelChoice {
  bool ok = false;
  std::string family;   // "sparse_mla_decode"
  std::string variant;  // "sparse_mla_decode_bf16_t32_s2"
  int threads = 0;
  int64_t dynamicSmem = 0;
  std::string source;   // the instantiation NVRTC compiles
  std::vector<std::string> entries;
  std::vector<Rejection> rejected; // why each other candidate was not taken (all when !ok)
  std::vector<KernelPart> extra;   // ops of several kernels (routed experts: group, gate/up, down)
  // Launch parameters the plan records for the runtime (Kernel.params; runtime/launch). Only
  // the families whose launch geometry lives in runtime/launch fill them (qlinear, head_linear,
  // slice, the MoE router and expert phases, norms and cache append so far; rope and pointwise
  // need none).
  std::vector<std::pair<std::string, int64_t>> params;
  // Lines `glm5c explain` prints under the choice (e.g. the launch geometry it implies).
  std::vector<std::string> notes;
};

// Every op kind the registry knows, with whether a family implements it yet.
std::vector<std::pair<std::string, bool>> registryOps();

KernelChoice selectKernel(const KernelQuery &query, const Target &tiles);

} // namespace glm5c::codegen

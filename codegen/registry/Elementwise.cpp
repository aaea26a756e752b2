// Elementwise-family variants, their constraints and launch shapes (see Elementwise.h).
#include "codegen/registry/Elementwise.h"

#include <algorithm>

namespace glm5c::codegen {

using glm5rt::makeStatus;
using glm5rt::StatusCode;

namespace {

constexpr uint32_t kF32 = 0;            // ggml type id of F32 (runtime/gguf/ggml_types.h)
constexpr int kMaxValuesPerThread = 16; // a norm row slice held in registers, per thread
constexpr int kNormThreadCandidates[] = {32, 64, 128, 256, 384, 512, 768, 1024};

// The names of the types a norm weight plausibly has; the rest by id (the codegen library does
// not link the GGUF reader's type table).
std::string typeName(uint32_t t) {
  switch (t) {
  case 0:
    return "F32";
  case 1:
    return "F16";
  case 8:
    return "Q8_0";
  case 30:
    return "BF16";
  default:
    return "ggml type " + std::to_string(t);
  }
}

const char *act(bool f32) { return f32 ? "f32" : "bf16"; }

const char *normEntry(NormKind k) {
  switch (k) {
  case NormKind::Rms:
    return "rms_norm";
  case NormKind::AddRms:
    return "add_rms_norm";
  case NormKind::Layer:
    return "layer_norm";
  }
  return "rms_norm";
}

std::string normName(const NormShape &s, int tpr) {
  return std::string(normEntry(s.kind)) + "_" + act(s.actF32) + "_d" + std::to_string(s.width) +
         "_t" + std::to_string(tpr);
}

// "\n  <candidate>: <reason>" lines, the format SparseMla's rejections use.
void reject(std::string &list, const std::string &candidate, const std::string &reason) {
  list += "\n  " + candidate + ": " + reason;
}

std::string actDefine(bool f32) {
  return std::string("#define GLM_ACT_F32 ") + (f32 ? "1" : "0") + "\n";
}

std::string define(const char *name, int64_t v) {
  return std::string("#define ") + name + " " + std::to_string(v) + "\n";
}

} // namespace

glm5rt::StatusOr<NormConfig> selectNorm(const Target &tiles, const NormShape &shape) {
  const char *entry = normEntry(shape.kind);
  if (shape.width <= 0)
    return makeStatus(StatusCode::kInvalidArgument, "%s: row width %lld", entry,
                      static_cast<long long>(shape.width));
  // Constraints every candidate shares: each candidate is rejected for them.
  std::string shared;
  if (shape.weightType != kF32)
    shared = "needs an F32 weight (norm vectors are F32 in GGUF files), got " +
             typeName(shape.weightType);
  else if (shape.kind == NormKind::Layer && shape.biasType != kF32)
    shared = "needs an F32 bias, got " + typeName(shape.biasType);
  std::string rejected;
  for (int tpr : kNormThreadCandidates) {
    const std::string name = normName(shape, tpr);
    if (!shared.empty()) {
      reject(rejected, name, shared);
      continue;
    }
    const int64_t ept = (shape.width + tpr - 1) / tpr;
    if (ept > kMaxValuesPerThread) {
      reject(rejected, name,
             std::to_string(ept) + " values per thread, more than the " +
                 std::to_string(kMaxValuesPerThread) + " a thread keeps in registers");
      continue;
    }
    NormConfig cfg;
    cfg.variant = name;
    cfg.entry = entry;
    cfg.shape = shape;
    cfg.threadsPerRow = tpr;
    cfg.rowsPerCta = std::max(1, 256 / tpr);
    cfg.threads = tpr * cfg.rowsPerCta;
    cfg.valuesPerThread = static_cast<int>(ept);
    return cfg;
  }
  return makeStatus(StatusCode::kUnimplemented, "no %s variant for width %lld on %s:%s", entry,
                    static_cast<long long>(shape.width), tiles.name, rejected.c_str());
}

std::string normSource(const NormConfig &cfg) {
  std::string s = "// " + cfg.variant + "\n";
  s += actDefine(cfg.shape.actF32);
  s += "#define GLM_ELEM_NORM 1\n";
  s += define("GLM_D", cfg.shape.width);
  s += define("GLM_TPR", cfg.threadsPerRow);
  s += define("GLM_ROWS_PER_CTA", cfg.rowsPerCta);
  s += "#include \"elementwise.cuh\"\n";
  return s;
}

glm5rt::launch::NormParams normLaunchParams(const NormConfig &cfg) {
  glm5rt::launch::NormParams p;
  p.threads = cfg.threads;
  p.rowsPerCta = cfg.rowsPerCta;
  return p;
}

int64_t normGrid(const NormConfig &cfg, int64_t rows) {
  return glm5rt::launch::normGrid(normLaunchParams(cfg), rows);
}

glm5rt::StatusOr<RopeConfig> selectRope(const Target &tiles, const RopeShape &s) {
  const std::string name = std::string("rope_") + act(s.actF32) + "_w" + std::to_string(s.width) +
                           "_r" + std::to_string(s.rowsPerToken) + "_o" + std::to_string(s.offset) +
                           "_d" + std::to_string(s.dim);
  std::string why;
  if (s.dim <= 0 || s.dim % 2 != 0)
    why = "needs a positive, even rotated width (whole pairs), got " + std::to_string(s.dim);
  else if (s.offset < 0 || s.width <= 0 || s.offset + s.dim > s.width)
    why = "the rotated columns [" + std::to_string(s.offset) + ", " +
          std::to_string(s.offset + s.dim) + ") do not lie in a row of " + std::to_string(s.width);
  else if (s.rowsPerToken < 1)
    why = "needs at least one row per token, got " + std::to_string(s.rowsPerToken);
  else if (s.rowsPerToken * s.width > (int64_t{1} << 30))
    why = "a token's rows span more than 2^30 values";
  if (!why.empty())
    return makeStatus(StatusCode::kUnimplemented, "no rope variant on %s:\n  %s: %s", tiles.name,
                      name.c_str(), why.c_str());
  RopeConfig cfg;
  cfg.variant = name;
  cfg.shape = s;
  // One CTA per token: enough threads for the token's pairs, 32 to 256.
  const int64_t pairs = s.rowsPerToken * (s.dim / 2);
  cfg.threads = static_cast<int>(std::clamp<int64_t>((pairs + 31) / 32 * 32, 32, 256));
  return cfg;
}

std::string ropeSource(const RopeConfig &cfg) {
  std::string s = "// " + cfg.variant + "\n";
  s += actDefine(cfg.shape.actF32);
  s += "#define GLM_ELEM_ROPE 1\n";
  s += define("GLM_ROPE_WIDTH", cfg.shape.width);
  s += define("GLM_ROPE_ROWS", cfg.shape.rowsPerToken);
  s += define("GLM_ROPE_OFFSET", cfg.shape.offset);
  s += define("GLM_ROPE_DIM", cfg.shape.dim);
  s += define("GLM_ROPE_THREADS", cfg.threads);
  s += "#include \"elementwise.cuh\"\n";
  return s;
}

glm5rt::StatusOr<CacheAppendConfig> selectCacheAppend(const Target &tiles,
                                                      const CacheAppendShape &s) {
  const char *entry = s.rotate ? "rope_cache_append" : "cache_append";
  const std::string name = std::string(entry) + "_" + act(s.actF32) + "_p" + std::to_string(s.page);
  std::string why;
  if (s.latent <= 0 || s.rope <= 0 || s.index <= 0)
    why = "needs positive widths, got latent " + std::to_string(s.latent) + ", rope " +
          std::to_string(s.rope) + ", index " + std::to_string(s.index);
  else if (s.rope % 2 != 0 || s.index % 2 != 0)
    why = "needs even key widths (whole pairs), got rope " + std::to_string(s.rope) + ", index " +
          std::to_string(s.index);
  else if (s.rotate &&
           (s.ropeDim <= 0 || s.ropeDim % 2 != 0 || s.ropeDim > s.rope || s.ropeDim > s.index))
    why = "needs a positive, even rope_dim within both keys, got " + std::to_string(s.ropeDim) +
          " for keys of " + std::to_string(s.rope) + " and " + std::to_string(s.index);
  else if (s.page < 1 || s.page > (int64_t{1} << 20))
    why = "needs a page of 1 to 2^20 slots, got " + std::to_string(s.page);
  if (!why.empty())
    return makeStatus(StatusCode::kUnimplemented, "no %s variant on %s:\n  %s: %s", entry,
                      tiles.name, name.c_str(), why.c_str());
  CacheAppendConfig cfg;
  cfg.variant = name;
  cfg.entry = entry;
  cfg.shape = s;
  return cfg;
}

std::string cacheAppendSource(const CacheAppendConfig &cfg) {
  std::string s = "// " + cfg.variant + "\n";
  s += actDefine(cfg.shape.actF32);
  s += "#define GLM_ELEM_CACHE 1\n";
  s += define("GLM_D_LATENT", cfg.shape.latent);
  s += define("GLM_D_ROPE", cfg.shape.rope);
  s += define("GLM_D_INDEX", cfg.shape.index);
  s += define("GLM_ROPE_DIM", cfg.shape.rotate ? cfg.shape.ropeDim : 0);
  s += define("GLM_PAGE", cfg.shape.page);
  s += "#include \"elementwise.cuh\"\n";
  return s;
}

glm5rt::StatusOr<PointwiseConfig> selectPointwise(const Target &, bool actF32) {
  PointwiseConfig cfg;
  cfg.variant = std::string("pointwise_") + act(actF32);
  cfg.actF32 = actF32;
  return cfg;
}

std::string pointwiseSource(const PointwiseConfig &cfg) {
  std::string s = "// " + cfg.variant + "\n";
  s += actDefine(cfg.actF32);
  s += "#define GLM_ELEM_POINTWISE 1\n";
  s += "#include \"elementwise.cuh\"\n";
  return s;
}

int64_t pointwiseGrid(const PointwiseConfig &cfg, const Target &tiles, int64_t n) {
  return glm5rt::launch::pointwiseGrid(cfg.threads, tiles.smCount, n);
}

glm5rt::launch::CacheAppendParams cacheAppendLaunchParams(const CacheAppendConfig &cfg) {
  glm5rt::launch::CacheAppendParams p;
  p.threads = cfg.threads;
  p.tokensPerCta = cfg.tokensPerCta;
  p.page = cfg.shape.page;
  return p;
}

} // namespace glm5c::codegen

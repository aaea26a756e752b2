// Token sampling from logits: greedy, or temperature with top-k and top-p (nucleus) filtering,
// driven by a seeded generator so a seed reproduces a generation.
#pragma once

#include <cstdint>
#include <vector>

namespace glm5rt::sampler {

struct SamplerOptions {
  float temperature = 0.f; // 0: greedy (argmax, lowest id on ties)
  int topK = 0;            // 0: no top-k filter
  float topP = 1.f;        // 1: no nucleus filter
  uint64_t seed = 0;
};

class Sampler {
public:
  explicit Sampler(const SamplerOptions &options);
  // Picks a token from `logits` (one row of `vocab` values). NaN logits are never chosen.
  int32_t sample(const float *logits, int64_t vocab);

private:
  SamplerOptions opt_;
  uint64_t state_[2];
  double uniform(); // [0, 1)
  std::vector<std::pair<float, int32_t>> scratch_;
};

} // namespace glm5rt::sampler

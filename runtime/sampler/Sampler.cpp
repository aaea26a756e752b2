// Sampling (see Sampler.h). Probabilities are computed in double after temperature scaling,
// top-k keeps the k largest logits (ties to the lower id), top-p the smallest prefix of the
// sorted distribution whose mass reaches p.
#include "runtime/sampler/Sampler.h"

#include <algorithm>
#include <cmath>

namespace glm5rt::sampler {

Sampler::Sampler(const SamplerOptions &options) : opt_(options) {
  uint64_t z = options.seed + 0x9e3779b97f4a7c15ull;
  for (uint64_t &s : state_) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    s = z ^ (z >> 31);
    z += 0x9e3779b97f4a7c15ull;
  }
}

double Sampler::uniform() {
  // xorshift128+
  uint64_t s1 = state_[0];
  const uint64_t s0 = state_[1];
  state_[0] = s0;
  s1 ^= s1 << 23;
  state_[1] = s1 ^ s0 ^ (s1 >> 17) ^ (s0 >> 26);
  return static_cast<double>((state_[1] + s0) >> 11) * (1.0 / 9007199254740992.0);
}

int32_t Sampler::sample(const float *logits, int64_t vocab) {
  auto better = [](const std::pair<float, int32_t> &a, const std::pair<float, int32_t> &b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  if (opt_.temperature <= 0.f) {
    int32_t best = -1;
    for (int64_t v = 0; v < vocab; ++v)
      if (!std::isnan(logits[v]) && (best < 0 || logits[v] > logits[best]))
        best = static_cast<int32_t>(v);
    return best < 0 ? 0 : best;
  }
  scratch_.clear();
  for (int64_t v = 0; v < vocab; ++v)
    if (!std::isnan(logits[v]))
      scratch_.push_back({logits[v], static_cast<int32_t>(v)});
  if (scratch_.empty())
    return 0;
  size_t keep = scratch_.size();
  if (opt_.topK > 0 && static_cast<size_t>(opt_.topK) < keep) {
    keep = static_cast<size_t>(opt_.topK);
    std::partial_sort(scratch_.begin(), scratch_.begin() + keep, scratch_.end(), better);
  } else {
    std::sort(scratch_.begin(), scratch_.end(), better);
  }
  scratch_.resize(keep);
  std::vector<double> p(keep);
  double mx = scratch_[0].first, sum = 0;
  for (size_t i = 0; i < keep; ++i) {
    p[i] = std::exp((scratch_[i].first - mx) / opt_.temperature);
    sum += p[i];
  }
  if (opt_.topP < 1.f) {
    double mass = 0;
    size_t n = 0;
    while (n < keep && mass < opt_.topP * sum)
      mass += p[n++];
    keep = std::max<size_t>(n, 1);
    sum = mass > 0 ? mass : p[0];
  }
  double r = uniform() * sum;
  for (size_t i = 0; i < keep; ++i) {
    r -= p[i];
    if (r < 0)
      return scratch_[i].second;
  }
  return scratch_[keep - 1].second;
}

} // namespace glm5rt::sampler

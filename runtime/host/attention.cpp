// Host reference kernels for attention: the DSA indexer's scores and causal top-k selection, the
// dense selection, naive MLA attention and absorbed sparse MLA with its log-sum-exp.
#include "runtime/host/internal.h"
#include "runtime/host/ops.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace glm5rt::host {

void indexerScore(const float *q, const float *w, int64_t T, int64_t HI, int64_t DI,
                  const float *keys, int64_t nKeys, const int32_t *positions, float scale,
                  float *scores) {
  const uint64_t n = static_cast<uint64_t>(T) * nKeys;
  (void)detail::forBlocks(n, 1024, n * HI * DI, [&](uint64_t i0, uint64_t i1) {
    for (uint64_t i = i0; i < i1; ++i) {
      const int64_t t = static_cast<int64_t>(i) / nKeys, s = static_cast<int64_t>(i) % nKeys;
      if (s > positions[t]) { // causal: docs/model.md "DSA lightning indexer"
        scores[i] = -INFINITY;
        continue;
      }
      double sum = 0.0;
      for (int64_t h = 0; h < HI; ++h) {
        // ReLU per head, on the raw dot product, before the weighted sum over heads.
        double d = detail::dot(q + (t * HI + h) * DI, keys + s * DI, DI);
        if (d > 0.0)
          sum += static_cast<double>(w[t * HI + h]) * d;
      }
      scores[i] = static_cast<float>(static_cast<double>(scale) * sum);
    }
    return Status::ok();
  });
}

void topK(const float *scores, int64_t T, int64_t nKeys, const int32_t *positions, int64_t k,
          int32_t *indices) {
  std::vector<int32_t> cand;
  for (int64_t t = 0; t < T; ++t) {
    const float *row = scores + t * nKeys;
    int32_t *out = indices + t * k;
    // Candidates are the causal positions 0..positions[t] (docs/model.md "DSA lightning
    // indexer": prefill row t selects min(k, t + 1) positions, not top-k of the masked row).
    const int64_t n = std::min<int64_t>(static_cast<int64_t>(positions[t]) + 1, nKeys);
    const int64_t count = std::max<int64_t>(0, std::min(k, n));
    cand.resize(static_cast<size_t>(std::max<int64_t>(n, 0)));
    std::iota(cand.begin(), cand.end(), 0);
    auto key = [&](int32_t s) { return std::isnan(row[s]) ? -INFINITY : row[s]; };
    // A strict total order: higher score first, then the lower position (the tie rule).
    auto better = [&](int32_t a, int32_t b) {
      float ka = key(a), kb = key(b);
      return ka != kb ? ka > kb : a < b;
    };
    if (count < n)
      std::nth_element(cand.begin(), cand.begin() + count, cand.end(), better);
    std::sort(cand.begin(), cand.begin() + count); // ascending positions
    for (int64_t j = 0; j < k; ++j)
      out[j] = j < count ? cand[j] : -1;
  }
}

Status causalAll(const int32_t *positions, int64_t T, int32_t *out, int64_t width) {
  for (int64_t t = 0; t < T; ++t) {
    if (static_cast<int64_t>(positions[t]) + 1 > width)
      return makeStatus(StatusCode::kInvalidArgument,
                        "causalAll: token %lld at position %d needs %lld slots, rows have %lld",
                        static_cast<long long>(t), positions[t],
                        static_cast<long long>(positions[t]) + 1, static_cast<long long>(width));
  }
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < width; ++j)
      out[t * width + j] = j <= positions[t] ? static_cast<int32_t>(j) : -1;
  return Status::ok();
}

namespace {

// Softmax over the scores of the valid slots of one query row (-1 and out-of-range slots are
// skipped, so kernels and the reference agree on padded index lists). Fills `cols` with the
// selected cache rows and `p` with their probabilities; returns log sum exp(score), or -INFINITY
// when no slot is valid. `score(s)` is the (double) attention logit of cache row s.
template <typename ScoreFn>
double softmaxRow(const int32_t *idx, int64_t K, int64_t C, ScoreFn score,
                  std::vector<int32_t> *cols, std::vector<double> *p) {
  cols->clear();
  p->clear();
  for (int64_t j = 0; j < K; ++j) {
    if (idx[j] < 0 || idx[j] >= C)
      continue;
    cols->push_back(idx[j]);
    p->push_back(score(idx[j]));
  }
  if (cols->empty())
    return -INFINITY;
  const double m = *std::max_element(p->begin(), p->end());
  double sum = 0.0;
  for (double &v : *p) {
    v = std::exp(v - m);
    sum += v;
  }
  for (double &v : *p)
    v /= sum;
  return m + std::log(sum);
}

} // namespace

void attention(const float *q, const float *kNope, const float *kRope, const float *v, int64_t T,
               int64_t C, int64_t H, int64_t nope, int64_t rope, int64_t dv, const int32_t *indices,
               int64_t K, float scale, float *o) {
  const uint64_t rows = static_cast<uint64_t>(T) * H;
  (void)detail::forBlocks(rows, 1, rows * K * (nope + rope + dv), [&](uint64_t r0, uint64_t r1) {
    std::vector<int32_t> cols;
    std::vector<double> p, acc(static_cast<size_t>(dv));
    for (uint64_t r = r0; r < r1; ++r) {
      const int64_t t = static_cast<int64_t>(r) / H, h = static_cast<int64_t>(r) % H;
      const float *qh = q + r * (nope + rope); // [q_nope | q_pe], docs/model.md "MLA projections"
      auto score = [&](int32_t s) {
        return static_cast<double>(scale) * (detail::dot(qh, kNope + (s * H + h) * nope, nope) +
                                             detail::dot(qh + nope, kRope + s * rope, rope));
      };
      softmaxRow(indices + t * K, K, C, score, &cols, &p);
      std::fill(acc.begin(), acc.end(), 0.0);
      for (size_t j = 0; j < cols.size(); ++j) {
        const float *vs = v + (cols[j] * H + h) * dv;
        for (int64_t e = 0; e < dv; ++e)
          acc[e] += p[j] * vs[e];
      }
      for (int64_t e = 0; e < dv; ++e)
        o[r * dv + e] = static_cast<float>(acc[e]);
    }
    return Status::ok();
  });
}

void sparseMla(const float *qLat, const float *qRope, int64_t T, int64_t H, int64_t L, int64_t R,
               const float *latent, const float *ropeKey, int64_t C, const int32_t *indices,
               int64_t K, float scale, float *oLat, float *lse) {
  const uint64_t rows = static_cast<uint64_t>(T) * H;
  (void)detail::forBlocks(rows, 1, rows * K * (2 * L + R), [&](uint64_t r0, uint64_t r1) {
    std::vector<int32_t> cols;
    std::vector<double> p, acc(static_cast<size_t>(L));
    for (uint64_t r = r0; r < r1; ++r) {
      const int64_t t = static_cast<int64_t>(r) / H;
      const float *ql = qLat + r * L, *qr = qRope + r * R;
      // One shared key [latent | ropeKey] and value latent: MQA over the latent
      // (docs/model.md "Naive and absorbed attention").
      auto score = [&](int32_t s) {
        return static_cast<double>(scale) *
               (detail::dot(ql, latent + s * L, L) + detail::dot(qr, ropeKey + s * R, R));
      };
      lse[r] = static_cast<float>(softmaxRow(indices + t * K, K, C, score, &cols, &p));
      std::fill(acc.begin(), acc.end(), 0.0);
      for (size_t j = 0; j < cols.size(); ++j) {
        const float *cs = latent + cols[j] * L;
        for (int64_t e = 0; e < L; ++e)
          acc[e] += p[j] * cs[e];
      }
      for (int64_t e = 0; e < L; ++e)
        oLat[r * L + e] = static_cast<float>(acc[e]);
    }
    return Status::ok();
  });
}

} // namespace glm5rt::host

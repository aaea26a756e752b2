// Host reference kernels for the feed-forward blocks: the sigmoid MoE gate with bias-corrected
// selection, the SwiGLU FFN, and routed experts from stacked weights (docs/model.md "MoE").
#include "runtime/host/internal.h"
#include "runtime/host/ops.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace glm5rt::host {

namespace {

long long ll(int64_t v) { return static_cast<long long>(v); }

// silu(g) * u for the SwiGLU hidden layer, in double.
float swishGate(float g, float u) {
  const double z = g;
  return static_cast<float>(z / (1.0 + std::exp(-z)) * static_cast<double>(u));
}

// SwiGLU's hidden layer over already checked 2-dim weights gate and up {Hd, F}: h [T, F].
Status gateUpChecked(const float *x, int64_t T, const Weight &gate, const Weight &up, float *h) {
  const int64_t Hd = static_cast<int64_t>(gate.ne[0]), F = static_cast<int64_t>(gate.ne[1]);
  std::vector<float> u(static_cast<size_t>(T * F));
  GLM5_RETURN_IF_ERROR(linear(x, T, Hd, gate, h));
  GLM5_RETURN_IF_ERROR(linear(x, T, Hd, up, u.data()));
  for (size_t i = 0; i < u.size(); ++i)
    h[i] = swishGate(h[i], u[i]);
  return Status::ok();
}

// SwiGLU over already checked 2-dim weights gate and up {Hd, F}, down {F, Hd}.
Status swigluChecked(const float *x, int64_t T, const Weight &gate, const Weight &up,
                     const Weight &down, float *y) {
  const int64_t F = static_cast<int64_t>(gate.ne[1]);
  std::vector<float> g(static_cast<size_t>(T * F));
  GLM5_RETURN_IF_ERROR(gateUpChecked(x, T, gate, up, g.data()));
  return linear(g.data(), T, F, down, y);
}

// Checks gate and up {Hd, F[, E]} and down {F, Hd[, E]}: same types need not match, dims must.
Status checkFfn(const char *op, const Weight &gate, const Weight &up, const Weight &down,
                uint32_t nDims) {
  std::string what = std::string(op) + ": ";
  GLM5_RETURN_IF_ERROR(checkWeight(gate, (what + "gate").c_str()));
  GLM5_RETURN_IF_ERROR(checkWeight(up, (what + "up").c_str()));
  GLM5_RETURN_IF_ERROR(checkWeight(down, (what + "down").c_str()));
  if (gate.nDims != nDims)
    return makeStatus(StatusCode::kInvalidArgument, "%s: gate %s is not %s", op,
                      weightDims(gate).c_str(),
                      nDims == 2 ? "{hidden, ffn}" : "{hidden, ffn, experts}");
  if (up.nDims != nDims || !std::equal(up.ne, up.ne + nDims, gate.ne))
    return makeStatus(StatusCode::kInvalidArgument, "%s: up %s does not match gate %s", op,
                      weightDims(up).c_str(), weightDims(gate).c_str());
  if (down.nDims != nDims || down.ne[0] != gate.ne[1] || down.ne[1] != gate.ne[0] ||
      (nDims == 3 && down.ne[2] != gate.ne[2]))
    return makeStatus(StatusCode::kInvalidArgument,
                      "%s: down %s does not map gate %s's outputs back to its inputs", op,
                      weightDims(down).c_str(), weightDims(gate).c_str());
  return Status::ok();
}

} // namespace

Status moeGate(const float *logits, int64_t T, int64_t E, const Weight &bias, int64_t k,
               bool normalize, float scale, float *weights, int32_t *ids) {
  if (T < 0 || E <= 0 || k <= 0 || k > E)
    return makeStatus(StatusCode::kInvalidArgument,
                      "moeGate: cannot choose %lld of %lld experts for %lld tokens", ll(k), ll(E),
                      ll(T));
  GLM5_RETURN_IF_ERROR(checkWeight(bias, "moeGate: bias"));
  if (bias.ne[0] != static_cast<uint64_t>(E) || weightRows(bias) != 1)
    return makeStatus(StatusCode::kInvalidArgument, "moeGate: bias %s does not match %lld experts",
                      weightDims(bias).c_str(), ll(E));
  std::vector<float> b(static_cast<size_t>(E)), s(b.size());
  std::vector<double> sel(b.size());
  std::vector<int32_t> order(b.size());
  GLM5_RETURN_IF_ERROR(dequantRows(bias, 0, 1, b.data()));
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t e = 0; e < E; ++e) {
      s[e] = static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(logits[t * E + e]))));
      // The correction bias only chooses (docs/model.md "MoE"); NaN never wins.
      double v = static_cast<double>(s[e]) + b[e];
      sel[e] = std::isnan(v) ? -INFINITY : v;
    }
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int32_t a, int32_t c) {
      return sel[a] != sel[c] ? sel[a] > sel[c] : a < c; // ties: lower expert id
    });
    double sum = 0.0;
    for (int64_t j = 0; j < k; ++j)
      sum += s[order[j]];
    for (int64_t j = 0; j < k; ++j) {
      double w = s[order[j]]; // the UNBIASED score
      if (normalize)
        w /= sum + 1e-20;
      weights[t * k + j] = static_cast<float>(w * scale);
      ids[t * k + j] = order[j];
    }
  }
  return Status::ok();
}

Status swiglu(const float *x, int64_t T, const Weight &gate, const Weight &up, const Weight &down,
              float *y) {
  if (T < 0)
    return makeStatus(StatusCode::kInvalidArgument, "swiglu: negative token count %lld", ll(T));
  GLM5_RETURN_IF_ERROR(checkFfn("swiglu", gate, up, down, 2));
  return swigluChecked(x, T, gate, up, down, y);
}

Status gateUp(const float *x, int64_t T, const Weight &gate, const Weight &up, float *h) {
  if (T < 0)
    return makeStatus(StatusCode::kInvalidArgument, "gateUp: negative token count %lld", ll(T));
  GLM5_RETURN_IF_ERROR(checkWeight(gate, "gateUp: gate"));
  GLM5_RETURN_IF_ERROR(checkWeight(up, "gateUp: up"));
  if (gate.nDims != 2 || up.nDims != 2 || !std::equal(up.ne, up.ne + 2, gate.ne))
    return makeStatus(StatusCode::kInvalidArgument,
                      "gateUp: gate %s and up %s are not the same {hidden, ffn}",
                      weightDims(gate).c_str(), weightDims(up).c_str());
  return gateUpChecked(x, T, gate, up, h);
}

Status moeExperts(const float *x, int64_t T, const float *weights, const int32_t *ids, int64_t k,
                  const Weight &gate, const Weight &up, const Weight &down, float *y,
                  int64_t firstExpert, int64_t allExperts) {
  if (T < 0 || k < 0)
    return makeStatus(StatusCode::kInvalidArgument,
                      "moeExperts: negative token count %lld or expert count %lld", ll(T), ll(k));
  GLM5_RETURN_IF_ERROR(checkFfn("moeExperts", gate, up, down, 3));
  const int64_t Hd = static_cast<int64_t>(gate.ne[0]), F = static_cast<int64_t>(gate.ne[1]);
  const int64_t E = static_cast<int64_t>(gate.ne[2]);
  if (allExperts < 0)
    allExperts = E;
  if (firstExpert < 0 || firstExpert + E > allExperts)
    return makeStatus(StatusCode::kInvalidArgument,
                      "moeExperts: experts [%lld, %lld) are not within the model's %lld",
                      ll(firstExpert), ll(firstExpert + E), ll(allExperts));
  // Slots routed to each of this shard's experts, in (token, slot) order.
  std::vector<std::vector<int64_t>> slots(static_cast<size_t>(E));
  for (int64_t i = 0; i < T * k; ++i) {
    if (ids[i] < 0 || ids[i] >= allExperts)
      return makeStatus(StatusCode::kInvalidArgument,
                        "moeExperts: token %lld slot %lld routes to expert %d, outside [0, %lld)",
                        ll(i / k), ll(i % k), ids[i], ll(allExperts));
    if (ids[i] >= firstExpert && ids[i] < firstExpert + E)
      slots[ids[i] - firstExpert].push_back(i);
  }
  std::vector<double> acc(static_cast<size_t>(T * Hd), 0.0);
  std::vector<float> xs, ys;
  for (int64_t e = 0; e < E; ++e) {
    const std::vector<int64_t> &mine = slots[e];
    if (mine.empty())
      continue;
    const int64_t n = static_cast<int64_t>(mine.size());
    xs.resize(static_cast<size_t>(n * Hd));
    ys.resize(xs.size());
    for (int64_t r = 0; r < n; ++r)
      std::copy(x + (mine[r] / k) * Hd, x + (mine[r] / k + 1) * Hd, xs.begin() + r * Hd);
    GLM5_RETURN_IF_ERROR(swigluChecked(xs.data(), n, detail::rowSlice(gate, e * F, F),
                                       detail::rowSlice(up, e * F, F),
                                       detail::rowSlice(down, e * Hd, Hd), ys.data()));
    for (int64_t r = 0; r < n; ++r) {
      const double w = weights[mine[r]];
      double *dst = &acc[(mine[r] / k) * Hd];
      for (int64_t d = 0; d < Hd; ++d)
        dst[d] += w * ys[r * Hd + d];
    }
  }
  for (size_t i = 0; i < acc.size(); ++i)
    y[i] = static_cast<float>(acc[i]);
  return Status::ok();
}

} // namespace glm5rt::host

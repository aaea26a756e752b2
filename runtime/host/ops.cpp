// Host reference kernels for weights and dense math: weight views and dequantization, embedding,
// RMSNorm/LayerNorm, linear and per-head products, interleaved RoPE and the residual add.
#include "runtime/host/ops.h"
#include "runtime/host/internal.h"

#include "runtime/gguf/quant.h"

#include <cmath>
#include <cstring>

namespace glm5rt::host {

using gguf::GgmlType;

namespace {

long long ll(int64_t v) { return static_cast<long long>(v); }
unsigned long long ull(uint64_t v) { return static_cast<unsigned long long>(v); }

// Dequantizes a {D} weight (a norm weight or bias) after checking it has exactly D elements.
Status vectorWeight(const Weight &w, int64_t D, const char *op, const char *name,
                    std::vector<float> *out) {
  std::string what = std::string(op) + ": " + name;
  GLM5_RETURN_IF_ERROR(checkWeight(w, what.c_str()));
  if (w.ne[0] != static_cast<uint64_t>(D) || weightRows(w) != 1)
    return makeStatus(StatusCode::kInvalidArgument, "%s %s does not match row width %lld",
                      what.c_str(), weightDims(w).c_str(), ll(D));
  out->assign(static_cast<size_t>(D), 0.0f);
  return dequantRows(w, 0, 1, out->data());
}

Status checkCount(const char *op, const char *name, int64_t v) {
  if (v < 0)
    return makeStatus(StatusCode::kInvalidArgument, "%s: %s is negative (%lld)", op, name, ll(v));
  return Status::ok();
}

} // namespace

Weight makeWeight(GgmlType type, const void *data, std::initializer_list<uint64_t> ne) {
  Weight w;
  w.type = type;
  w.data = static_cast<const uint8_t *>(data);
  uint32_t i = 0;
  for (uint64_t d : ne) {
    if (i == 4)
      break; // checkWeight reports nDims 0; more than 4 dims is not a GGUF tensor
    w.ne[i++] = d;
  }
  w.nDims = ne.size() <= 4 ? i : 0;
  return w;
}

uint64_t weightRows(const Weight &w) {
  uint64_t rows = 1;
  for (uint32_t i = 1; i < w.nDims && i < 4; ++i)
    rows *= w.ne[i];
  return rows;
}

std::string weightDims(const Weight &w) {
  std::string s = "{";
  for (uint32_t i = 0; i < w.nDims && i < 4; ++i)
    s += (i ? ", " : "") + std::to_string(w.ne[i]);
  return s + "}";
}

Status checkWeight(const Weight &w, const char *what) {
  if (w.nDims < 1 || w.nDims > 4)
    return makeStatus(StatusCode::kInvalidArgument, "%s has %u dims (1 to 4 expected)", what,
                      w.nDims);
  uint64_t total = 1;
  for (uint32_t i = 0; i < w.nDims; ++i) {
    if (w.ne[i] == 0 || gguf::mulOverflows(total, w.ne[i], &total))
      return makeStatus(StatusCode::kInvalidArgument, "%s %s has a zero or overflowing dim", what,
                        weightDims(w).c_str());
  }
  if (!gguf::canDequantize(w.type))
    return makeStatus(StatusCode::kUnimplemented, "%s %s has type %s, which has no dequantizer",
                      what, weightDims(w).c_str(), gguf::ggmlTypeName(w.type));
  if (!gguf::ggmlRowBytes(w.type, w.ne[0]))
    return makeStatus(StatusCode::kInvalidArgument, "%s %s: ne0 is not a whole number of %s blocks",
                      what, weightDims(w).c_str(), gguf::ggmlTypeName(w.type));
  if (!w.data)
    return makeStatus(StatusCode::kInvalidArgument, "%s %s has no data", what,
                      weightDims(w).c_str());
  return Status::ok();
}

Status dequantRows(const Weight &w, uint64_t r0, uint64_t n, float *out) {
  GLM5_RETURN_IF_ERROR(checkWeight(w, "dequantRows: weight"));
  uint64_t rows = weightRows(w);
  if (r0 > rows || n > rows - r0)
    return makeStatus(StatusCode::kInvalidArgument,
                      "dequantRows: rows [%llu, %llu) are outside weight %s (%llu rows)", ull(r0),
                      ull(r0 + n), weightDims(w).c_str(), ull(rows));
  uint64_t rowBytes = *gguf::ggmlRowBytes(w.type, w.ne[0]);
  for (uint64_t r = 0; r < n; ++r)
    GLM5_RETURN_IF_ERROR(gguf::dequantizeRow(w.type, w.data + (r0 + r) * rowBytes,
                                             static_cast<size_t>(rowBytes), out + r * w.ne[0],
                                             w.ne[0]));
  return Status::ok();
}

namespace detail {

Weight rowSlice(const Weight &w, uint64_t r0, uint64_t rows) {
  Weight s = w;
  s.data = w.data + r0 * *gguf::ggmlRowBytes(w.type, w.ne[0]);
  s.ne[1] = rows;
  s.ne[2] = s.ne[3] = 1;
  s.nDims = 2;
  return s;
}

Status matmulRows(const float *x, int64_t T, int64_t K, const Weight &W, uint64_t r0, uint64_t n,
                  float *y, int64_t ldy) {
  std::vector<float> row(static_cast<size_t>(K));
  for (uint64_t r = 0; r < n; ++r) {
    GLM5_RETURN_IF_ERROR(dequantRows(W, r0 + r, 1, row.data()));
    for (int64_t t = 0; t < T; ++t)
      y[t * ldy + static_cast<int64_t>(r)] = static_cast<float>(dot(row.data(), x + t * K, K));
  }
  return Status::ok();
}

} // namespace detail

Status embed(const int32_t *tokens, int64_t T, const Weight &table, float *out) {
  GLM5_RETURN_IF_ERROR(checkCount("embed", "token count", T));
  GLM5_RETURN_IF_ERROR(checkWeight(table, "embed: table"));
  if (table.nDims != 2)
    return makeStatus(StatusCode::kInvalidArgument, "embed: table %s is not {hidden, vocab}",
                      weightDims(table).c_str());
  uint64_t H = table.ne[0], V = table.ne[1];
  for (int64_t t = 0; t < T; ++t) {
    if (tokens[t] < 0 || static_cast<uint64_t>(tokens[t]) >= V)
      return makeStatus(StatusCode::kInvalidArgument,
                        "embed: token %d at index %lld is outside the vocabulary [0, %llu)",
                        tokens[t], ll(t), ull(V));
  }
  for (int64_t t = 0; t < T; ++t)
    GLM5_RETURN_IF_ERROR(dequantRows(table, static_cast<uint64_t>(tokens[t]), 1, out + t * H));
  return Status::ok();
}

Status rmsNorm(const float *x, int64_t rows, int64_t D, const Weight &w, float eps, float *y) {
  GLM5_RETURN_IF_ERROR(checkCount("rmsNorm", "row count", rows));
  std::vector<float> wv;
  GLM5_RETURN_IF_ERROR(vectorWeight(w, D, "rmsNorm", "weight", &wv));
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * D;
    double inv = 1.0 / std::sqrt(detail::dot(xr, xr, D) / static_cast<double>(D) + eps);
    float *yr = y + r * D; // may be xr: each element is read before it is written
    for (int64_t i = 0; i < D; ++i)
      yr[i] = static_cast<float>(static_cast<double>(wv[i]) * xr[i] * inv);
  }
  return Status::ok();
}

Status layerNorm(const float *x, int64_t rows, int64_t D, const Weight &w, const Weight &b,
                 float eps, float *y) {
  GLM5_RETURN_IF_ERROR(checkCount("layerNorm", "row count", rows));
  std::vector<float> wv, bv;
  GLM5_RETURN_IF_ERROR(vectorWeight(w, D, "layerNorm", "weight", &wv));
  GLM5_RETURN_IF_ERROR(vectorWeight(b, D, "layerNorm", "bias", &bv));
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * D;
    double mean = 0.0, var = 0.0;
    for (int64_t i = 0; i < D; ++i)
      mean += xr[i];
    mean /= static_cast<double>(D);
    for (int64_t i = 0; i < D; ++i)
      var += (xr[i] - mean) * (xr[i] - mean);
    var /= static_cast<double>(D); // biased: mean of squared deviations
    double inv = 1.0 / std::sqrt(var + eps);
    float *yr = y + r * D;
    for (int64_t i = 0; i < D; ++i)
      yr[i] = static_cast<float>((xr[i] - mean) * inv * wv[i] + bv[i]);
  }
  return Status::ok();
}

Status linear(const float *x, int64_t T, const Weight &W, float *y) {
  return linear(x, T, static_cast<int64_t>(W.ne[0]), W, y);
}

Status linear(const float *x, int64_t T, int64_t K, const Weight &W, float *y) {
  GLM5_RETURN_IF_ERROR(checkCount("linear", "token count", T));
  GLM5_RETURN_IF_ERROR(checkWeight(W, "linear: weight"));
  if (W.nDims != 2)
    return makeStatus(StatusCode::kInvalidArgument, "linear: weight %s is not {in, out}",
                      weightDims(W).c_str());
  if (W.ne[0] != static_cast<uint64_t>(K))
    return makeStatus(StatusCode::kInvalidArgument, "linear: weight %s does not take %lld inputs",
                      weightDims(W).c_str(), ll(K));
  uint64_t N = W.ne[1];
  return detail::forBlocks(
      N, 64, static_cast<uint64_t>(T) * N * W.ne[0], [&](uint64_t r0, uint64_t r1) {
        return detail::matmulRows(x, T, K, W, r0, r1 - r0, y + r0, static_cast<int64_t>(N));
      });
}

Status headLinear(const float *x, int64_t T, bool sharedInput, const Weight &W, bool transpose,
                  float *y) {
  GLM5_RETURN_IF_ERROR(checkCount("headLinear", "token count", T));
  GLM5_RETURN_IF_ERROR(checkWeight(W, "headLinear: weight"));
  if (W.nDims != 2 && W.nDims != 3)
    return makeStatus(StatusCode::kInvalidArgument, "headLinear: weight %s is not {a, b, heads}",
                      weightDims(W).c_str());
  const int64_t a = static_cast<int64_t>(W.ne[0]), b = static_cast<int64_t>(W.ne[1]);
  const int64_t H = W.nDims == 3 ? static_cast<int64_t>(W.ne[2]) : 1;
  const int64_t in = transpose ? b : a, out = transpose ? a : b;
  uint64_t work = static_cast<uint64_t>(T) * H * a * b;
  return detail::forBlocks(H, 1, work, [&](uint64_t h0, uint64_t h1) -> Status {
    std::vector<float> m(static_cast<size_t>(a * b)); // head h: b rows of a
    std::vector<double> acc(static_cast<size_t>(a));
    for (int64_t h = static_cast<int64_t>(h0); h < static_cast<int64_t>(h1); ++h) {
      GLM5_RETURN_IF_ERROR(dequantRows(W, h * b, b, m.data()));
      for (int64_t t = 0; t < T; ++t) {
        const float *xin = sharedInput ? x + t * in : x + (t * H + h) * in;
        float *yo = y + (t * H + h) * out;
        if (!transpose) {
          for (int64_t j = 0; j < b; ++j)
            yo[j] = static_cast<float>(detail::dot(&m[j * a], xin, a));
          continue;
        }
        // W[h]^T x: accumulate over j ascending, one double per output i.
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t j = 0; j < b; ++j) {
          const double xj = xin[j];
          const float *mj = &m[j * a];
          for (int64_t i = 0; i < a; ++i)
            acc[i] += static_cast<double>(mj[i]) * xj;
        }
        for (int64_t i = 0; i < a; ++i)
          yo[i] = static_cast<float>(acc[i]);
      }
    }
    return Status::ok();
  });
}

void rope(float *x, int64_t T, int64_t rowsPerToken, int64_t width, const int32_t *positions,
          float theta, int64_t dim, int64_t offset) {
  const int64_t half = dim / 2;
  std::vector<double> invFreq(static_cast<size_t>(half)), c(invFreq.size()), s(invFreq.size());
  for (int64_t i = 0; i < half; ++i) // theta^(-2i/dim), docs/model.md "RoPE"
    invFreq[i] = std::pow(static_cast<double>(theta), -2.0 * static_cast<double>(i) / dim);
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t i = 0; i < half; ++i) {
      double angle = static_cast<double>(positions[t]) * invFreq[i];
      c[i] = std::cos(angle);
      s[i] = std::sin(angle);
    }
    for (int64_t r = t * rowsPerToken; r < (t + 1) * rowsPerToken; ++r) {
      float *p = x + r * width + offset;
      for (int64_t i = 0; i < half; ++i) { // interleaved: pair (2i, 2i + 1)
        double x0 = p[2 * i], x1 = p[2 * i + 1];
        p[2 * i] = static_cast<float>(x0 * c[i] - x1 * s[i]);
        p[2 * i + 1] = static_cast<float>(x0 * s[i] + x1 * c[i]);
      }
    }
  }
}

void add(const float *a, const float *b, int64_t n, float *y) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = a[i] + b[i];
}

} // namespace glm5rt::host

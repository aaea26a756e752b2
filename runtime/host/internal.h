// Helpers shared by the host reference kernels' sources: the double-accumulated dot product, a
// deterministic blocked loop, and the 2-dim matrix product the public ops are built from.
#pragma once

#include "runtime/host/ops.h"
#include "runtime/support/parallel.h"

#include <algorithm>
#include <cstdint>

namespace glm5rt::host::detail {

// sum_i a[i] * b[i], accumulated in double in ascending i.
inline double dot(const float *a, const float *b, int64_t n) {
  double acc = 0.0;
  for (int64_t i = 0; i < n; ++i)
    acc += static_cast<double>(a[i]) * static_cast<double>(b[i]);
  return acc;
}

// Below this many multiply-adds a loop runs on the calling thread (thread start-up would cost
// more than it saves for the small test models).
constexpr uint64_t kParallelWork = uint64_t(1) << 23;

// Runs fn(begin, end) -> Status over [0, n) in blocks of `block` items, on several threads when
// `work` (multiply-adds, roughly) is large. Each item's result must depend only on the item, so
// the output is the same whichever thread runs it. Returns the first error.
template <typename Fn> Status forBlocks(uint64_t n, uint64_t block, uint64_t work, Fn fn) {
  block = std::max<uint64_t>(block, 1);
  uint64_t blocks = (n + block - 1) / block;
  if (work < kParallelWork || blocks < 2) {
    for (uint64_t b = 0; b < blocks; ++b)
      GLM5_RETURN_IF_ERROR(fn(b * block, std::min(n, (b + 1) * block)));
    return Status::ok();
  }
  return parallelFor(static_cast<size_t>(blocks), 0, [&](size_t b) {
    return fn(b * block, std::min<uint64_t>(n, (b + 1) * block));
  });
}

// y[t * ldy + r] = W[r0 + r] . x[t] for rows r in [0, n) of an already checked weight whose rows
// have K elements; x is [T, K]. The weight is dequantized one row at a time and each row is used
// for every token.
Status matmulRows(const float *x, int64_t T, int64_t K, const Weight &W, uint64_t r0, uint64_t n,
                  float *y, int64_t ldy);

// The 2-dim view of rows [r0, r0 + rows) of `w` (ne0 kept): how an expert or a head is sliced out
// of a stacked tensor. `w` must have passed checkWeight.
Weight rowSlice(const Weight &w, uint64_t r0, uint64_t rows);

} // namespace glm5rt::host::detail

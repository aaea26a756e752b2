// Host reference dequantization of GGUF tensor data to float, and the quantizers the fixture
// generator uses. Block layouts and formulas: docs/gguf.md ("Quant blocks"), which follows
// ggml-common.h / ggml-quants.c bit for bit.
#pragma once

#include "runtime/gguf/ggml_types.h"
#include "runtime/support/status.h"

#include <cstddef>
#include <cstdint>

namespace glm5rt::gguf {

// True when dequantizeRow handles `type`: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K,
// Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS.
bool canDequantize(GgmlType type);

// Dequantizes `n` elements (a whole number of blocks of `type`) from `src` (`srcBytes` long, at
// least ggmlRowBytes(type, n)) into `dst[0..n)`. Errors (unsupported type, partial block, short
// source) leave `dst` unspecified.
Status dequantizeRow(GgmlType type, const void *src, size_t srcBytes, float *dst, uint64_t n);

// True when quantizeRow handles `type` (the dequantizable types).
bool canQuantize(GgmlType type);

// Quantizes `n` floats (a whole number of blocks) into `dst` (`dstBytes` long, at least
// ggmlRowBytes(type, n)). Round-to-nearest quantizers with per-block scale search limited to what
// keeps them simple; the round trip is bounded per type (test/unit/quant_test.cpp).
Status quantizeRow(GgmlType type, const float *src, uint64_t n, void *dst, size_t dstBytes);

} // namespace glm5rt::gguf

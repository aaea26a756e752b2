// The ggml tensor types a GGUF file can name: ids, names, block sizes, and overflow-checked byte
// sizes. Facts in docs/gguf.md ("Tensor types").
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace glm5rt::gguf {

// ggml_type ids as stored in a GGUF tensor info. Gaps (4, 5, 31-33, 36-38) are ids ggml retired.
enum class GgmlType : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
  Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
  IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21, IQ2_S = 22,
  IQ4_XS = 23, I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, IQ1_M = 29, BF16 = 30,
  TQ1_0 = 34, TQ2_0 = 35, MXFP4 = 39, NVFP4 = 40, Q1_0 = 41, Q2_0 = 42,
};

struct GgmlTypeTraits {
  GgmlType type;
  const char *name;     // ggml's spelling: "Q4_K", "BF16", ...
  uint32_t blockElems;  // elements per block (1 for plain types)
  uint32_t blockBytes;  // bytes per block
};

// Traits of a known type id, or nullopt for an id ggml does not define.
std::optional<GgmlTypeTraits> ggmlTypeTraits(uint32_t id);
const GgmlTypeTraits &ggmlTypeTraits(GgmlType type);
const char *ggmlTypeName(GgmlType type);
// Parses a type name case-insensitively ("q4_k", "F32").
std::optional<GgmlType> parseGgmlType(std::string_view name);

// Every defined type id, ascending.
const GgmlTypeTraits *ggmlTypeTable(size_t *count);

// Bytes of a row of `ne0` elements; nullopt when ne0 is not a whole number of blocks.
std::optional<uint64_t> ggmlRowBytes(GgmlType type, uint64_t ne0);

// Bytes of a tensor with dims `ne[0..nDims)`; nullopt when ne0 is not a whole number of blocks or
// the size overflows 64 bits.
std::optional<uint64_t> ggmlTensorBytes(GgmlType type, const uint64_t *ne, uint32_t nDims);

// Checked arithmetic used wherever sizes come from a file.
inline bool mulOverflows(uint64_t a, uint64_t b, uint64_t *out) {
  return __builtin_mul_overflow(a, b, out);
}
inline bool addOverflows(uint64_t a, uint64_t b, uint64_t *out) {
  return __builtin_add_overflow(a, b, out);
}

} // namespace glm5rt::gguf

// ggml type table: block sizes from ggml-common.h, summarized in docs/gguf.md.
#include "runtime/gguf/ggml_types.h"

#include <cctype>

namespace glm5rt::gguf {

static const GgmlTypeTraits kTypes[] = {
    {GgmlType::F32, "F32", 1, 4},         {GgmlType::F16, "F16", 1, 2},
    {GgmlType::Q4_0, "Q4_0", 32, 18},     {GgmlType::Q4_1, "Q4_1", 32, 20},
    {GgmlType::Q5_0, "Q5_0", 32, 22},     {GgmlType::Q5_1, "Q5_1", 32, 24},
    {GgmlType::Q8_0, "Q8_0", 32, 34},     {GgmlType::Q8_1, "Q8_1", 32, 36},
    {GgmlType::Q2_K, "Q2_K", 256, 84},    {GgmlType::Q3_K, "Q3_K", 256, 110},
    {GgmlType::Q4_K, "Q4_K", 256, 144},   {GgmlType::Q5_K, "Q5_K", 256, 176},
    {GgmlType::Q6_K, "Q6_K", 256, 210},   {GgmlType::Q8_K, "Q8_K", 256, 292},
    {GgmlType::IQ2_XXS, "IQ2_XXS", 256, 66}, {GgmlType::IQ2_XS, "IQ2_XS", 256, 74},
    {GgmlType::IQ3_XXS, "IQ3_XXS", 256, 98}, {GgmlType::IQ1_S, "IQ1_S", 256, 50},
    {GgmlType::IQ4_NL, "IQ4_NL", 32, 18}, {GgmlType::IQ3_S, "IQ3_S", 256, 110},
    {GgmlType::IQ2_S, "IQ2_S", 256, 82},  {GgmlType::IQ4_XS, "IQ4_XS", 256, 136},
    {GgmlType::I8, "I8", 1, 1},           {GgmlType::I16, "I16", 1, 2},
    {GgmlType::I32, "I32", 1, 4},         {GgmlType::I64, "I64", 1, 8},
    {GgmlType::F64, "F64", 1, 8},         {GgmlType::IQ1_M, "IQ1_M", 256, 56},
    {GgmlType::BF16, "BF16", 1, 2},       {GgmlType::TQ1_0, "TQ1_0", 256, 54},
    {GgmlType::TQ2_0, "TQ2_0", 256, 66},  {GgmlType::MXFP4, "MXFP4", 32, 17},
    {GgmlType::NVFP4, "NVFP4", 64, 36},   {GgmlType::Q1_0, "Q1_0", 128, 18},
    {GgmlType::Q2_0, "Q2_0", 64, 18},
};

const GgmlTypeTraits *ggmlTypeTable(size_t *count) {
  *count = sizeof(kTypes) / sizeof(kTypes[0]);
  return kTypes;
}

std::optional<GgmlTypeTraits> ggmlTypeTraits(uint32_t id) {
  for (const GgmlTypeTraits &t : kTypes)
    if (static_cast<uint32_t>(t.type) == id)
      return t;
  return std::nullopt;
}

const GgmlTypeTraits &ggmlTypeTraits(GgmlType type) {
  for (const GgmlTypeTraits &t : kTypes)
    if (t.type == type)
      return t;
  return kTypes[0]; // unreachable for a GgmlType built from the enum's values
}

const char *ggmlTypeName(GgmlType type) { return ggmlTypeTraits(type).name; }

std::optional<GgmlType> parseGgmlType(std::string_view name) {
  for (const GgmlTypeTraits &t : kTypes) {
    std::string_view n = t.name;
    if (n.size() != name.size())
      continue;
    bool same = true;
    for (size_t i = 0; i < n.size() && same; ++i)
      same = std::toupper(static_cast<unsigned char>(name[i])) == n[i];
    if (same)
      return t.type;
  }
  return std::nullopt;
}

std::optional<uint64_t> ggmlRowBytes(GgmlType type, uint64_t ne0) {
  const GgmlTypeTraits &t = ggmlTypeTraits(type);
  if (ne0 % t.blockElems != 0)
    return std::nullopt;
  uint64_t bytes;
  if (mulOverflows(ne0 / t.blockElems, t.blockBytes, &bytes))
    return std::nullopt;
  return bytes;
}

std::optional<uint64_t> ggmlTensorBytes(GgmlType type, const uint64_t *ne, uint32_t nDims) {
  std::optional<uint64_t> bytes = ggmlRowBytes(type, nDims ? ne[0] : 1);
  if (!bytes)
    return std::nullopt;
  uint64_t total = *bytes;
  for (uint32_t i = 1; i < nDims; ++i)
    if (mulOverflows(total, ne[i], &total))
      return std::nullopt;
  return total;
}

} // namespace glm5rt::gguf

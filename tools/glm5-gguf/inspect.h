// `glm5-gguf inspect` and `glm5-gguf dequant`: reading a GGUF back for people and for tools that
// only take floats.
#pragma once

#include "runtime/support/status.h"

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

namespace glm5c::gguftool {

struct InspectOptions {
  std::string path;
  std::string tensor;                // print this tensor's values instead of the summary
  uint64_t rowBegin = 0, rowEnd = 0; // rows [begin, end) of `tensor`; end 0 = begin + 1
  bool tensorsTable = true;          // print the per-tensor table
};

// Prints the summary (or the tensor's values) to `out`. Returns an error for an unreadable file,
// and kDataLoss when the GLM-5 check finds problems (after printing them).
glm5rt::Status inspect(const InspectOptions &options, FILE *out);

// Writes an all-F32 copy of `input` (every tensor dequantized with the host reference) to `output`.
glm5rt::Status dequantToF32(const std::string &input, const std::string &output, uint32_t threads);

} // namespace glm5c::gguftool

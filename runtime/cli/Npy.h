// Writes NPY version 1.0 files (little-endian float32, C order): the interface `glm5-run score`
// uses to hand logits to other tools.
#pragma once

#include "runtime/support/status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace glm5rt::cli {

Status writeNpyF32(const std::string &path, const std::vector<float> &data, int64_t rows,
                   int64_t cols);

} // namespace glm5rt::cli

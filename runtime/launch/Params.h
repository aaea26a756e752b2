// Reading a plan kernel's launch parameters (`Kernel.params`: integer key/value pairs written by
// the compiler's registry). Shared by every family of runtime/launch.
#pragma once

#include "runtime/schema/plan_generated.h"
#include "runtime/support/status.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace glm5rt::launch {

using ParamList = std::vector<std::pair<std::string, int64_t>>;

// params.<key> of `kernel`, which must be an integer in [lo, hi]; a missing, non-integer or
// out-of-range value is kDataLoss naming the kernel's variant and the key.
StatusOr<int64_t> kernelParam(const glm5::plan::Kernel &kernel, const char *key, int64_t lo,
                              int64_t hi);

} // namespace glm5rt::launch

// A plan as text: target, config, KV layout, weights, kernels (shared memory, spills, code
// sizes, entries), buffers and, optionally, every step with its buffers and attributes. What
// `glm5c inspect` prints and lit tests check.
#pragma once

#include "runtime/schema/plan_generated.h"

#include <string>

namespace glm5rt::plan {

std::string describePlan(const glm5::plan::Plan &plan, bool steps);

} // namespace glm5rt::plan

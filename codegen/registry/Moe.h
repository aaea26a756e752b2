// Registry entries of the MoE routing kernels (moe.cuh): gate, grouping by expert, combine.
#pragma once

#include "codegen/target/Target.h"
#include "runtime/support/status.h"

#include <cstdint>
#include <string>

namespace glm5c::codegen {

struct MoeShape {
  int64_t experts = 256;
  int64_t topk = 8;       // experts per token
  int64_t hidden = 6144;
  bool normalize = true;
  bool actF32 = false;
  bool shard = false; // a rank's range of the experts (GLM_EXPERT_SHARD)
};

// The instantiation of moe.cuh (entries moe_gate, moe_group, moe_combine); fails, naming the
// limit, for shapes the single-CTA grouping or the warp gate cannot take.
glm5rt::StatusOr<std::string> moeRoutingSource(const MoeShape &shape);

} // namespace glm5c::codegen

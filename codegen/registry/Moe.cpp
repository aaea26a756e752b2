// MoE routing instantiation (see Moe.h).
#include "codegen/registry/Moe.h"

namespace glm5c::codegen {

using glm5rt::StatusCode;
using glm5rt::makeStatus;

glm5rt::StatusOr<std::string> moeRoutingSource(const MoeShape &s) {
  if (s.experts <= 0 || s.experts > 4096)
    return makeStatus(StatusCode::kUnimplemented,
                      "moe routing keeps per-expert counts in shared memory: %lld experts > 4096",
                      static_cast<long long>(s.experts));
  if (s.topk <= 0 || s.topk > 32 || s.topk > s.experts)
    return makeStatus(StatusCode::kUnimplemented, "moe_gate selects 1..32 experts, not %lld",
                      static_cast<long long>(s.topk));
  std::string src = "// moe routing\n";
  src += "#define GLM_ACT_F32 " + std::to_string(s.actF32 ? 1 : 0) + "\n";
  src += "#define GLM_EXPERTS " + std::to_string(s.experts) + "\n";
  src += "#define GLM_TOPK_E " + std::to_string(s.topk) + "\n";
  src += "#define GLM_HIDDEN " + std::to_string(s.hidden) + "\n";
  src += "#define GLM_NORMALIZE " + std::to_string(s.normalize ? 1 : 0) + "\n";
  if (s.shard) // absent otherwise: unsharded instantiations stay what they were
    src += "#define GLM_EXPERT_SHARD 1\n";
  src += "#include \"moe.cuh\"\n";
  return src;
}

} // namespace glm5c::codegen

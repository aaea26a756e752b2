//===- PlanEmitter.h - glm module -> flatbuffer plan ----------------------===//
//
// Lowers the pipeline's output (and, for GPU targets, glm-specialize-kernels' choices) into a
// plan: one step per op with its semantic description and kernel, activation buffers from a
// liveness-based memory plan, the weight table pointing into the GGUF, the compiled kernels and
// the KV-cache layout (docs/plan.md).
//
//===----------------------------------------------------------------------===//
#ifndef GLM5C_COMPILER_PLAN_PLANEMITTER_H
#define GLM5C_COMPILER_PLAN_PLANEMITTER_H

#include "mlir/IR/BuiltinOps.h"
#include "runtime/support/status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace glm5rt::gguf {
class GgufFile;
}

namespace glm5c {

struct PlanOptions {
  std::string tiles = "host";   // tile target, or "host" (no kernels: the host backend's plan)
  std::string codeArch;         // NVRTC arch (default: tiles)
  bool actF32 = false;
  bool denseAttention = false;
  int pageSize = 64;
  std::string cacheDir;         // NVRTC disk cache ("" = none)
  unsigned threads = 0;         // parallel NVRTC compiles
};

glm5rt::StatusOr<std::vector<uint8_t>> emitPlan(mlir::ModuleOp module,
                                                const glm5rt::gguf::GgufFile &gguf,
                                                const std::string &ggufName,
                                                const PlanOptions &options);

} // namespace glm5c

#endif

//===- Passes.h - glm graph passes and the canonical pipeline --------------===//
#ifndef GLM5C_DIALECTS_GLM_TRANSFORMS_PASSES_H
#define GLM5C_DIALECTS_GLM_TRANSFORMS_PASSES_H

#include "dialects/glm/IR/GlmDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace glm5c::glm {

#define GEN_PASS_DECL
#include "dialects/glm/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dialects/glm/Transforms/Passes.h.inc"

// The canonical graph pipeline after import: verify, absorb MLA, fuse, clean up, verify again.
void buildGlmPipeline(mlir::OpPassManager &pm);
// Registers every glm pass and the pipeline under the name `glm-pipeline`.
void registerGlmPassesAndPipeline();

} // namespace glm5c::glm

#endif // GLM5C_DIALECTS_GLM_TRANSFORMS_PASSES_H

//===- Pipeline.cpp - the canonical glm graph pipeline --------------------===//
#include "dialects/glm/Transforms/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void glm5c::glm::buildGlmPipeline(OpPassManager &pm) {
  pm.addPass(createGlmVerifyModel());
  pm.addPass(createGlmAbsorbMLA());
  pm.addPass(createGlmFuseRopeAppend());
  pm.addPass(createGlmFuseRouter());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createGlmVerifyModel());
}

void glm5c::glm::registerGlmPassesAndPipeline() {
  registerGlmPasses();
  PassPipelineRegistration<>(
      "glm-pipeline",
      "The canonical graph pipeline after import: verify against the model config, absorb MLA "
      "into glm.sparse_mla, fuse RoPE into the cache append and the router projection into the "
      "gate, canonicalize, CSE, verify again",
      buildGlmPipeline);
}

//===- DenseAttention.cpp - top-k over the whole causal context -----------===//
//
// min(k, pos + 1) positions <= pos are selected (glm.topk); with k >= the context every causal
// position is, so the indices that reach attention are exactly the dense causal set.
//
//===----------------------------------------------------------------------===//
#include "dialects/glm/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace glm5c::glm {
#define GEN_PASS_DEF_GLMDENSEATTENTION
#include "dialects/glm/Transforms/Passes.h.inc"
} // namespace glm5c::glm

using namespace mlir;
using namespace glm5c::glm;

namespace {

struct GlmDenseAttention : glm5c::glm::impl::GlmDenseAttentionBase<GlmDenseAttention> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (context <= 0) {
      module.emitError() << "glm-dense-attention needs context > 0 (the model's context length)";
      return signalPassFailure();
    }
    SmallVector<TopKOp> topks;
    module.walk([&](TopKOp op) { topks.push_back(op); });
    for (TopKOp op : topks) {
      OpBuilder b(op);
      auto old = op.getIndices().getType();
      auto type = RankedTensorType::get({old.getDimSize(0), context}, old.getElementType());
      auto dense = TopKOp::create(b, op.getLoc(), type, op.getScores(), op.getPositions(),
                                  b.getI64IntegerAttr(context));
      // Consumers take indices of any width ([tokens, k]); only the value's type changes.
      op.getIndices().replaceAllUsesWith(dense.getIndices());
      op.erase();
    }
    module->setAttr("glm.attention", StringAttr::get(&getContext(), "dense"));
  }
};

} // namespace

//===- FuseRouter.cpp - glm.linear + glm.moe_gate -> glm.moe_router -------===//
#include "dialects/glm/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace glm5c::glm {
#define GEN_PASS_DEF_GLMFUSEROUTER
#include "dialects/glm/Transforms/Passes.h.inc"
} // namespace glm5c::glm

using namespace mlir;
using namespace glm5c::glm;

namespace {

struct FuseRouterProjection : OpRewritePattern<MoEGateOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MoEGateOp op, PatternRewriter &rewriter) const override {
    auto proj = op.getLogits().getDefiningOp<LinearOp>();
    if (!proj || !proj->hasOneUse())
      return rewriter.notifyMatchFailure(op, "logits are not a single-use glm.linear");
    if (cast<RankedTensorType>(proj.getInput().getType()).getRank() != 2)
      return rewriter.notifyMatchFailure(op, "router input is not [tokens, hidden]");
    rewriter.replaceOpWithNewOp<MoERouterOp>(
        op, op.getWeights().getType(), op.getExperts().getType(), proj.getInput(),
        proj.getWeight(), op.getBias(), op.getTopKAttr(), op.getNormalizeAttr(),
        op.getScaleAttr());
    rewriter.eraseOp(proj);
    return success();
  }
};

struct GlmFuseRouter : glm5c::glm::impl::GlmFuseRouterBase<GlmFuseRouter> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseRouterProjection>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace

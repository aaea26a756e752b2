//===- FuseRopeAppend.cpp - glm.rope + glm.cache_append -> one op ---------===//
#include "dialects/glm/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace glm5c::glm {
#define GEN_PASS_DEF_GLMFUSEROPEAPPEND
#include "dialects/glm/Transforms/Passes.h.inc"
} // namespace glm5c::glm

using namespace mlir;
using namespace glm5c::glm;

namespace {

// Both keys must be rotated from offset 0 with the append's positions, one theta and one dim,
// and feed nothing else: then the rotation can happen on the way into the cache.
struct FuseRopeIntoAppend : OpRewritePattern<CacheAppendOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(CacheAppendOp op, PatternRewriter &rewriter) const override {
    auto ropeKey = op.getRopeKey().getDefiningOp<RopeOp>();
    auto indexKey = op.getIndexKey().getDefiningOp<RopeOp>();
    if (!ropeKey || !indexKey)
      return rewriter.notifyMatchFailure(op, "keys are not produced by glm.rope");
    for (RopeOp r : {ropeKey, indexKey})
      if (r.getOffset() != 0 || r.getPositions() != op.getPositions() || !r->hasOneUse())
        return rewriter.notifyMatchFailure(op, "rope at another offset, position or with uses");
    if (ropeKey.getDim() != indexKey.getDim() || ropeKey.getTheta() != indexKey.getTheta())
      return rewriter.notifyMatchFailure(op, "rope and indexer keys rotate differently");
    rewriter.replaceOpWithNewOp<RopeCacheAppendOp>(
        op, op.getCache(), op.getLayerAttr(), op.getPositions(), op.getLatent(), ropeKey.getInput(),
        indexKey.getInput(), ropeKey.getThetaAttr(), ropeKey.getDimAttr());
    rewriter.eraseOp(ropeKey);
    rewriter.eraseOp(indexKey);
    return success();
  }
};

struct GlmFuseRopeAppend : glm5c::glm::impl::GlmFuseRopeAppendBase<GlmFuseRopeAppend> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseRopeIntoAppend>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace

//===- LowerSwiGLU.cpp - glm.swiglu -> its projections and gate product ---===//
#include "dialects/glm/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace glm5c::glm {
#define GEN_PASS_DEF_GLMLOWERSWIGLU
#include "dialects/glm/Transforms/Passes.h.inc"
} // namespace glm5c::glm

using namespace mlir;
using namespace glm5c::glm;

namespace {

struct SplitSwiGLU : OpRewritePattern<SwiGLUOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(SwiGLUOp op, PatternRewriter &rewriter) const override {
    auto x = cast<RankedTensorType>(op.getInput().getType());
    // gate/up {hidden, ffn}: the hidden rows widen to ffn (verified by the op).
    int64_t ffn = op.getGate().getShape()[1];
    auto wide = RankedTensorType::get({x.getDimSize(0), ffn}, x.getElementType());
    Location loc = op.getLoc();
    Value h;
    if (!x.isDynamicDim(0) && x.getDimSize(0) == 1 &&
        op.getGate().getType() == op.getUp().getType()) {
      // Decode: gate, up and their product in one op (one kernel streams both weights).
      h = GateUpOp::create(rewriter, loc, wide, op.getInput(), op.getGate(), op.getUp());
    } else {
      Value g = LinearOp::create(rewriter, loc, wide, op.getInput(), op.getGate());
      Value u = LinearOp::create(rewriter, loc, wide, op.getInput(), op.getUp());
      h = SwiGLUMulOp::create(rewriter, loc, wide, g, u);
    }
    rewriter.replaceOpWithNewOp<LinearOp>(op, x, h, op.getDown());
    return success();
  }
};

struct GlmLowerSwiGLU : glm5c::glm::impl::GlmLowerSwiGLUBase<GlmLowerSwiGLU> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<SplitSwiGLU>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace

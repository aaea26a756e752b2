//===- AbsorbMLA.cpp - naive MLA attention -> glm.sparse_mla ---------------===//
//
// q.k[h] = q_nope . (W_UK[h] c) + q_pe . kpe = (W_UK[h]^T q_nope) . c + q_pe . kpe and
// sum_s p_s W_UV[h] c_s = W_UV[h] sum_s p_s c_s, so attention can run over the cached latent
// rows directly (docs/model.md "Naive and absorbed attention").
//
//===----------------------------------------------------------------------===//
#include "dialects/glm/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace glm5c::glm {
#define GEN_PASS_DEF_GLMABSORBMLA
#include "dialects/glm/Transforms/Passes.h.inc"
} // namespace glm5c::glm

using namespace mlir;
using namespace glm5c::glm;

namespace {

// The naive form's operands, traced back to the cache.
struct NaiveForm {
  CacheReadOp latent, rope;
  HeadLinearOp keyExpand, valueExpand;
};

// Explains, through `why`, what does not match; succeeds when `op` is the importer's naive form.
LogicalResult matchNaive(AttentionOp op, NaiveForm &form, std::string &why) {
  form.keyExpand = op.getKeyNope().getDefiningOp<HeadLinearOp>();
  form.valueExpand = op.getValue().getDefiningOp<HeadLinearOp>();
  form.rope = op.getKeyRope().getDefiningOp<CacheReadOp>();
  if (!form.keyExpand || !form.keyExpand.getTranspose()) {
    why = "key_nope is not expanded from the latent by a transposed glm.head_linear (attn_k_b)";
    return failure();
  }
  if (!form.valueExpand || form.valueExpand.getTranspose()) {
    why = "value is not expanded from the latent by a glm.head_linear (attn_v_b)";
    return failure();
  }
  form.latent = form.keyExpand.getInput().getDefiningOp<CacheReadOp>();
  if (!form.latent || form.latent.getPart() != CachePart::Latent ||
      form.valueExpand.getInput() != form.keyExpand.getInput()) {
    why = "keys and values are not expanded from one glm.cache_read of the latent";
    return failure();
  }
  if (!form.rope || form.rope.getPart() != CachePart::Rope ||
      form.rope.getCache() != form.latent.getCache() ||
      form.rope.getLayer() != form.latent.getLayer()) {
    why = "key_rope is not the cached rope key of the latent's layer";
    return failure();
  }
  return success();
}

struct AbsorbAttention : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AttentionOp op, PatternRewriter &rewriter) const override {
    NaiveForm form;
    std::string why;
    if (failed(matchNaive(op, form, why)))
      return rewriter.notifyMatchFailure(op, why);

    Location loc = op.getLoc();
    auto q = cast<RankedTensorType>(op.getQuery().getType());
    auto kNope = cast<RankedTensorType>(op.getKeyNope().getType());
    auto latentRows = cast<RankedTensorType>(form.latent.getType());
    auto out = cast<RankedTensorType>(op.getType());
    int64_t tokens = q.getDimSize(0), heads = q.getDimSize(1);
    int64_t nope = kNope.getDimSize(2), rope = q.getDimSize(2) - nope;
    int64_t kvLora = latentRows.getDimSize(1), v = out.getDimSize(2);
    Type f32 = rewriter.getF32Type();
    auto headType = [&](int64_t width) {
      return RankedTensorType::get({tokens, heads, width}, f32);
    };

    Value qNope = SliceOp::create(rewriter, loc, headType(nope), op.getQuery(), 0, nope);
    Value qRope = SliceOp::create(rewriter, loc, headType(rope), op.getQuery(), nope, rope);
    // W_UK[h]^T q_nope: attn_k_b {nope, kv_lora, heads} used without transpose maps nope -> kv_lora.
    Value qLatent =
        HeadLinearOp::create(rewriter, form.keyExpand.getLoc(), headType(kvLora), qNope,
                             form.keyExpand.getWeight(), /*transpose=*/false);
    auto dims = MLADimsAttr::get(rewriter.getContext(), nope, rope, v, kvLora);
    auto mla = SparseMLAOp::create(
        rewriter, loc, headType(kvLora), RankedTensorType::get({tokens, heads}, f32),
        form.latent.getCache(), form.latent.getLayerAttr(), qLatent, qRope, op.getIndices(),
        op.getScaleAttr(), dims);
    // W_UV[h] o_lat: attn_v_b {kv_lora, v, heads} maps kv_lora -> v.
    Value o = HeadLinearOp::create(rewriter, form.valueExpand.getLoc(), out, mla.getOutput(),
                                   form.valueExpand.getWeight(), /*transpose=*/false);
    rewriter.replaceOp(op, o);
    return success();
  }
};

struct GlmAbsorbMLA : glm5c::glm::impl::GlmAbsorbMLABase<GlmAbsorbMLA> {
  void runOnOperation() override {
    // Diagnose what cannot be absorbed before rewriting: every attention must go.
    bool ok = true;
    getOperation()->walk([&](AttentionOp op) {
      NaiveForm form;
      std::string why;
      if (failed(matchNaive(op, form, why))) {
        op.emitError() << "cannot absorb this attention into glm.sparse_mla: " << why;
        ok = false;
      }
    });
    if (!ok)
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    patterns.add<AbsorbAttention>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace

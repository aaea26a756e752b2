//===- GlmOps.cpp - glm op verifiers --------------------------------------===//
//
// Every verifier relates the op's weights (GGUF order: {in, out} for a matrix) to its operand
// and result types, so passes and codegen can trust shapes without re-checking them.
//
//===----------------------------------------------------------------------===//
#include "dialects/glm/IR/GlmDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace glm5c::glm;

#define GET_OP_CLASSES
#include "dialects/glm/IR/GlmOps.cpp.inc"

namespace {

std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += ShapedType::isDynamic(shape[i]) ? std::string("?") : std::to_string(shape[i]);
  }
  return s + "]";
}

// The weight must have exactly `expected` as its GGUF shape.
LogicalResult checkWeight(Operation *op, StringRef role, GgufTensorAttr w,
                          ArrayRef<int64_t> expected) {
  if (w.getShape() != expected)
    return op->emitOpError() << role << " '" << w.getName() << "' has shape "
                             << shapeStr(w.getShape()) << ", expected " << shapeStr(expected);
  return success();
}

// Every dimension after the token dimension must be static (model dims are static).
LogicalResult checkActivation(Operation *op, StringRef what, RankedTensorType t,
                              int64_t minRank, int64_t maxRank) {
  if (t.getRank() < minRank || t.getRank() > maxRank)
    return op->emitOpError() << what << " must have rank " << minRank
                             << (minRank == maxRank ? "" : " to " + std::to_string(maxRank))
                             << ", got " << t;
  for (int64_t i = 1; i < t.getRank(); ++i)
    if (t.isDynamicDim(i))
      return op->emitOpError() << what << " has a dynamic model dimension " << i << ": " << t;
  return success();
}

// Token dimensions agree when both are static.
LogicalResult checkSameTokens(Operation *op, RankedTensorType a, RankedTensorType b) {
  if (!a.isDynamicDim(0) && !b.isDynamicDim(0) && a.getDimSize(0) != b.getDimSize(0))
    return op->emitOpError() << "token dimensions differ: " << a << " vs " << b;
  return success();
}

int64_t tailProduct(RankedTensorType t) {
  int64_t n = 1;
  for (int64_t i = 1; i < t.getRank(); ++i)
    n *= t.getDimSize(i);
  return n;
}

int64_t lastDim(RankedTensorType t) { return t.getDimSize(t.getRank() - 1); }

RankedTensorType rt(Value v) { return cast<RankedTensorType>(v.getType()); }

// I64Attr getters return uint64_t: a negative layer in the IR reads as a huge value.
LogicalResult checkLayer(Operation *op, uint64_t layer, KVCacheType cache) {
  int64_t l = static_cast<int64_t>(layer);
  if (l < 0 || l >= cache.getLayers())
    return op->emitOpError() << "layer " << l << " of a cache of " << cache.getLayers()
                             << " layers";
  return success();
}

// A norm's weight (and bias) is a vector as wide as the normalized rows.
LogicalResult checkNorm(Operation *op, RankedTensorType t, GgufTensorAttr weight,
                        GgufTensorAttr bias, const APFloat &eps) {
  if (failed(checkActivation(op, "input", t, 2, 3)))
    return failure();
  if (!eps.isFiniteNonZero() || eps.isNegative())
    return op->emitOpError() << "eps must be positive";
  if (failed(checkWeight(op, "weight", weight, {lastDim(t)})))
    return failure();
  return bias ? checkWeight(op, "bias", bias, {lastDim(t)}) : success();
}

LogicalResult checkPositions(Operation *op, Value positions, RankedTensorType tokens) {
  RankedTensorType p = rt(positions);
  if (p.getRank() != 1)
    return op->emitOpError() << "positions must be rank 1, got " << p;
  if (!p.isDynamicDim(0) && !tokens.isDynamicDim(0) && p.getDimSize(0) != tokens.getDimSize(0))
    return op->emitOpError() << "positions " << p << " do not match the tokens of " << tokens;
  return success();
}

// The FFN weights of a SwiGLU block, plain ({h, f}, {h, f}, {f, h}) or stacked (one more dim).
LogicalResult checkSwiGLUWeights(Operation *op, int64_t hidden, GgufTensorAttr gate,
                                 GgufTensorAttr up, GgufTensorAttr down, int64_t experts) {
  ArrayRef<int64_t> g = gate.getShape();
  if (g.size() != (experts ? 3u : 2u) || g[0] != hidden)
    return op->emitOpError() << "gate '" << gate.getName() << "' has shape " << shapeStr(g)
                             << ", expected [" << hidden << ", ffn" << (experts ? ", experts" : "")
                             << "]";
  SmallVector<int64_t> upShape(g.begin(), g.end());
  SmallVector<int64_t> downShape = {g[1], hidden};
  if (experts)
    downShape.push_back(experts);
  if (failed(checkWeight(op, "up", up, upShape)))
    return failure();
  return checkWeight(op, "down", down, downShape);
}

LogicalResult checkGate(Operation *op, int64_t experts, GgufTensorAttr bias, uint64_t topKAttr,
                        const APFloat &scale, RankedTensorType input, RankedTensorType weights,
                        RankedTensorType ids) {
  if (failed(checkWeight(op, "bias", bias, {experts})))
    return failure();
  int64_t topK = static_cast<int64_t>(topKAttr);
  if (topK <= 0 || topK > experts)
    return op->emitOpError() << "top_k " << topK << " must be in 1.." << experts;
  if (!scale.isFiniteNonZero() || scale.isNegative())
    return op->emitOpError() << "scale must be positive";
  if (weights.getRank() != 2 || ids.getRank() != 2 || weights.getDimSize(1) != topK ||
      ids.getDimSize(1) != topK)
    return op->emitOpError() << "results must be [tokens, " << topK << "], got " << weights
                             << " and " << ids;
  if (failed(checkSameTokens(op, input, weights)) || failed(checkSameTokens(op, input, ids)))
    return failure();
  return success();
}

} // namespace

LogicalResult EmbedOp::verify() {
  RankedTensorType out = rt(getResult());
  if (rt(getTokens()).getRank() != 1)
    return emitOpError() << "tokens must be rank 1";
  if (failed(checkActivation(*this, "result", out, 2, 2)) ||
      failed(checkSameTokens(*this, rt(getTokens()), out)))
    return failure();
  ArrayRef<int64_t> t = getTable().getShape();
  if (t.size() != 2 || t[0] != lastDim(out))
    return emitOpError() << "table '" << getTable().getName() << "' has shape " << shapeStr(t)
                         << ", expected [" << lastDim(out) << ", vocab]";
  return success();
}

LogicalResult RMSNormOp::verify() {
  return checkNorm(*this, rt(getInput()), getWeight(), {}, getEps());
}

LogicalResult LayerNormOp::verify() {
  return checkNorm(*this, rt(getInput()), getWeight(), getBias(), getEps());
}

LogicalResult LinearOp::verify() {
  RankedTensorType in = rt(getInput()), out = rt(getResult());
  if (failed(checkActivation(*this, "input", in, 2, 4)) ||
      failed(checkActivation(*this, "result", out, 2, 4)) ||
      failed(checkSameTokens(*this, in, out)))
    return failure();
  return checkWeight(*this, "weight", getWeight(), {tailProduct(in), tailProduct(out)});
}

SmallVector<GgufTensorAttr, 4> LinearsOp::getWeights() {
  SmallVector<GgufTensorAttr, 4> w = {getW0(), getW1()};
  if (getW2())
    w.push_back(*getW2());
  if (getW3())
    w.push_back(*getW3());
  return w;
}

LogicalResult LinearsOp::verify() {
  RankedTensorType in = rt(getInput());
  if (failed(checkActivation(*this, "input", in, 2, 4)))
    return failure();
  if (getW3() && !getW2())
    return emitOpError() << "has w3 without w2";
  SmallVector<GgufTensorAttr, 4> w = getWeights();
  if (getNumResults() != w.size())
    return emitOpError() << "has " << w.size() << " weights and " << getNumResults()
                         << " results";
  for (size_t i = 0; i < w.size(); ++i) {
    RankedTensorType out = rt(getResult(i));
    std::string role = "w" + std::to_string(i);
    if (failed(checkActivation(*this, "result", out, 2, 4)) ||
        failed(checkSameTokens(*this, in, out)) ||
        failed(checkWeight(*this, role, w[i], {tailProduct(in), tailProduct(out)})))
      return failure();
    if (w[i].getType() != w[0].getType())
      return emitOpError() << role << " '" << w[i].getName()
                           << "' is not of w0's GGUF type (one kernel streams every weight)";
  }
  return success();
}

LogicalResult HeadLinearOp::verify() {
  RankedTensorType in = rt(getInput()), out = rt(getResult());
  if (failed(checkActivation(*this, "input", in, 2, 3)) ||
      failed(checkActivation(*this, "result", out, 3, 3)) ||
      failed(checkSameTokens(*this, in, out)))
    return failure();
  int64_t heads = out.getDimSize(1);
  if (in.getRank() == 3 && in.getDimSize(1) != heads)
    return emitOpError() << "input has " << in.getDimSize(1) << " heads, result " << heads;
  // Without transpose head h maps a -> b; with it b -> a, for a weight {a, b, heads}.
  int64_t inDim = lastDim(in), outDim = lastDim(out);
  SmallVector<int64_t> expected = getTranspose() ? SmallVector<int64_t>{outDim, inDim, heads}
                                                 : SmallVector<int64_t>{inDim, outDim, heads};
  return checkWeight(*this, "weight", getWeight(), expected);
}

LogicalResult SliceOp::verify() {
  RankedTensorType in = rt(getInput()), out = rt(getResult());
  if (failed(checkActivation(*this, "input", in, 2, 3)) ||
      failed(checkActivation(*this, "result", out, 2, 3)) ||
      failed(checkSameTokens(*this, in, out)))
    return failure();
  if (in.getRank() != out.getRank() ||
      in.getShape().drop_front().drop_back() != out.getShape().drop_front().drop_back())
    return emitOpError() << "slices only the last dimension: " << in << " -> " << out;
  int64_t offset = getOffset(), size = getSize();
  if (size != lastDim(out) || offset < 0 || offset + size > lastDim(in))
    return emitOpError() << "slice [" << offset << ", " << offset + size << ") of " << lastDim(in)
                         << " values does not give " << out;
  return success();
}

LogicalResult RopeOp::verify() {
  RankedTensorType in = rt(getInput());
  if (failed(checkActivation(*this, "input", in, 2, 3)) ||
      failed(checkPositions(*this, getPositions(), in)))
    return failure();
  int64_t dim = getDim(), offset = getOffset();
  if (dim <= 0 || dim % 2 != 0)
    return emitOpError() << "rope dim " << dim << " must be positive and even";
  if (offset < 0 || offset + dim > lastDim(in))
    return emitOpError() << "rope slice [" << offset << ", " << offset + dim
                         << ") exceeds the row of " << lastDim(in);
  if (!getTheta().isFiniteNonZero() || getTheta().isNegative())
    return emitOpError() << "theta must be positive";
  return success();
}

template <typename AppendOp> static LogicalResult verifyAppend(AppendOp op) {
  KVCacheType cache = op.getCache().getType();
  if (failed(checkLayer(op, op.getLayer(), cache)))
    return failure();
  RankedTensorType latent = rt(op.getLatent());
  if (failed(checkPositions(op, op.getPositions(), latent)))
    return failure();
  struct Part {
    const char *name;
    Value value;
    int64_t width;
  } parts[] = {{"latent", op.getLatent(), cache.getLatent()},
               {"rope key", op.getRopeKey(), cache.getRope()},
               {"index key", op.getIndexKey(), cache.getIndexDim()}};
  for (const Part &p : parts) {
    RankedTensorType t = rt(p.value);
    if (failed(checkActivation(op, p.name, t, 2, 2)) || failed(checkSameTokens(op, latent, t)))
      return failure();
    if (lastDim(t) != p.width)
      return op.emitOpError() << p.name << " rows are " << lastDim(t) << " wide, the cache holds "
                              << p.width;
  }
  return success();
}

LogicalResult CacheAppendOp::verify() { return verifyAppend(*this); }

LogicalResult RopeCacheAppendOp::verify() {
  if (failed(verifyAppend(*this)))
    return failure();
  int64_t d = getRopeDim();
  KVCacheType cache = getCache().getType();
  if (d <= 0 || d % 2 != 0 || d > cache.getRope() || d > cache.getIndexDim())
    return emitOpError() << "rope_dim " << d << " must be even and fit the rope and index keys";
  if (!getTheta().isFiniteNonZero() || getTheta().isNegative())
    return emitOpError() << "theta must be positive";
  return success();
}

LogicalResult CacheReadOp::verify() {
  KVCacheType cache = getCache().getType();
  if (failed(checkLayer(*this, getLayer(), cache)))
    return failure();
  int64_t width = getPart() == CachePart::Latent ? cache.getLatent()
                  : getPart() == CachePart::Rope ? cache.getRope()
                                                 : cache.getIndexDim();
  RankedTensorType out = rt(getResult());
  if (failed(checkActivation(*this, "result", out, 2, 2)))
    return failure();
  if (lastDim(out) != width)
    return emitOpError() << stringifyCachePart(getPart()) << " rows are " << width
                         << " wide, not " << lastDim(out);
  return success();
}

LogicalResult IndexerScoreOp::verify() {
  KVCacheType cache = getCache().getType();
  if (failed(checkLayer(*this, getLayer(), cache)))
    return failure();
  RankedTensorType q = rt(getQuery()), w = rt(getHeadWeights()), s = rt(getScores());
  if (failed(checkActivation(*this, "query", q, 3, 3)) ||
      failed(checkActivation(*this, "head weights", w, 2, 2)) ||
      failed(checkSameTokens(*this, q, w)) || failed(checkPositions(*this, getPositions(), q)))
    return failure();
  if (lastDim(q) != cache.getIndexDim())
    return emitOpError() << "query heads are " << lastDim(q) << " wide, indexer keys "
                         << cache.getIndexDim();
  if (w.getDimSize(1) != q.getDimSize(1))
    return emitOpError() << "head weights for " << w.getDimSize(1) << " heads, query has "
                         << q.getDimSize(1);
  if (s.getRank() != 2)
    return emitOpError() << "scores must be [tokens, cached positions], got " << s;
  return checkSameTokens(*this, q, s);
}

LogicalResult TopKOp::verify() {
  RankedTensorType s = rt(getScores()), idx = rt(getIndices());
  if (s.getRank() != 2)
    return emitOpError() << "scores must be [tokens, cached positions], got " << s;
  if (failed(checkPositions(*this, getPositions(), s)))
    return failure();
  int64_t k = static_cast<int64_t>(getK());
  if (k <= 0)
    return emitOpError() << "k must be positive";
  if (idx.getRank() != 2 || idx.getDimSize(1) != k)
    return emitOpError() << "indices must be [tokens, " << k << "], got " << idx;
  return checkSameTokens(*this, s, idx);
}

LogicalResult AttentionOp::verify() {
  RankedTensorType q = rt(getQuery()), kn = rt(getKeyNope()), kr = rt(getKeyRope()),
                   v = rt(getValue()), idx = rt(getIndices()), o = rt(getResult());
  if (failed(checkActivation(*this, "query", q, 3, 3)) ||
      failed(checkActivation(*this, "key_nope", kn, 3, 3)) ||
      failed(checkActivation(*this, "key_rope", kr, 2, 2)) ||
      failed(checkActivation(*this, "value", v, 3, 3)) ||
      failed(checkActivation(*this, "result", o, 3, 3)))
    return failure();
  int64_t heads = q.getDimSize(1);
  if (kn.getDimSize(1) != heads || v.getDimSize(1) != heads || o.getDimSize(1) != heads)
    return emitOpError() << "query, keys, values and result must have " << heads << " heads";
  if (lastDim(q) != lastDim(kn) + lastDim(kr))
    return emitOpError() << "query heads are " << lastDim(q) << " wide, keys "
                         << lastDim(kn) << " + " << lastDim(kr);
  if (lastDim(o) != lastDim(v))
    return emitOpError() << "result heads are " << lastDim(o) << " wide, values " << lastDim(v);
  if (idx.getRank() != 2)
    return emitOpError() << "indices must be [tokens, k], got " << idx;
  if (failed(checkSameTokens(*this, kn, kr)) || failed(checkSameTokens(*this, kn, v)) ||
      failed(checkSameTokens(*this, q, o)) || failed(checkSameTokens(*this, q, idx)))
    return failure();
  if (!getScale().isFiniteNonZero() || getScale().isNegative())
    return emitOpError() << "scale must be positive";
  return success();
}

LogicalResult SparseMLAOp::verify() {
  KVCacheType cache = getCache().getType();
  MLADimsAttr dims = getDims();
  if (failed(checkLayer(*this, getLayer(), cache)))
    return failure();
  if (dims.getKvLora() != cache.getLatent() || dims.getRope() != cache.getRope())
    return emitOpError() << "dims " << dims << " do not match the cache " << cache;
  RankedTensorType ql = rt(getQLatent()), qr = rt(getQRope()), idx = rt(getIndices()),
                   o = rt(getOutput()), lse = rt(getLse());
  if (failed(checkActivation(*this, "q_latent", ql, 3, 3)) ||
      failed(checkActivation(*this, "q_rope", qr, 3, 3)) ||
      failed(checkActivation(*this, "output", o, 3, 3)) ||
      failed(checkActivation(*this, "lse", lse, 2, 2)))
    return failure();
  if (lastDim(ql) != dims.getKvLora() || lastDim(qr) != dims.getRope())
    return emitOpError() << "q_latent/q_rope rows are " << lastDim(ql) << "/" << lastDim(qr)
                         << " wide, dims say " << dims.getKvLora() << "/" << dims.getRope();
  int64_t heads = ql.getDimSize(1);
  if (qr.getDimSize(1) != heads || o.getDimSize(1) != heads || lse.getDimSize(1) != heads)
    return emitOpError() << "q_latent, q_rope, output and lse must have " << heads << " heads";
  if (o.getShape() != ql.getShape())
    return emitOpError() << "output " << o << " must have the shape of q_latent " << ql;
  if (idx.getRank() != 2)
    return emitOpError() << "indices must be [tokens, k], got " << idx;
  if (failed(checkSameTokens(*this, ql, idx)) || failed(checkSameTokens(*this, ql, lse)) ||
      failed(checkSameTokens(*this, ql, qr)))
    return failure();
  if (!getScale().isFiniteNonZero() || getScale().isNegative())
    return emitOpError() << "scale must be positive";
  return success();
}

LogicalResult MoEGateOp::verify() {
  RankedTensorType l = rt(getLogits());
  if (failed(checkActivation(*this, "logits", l, 2, 2)))
    return failure();
  return checkGate(*this, lastDim(l), getBias(), getTopK(), getScale(), l, rt(getWeights()),
                   rt(getExperts()));
}

LogicalResult MoERouterOp::verify() {
  RankedTensorType x = rt(getInput());
  if (failed(checkActivation(*this, "input", x, 2, 2)))
    return failure();
  ArrayRef<int64_t> w = getWeight().getShape();
  if (w.size() != 2 || w[0] != lastDim(x))
    return emitOpError() << "weight '" << getWeight().getName() << "' has shape " << shapeStr(w)
                         << ", expected [" << lastDim(x) << ", experts]";
  return checkGate(*this, w[1], getBias(), getTopK(), getScale(), x, rt(getWeights()),
                   rt(getExperts()));
}

LogicalResult MoEExpertsOp::verify() {
  RankedTensorType x = rt(getInput()), w = rt(getWeights()), ids = rt(getExperts()),
                   y = rt(getResult());
  if (failed(checkActivation(*this, "input", x, 2, 2)))
    return failure();
  if (x != y)
    return emitOpError() << "input and result must be the same [tokens, hidden] type";
  if (w.getRank() != 2 || w.getShape() != ids.getShape() || w.isDynamicDim(1))
    return emitOpError() << "weights and experts must both be [tokens, k] with a static k, got "
                         << w << " and " << ids;
  if (failed(checkSameTokens(*this, x, w)))
    return failure();
  ArrayRef<int64_t> g = getGate().getShape();
  if (g.size() != 3)
    return emitOpError() << "gate '" << getGate().getName()
                         << "' must be stacked [hidden, ffn, experts], got " << shapeStr(g);
  // A rank's shard (offsets on the gate) holds experts [offset, offset + g[2]) of the model's;
  // ids outside contribute nothing there, so k may exceed the local count.
  if (getGate().getOffsets().empty() && w.getDimSize(1) > g[2])
    return emitOpError() << w.getDimSize(1) << " experts per token of " << g[2];
  if (getGate().getOffsets() != getUp().getOffsets() ||
      getDown().getOffsets().size() != getGate().getOffsets().size() ||
      (!getGate().getOffsets().empty() && getDown().getOffsets()[2] != getGate().getOffsets()[2]))
    return emitOpError() << "gate, up and down must hold the same experts";
  return checkSwiGLUWeights(*this, lastDim(x), getGate(), getUp(), getDown(), g[2]);
}

LogicalResult SwiGLUOp::verify() {
  RankedTensorType x = rt(getInput());
  if (failed(checkActivation(*this, "input", x, 2, 2)))
    return failure();
  return checkSwiGLUWeights(*this, lastDim(x), getGate(), getUp(), getDown(), 0);
}

LogicalResult GateUpOp::verify() {
  RankedTensorType x = rt(getInput()), y = rt(getResult());
  if (failed(checkActivation(*this, "input", x, 2, 2)) ||
      failed(checkActivation(*this, "result", y, 2, 2)) || failed(checkSameTokens(*this, x, y)))
    return failure();
  if (getGate().getType() != getUp().getType())
    return emitOpError() << "gate and up have different GGUF types (one kernel streams both)";
  if (failed(checkWeight(*this, "gate", getGate(), {lastDim(x), lastDim(y)})))
    return failure();
  return checkWeight(*this, "up", getUp(), {lastDim(x), lastDim(y)});
}

LogicalResult AllReduceOp::verify() {
  return checkActivation(*this, "input", rt(getInput()), 2, 3);
}

LogicalResult AllGatherOp::verify() {
  RankedTensorType x = rt(getInput()), y = rt(getResult());
  if (failed(checkActivation(*this, "input", x, 2, 2)) ||
      failed(checkActivation(*this, "result", y, 2, 2)) || failed(checkSameTokens(*this, x, y)))
    return failure();
  const int64_t c = lastDim(x), all = lastDim(y);
  if (c <= 0 || all < 2 * c || all % c != 0)
    return emitOpError() << "result width " << all << " is not a whole number (>= 2) of "
                         << "input slices of " << c;
  return success();
}

LogicalResult LogitsOp::verify() {
  RankedTensorType x = rt(getInput()), y = rt(getResult());
  if (failed(checkActivation(*this, "input", x, 2, 2)) ||
      failed(checkActivation(*this, "result", y, 2, 2)) || failed(checkSameTokens(*this, x, y)))
    return failure();
  return checkWeight(*this, "weight", getWeight(), {lastDim(x), lastDim(y)});
}

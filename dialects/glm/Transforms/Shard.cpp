//===- Shard.cpp - one function per rank: TP attention/FFN, EP experts ----===//
//
// See Passes.td (GlmShard) for what each rank holds. Invariant: every rank's function has the
// same ops in the same order (only weight boxes and head/width/vocab dims differ), so the ranks'
// glm.all_reduce and glm.all_gather ops pair up one to one.
#include "dialects/glm/Transforms/Passes.h"
#include "runtime/gguf/ggml_types.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"

namespace glm5c::glm {
#define GEN_PASS_DEF_GLMSHARD
#include "dialects/glm/Transforms/Passes.h.inc"
} // namespace glm5c::glm

using namespace mlir;
using namespace glm5c::glm;

namespace {

// "blk.7.attn_q_b.weight" -> "attn_q_b.weight"; other names unchanged.
StringRef role(GgufTensorAttr w) {
  StringRef n = w.getName();
  if (!n.starts_with("blk."))
    return n;
  size_t dot = n.find('.', 4);
  return dot == StringRef::npos ? n : n.drop_front(dot + 1);
}

class RankSharder {
public:
  RankSharder(func::FuncOp fn, int64_t rank, int64_t ranks)
      : fn_(fn), r_(rank), n_(ranks), b_(fn.getContext()) {}

  LogicalResult run() {
    SmallVector<Operation *> ops;
    for (Operation &op : fn_.getBody().front())
      ops.push_back(&op);
    for (Operation *op : ops) {
      if (auto lin = dyn_cast<LinearOp>(op); lin && role(lin.getWeight()) == "attn_q_b.weight") {
        if (failed(shardHeads(lin)))
          return failure();
      } else if (auto sw = dyn_cast<SwiGLUOp>(op)) {
        if (failed(shardFfn(sw, /*gateUpDim=*/1, /*downDim=*/0)))
          return failure();
      } else if (auto ex = dyn_cast<MoEExpertsOp>(op)) {
        if (failed(shardFfn(ex, /*gateUpDim=*/2, /*downDim=*/2)))
          return failure();
      } else if (auto lg = dyn_cast<LogitsOp>(op)) {
        if (failed(shardVocab(lg)))
          return failure();
      }
    }
    return success();
  }

private:
  // The box [offset, offset + size) of dim `d` of `w` (other dims whole), checked: `size` is
  // the tensor's dim / n_, and a cut of dim 0 (the rows' contiguous dim) covers whole blocks.
  FailureOr<GgufTensorAttr> box(Operation *op, GgufTensorAttr w, unsigned d) {
    SmallVector<int64_t> shape(w.getShape()), offsets(shape.size(), 0);
    if (!w.getOffsets().empty())
      return op->emitOpError() << "'" << w.getName() << "' is already a rank's box";
    if (shape[d] % n_)
      return op->emitOpError() << "cannot split '" << w.getName() << "' over " << n_
                               << " ranks: its dim " << d << " (" << shape[d]
                               << ") does not divide";
    shape[d] /= n_;
    offsets[d] = r_ * shape[d];
    if (d == 0) {
      const auto &tr = glm5rt::gguf::ggmlTypeTraits(
          static_cast<glm5rt::gguf::GgmlType>(static_cast<uint32_t>(w.getType())));
      if (shape[0] % tr.blockElems)
        return op->emitOpError() << "cannot split '" << w.getName() << "' over " << n_
                                 << " ranks: " << shape[0] << " input columns per rank are not "
                                 << "whole " << tr.name << " blocks of " << tr.blockElems;
    }
    return GgufTensorAttr::get(w.getContext(), w.getName(), w.getType(), shape, offsets);
  }

  // A tensor type with dim 1 (heads) divided by n_.
  static RankedTensorType withHeads(RankedTensorType t, int64_t heads) {
    SmallVector<int64_t> s(t.getShape());
    s[1] = heads;
    return RankedTensorType::get(s, t.getElementType());
  }

  void allReduceAfter(Operation *op, Value partial) {
    b_.setInsertionPointAfter(op);
    auto sum = b_.create<AllReduceOp>(op->getLoc(), partial);
    partial.replaceAllUsesExcept(sum.getResult(), sum);
  }

  // attn_q_b ... attn_output: the chain between them carries H heads in dim 1.
  LogicalResult shardHeads(LinearOp qb) {
    auto qt = cast<RankedTensorType>(qb.getResult().getType());
    if (qt.getRank() != 3)
      return qb.emitOpError() << "expected [tokens, heads, dim] from attn_q_b";
    const int64_t heads = qt.getDimSize(1);
    if (heads % n_)
      return qb.emitOpError() << "cannot split " << heads << " attention heads over " << n_
                              << " ranks";
    const int64_t local = heads / n_;
    FailureOr<GgufTensorAttr> w = box(qb, qb.getWeight(), 1);
    if (failed(w))
      return failure();
    qb.setWeightAttr(*w);
    // Every value downstream of q_b up to attn_output: heads -> local.
    llvm::SetVector<Operation *> chain;
    SmallVector<Value> work = {qb.getResult()};
    LinearOp oproj;
    while (!work.empty()) {
      Value v = work.pop_back_val();
      auto t = dyn_cast<RankedTensorType>(v.getType());
      if (t && t.getRank() >= 2 && t.getDimSize(1) == heads)
        v.setType(withHeads(t, local));
      for (Operation *user : v.getUsers()) {
        if (auto lin = dyn_cast<LinearOp>(user)) {
          if (role(lin.getWeight()) != "attn_output.weight")
            return lin.emitOpError() << "unexpected product in the head chain of "
                                     << qb.getWeight().getName();
          oproj = lin;
          continue;
        }
        if (!chain.insert(user))
          continue;
        if (auto hl = dyn_cast<HeadLinearOp>(user)) {
          FailureOr<GgufTensorAttr> hw = box(hl, hl.getWeight(), 2);
          if (failed(hw))
            return failure();
          hl.setWeightAttr(*hw);
        }
        for (Value r : user->getResults())
          work.push_back(r);
      }
    }
    if (!oproj)
      return qb.emitOpError() << "no attn_output product after " << qb.getWeight().getName();
    FailureOr<GgufTensorAttr> ow = box(oproj, oproj.getWeight(), 0);
    if (failed(ow))
      return failure();
    oproj.setWeightAttr(*ow);
    allReduceAfter(oproj, oproj.getResult());
    return success();
  }

  // The partial MoE output: routed experts plus the shared expert's slice, summed once.
  static Operation *moeSum(Value v) {
    if (!v.hasOneUse())
      return nullptr;
    auto add = dyn_cast<AddOp>(*v.getUsers().begin());
    if (!add)
      return nullptr;
    Value other = add.getLhs() == v ? add.getRhs() : add.getLhs();
    Operation *def = other.getDefiningOp();
    return def && (isa<MoEExpertsOp>(def) || isa<SwiGLUOp>(def)) ? add.getOperation() : nullptr;
  }

  // The dense FFN or shared expert (gate/up rows and down input columns of the width: dims 1
  // and 0) or the routed experts (a range of experts: dim 2 of all three); the output is a
  // partial sum, added over the ranks after the MoE sum or right after a dense FFN.
  template <typename FfnOp>
  LogicalResult shardFfn(FfnOp op, unsigned gateUpDim, unsigned downDim) {
    FailureOr<GgufTensorAttr> g = box(op, op.getGate(), gateUpDim),
                              u = box(op, op.getUp(), gateUpDim),
                              d = box(op, op.getDown(), downDim);
    if (failed(g) || failed(u) || failed(d))
      return failure();
    op.setGateAttr(*g);
    op.setUpAttr(*u);
    op.setDownAttr(*d);
    Operation *add = moeSum(op.getResult());
    if (!add)
      allReduceAfter(op, op.getResult());
    else if (!llvm::any_of(add->getUsers(), [](Operation *u) { return isa<AllReduceOp>(u); }))
      allReduceAfter(add, add->getResult(0)); // the MoE's other half was sharded first
    return success();
  }

  // The head by rows of the vocabulary: each rank computes the logits of its V / n rows, and an
  // all-gather concatenates them in rank order (rank r's rows are [r V / n, (r + 1) V / n)).
  LogicalResult shardVocab(LogitsOp lg) {
    FailureOr<GgufTensorAttr> w = box(lg, lg.getWeight(), 1);
    if (failed(w))
      return failure();
    lg.setWeightAttr(*w);
    auto full = cast<RankedTensorType>(lg.getResult().getType());
    SmallVector<int64_t> s(full.getShape());
    s.back() /= n_;
    lg.getResult().setType(RankedTensorType::get(s, full.getElementType()));
    b_.setInsertionPointAfter(lg);
    auto all = b_.create<AllGatherOp>(lg.getLoc(), full, lg.getResult());
    lg.getResult().replaceAllUsesExcept(all.getResult(), all);
    return success();
  }

  func::FuncOp fn_;
  int64_t r_, n_;
  OpBuilder b_;
};

struct GlmShard : glm5c::glm::impl::GlmShardBase<GlmShard> {
  using GlmShardBase::GlmShardBase;

  void runOnOperation() override {
    ModuleOp m = getOperation();
    const int64_t tpRanks = tp, epRanks = ep;
    if (tpRanks < 1 || epRanks < 1) {
      m.emitError() << "glm-shard: tp and ep must be positive, got tp = " << tpRanks
                    << ", ep = " << epRanks;
      return signalPassFailure();
    }
    if (tpRanks == 1 && epRanks == 1)
      return;
    if (epRanks != tpRanks) {
      m.emitError() << "glm-shard: ep = " << epRanks << " with tp = " << tpRanks
                    << " is not supported: the experts' partial sums share the FFN all-reduce, "
                       "so ep must equal tp";
      return signalPassFailure();
    }
    for (StringRef entry : {"prefill", "decode"}) {
      auto fn = m.lookupSymbol<func::FuncOp>(entry);
      if (!fn) {
        m.emitError() << "glm-shard: the module has no @" << entry;
        return signalPassFailure();
      }
      OpBuilder b(fn);
      for (int64_t r = 0; r < tp; ++r) {
        auto clone = cast<func::FuncOp>(b.clone(*fn));
        clone.setSymName((entry + "_rank" + Twine(r)).str());
        if (failed(RankSharder(clone, r, tp).run()))
          return signalPassFailure();
      }
      fn.erase();
    }
    m->setAttr("glm.ranks", IntegerAttr::get(IntegerType::get(&getContext(), 64), tp));
  }
};

} // namespace

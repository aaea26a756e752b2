//===- SpecializeKernels.cpp - a kernel variant for every glm op ----------===//
#include "compiler/passes/Passes.h"

#include "codegen/target/Target.h"

#include "llvm/ADT/MapVector.h"

namespace glm5c {
#define GEN_PASS_DEF_GLMSPECIALIZEKERNELS
#include "compiler/passes/Passes.h.inc"
} // namespace glm5c

using namespace mlir;
using namespace glm5c::glm;

glm5c::codegen::KernelQuery glm5c::kernelQueryFor(Operation *op, bool actF32) {
  codegen::KernelQuery q;
  q.op = op->getName().getStringRef().str();
  q.actF32 = actF32;
  for (NamedAttribute a : op->getAttrs())
    if (auto w = dyn_cast<GgufTensorAttr>(a.getValue()))
      q.weightTypes.push_back(static_cast<uint32_t>(w.getType()));
  if (op->getNumOperands() > 0)
    for (Value v : op->getOperands())
      if (auto t = dyn_cast<RankedTensorType>(v.getType())) {
        q.decode = !t.isDynamicDim(0) && t.getDimSize(0) == 1;
        break;
      }
  // Generic row shape: the result's last dim, and how many such rows a token has.
  if (op->getNumResults() > 0)
    if (auto t = dyn_cast<RankedTensorType>(op->getResult(0).getType())) {
      int64_t rows = 1;
      for (int64_t d = 1; d + 1 < t.getRank(); ++d)
        rows *= t.getDimSize(d);
      q.dims["width"] = t.getDimSize(t.getRank() - 1);
      q.dims["rows_per_token"] = rows;
    }
  // Products: the weight's GGUF dims {in, out}.
  if (isa<LinearOp, LogitsOp, GateUpOp>(op))
    for (NamedAttribute a : op->getAttrs())
      if (auto w = dyn_cast<GgufTensorAttr>(a.getValue())) {
        q.dims["in"] = w.getShape()[0];
        q.dims["out"] = w.getShape().size() > 1 ? w.getShape()[1] : 1;
      }
  if (auto l = dyn_cast<LinearsOp>(op)) { // "out": every product's rows together
    q.dims["in"] = l.getW0().getShape()[0];
    int64_t out = 0;
    for (GgufTensorAttr w : l.getWeights())
      out += w.getShape()[1];
    q.dims["out"] = out;
  }
  if (auto r = dyn_cast<RopeOp>(op)) {
    q.dims["offset"] = r.getOffset();
    q.dims["dim"] = r.getDim();
  }
  auto appendDims = [&](Value latent, Value rope, Value index) {
    q.dims["latent"] = cast<RankedTensorType>(latent.getType()).getDimSize(1);
    q.dims["rope"] = cast<RankedTensorType>(rope.getType()).getDimSize(1);
    q.dims["index"] = cast<RankedTensorType>(index.getType()).getDimSize(1);
  };
  if (auto a = dyn_cast<RopeCacheAppendOp>(op)) {
    appendDims(a.getLatent(), a.getRopeKey(), a.getIndexKey());
    q.dims["rope_dim"] = a.getRopeDim();
  }
  if (auto a = dyn_cast<CacheAppendOp>(op))
    appendDims(a.getLatent(), a.getRopeKey(), a.getIndexKey());
  if (auto h = dyn_cast<HeadLinearOp>(op)) {
    auto in = cast<RankedTensorType>(h.getInput().getType());
    auto out = cast<RankedTensorType>(h.getResult().getType());
    q.dims["in"] = in.getDimSize(in.getRank() - 1);
    q.dims["out"] = out.getDimSize(2);
    q.dims["heads"] = out.getDimSize(1);
    q.dims["shared_input"] = in.getRank() == 2;
    q.dims["transpose"] = h.getTranspose();
  }
  if (auto r = dyn_cast<MoERouterOp>(op)) {
    q.dims["experts"] = r.getWeight().getShape()[1];
    q.dims["topk"] = static_cast<int64_t>(r.getTopK());
    q.dims["hidden"] = r.getWeight().getShape()[0];
    q.dims["normalize"] = r.getNormalize();
  }
  if (auto e = dyn_cast<MoEExpertsOp>(op)) {
    q.dims["experts"] = e.getGate().getShape()[2];
    q.dims["topk"] = e.getWeights().getType().getDimSize(1);
    q.dims["hidden"] = e.getGate().getShape()[0];
    q.dims["ffn"] = e.getGate().getShape()[1];
    if (!e.getGate().getOffsets().empty()) // a rank's range of the experts (glm-shard)
      q.dims["shard"] = 1;
  }
  if (auto s = dyn_cast<IndexerScoreOp>(op)) {
    q.dims["heads"] = s.getQuery().getType().getDimSize(1);
    q.dims["index_dim"] = s.getQuery().getType().getDimSize(2);
  }
  if (auto t = dyn_cast<TopKOp>(op))
    q.dims["k"] = static_cast<int64_t>(t.getK());
  if (auto mla = dyn_cast<SparseMLAOp>(op)) {
    q.dims["latent"] = mla.getDims().getKvLora();
    q.dims["rope"] = mla.getDims().getRope();
    q.dims["heads"] = mla.getQLatent().getType().getDimSize(1);
    q.dims["topk"] = mla.getIndices().getType().getDimSize(1);
  }
  return q;
}

namespace {

struct GlmSpecializeKernels
    : glm5c::impl::GlmSpecializeKernelsBase<GlmSpecializeKernels> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto targetAttr = module->getAttrOfType<TargetAttr>("glm.target");
    std::string name = !target.empty() ? target : targetAttr ? targetAttr.getTiles().str() : "";
    if (name.empty()) {
      module.emitError() << "no target: give --target or a module attribute glm.target";
      return signalPassFailure();
    }
    const glm5c::codegen::Target *found = glm5c::codegen::findTarget(name);
    if (!found) {
      module.emitError() << "unknown target '" << name << "' (known: "
                         << glm5c::codegen::targetNames() << ")";
      return signalPassFailure();
    }
    glm5c::codegen::Target tiles = *found;
    if (maxSmem > 0)
      tiles.maxSharedPerBlock = maxSmem;
    else if (targetAttr && targetAttr.getTiles() == name)
      tiles.maxSharedPerBlock = targetAttr.getMaxSmem();

    // Failures are reported once per op kind (on its first op), with how many ops share them.
    struct Failure {
      Operation *first = nullptr;
      int count = 0;
      glm5c::codegen::KernelChoice choice;
    };
    llvm::MapVector<StringRef, Failure> failures;
    module.walk([&](Operation *op) {
      if (!op->getDialect() || !isa<GlmDialect>(op->getDialect()))
        return;
      if (isa<AllReduceOp, AllGatherOp>(op)) // collectives: the runtime's (NCCL), no kernel
        return;
      glm5c::codegen::KernelChoice choice =
          glm5c::codegen::selectKernel(glm5c::kernelQueryFor(op, actF32), tiles);
      if (choice.ok) {
        op->setAttr("glm.kernel", KernelAttr::get(op->getContext(), choice.variant,
                                                  choice.threads, choice.dynamicSmem));
        return;
      }
      Failure &f = failures[op->getName().getStringRef()];
      if (!f.first) {
        f.first = op;
        f.choice = choice;
      }
      ++f.count;
    });
    for (auto &[opName, f] : failures) {
      InFlightDiagnostic diag = f.first->emitError()
                                << "no kernel variant for " << opName << " fits " << tiles.name
                                << " (" << f.count << (f.count == 1 ? " op" : " ops") << ")";
      for (const auto &r : f.choice.rejected)
        diag.attachNote() << "candidate " << r.candidate << ": " << r.reason;
    }
    if (!failures.empty())
      signalPassFailure();
  }
};

} // namespace

//===- VerifyModel.cpp - the graph against the module's #glm.config -------===//
#include "dialects/glm/Transforms/Passes.h"

#include "runtime/gguf/glm5_layout.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

namespace glm5c::glm {
#define GEN_PASS_DEF_GLMVERIFYMODEL
#include "dialects/glm/Transforms/Passes.h.inc"
} // namespace glm5c::glm

using namespace mlir;
using namespace glm5c::glm;

namespace {

// The glm-dsa tensor table of the model the config describes (main layers only: the importer
// sets the MTP block aside).
llvm::StringMap<SmallVector<int64_t>> expectedTensors(ModelConfigAttr c) {
  glm5rt::gguf::Glm5Config g;
  g.hidden = c.getHidden();
  g.blockCount = c.getLayers();
  g.nextnLayers = 0;
  g.leadingDense = c.getDenseLayers();
  g.denseFfn = c.getDenseFfn();
  g.heads = c.getHeads();
  g.qLoraRank = c.getQLora();
  g.kvLoraRank = c.getKvLora();
  g.qkNopeDim = c.getNope();
  g.qkRopeDim = c.getRope();
  g.vHeadDim = c.getV();
  g.experts = c.getExperts();
  g.expertsUsed = c.getExpertsUsed();
  g.sharedExperts = c.getSharedExperts();
  g.expertFfn = c.getExpertFfn();
  g.vocab = c.getVocab();
  g.indexerHeads = c.getIndexerHeads();
  g.indexerHeadDim = c.getIndexerDim();
  llvm::StringMap<SmallVector<int64_t>> out;
  for (const auto &t : glm5rt::gguf::glm5Tensors(g))
    out[t.name] = SmallVector<int64_t>(t.ne.begin(), t.ne.end());
  return out;
}

bool sameFloat(const APFloat &a, double b) {
  double x = a.convertToDouble();
  return std::fabs(x - b) <= 1e-6 * std::fabs(b);
}

struct Checker {
  ModelConfigAttr c;
  llvm::StringMap<SmallVector<int64_t>> tensors;
  bool ok = true;

  InFlightDiagnostic fail(Operation *op) {
    ok = false;
    return op->emitOpError();
  }

  void weight(Operation *op, GgufTensorAttr w) {
    auto it = tensors.find(w.getName());
    if (it == tensors.end()) {
      fail(op) << "references '" << w.getName() << "', which is not a tensor of this model";
      return;
    }
    if (ArrayRef<int64_t>(it->second) != w.getShape())
      fail(op) << "references '" << w.getName() << "' with a shape that does not match the model "
               << "config (expected [" << it->second << "])";
  }

  void heads(Operation *op, Value v, int64_t expected, StringRef what) {
    auto t = cast<RankedTensorType>(v.getType());
    if (t.getRank() >= 3 && t.getDimSize(1) != expected)
      fail(op) << "has " << t.getDimSize(1) << " " << what << " heads, the model has " << expected;
  }

  void check(Operation *op) {
    for (NamedAttribute a : op->getAttrs())
      if (auto w = dyn_cast<GgufTensorAttr>(a.getValue()))
        weight(op, w);
    double attnScale = 1.0 / std::sqrt(static_cast<double>(c.getNope() + c.getRope()));
    llvm::TypeSwitch<Operation *>(op)
        .Case([&](RopeOp r) {
          if (static_cast<int64_t>(r.getDim()) != c.getRope() ||
              !sameFloat(r.getTheta(), c.getRopeTheta().getValueAsDouble()))
            fail(op) << "rotates " << r.getDim() << " dims with theta "
                     << r.getTheta().convertToDouble() << ", the model " << c.getRope()
                     << " with theta " << c.getRopeTheta().getValueAsDouble();
        })
        .Case([&](RMSNormOp n) {
          if (!sameFloat(n.getEps(), c.getRmsEps().getValueAsDouble()))
            fail(op) << "eps " << n.getEps().convertToDouble() << " differs from the model's "
                     << c.getRmsEps().getValueAsDouble();
        })
        .Case([&](AttentionOp a) {
          heads(op, a.getQuery(), c.getHeads(), "attention");
          if (!sameFloat(a.getScale(), attnScale))
            fail(op) << "scale " << a.getScale().convertToDouble() << " is not 1/sqrt("
                     << c.getNope() + c.getRope() << ")";
        })
        .Case([&](SparseMLAOp s) {
          heads(op, s.getQLatent(), c.getHeads(), "attention");
          if (s.getDims() != c.getMLADims())
            fail(op) << "dims " << s.getDims() << " differ from the model's " << c.getMLADims();
          if (!sameFloat(s.getScale(), attnScale))
            fail(op) << "scale " << s.getScale().convertToDouble() << " is not 1/sqrt("
                     << c.getNope() + c.getRope() << ")";
        })
        .Case([&](IndexerScoreOp s) {
          heads(op, s.getQuery(), c.getIndexerHeads(), "indexer");
          double want = 1.0 / std::sqrt(double(c.getIndexerHeads() * c.getIndexerDim()));
          if (!sameFloat(s.getScale(), want))
            fail(op) << "scale " << s.getScale().convertToDouble() << " is not 1/sqrt("
                     << c.getIndexerHeads() << " * " << c.getIndexerDim() << ")";
        })
        .Case([&](TopKOp t) {
          if (static_cast<int64_t>(t.getK()) != c.getIndexTopk())
            fail(op) << "selects " << t.getK() << " positions, the model's index_topk is "
                     << c.getIndexTopk();
        })
        .Case<MoEGateOp, MoERouterOp>([&](auto g) {
          if (static_cast<int64_t>(g.getTopK()) != c.getExpertsUsed() ||
              g.getNormalize() != c.getNormTopk() ||
              !sameFloat(g.getScale(), c.getRoutedScale().getValueAsDouble()))
            fail(op) << "routes to " << g.getTopK() << " experts (normalize "
                     << (g.getNormalize() ? "true" : "false") << ", scale "
                     << g.getScale().convertToDouble() << "), the model to "
                     << c.getExpertsUsed() << " (normalize " << (c.getNormTopk() ? "true" : "false")
                     << ", scale " << c.getRoutedScale().getValueAsDouble() << ")";
        });
    for (Value v : op->getOperands())
      if (auto cache = dyn_cast<KVCacheType>(v.getType()))
        if (cache.getLayers() != c.getLayers() || cache.getLatent() != c.getKvLora() ||
            cache.getRope() != c.getRope() || cache.getIndexDim() != c.getIndexerDim()) {
          fail(op) << "uses a cache " << cache << " that does not fit the model";
          break;
        }
  }
};

struct GlmVerifyModel : glm5c::glm::impl::GlmVerifyModelBase<GlmVerifyModel> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    ModelConfigAttr config = getModelConfig(module);
    if (!config) {
      module.emitError() << "module has no '" << kConfigAttrName << "' attribute to verify against";
      return signalPassFailure();
    }
    Checker checker{config, expectedTensors(config)};
    module.walk([&](Operation *op) {
      if (op->getDialect() && isa<GlmDialect>(op->getDialect()))
        checker.check(op);
    });
    if (!checker.ok)
      signalPassFailure();
  }
};

} // namespace

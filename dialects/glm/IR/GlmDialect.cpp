//===- GlmDialect.cpp - glm dialect registration, attribute and type checks ===//
#include "dialects/glm/IR/GlmDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace glm5c::glm;

#include "dialects/glm/IR/GlmEnums.cpp.inc"

#include "dialects/glm/IR/GlmDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/glm/IR/GlmAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/glm/IR/GlmTypes.cpp.inc"

void GlmDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/glm/IR/GlmAttrs.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialects/glm/IR/GlmTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/glm/IR/GlmOps.cpp.inc"
      >();
}

LogicalResult GgufTensorAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                     StringRef name, GgmlType type, ArrayRef<int64_t> shape,
                                     ArrayRef<int64_t> offsets) {
  if (name.empty())
    return emitError() << "GGUF tensor reference with an empty name";
  if (shape.empty() || shape.size() > 4)
    return emitError() << "GGUF tensor '" << name << "' has " << shape.size()
                       << " dims, expected 1 to 4";
  for (int64_t d : shape)
    if (d <= 0)
      return emitError() << "GGUF tensor '" << name << "' has a non-positive dim " << d;
  if (!offsets.empty() && offsets.size() != shape.size())
    return emitError() << "GGUF tensor '" << name << "' box has " << offsets.size()
                       << " offsets for " << shape.size() << " dims";
  for (int64_t o : offsets)
    if (o < 0)
      return emitError() << "GGUF tensor '" << name << "' box has a negative offset " << o;
  return success();
}

LogicalResult MLADimsAttr::verify(function_ref<InFlightDiagnostic()> emitError, int64_t nope,
                                  int64_t rope, int64_t v, int64_t kvLora) {
  if (nope <= 0 || rope <= 0 || v <= 0 || kvLora <= 0)
    return emitError() << "MLA dims must be positive";
  if (rope % 2 != 0)
    return emitError() << "MLA rope dim " << rope << " must be even (RoPE rotates pairs)";
  return success();
}

LogicalResult ModelConfigAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                      int64_t hidden, int64_t layers, int64_t denseLayers,
                                      int64_t heads, int64_t qLora, int64_t kvLora, int64_t nope,
                                      int64_t rope, int64_t v, int64_t denseFfn, int64_t experts,
                                      int64_t expertsUsed, int64_t sharedExperts,
                                      int64_t expertFfn, int64_t vocab, int64_t indexerHeads,
                                      int64_t indexerDim, int64_t indexTopk, FloatAttr rmsEps,
                                      FloatAttr ropeTheta, FloatAttr routedScale,
                                      bool normTopk) {
  for (int64_t d : {hidden, layers, heads, qLora, kvLora, nope, rope, v, denseFfn, experts,
                    expertsUsed, expertFfn, vocab, indexerHeads, indexerDim, indexTopk})
    if (d <= 0)
      return emitError() << "model config dims must be positive";
  if (denseLayers < 0 || denseLayers > layers)
    return emitError() << "dense_layers " << denseLayers << " must be in 0.." << layers;
  if (expertsUsed > experts)
    return emitError() << "experts_used " << expertsUsed << " exceeds experts " << experts;
  if (sharedExperts < 0)
    return emitError() << "shared_experts must not be negative";
  for (FloatAttr f : {rmsEps, ropeTheta, routedScale})
    if (!f || !(f.getValueAsDouble() > 0))
      return emitError() << "rms_eps, rope_theta and routed_scale must be positive floats";
  if (rope % 2 != 0 || rope > indexerDim)
    return emitError() << "rope dim " << rope
                       << " must be even and at most the indexer dim " << indexerDim;
  return success();
}

MLADimsAttr ModelConfigAttr::getMLADims() const {
  return MLADimsAttr::get(getContext(), getNope(), getRope(), getV(), getKvLora());
}

LogicalResult KVCacheType::verify(function_ref<InFlightDiagnostic()> emitError, int64_t layers,
                                  int64_t latent, int64_t rope, int64_t indexDim) {
  if (layers <= 0 || latent <= 0 || rope <= 0 || indexDim <= 0)
    return emitError() << "KV cache dims must be positive";
  return success();
}

ModelConfigAttr glm5c::glm::getModelConfig(Operation *op) {
  ModuleOp module = isa<ModuleOp>(op) ? cast<ModuleOp>(op) : op->getParentOfType<ModuleOp>();
  if (!module)
    return {};
  return module->getAttrOfType<ModelConfigAttr>(kConfigAttrName);
}

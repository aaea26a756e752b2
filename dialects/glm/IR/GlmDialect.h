//===- GlmDialect.h - the glm dialect: ops, attributes, types -------------===//
//
// Public header of the glm dialect (GlmBase.td, GlmOps.td).
//
//===----------------------------------------------------------------------===//
#ifndef GLM5C_DIALECTS_GLM_IR_GLMDIALECT_H
#define GLM5C_DIALECTS_GLM_IR_GLMDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/glm/IR/GlmEnums.h.inc"

#include "dialects/glm/IR/GlmDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/glm/IR/GlmAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/glm/IR/GlmTypes.h.inc"

#define GET_OP_CLASSES
#include "dialects/glm/IR/GlmOps.h.inc"

namespace glm5c::glm {
// Name of the module attribute holding the #glm.config.
inline constexpr llvm::StringLiteral kConfigAttrName = "glm.config";
// The module's #glm.config, or null.
ModelConfigAttr getModelConfig(mlir::Operation *op);
} // namespace glm5c::glm

#endif // GLM5C_DIALECTS_GLM_IR_GLMDIALECT_H

//===- Passes.h - compiler passes over the glm dialect that use codegen ---===//
#ifndef GLM5C_COMPILER_PASSES_PASSES_H
#define GLM5C_COMPILER_PASSES_PASSES_H

#include "codegen/registry/Registry.h"
#include "dialects/glm/IR/GlmDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace glm5c {

#define GEN_PASS_DECL
#include "compiler/passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/passes/Passes.h.inc"

// The registry query describing `op` (shapes, weight types, token class).
codegen::KernelQuery kernelQueryFor(mlir::Operation *op, bool actF32);

} // namespace glm5c

#endif

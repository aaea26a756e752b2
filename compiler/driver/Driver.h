//===- Driver.h - the compiler's entry points: import, compile, explain ---===//
//
// What `glm5c` runs, as a library: import a GGUF into the glm dialect (optionally through
// glm-pipeline), compile it to a plan for a target (dense attention, SwiGLU lowering, kernel
// specialization, NVRTC, plan emission), and explain the kernel choice per op kind. Problems in
// the model are MLIR diagnostics on the context; other failures come back as a Status.
//
//===----------------------------------------------------------------------===//
#ifndef GLM5C_COMPILER_DRIVER_DRIVER_H
#define GLM5C_COMPILER_DRIVER_DRIVER_H

#include "runtime/support/status.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>
#include <vector>

namespace glm5c {

// "model.gguf:blk.0.attn_q_a.weight" for the importer's name locations, "file" otherwise.
std::string locationText(mlir::Location loc);
// Prints every diagnostic to stderr as "location: severity: message", notes included.
void installDiagnosticPrinter(mlir::MLIRContext &context);

// Opens and imports a GGUF, optionally running glm-pipeline; null on failure (reported, through
// `error` for file errors and through the context's diagnostics otherwise).
mlir::OwningOpRef<mlir::ModuleOp> importModel(mlir::MLIRContext &context, const std::string &path,
                                              bool pipeline, glm5rt::Status *error);

struct CompileOptions {
  std::string target;       // "host" or a tile target ("sm_120a", ...)
  std::string runOn;        // code arch when emulating ("" = the target's own)
  bool actF32 = false;      // --activation-dtype f32
  bool denseAttention = false;
  int pageSize = 64;
  int tp = 1, ep = 1;       // --tp / --ep: ranks of the plan (glm-shard)
  std::string cacheDir;     // NVRTC disk cache ("" = none)
};

// The plan's bytes. An error with an empty message means the diagnostics already said why.
glm5rt::StatusOr<std::vector<uint8_t>> compileModel(mlir::MLIRContext &context,
                                                    const std::string &path,
                                                    const CompileOptions &options);

// Writes, per op kind of prefill and decode, the chosen kernel variant(s) and every rejected
// candidate; `allChosen` tells whether every op kind got a variant.
glm5rt::Status explainModel(mlir::MLIRContext &context, const std::string &path,
                            const std::string &target, const std::string &runOn, bool actF32,
                            llvm::raw_ostream &os, bool *allChosen);

} // namespace glm5c

#endif

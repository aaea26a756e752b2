//===- Importer.h - GGUF header -> glm dialect module ---------------------===//
//
// Reads only the GGUF metadata and tensor table (never tensor data) and builds a module with
// `prefill` and `decode` functions covering every main layer. Problems (not glm-dsa, a missing
// or misshapen tensor, an unsupported quant type) are reported as MLIR diagnostics located at
// `<file>.gguf:<tensor>` and make the import fail; nothing a file holds can abort it.
//
//===----------------------------------------------------------------------===//
#ifndef GLM5C_COMPILER_IMPORT_IMPORTER_H
#define GLM5C_COMPILER_IMPORT_IMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>

namespace glm5rt::gguf {
class GgufFile;
}

namespace glm5c {

struct ImportOptions {
  // File name used in locations (`model.gguf` in `model.gguf:blk.0.attn_q_a.weight`).
  std::string displayName;
};

mlir::OwningOpRef<mlir::ModuleOp> importGguf(mlir::MLIRContext &context,
                                             const glm5rt::gguf::GgufFile &file,
                                             const ImportOptions &options);

} // namespace glm5c

#endif // GLM5C_COMPILER_IMPORT_IMPORTER_H

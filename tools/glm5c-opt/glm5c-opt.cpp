// glm5c-opt: mlir-opt restricted to the dialects and passes glm5c uses, for lit tests of passes
// and for `glm5c import model.gguf | glm5c-opt --glm-pipeline`.
#include "compiler/passes/Passes.h"
#include "dialects/glm/IR/GlmDialect.h"
#include "dialects/glm/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  glm5c::glm::registerGlmPassesAndPipeline();
  glm5c::registerGlmCompilerPasses();
  mlir::DialectRegistry registry;
  registry.insert<glm5c::glm::GlmDialect, mlir::func::FuncDialect>();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "glm5c optimizer driver\n", registry));
}

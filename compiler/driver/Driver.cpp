//===- Driver.cpp - import, compile and explain (see Driver.h) ------------===//
#include "compiler/driver/Driver.h"

#include "codegen/nvrtc/Nvrtc.h"
#include "codegen/registry/Registry.h"
#include "codegen/target/Target.h"
#include "compiler/import/Importer.h"
#include "compiler/passes/Passes.h"
#include "compiler/plan/PlanEmitter.h"
#include "dialects/glm/Transforms/Passes.h"
#include "runtime/gguf/gguf_reader.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using glm5rt::Status;
using glm5rt::StatusCode;
using glm5rt::makeStatus;

namespace glm5c {

namespace {
// A failure the diagnostics already reported.
Status reported() { return Status(StatusCode::kInvalidArgument, ""); }
} // namespace

std::string locationText(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    return file.getFilename().str();
  std::string s;
  llvm::raw_string_ostream os(s);
  os << loc;
  return s;
}

void installDiagnosticPrinter(MLIRContext &context) {
  context.printOpOnDiagnostic(false);
  context.getDiagEngine().registerHandler([](Diagnostic &diag) {
    auto print = [](Diagnostic &d) {
      const char *sev = d.getSeverity() == DiagnosticSeverity::Error     ? "error"
                        : d.getSeverity() == DiagnosticSeverity::Warning ? "warning"
                        : d.getSeverity() == DiagnosticSeverity::Remark  ? "remark"
                                                                         : "note";
      llvm::errs() << locationText(d.getLocation()) << ": " << sev << ": " << d.str() << "\n";
    };
    print(diag);
    for (Diagnostic &note : diag.getNotes())
      print(note);
    return success();
  });
}

OwningOpRef<ModuleOp> importModel(MLIRContext &context, const std::string &path, bool pipeline,
                                  Status *error) {
  auto file = glm5rt::gguf::GgufFile::open(path);
  if (!file.isOk()) {
    *error = file.status();
    return nullptr;
  }
  ImportOptions options;
  options.displayName = llvm::sys::path::filename(path).str();
  OwningOpRef<ModuleOp> module = importGguf(context, **file, options);
  if (!module || !pipeline)
    return module;
  PassManager pm(&context);
  glm::buildGlmPipeline(pm);
  if (failed(pm.run(*module)))
    return nullptr;
  return module;
}

glm5rt::StatusOr<std::vector<uint8_t>> compileModel(MLIRContext &context, const std::string &path,
                                                    const CompileOptions &opt) {
  const codegen::Target *target = nullptr;
  if (opt.target != "host") {
    target = codegen::findTarget(opt.target);
    if (!target)
      return makeStatus(StatusCode::kInvalidArgument, "unknown target '%s' (known: host, %s)",
                        opt.target.c_str(), codegen::targetNames().c_str());
  }
  auto file = glm5rt::gguf::GgufFile::open(path);
  if (!file.isOk())
    return file.status();
  Status error;
  OwningOpRef<ModuleOp> module = importModel(context, path, /*pipeline=*/true, &error);
  if (!module)
    return error.isOk() ? reported() : error;
  PassManager pm(&context);
  if (opt.denseAttention) {
    auto ctx = (*file)->getU64("glm-dsa.context_length");
    if (!ctx.isOk())
      return ctx.status();
    glm::GlmDenseAttentionOptions o;
    o.context = static_cast<int64_t>(*ctx);
    pm.addPass(glm::createGlmDenseAttention(o));
  }
  if (opt.tp > 1 || opt.ep > 1) {
    glm::GlmShardOptions o;
    o.tp = opt.tp;
    o.ep = opt.ep;
    pm.addPass(glm::createGlmShard(o));
  }
  if (target) {
    (*module)->setAttr("glm.target",
                       glm::TargetAttr::get(&context, target->name,
                                            opt.runOn.empty() ? target->name : opt.runOn,
                                            target->smCount, target->maxSharedPerBlock));
    pm.addPass(glm::createGlmLowerSwiGLU());
    pm.addPass(glm::createGlmFuseLinears());
    GlmSpecializeKernelsOptions o;
    o.actF32 = opt.actF32;
    pm.addPass(createGlmSpecializeKernels(o));
  }
  if (failed(pm.run(*module)))
    return reported();
  PlanOptions plan;
  plan.tiles = opt.target;
  plan.codeArch = opt.runOn;
  plan.actF32 = opt.actF32;
  plan.denseAttention = opt.denseAttention;
  plan.pageSize = opt.pageSize;
  plan.cacheDir = opt.cacheDir;
  return emitPlan(*module, **file, llvm::sys::path::filename(path).str(), plan);
}

Status explainModel(MLIRContext &context, const std::string &path, const std::string &targetName,
                    const std::string &runOn, bool actF32, llvm::raw_ostream &os,
                    bool *allChosen) {
  using namespace codegen;
  const Target *tiles = findTarget(targetName);
  const Target *code = runOn.empty() ? tiles : findTarget(runOn);
  if (!tiles || !code)
    return makeStatus(StatusCode::kInvalidArgument, "unknown target (known: %s)",
                      targetNames().c_str());
  Status error;
  OwningOpRef<ModuleOp> module = importModel(context, path, /*pipeline=*/true, &error);
  if (!module)
    return error.isOk() ? reported() : error;
  PassManager pm(&context); // as compile does for GPU targets: one op per kernel
  pm.addPass(glm::createGlmLowerSwiGLU());
  pm.addPass(glm::createGlmFuseLinears());
  if (failed(pm.run(*module)))
    return reported();
  os << "target: tiles " << tiles->name << " (" << tiles->gpu << ", " << tiles->smCount
     << " SMs, " << tiles->maxSharedPerBlock << " B shared memory per block), code "
     << code->name << (tiles != code ? " (emulation)" : "") << ", activations "
     << (actF32 ? "f32" : "bf16") << "\n";
  *allChosen = true;
  for (const char *fn : {"prefill", "decode"}) {
    auto func = module->lookupSymbol<func::FuncOp>(fn);
    os << fn << ":\n";
    llvm::SmallVector<std::string> seen;
    func.walk([&](Operation *op) {
      if (!op->getDialect() || op->getDialect()->getNamespace() != "glm")
        return;
      std::string name = op->getName().getStringRef().str();
      if (llvm::is_contained(seen, name))
        return;
      seen.push_back(name);
      KernelChoice c = selectKernel(kernelQueryFor(op, actF32), *tiles);
      *allChosen &= c.ok;
      os << "  " << name << ": ";
      if (c.ok) {
        os << c.variant << " (" << c.threads << " threads, " << c.dynamicSmem
           << " B dynamic shared memory)\n";
        for (const KernelPart &part : c.extra)
          os << "      + " << part.variant << " (" << part.threads << " threads, "
             << part.dynamicSmem << " B dynamic shared memory)\n";
      } else {
        os << "no variant\n";
      }
      for (const Rejection &r : c.rejected)
        os << "      rejected " << r.candidate << ": " << r.reason << "\n";
      for (const std::string &n : c.notes)
        os << "      " << n << "\n";
    });
  }
  return Status::ok();
}

} // namespace glm5c

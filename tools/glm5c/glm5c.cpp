// glm5c: the compiler driver. `glm5c import model.gguf [-o out.mlir]` prints the glm dialect
// module of a GGUF (header only). A thin main over compiler/import; compile and explain join it
// with codegen.
#include "codegen/kernels/EmbeddedKernels.h"
#include "codegen/nvrtc/Nvrtc.h"
#include "codegen/registry/SparseMla.h"
#include "codegen/target/Target.h"
#include "codegen/registry/Registry.h"
#include "compiler/import/Importer.h"
#include "compiler/passes/Passes.h"
#include "dialects/glm/Transforms/Passes.h"
#include "runtime/gguf/gguf_reader.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

const char *kUsage =
    "usage:\n"
    "  glm5c import MODEL.gguf [-o OUT.mlir] [--pipeline] [--locations] [--timing]\n"
    "      prints the glm dialect module (prefill and decode) of a glm-dsa GGUF; --pipeline runs\n"
    "      the canonical graph pipeline (glm-pipeline) on it first\n"
    "  glm5c explain MODEL.gguf --target T [--run-on ARCH] [--activation-dtype bf16|f32]\n"
    "      imports and runs glm-pipeline, then prints the kernel choice (or every rejected\n"
    "      candidate) for each op kind of prefill and decode\n"
    "  glm5c kernel sparse_mla_decode --target T [--run-on ARCH] [--emit source|ptx|log]\n"
    "                                 [--max-smem BYTES]\n"
    "      selects the kernel variant and tiles for target T (sm_120a, sm_120, sm_90a, sm_90)\n"
    "      and prints its CUDA source, or compiles it with NVRTC for ARCH (default: T) and\n"
    "      prints the PTX or NVRTC's log (ptxas resource usage)\n";

int usage(const std::string &why) {
  if (!why.empty())
    llvm::errs() << "glm5c: " << why << "\n";
  llvm::errs() << kUsage;
  return 2;
}

// "model.gguf:blk.0.attn_q_a.weight" for the importer's name locations, "file:line:col" else.
std::string locationText(mlir::Location loc) {
  if (auto name = llvm::dyn_cast<mlir::NameLoc>(loc))
    return name.getName().str();
  if (auto file = llvm::dyn_cast<mlir::FileLineColLoc>(loc))
    return file.getFilename().str();
  std::string s;
  llvm::raw_string_ostream os(s);
  os << loc;
  return s;
}

// Prints every diagnostic as "location: severity: message", notes included.
void installDiagnosticPrinter(mlir::MLIRContext &context) {
  context.printOpOnDiagnostic(false);
  context.getDiagEngine().registerHandler([](mlir::Diagnostic &diag) {
    auto print = [](mlir::Diagnostic &d) {
      const char *sev = d.getSeverity() == mlir::DiagnosticSeverity::Error     ? "error"
                        : d.getSeverity() == mlir::DiagnosticSeverity::Warning ? "warning"
                        : d.getSeverity() == mlir::DiagnosticSeverity::Remark  ? "remark"
                                                                               : "note";
      llvm::errs() << locationText(d.getLocation()) << ": " << sev << ": " << d.str() << "\n";
    };
    print(diag);
    for (mlir::Diagnostic &note : diag.getNotes())
      print(note);
    return mlir::success();
  });
}

// Opens and imports a GGUF, optionally running glm-pipeline; null on failure (reported).
mlir::OwningOpRef<mlir::ModuleOp> importModel(mlir::MLIRContext &context, const std::string &path,
                                              bool pipeline) {
  auto file = glm5rt::gguf::GgufFile::open(path);
  if (!file.isOk()) {
    llvm::errs() << "glm5c: error: " << file.status().message() << "\n";
    return nullptr;
  }
  glm5c::ImportOptions options;
  options.displayName = llvm::sys::path::filename(path).str();
  mlir::OwningOpRef<mlir::ModuleOp> module = glm5c::importGguf(context, **file, options);
  if (!module || !pipeline)
    return module;
  mlir::PassManager pm(&context);
  glm5c::glm::buildGlmPipeline(pm);
  if (mlir::failed(pm.run(*module)))
    return nullptr;
  return module;
}

int cmdExplain(int argc, char **argv) {
  std::string input, target, runOn, act = "bf16";
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--target" && i + 1 < argc)
      target = argv[++i];
    else if (a == "--run-on" && i + 1 < argc)
      runOn = argv[++i];
    else if (a == "--activation-dtype" && i + 1 < argc)
      act = argv[++i];
    else if (input.empty() && !a.empty() && a[0] != '-')
      input = a;
    else
      return usage("explain: unexpected argument '" + a + "'");
  }
  using namespace glm5c::codegen;
  const Target *tiles = findTarget(target);
  if (input.empty() || !tiles)
    return usage("explain needs MODEL.gguf and --target (known: " + targetNames() + ")");
  const Target *code = runOn.empty() ? tiles : findTarget(runOn);
  if (!code)
    return usage("explain: unknown --run-on '" + runOn + "' (known: " + targetNames() + ")");
  if (act != "bf16" && act != "f32")
    return usage("explain: --activation-dtype takes bf16 or f32");
  mlir::MLIRContext context;
  installDiagnosticPrinter(context);
  auto module = importModel(context, input, /*pipeline=*/true);
  if (!module)
    return 1;
  llvm::outs() << "target: tiles " << tiles->name << " (" << tiles->gpu << ", "
               << tiles->smCount << " SMs, " << tiles->maxSharedPerBlock
               << " B shared memory per block), code " << code->name
               << (tiles != code ? " (emulation)" : "") << ", activations " << act << "\n";
  bool allOk = true;
  for (const char *fn : {"prefill", "decode"}) {
    auto func = module->lookupSymbol<mlir::func::FuncOp>(fn);
    llvm::outs() << fn << ":\n";
    llvm::SmallVector<std::string> seen;
    func.walk([&](mlir::Operation *op) {
      if (!op->getDialect() || op->getDialect()->getNamespace() != "glm")
        return;
      std::string name = op->getName().getStringRef().str();
      if (llvm::is_contained(seen, name))
        return;
      seen.push_back(name);
      KernelChoice c = selectKernel(glm5c::kernelQueryFor(op, act == "f32"), *tiles);
      allOk &= c.ok;
      llvm::outs() << "  " << name << ": ";
      if (c.ok)
        llvm::outs() << c.variant << " (" << c.threads << " threads, " << c.dynamicSmem
                     << " B dynamic shared memory)\n";
      else
        llvm::outs() << "no variant\n";
      for (const Rejection &r : c.rejected)
        llvm::outs() << "      rejected " << r.candidate << ": " << r.reason << "\n";
    });
  }
  return allOk ? 0 : 1;
}

int cmdImport(int argc, char **argv) {
  std::string input, output = "-";
  bool pipeline = false, locations = false, timing = false;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-o" && i + 1 < argc)
      output = argv[++i];
    else if (a == "--pipeline")
      pipeline = true;
    else if (a == "--locations")
      locations = true;
    else if (a == "--timing")
      timing = true;
    else if (input.empty() && !a.empty() && a[0] != '-')
      input = a;
    else
      return usage("import: unexpected argument '" + a + "'");
  }
  if (input.empty())
    return usage("import needs a MODEL.gguf");

  auto start = std::chrono::steady_clock::now();
  mlir::MLIRContext context;
  installDiagnosticPrinter(context);
  mlir::OwningOpRef<mlir::ModuleOp> module = importModel(context, input, /*pipeline=*/false);
  if (!module)
    return 1;
  auto imported = std::chrono::steady_clock::now();
  if (pipeline) {
    mlir::PassManager pm(&context);
    glm5c::glm::buildGlmPipeline(pm);
    if (mlir::failed(pm.run(*module)))
      return 1;
  }
  auto done = std::chrono::steady_clock::now();

  std::error_code ec;
  llvm::raw_fd_ostream os(output, ec, llvm::sys::fs::OF_TextWithCRLF);
  if (ec) {
    llvm::errs() << "glm5c: error: cannot write " << output << ": " << ec.message() << "\n";
    return 1;
  }
  mlir::OpPrintingFlags flags;
  if (locations)
    flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false).useLocalScope();
  module->print(os, flags);
  os << "\n";
  if (timing) {
    auto ms = [](auto a, auto b) {
      return std::chrono::duration<double, std::milli>(b - a).count();
    };
    llvm::errs() << "glm5c: import " << llvm::format("%.1f", ms(start, imported)) << " ms";
    if (pipeline)
      llvm::errs() << ", pipeline " << llvm::format("%.1f", ms(imported, done)) << " ms";
    llvm::errs() << "\n";
  }
  return 0;
}

int cmdKernel(int argc, char **argv) {
  std::string kernel, target, runOn, emit = "log";
  long long maxSmem = 0;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--max-smem" && i + 1 < argc)
      maxSmem = std::atoll(argv[++i]);
    else if (a == "--target" && i + 1 < argc)
      target = argv[++i];
    else if (a == "--run-on" && i + 1 < argc)
      runOn = argv[++i];
    else if (a == "--emit" && i + 1 < argc)
      emit = argv[++i];
    else if (kernel.empty() && !a.empty() && a[0] != '-')
      kernel = a;
    else
      return usage("kernel: unexpected argument '" + a + "'");
  }
  using namespace glm5c::codegen;
  if (kernel != "sparse_mla_decode")
    return usage("kernel: known kernels: sparse_mla_decode");
  const Target *tiles = findTarget(target);
  if (!tiles)
    return usage("kernel: unknown --target '" + target + "' (known: " + targetNames() + ")");
  const Target *code = runOn.empty() ? tiles : findTarget(runOn);
  if (!code)
    return usage("kernel: unknown --run-on '" + runOn + "' (known: " + targetNames() + ")");
  std::string why = checkEmulation(*tiles, *code);
  if (!why.empty()) {
    llvm::errs() << "glm5c: error: cannot run " << tiles->name << " tiles on " << code->name
                 << ": " << why << "\n";
    return 1;
  }
  // --max-smem: the same target with less shared memory per block (what-if, and tests).
  Target limited = *tiles;
  if (maxSmem > 0)
    limited.maxSharedPerBlock = maxSmem;
  tiles = &limited;
  auto cfg = selectSparseMlaDecode(*tiles, MlaShape{});
  if (!cfg.isOk()) {
    llvm::errs() << "glm5c: error: " << cfg.status().message() << "\n";
    return 1;
  }
  KernelSource src;
  src.name = cfg->variant;
  src.source = sparseMlaDecodeSource(*cfg);
  src.headers = embeddedKernelFiles();
  src.arch = code->name;
  if (emit == "source") {
    llvm::outs() << "// variant " << cfg->variant << " for " << tiles->name << " tiles, "
                 << cfg->dynamicSmem << " B dynamic shared memory, " << cfg->threads
                 << " threads\n"
                 << src.source;
    return 0;
  }
  if (emit != "ptx" && emit != "log")
    return usage("kernel: --emit takes source, ptx or log");
  NvrtcCompiler nvrtc(NvrtcCompiler::defaultCacheDir());
  auto compiled = nvrtc.compile(src);
  if (!compiled.isOk()) {
    llvm::errs() << "glm5c: error: " << compiled.status().message() << "\n";
    return 1;
  }
  if (emit == "ptx")
    llvm::outs() << compiled->ptx;
  else
    llvm::outs() << "variant " << cfg->variant << " tiles " << tiles->name << " code "
                 << code->name << " dynamic_smem " << cfg->dynamicSmem << " max_smem "
                 << tiles->maxSharedPerBlock << "\n"
                 << compiled->log;
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2)
    return usage("");
  std::string cmd = argv[1];
  if (cmd == "import")
    return cmdImport(argc - 2, argv + 2);
  if (cmd == "kernel")
    return cmdKernel(argc - 2, argv + 2);
  if (cmd == "explain")
    return cmdExplain(argc - 2, argv + 2);
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    llvm::outs() << kUsage;
    return 0;
  }
  return usage("unknown command '" + cmd + "'");
}

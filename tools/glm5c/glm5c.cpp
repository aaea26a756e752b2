// glm5c: the compiler driver's command line. A thin main over compiler/driver (import,
// compile, explain), runtime/plan (inspect) and codegen (kernel): argument parsing, usage and
// the mapping of failures to messages and exit codes live here, nothing else.
#include "codegen/kernels/EmbeddedKernels.h"
#include "codegen/nvrtc/Nvrtc.h"
#include "codegen/registry/SparseMla.h"
#include "codegen/target/Target.h"
#include "compiler/driver/Driver.h"
#include "dialects/glm/Transforms/Passes.h"
#include "runtime/cli/Args.h"
#include "runtime/plan/Plan.h"
#include "runtime/plan/PlanPrinter.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
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
    "  glm5c compile MODEL.gguf --target T|host [--run-on ARCH] [--activation-dtype bf16|f32]\n"
    "                [--page-size N] [--tp N --ep N] -o MODEL.plan\n"
    "      imports, runs glm-pipeline, specializes kernels for T (host: no kernels, for the\n"
    "      host backend), compiles them with NVRTC and writes the flatbuffer plan; --tp/--ep N\n"
    "      splits it into N ranks (attention heads and FFN widths, routed experts; glm-shard)\n"
    "  glm5c inspect MODEL.plan [--steps]\n"
    "      verifies a plan and prints its target, config, weights, kernels, buffers and steps\n"
    "  glm5c explain MODEL.gguf --target T [--run-on ARCH] [--activation-dtype bf16|f32]\n"
    "      imports and runs glm-pipeline, then prints the kernel choice (or every rejected\n"
    "      candidate) for each op kind of prefill and decode\n"
    "  glm5c kernel sparse_mla_decode --target T [--run-on ARCH] [--emit source|ptx|log]\n"
    "                                 [--max-smem BYTES] [--heads N]\n"
    "      selects the kernel variant and tiles for target T (sm_120a, sm_120, sm_90a, sm_90)\n"
    "      and an op of N heads (default 16)\n"
    "      and prints its CUDA source, or compiles it with NVRTC for ARCH (default: T) and\n"
    "      prints the PTX or NVRTC's log (ptxas resource usage)\n";

int usage(const std::string &why) {
  if (!why.empty())
    llvm::errs() << "glm5c: " << why << "\n";
  llvm::errs() << kUsage;
  return 2;
}

// An option's value as a whole decimal number in [0, max]; -1 for anything else ("2x", "-3",
// "", past max), which the option's range check then refuses with its usage message.
long long optionNumber(const char *v, uint64_t max) {
  uint64_t x = 0;
  return glm5rt::cli::parseUnsigned(v, max, &x) ? static_cast<long long>(x) : -1;
}

// Prints a failure: nothing when the diagnostics already said why (empty message).
int fail(const glm5rt::Status &status) {
  if (!status.message().empty())
    llvm::errs() << "glm5c: error: " << status.message() << "\n";
  return 1;
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
  glm5c::installDiagnosticPrinter(context);
  bool allChosen = false;
  glm5rt::Status status = glm5c::explainModel(context, input, target, runOn, act == "f32",
                                              llvm::outs(), &allChosen);
  if (!status.isOk())
    return fail(status);
  return allChosen ? 0 : 1;
}

int cmdCompile(int argc, char **argv) {
  // Activations default to bf16 for GPU targets and f32 for host plans (the host backend
  // computes in f32 either way; with bf16 it rounds every activation as the GPU stores it).
  std::string input, output, target, runOn, act, attention = "sparse";
  int pageSize = 64, tp = 1, ep = 1;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-o" && i + 1 < argc)
      output = argv[++i];
    else if (a == "--target" && i + 1 < argc)
      target = argv[++i];
    else if (a == "--run-on" && i + 1 < argc)
      runOn = argv[++i];
    else if (a == "--activation-dtype" && i + 1 < argc)
      act = argv[++i];
    else if (a == "--attention" && i + 1 < argc)
      attention = argv[++i];
    else if (a == "--page-size" && i + 1 < argc)
      pageSize = optionNumber(argv[++i], 4096);
    else if (a == "--tp" && i + 1 < argc)
      tp = optionNumber(argv[++i], 256);
    else if (a == "--ep" && i + 1 < argc)
      ep = optionNumber(argv[++i], 256);
    else if (input.empty() && !a.empty() && a[0] != '-')
      input = a;
    else
      return usage("compile: unexpected argument '" + a + "'");
  }
  using namespace glm5c::codegen;
  if (input.empty() || output.empty() || target.empty())
    return usage("compile needs MODEL.gguf, --target and -o MODEL.plan");
  if (target != "host" && !findTarget(target))
    return usage("compile: unknown --target '" + target + "' (known: host, " + targetNames() + ")");
  if (!runOn.empty() && (target == "host" || !findTarget(runOn)))
    return usage("compile: --run-on takes a known arch (" + targetNames() + ") with a GPU target");
  if (!runOn.empty()) {
    std::string why = checkEmulation(*findTarget(target), *findTarget(runOn));
    if (!why.empty()) {
      llvm::errs() << "glm5c: error: cannot run " << target << " tiles on " << runOn << ": " << why
                   << "\n";
      return 1;
    }
  }
  if (act.empty())
    act = target == "host" ? "f32" : "bf16";
  if (act != "bf16" && act != "f32")
    return usage("compile: --activation-dtype takes bf16 or f32");
  if (attention != "sparse" && attention != "dense")
    return usage("compile: --attention takes sparse or dense");
  if (pageSize <= 0 || pageSize > 4096 || (pageSize & (pageSize - 1)))
    return usage("compile: --page-size takes a power of two in 1..4096");
  if (tp < 1 || tp > 256 || ep < 1 || ep > 256)
    return usage("compile: --tp and --ep take a number of ranks in 1..256");
  glm5c::CompileOptions options;
  options.tp = tp;
  options.ep = ep;
  options.target = target;
  options.runOn = runOn;
  options.actF32 = act == "f32";
  options.denseAttention = attention == "dense";
  options.pageSize = pageSize;
  options.cacheDir = NvrtcCompiler::defaultCacheDir();
  mlir::MLIRContext context;
  glm5c::installDiagnosticPrinter(context);
  auto bytes = glm5c::compileModel(context, input, options);
  if (!bytes.isOk())
    return fail(bytes.status());
  std::error_code ec;
  llvm::raw_fd_ostream os(output, ec, llvm::sys::fs::OF_None);
  if (ec) {
    llvm::errs() << "glm5c: error: cannot write " << output << ": " << ec.message() << "\n";
    return 1;
  }
  os.write(reinterpret_cast<const char *>(bytes->data()), bytes->size());
  return 0;
}

int cmdInspect(int argc, char **argv) {
  std::string input;
  bool steps = false;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--steps")
      steps = true;
    else if (input.empty() && !a.empty() && a[0] != '-')
      input = a;
    else
      return usage("inspect: unexpected argument '" + a + "'");
  }
  if (input.empty())
    return usage("inspect needs a MODEL.plan");
  auto loaded = glm5rt::plan::LoadedPlan::open(input);
  if (!loaded.isOk()) {
    llvm::errs() << "glm5c: error: " << loaded.status().message() << "\n";
    return 1;
  }
  llvm::outs() << glm5rt::plan::describePlan((*loaded)->plan(), steps);
  return 0;
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
  glm5c::installDiagnosticPrinter(context);
  glm5rt::Status error;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      glm5c::importModel(context, input, /*pipeline=*/false, &error);
  if (!module)
    return fail(error);
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
  long long maxSmem = 0, heads = 16;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--max-smem" && i + 1 < argc) {
      maxSmem = optionNumber(argv[++i], 1 << 30);
      maxSmem = maxSmem == 0 ? -1 : maxSmem; // 0 is not a limit: refused below
    } else if (a == "--heads" && i + 1 < argc)
      heads = optionNumber(argv[++i], 4096);
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
  if (maxSmem < 0)
    return usage("kernel: --max-smem takes a number of bytes in 1..2^30");
  Target limited = *tiles;
  if (maxSmem > 0)
    limited.maxSharedPerBlock = maxSmem;
  tiles = &limited;
  if (heads < 1 || heads > 4096)
    return usage("kernel: --heads takes 1 to 4096");
  auto cfg = selectSparseMlaDecode(*tiles, MlaShape{});
  if (!cfg.isOk()) {
    llvm::errs() << "glm5c: error: " << cfg.status().message() << "\n";
    return 1;
  }
  *cfg = sparseMlaDecodeForOp(*cfg, heads, *tiles);
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
  if (cmd == "compile")
    return cmdCompile(argc - 2, argv + 2);
  if (cmd == "inspect")
    return cmdInspect(argc - 2, argv + 2);
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    llvm::outs() << kUsage;
    return 0;
  }
  return usage("unknown command '" + cmd + "'");
}

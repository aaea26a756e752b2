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
#include "compiler/plan/PlanEmitter.h"
#include "runtime/plan/Plan.h"
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
    "  glm5c compile MODEL.gguf --target T|host [--run-on ARCH] [--activation-dtype bf16|f32]\n"
    "                [--page-size N] -o MODEL.plan\n"
    "      imports, runs glm-pipeline, specializes kernels for T (host: no kernels, for the\n"
    "      host backend), compiles them with NVRTC and writes the flatbuffer plan\n"
    "  glm5c inspect MODEL.plan [--steps]\n"
    "      verifies a plan and prints its target, config, weights, kernels, buffers and steps\n"
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
  {
    // As compile does for GPU targets: one op per kernel.
    mlir::PassManager pm(&context);
    pm.addPass(glm5c::glm::createGlmLowerSwiGLU());
    if (mlir::failed(pm.run(*module)))
      return 1;
  }
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
      if (c.ok) {
        llvm::outs() << c.variant << " (" << c.threads << " threads, " << c.dynamicSmem
                     << " B dynamic shared memory)\n";
        for (const KernelPart &part : c.extra)
          llvm::outs() << "      + " << part.variant << " (" << part.threads << " threads, "
                       << part.dynamicSmem << " B dynamic shared memory)\n";
      }
      else
        llvm::outs() << "no variant\n";
      for (const Rejection &r : c.rejected)
        llvm::outs() << "      rejected " << r.candidate << ": " << r.reason << "\n";
    });
  }
  return allOk ? 0 : 1;
}

int cmdCompile(int argc, char **argv) {
  std::string input, output, target, runOn, act = "bf16", attention = "sparse";
  int pageSize = 64;
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
      pageSize = std::atoi(argv[++i]);
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
  if (act != "bf16" && act != "f32")
    return usage("compile: --activation-dtype takes bf16 or f32");
  if (attention != "sparse" && attention != "dense")
    return usage("compile: --attention takes sparse or dense");
  if (pageSize <= 0 || pageSize > 4096 || (pageSize & (pageSize - 1)))
    return usage("compile: --page-size takes a power of two in 1..4096");
  auto file = glm5rt::gguf::GgufFile::open(input);
  if (!file.isOk()) {
    llvm::errs() << "glm5c: error: " << file.status().message() << "\n";
    return 1;
  }
  mlir::MLIRContext context;
  installDiagnosticPrinter(context);
  auto module = importModel(context, input, /*pipeline=*/true);
  if (!module)
    return 1;
  if (attention == "dense") {
    auto ctxLen = (*file)->getU64("glm-dsa.context_length");
    if (!ctxLen.isOk()) {
      llvm::errs() << "glm5c: error: " << ctxLen.status().message() << "\n";
      return 1;
    }
    mlir::PassManager pm(&context);
    glm5c::glm::GlmDenseAttentionOptions o;
    o.context = static_cast<int64_t>(*ctxLen);
    pm.addPass(glm5c::glm::createGlmDenseAttention(o));
    if (mlir::failed(pm.run(*module)))
      return 1;
  }
  if (target != "host") {
    const Target *t = findTarget(target);
    (*module)->setAttr("glm.target",
                       glm5c::glm::TargetAttr::get(&context, t->name,
                                                   runOn.empty() ? t->name : runOn, t->smCount,
                                                   t->maxSharedPerBlock));
    mlir::PassManager pm(&context);
    pm.addPass(glm5c::glm::createGlmLowerSwiGLU());
    glm5c::GlmSpecializeKernelsOptions o;
    o.actF32 = act == "f32";
    pm.addPass(glm5c::createGlmSpecializeKernels(o));
    if (mlir::failed(pm.run(*module)))
      return 1;
  }
  glm5c::PlanOptions options;
  options.tiles = target;
  options.codeArch = runOn;
  options.actF32 = act == "f32";
  options.denseAttention = attention == "dense";
  options.pageSize = pageSize;
  options.cacheDir = NvrtcCompiler::defaultCacheDir();
  auto bytes = glm5c::emitPlan(*module, **file, llvm::sys::path::filename(input).str(), options);
  if (!bytes.isOk()) {
    llvm::errs() << "glm5c: error: " << bytes.status().message() << "\n";
    return 1;
  }
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
  const glm5::plan::Plan &p = (*loaded)->plan();
  auto &os = llvm::outs();
  os << "plan: format " << p.format_version() << ", from " << p.gguf_name()->str()
     << " (header fingerprint " << p.gguf_fingerprint()->str() << ")\n";
  os << "target: tiles " << p.target()->tiles()->str() << ", code "
     << (p.target()->code_arch() ? p.target()->code_arch()->str() : "") << ", "
     << p.target()->sm_count() << " SMs, " << p.target()->max_shared_per_block()
     << " B shared memory per block\n";
  os << "activations: " << glm5::plan::EnumNameDType(p.activation_dtype()) << ", attention "
     << glm5::plan::EnumNameAttentionMode(p.attention()) << "\n";
  const auto *c = p.config();
  os << "config: hidden " << c->hidden() << ", layers " << c->layers() << " (" << c->dense_layers()
     << " dense), heads " << c->heads() << ", kv_lora " << c->kv_lora() << ", nope " << c->nope()
     << ", rope " << c->rope() << ", v " << c->v() << ", experts " << c->experts() << " top-"
     << c->experts_used() << ", indexer " << c->indexer_heads() << " x " << c->indexer_dim()
     << " top-k " << c->index_topk() << ", vocab " << c->vocab() << "\n";
  os << "kv cache: " << p.kv()->layers() << " layers x (latent " << p.kv()->latent() << " + rope "
     << p.kv()->rope() << " + index key " << p.kv()->index_dim() << "), page size "
     << p.kv()->page_size() << ", " << glm5::plan::EnumNameDType(p.kv()->dtype()) << "\n";
  uint64_t wbytes = 0;
  for (const auto *w : *p.weights())
    wbytes += w->bytes();
  os << "weights: " << p.weights()->size() << " tensors, " << wbytes << " bytes\n";
  os << "kernels: " << (p.kernels() ? p.kernels()->size() : 0) << "\n";
  if (p.kernels())
    for (const auto *k : *p.kernels()) {
      os << "  " << k->variant()->str() << ": " << k->threads() << " threads, "
         << k->static_smem() << " B static + " << k->dynamic_smem()
         << " B dynamic shared memory, " << k->spill_bytes() << " B spills, ptx "
         << (k->ptx() ? k->ptx()->size() : 0) << " B, cubin "
         << (k->cubin() ? k->cubin()->size() : 0) << " B, entries";
      for (const auto *e : *k->entries())
        os << " " << e->str();
      os << "\n";
    }
  os << "buffers: " << p.buffers()->size() << "\n";
  for (const auto *e : *p.entries()) {
    os << "entry " << e->name()->str() << ": " << e->steps()->size() << " steps, max tokens "
       << e->max_tokens() << ", arena " << e->arena_bytes_per_token() << " B per token, output buffer "
       << e->output() << "\n";
    if (!steps)
      continue;
    for (const auto *s : *e->steps()) {
      os << "  " << glm5rt::plan::opKindName(s->op()) << " " << s->name()->str();
      if (s->layer() >= 0)
        os << " layer " << s->layer();
      if (s->kernel() >= 0)
        os << " kernel " << p.kernels()->Get(s->kernel())->variant()->str();
      if (s->extra_kernels())
        for (int32_t k : *s->extra_kernels())
          os << " + " << p.kernels()->Get(k)->variant()->str();
      os << " in";
      for (int32_t i : *s->inputs())
        os << " " << i;
      os << " out";
      for (int32_t i : *s->outputs())
        os << " " << i;
      for (const auto *a : *s->attrs()) {
        os << " " << a->key()->str() << "=";
        if (a->is_float())
          os << a->f();
        else
          os << a->i();
      }
      os << "\n";
    }
  }
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

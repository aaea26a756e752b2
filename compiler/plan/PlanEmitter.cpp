//===- PlanEmitter.cpp - glm module -> flatbuffer plan --------------------===//
#include "compiler/plan/PlanEmitter.h"

#include "codegen/kernels/EmbeddedKernels.h"
#include "codegen/nvrtc/Nvrtc.h"
#include "codegen/registry/Registry.h"
#include "codegen/target/Target.h"
#include "compiler/passes/Passes.h"
#include "dialects/glm/IR/GlmDialect.h"
#include "runtime/gguf/gguf_reader.h"
#include "runtime/plan/Plan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>
#include <map>

using namespace mlir;
using namespace glm5c::glm;
namespace fb = flatbuffers;
namespace pl = glm5::plan;
using glm5rt::Status;
using glm5rt::StatusCode;
using glm5rt::makeStatus;

namespace glm5c {
namespace {

std::optional<pl::OpKind> opKind(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::optional<pl::OpKind>>(op)
      .Case([](EmbedOp) { return pl::OpKind::Embed; })
      .Case([](RMSNormOp) { return pl::OpKind::RmsNorm; })
      .Case([](LayerNormOp) { return pl::OpKind::LayerNorm; })
      .Case([](LinearOp) { return pl::OpKind::Linear; })
      .Case([](HeadLinearOp) { return pl::OpKind::HeadLinear; })
      .Case([](SliceOp) { return pl::OpKind::Slice; })
      .Case([](RopeOp) { return pl::OpKind::Rope; })
      .Case([](CacheAppendOp) { return pl::OpKind::CacheAppend; })
      .Case([](RopeCacheAppendOp) { return pl::OpKind::RopeCacheAppend; })
      .Case([](IndexerScoreOp) { return pl::OpKind::IndexerScore; })
      .Case([](TopKOp) { return pl::OpKind::TopK; })
      .Case([](SparseMLAOp) { return pl::OpKind::SparseMla; })
      .Case([](MoEGateOp) { return pl::OpKind::MoEGate; })
      .Case([](MoERouterOp) { return pl::OpKind::MoERouter; })
      .Case([](MoEExpertsOp) { return pl::OpKind::MoEExperts; })
      .Case([](SwiGLUOp) { return pl::OpKind::SwiGLU; })
      .Case([](AddOp) { return pl::OpKind::Add; })
      .Case([](SwiGLUMulOp) { return pl::OpKind::SwiGLUMul; })
      .Case([](GateUpOp) { return pl::OpKind::GateUp; })
      .Case([](LinearsOp) { return pl::OpKind::Linears; })
      .Case([](LogitsOp) { return pl::OpKind::Logits; })
      .Case([](AllReduceOp) { return pl::OpKind::AllReduce; })
      .Case([](AllGatherOp) { return pl::OpKind::AllGather; })
      .Default([](Operation *) { return std::nullopt; });
}

std::string locName(Location loc) {
  if (auto f = dyn_cast<FusedLoc>(loc)) // fused ops (glm.linears): the first op's name
    return f.getLocations().empty() ? "?" : locName(f.getLocations().front());
  if (auto n = dyn_cast<NameLoc>(loc))
    return n.getName().str();
  if (auto f = dyn_cast<FileLineColLoc>(loc))
    return f.getFilename().str();
  return "?";
}

struct BufferInfo {
  std::string name;
  pl::DType dtype;
  uint64_t elems = 1;
  bool perContext = false;
  std::vector<int64_t> shape;
  int def = 0, lastUse = 0;
  uint64_t offset = 0;
};

uint64_t dtypeBytes(pl::DType t) { return t == pl::DType::BF16 ? 2 : 4; }

// First-fit offsets (bytes per token, 16-aligned) for buffers whose lifetimes do not overlap;
// returns the arena's bytes per token. Per-context buffers are allocated by the runtime.
uint64_t planArena(std::vector<BufferInfo *> &bufs) {
  std::sort(bufs.begin(), bufs.end(), [](auto *a, auto *b) { return a->def < b->def; });
  struct Live {
    uint64_t begin, end;
    int lastUse;
  };
  std::vector<Live> live;
  uint64_t top = 0;
  for (BufferInfo *b : bufs) {
    live.erase(std::remove_if(live.begin(), live.end(),
                              [&](const Live &l) { return l.lastUse < b->def; }),
               live.end());
    std::sort(live.begin(), live.end(), [](auto &x, auto &y) { return x.begin < y.begin; });
    uint64_t size = (b->elems * dtypeBytes(b->dtype) + 15) / 16 * 16, at = 0;
    for (const Live &l : live) {
      if (at + size <= l.begin)
        break;
      at = std::max(at, l.end);
    }
    b->offset = at;
    live.push_back({at, at + size, b->lastUse});
    top = std::max(top, at + size);
  }
  return top;
}

// Results the kernels keep in fp32 whatever the activation dtype: the indexer's scores (bf16
// would make ties at the top-k cut-off), the router's expert weights, and sparse MLA's
// log-sum-exp. Every other float result is an activation. The kernels' signatures
// (codegen/kernels/indexer.cuh, topk.cuh, moe_experts.cuh, moe.cuh, sparse_mla_decode.cuh)
// follow this rule.
bool keepsF32(pl::OpKind kind, unsigned result) {
  switch (kind) {
  case pl::OpKind::IndexerScore:
    return true;
  case pl::OpKind::MoEGate:
  case pl::OpKind::MoERouter:
    return result == 0;
  case pl::OpKind::SparseMla:
    return result == 1;
  default:
    return false;
  }
}

} // namespace

glm5rt::StatusOr<std::vector<uint8_t>> emitPlan(ModuleOp module, const glm5rt::gguf::GgufFile &gguf,
                                                const std::string &ggufName,
                                                const PlanOptions &opt) {
  ModelConfigAttr cfg = getModelConfig(module);
  if (!cfg)
    return makeStatus(StatusCode::kInvalidArgument, "module has no glm.config");
  const bool host = opt.tiles == "host";
  const codegen::Target *tiles = host ? nullptr : codegen::findTarget(opt.tiles);
  if (!host && !tiles)
    return makeStatus(StatusCode::kInvalidArgument, "unknown target '%s' (known: host, %s)",
                      opt.tiles.c_str(), codegen::targetNames().c_str());
  const std::string codeArch = host ? "" : opt.codeArch.empty() ? opt.tiles : opt.codeArch;
  const pl::DType act = opt.actF32 ? pl::DType::F32 : pl::DType::BF16;

  fb::FlatBufferBuilder b(1 << 20);
  // Weights, in first-use order, deduplicated by name and box (a rank's shard).
  std::map<std::string, int> weightIds;
  std::vector<fb::Offset<pl::Weight>> weights;
  auto weightId = [&](GgufTensorAttr w) -> glm5rt::StatusOr<int> {
    std::string key = w.getName().str();
    for (int64_t o : w.getOffsets())
      key += "," + std::to_string(o);
    auto it = weightIds.find(key);
    if (it != weightIds.end())
      return it->second;
    const auto *t = gguf.findTensor(w.getName().str());
    if (!t)
      return makeStatus(StatusCode::kNotFound, "%s: tensor '%s' is not in the GGUF",
                        ggufName.c_str(), w.getName().str().c_str());
    std::vector<uint64_t> viewOffset, viewShape;
    if (!w.getOffsets().empty()) {
      if (w.getShape().size() != t->nDims)
        return makeStatus(StatusCode::kInvalidArgument, "%s: box of '%s' has %zu dims, the tensor %u",
                          ggufName.c_str(), key.c_str(), w.getShape().size(), t->nDims);
      for (size_t d = 0; d < t->nDims; ++d) {
        if (static_cast<uint64_t>(w.getOffsets()[d] + w.getShape()[d]) > t->ne[d])
          return makeStatus(StatusCode::kInvalidArgument, "%s: box of '%s' exceeds dim %zu (%llu)",
                            ggufName.c_str(), key.c_str(), d,
                            static_cast<unsigned long long>(t->ne[d]));
        viewOffset.push_back(static_cast<uint64_t>(w.getOffsets()[d]));
        viewShape.push_back(static_cast<uint64_t>(w.getShape()[d]));
      }
    }
    std::vector<uint64_t> shape(t->ne, t->ne + t->nDims);
    weights.push_back(pl::CreateWeight(
        b, b.CreateString(w.getName().str()), t->file, gguf.dataOffset(t->file) + t->offset,
        t->bytes, static_cast<uint32_t>(t->type), b.CreateVector(shape),
        viewOffset.empty() ? 0 : b.CreateVector(viewOffset),
        viewShape.empty() ? 0 : b.CreateVector(viewShape)));
    int id = static_cast<int>(weights.size()) - 1;
    weightIds[key] = id;
    return id;
  };

  // Kernels: one per distinct variant, compiled once (in parallel) for the code arch.
  std::map<std::string, int> kernelIds; // instantiation source -> kernel index
  std::vector<codegen::KernelChoice> kernelChoices;
  std::vector<BufferInfo> buffers;
  struct StepInfo {
    pl::OpKind kind;
    std::string name;
    int layer = -1, kernel = -1;
    std::vector<int> inputs, outputs, weights, extraKernels;
    std::vector<fb::Offset<pl::Attr>> attrs;
  };
  struct EntryInfo {
    std::string name;
    int rank = 0;
    int maxTokens;
    std::vector<StepInfo> steps;
    uint64_t arena = 0;
    int output = -1;
  };
  std::vector<EntryInfo> entries;

  // A sharded module (glm-shard) has @prefill_rank<r> / @decode_rank<r> for each rank.
  int64_t ranks = 1;
  if (auto r = module->getAttrOfType<IntegerAttr>("glm.ranks"))
    ranks = r.getInt();
  for (int64_t rank = 0; rank < ranks; ++rank)
  for (const char *entryName : {"prefill", "decode"}) {
    const std::string fnName =
        ranks > 1 ? std::string(entryName) + "_rank" + std::to_string(rank) : entryName;
    auto fn = module.lookupSymbol<func::FuncOp>(fnName);
    if (!fn)
      return makeStatus(StatusCode::kInvalidArgument, "module has no @%s", fnName.c_str());
    EntryInfo entry;
    entry.name = entryName;
    entry.rank = static_cast<int>(rank);
    auto tokensType = cast<RankedTensorType>(fn.getArgument(0).getType());
    entry.maxTokens = tokensType.isDynamicDim(0) ? -1 : static_cast<int>(tokensType.getDimSize(0));
    llvm::DenseMap<Value, int> bufferOf;
    bufferOf[fn.getArgument(0)] = -1; // tokens
    bufferOf[fn.getArgument(1)] = -2; // positions
    size_t firstBuffer = buffers.size();
    int index = 0;
    for (Operation &opRef : fn.getBody().front()) {
      Operation *op = &opRef;
      if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        entry.output = bufferOf.lookup(ret.getOperand(0));
        buffers[entry.output].lastUse = index;
        continue;
      }
      std::optional<pl::OpKind> kind = opKind(op);
      if (!kind)
        return makeStatus(StatusCode::kInvalidArgument,
                          "%s: op %s has no plan step (run glm-pipeline first)",
                          locName(op->getLoc()).c_str(),
                          op->getName().getStringRef().str().c_str());
      StepInfo step;
      step.kind = *kind;
      step.name = locName(op->getLoc());
      for (Value v : op->getOperands()) {
        if (isa<KVCacheType>(v.getType()))
          continue;
        int id = bufferOf.lookup(v);
        step.inputs.push_back(id);
        if (id >= 0)
          buffers[id].lastUse = index;
      }
      for (Value r : op->getResults()) {
        auto t = cast<RankedTensorType>(r.getType());
        BufferInfo info;
        info.name = step.name + "#" + std::to_string(cast<OpResult>(r).getResultNumber());
        info.dtype = t.getElementType().isInteger(32) ? pl::DType::I32
                     : keepsF32(*kind, cast<OpResult>(r).getResultNumber()) ? pl::DType::F32
                                                                             : act;
        for (int64_t d = 1; d < t.getRank(); ++d) {
          info.shape.push_back(t.isDynamicDim(d) ? -1 : t.getDimSize(d));
          if (t.isDynamicDim(d))
            info.perContext = true;
          else
            info.elems *= t.getDimSize(d);
        }
        info.def = info.lastUse = index;
        bufferOf[r] = static_cast<int>(buffers.size());
        step.outputs.push_back(static_cast<int>(buffers.size()));
        buffers.push_back(info);
      }
      for (NamedAttribute a : op->getAttrs()) {
        std::string key = a.getName().str();
        Attribute v = a.getValue();
        if (auto w = dyn_cast<GgufTensorAttr>(v)) {
          auto id = weightId(w);
          if (!id.isOk())
            return id.status();
          step.weights.push_back(*id);
          step.attrs.push_back(pl::CreateAttr(b, b.CreateString("weight." + key), *id));
        } else if (auto k = dyn_cast<KernelAttr>(v)) {
          // Keyed by the instantiation source: two ops share a kernel exactly when NVRTC would
          // compile the same translation unit for them.
          codegen::KernelChoice choice =
              codegen::selectKernel(kernelQueryFor(op, opt.actF32), *tiles);
          if (!choice.ok || choice.variant != k.getVariant())
            return makeStatus(StatusCode::kInternal,
                              "%s: the registry no longer selects %s for this op",
                              step.name.c_str(), k.getVariant().str().c_str());
          auto idOf = [&](const codegen::KernelChoice &kc) {
            auto it = kernelIds.find(kc.source);
            if (it == kernelIds.end()) {
              it = kernelIds.emplace(kc.source, static_cast<int>(kernelChoices.size())).first;
              kernelChoices.push_back(kc);
            }
            return it->second;
          };
          step.kernel = idOf(choice);
          for (const codegen::KernelPart &part : choice.extra) {
            codegen::KernelChoice kc;
            kc.ok = true;
            kc.variant = part.variant;
            kc.source = part.source;
            kc.entries = part.entries;
            kc.threads = part.threads;
            kc.dynamicSmem = part.dynamicSmem;
            kc.params = part.params;
            step.extraKernels.push_back(idOf(kc));
          }
        } else if (auto bl = dyn_cast<BoolAttr>(v)) {
          // Before IntegerAttr: a BoolAttr is an i1 IntegerAttr whose getInt() is -1.
          step.attrs.push_back(pl::CreateAttr(b, b.CreateString(key), bl.getValue() ? 1 : 0));
        } else if (auto i = dyn_cast<IntegerAttr>(v)) {
          if (key == "layer")
            step.layer = static_cast<int>(i.getInt());
          step.attrs.push_back(pl::CreateAttr(b, b.CreateString(key), i.getInt()));
        } else if (auto f = dyn_cast<FloatAttr>(v)) {
          step.attrs.push_back(pl::CreateAttr(b, b.CreateString(key), 0, f.getValueAsDouble(), 0, true));
        } else if (auto part = dyn_cast<CachePartAttr>(v)) {
          step.attrs.push_back(pl::CreateAttr(b, b.CreateString(key), static_cast<int>(part.getValue())));
        } else if (auto d = dyn_cast<MLADimsAttr>(v)) {
          for (auto [n, x] : {std::pair<const char *, int64_t>{"nope", d.getNope()}, {"rope", d.getRope()},
                              {"v", d.getV()}, {"kv_lora", d.getKvLora()}})
            step.attrs.push_back(pl::CreateAttr(b, b.CreateString(std::string("dims.") + n), x));
        } else {
          return makeStatus(StatusCode::kInternal, "%s: attribute '%s' has no plan encoding",
                            step.name.c_str(), key.c_str());
        }
      }
      // Collectives are the runtime's (a shared-memory sum on the host mesh, NCCL on GPUs).
      if (!host && step.kernel < 0 && step.kind != pl::OpKind::AllReduce &&
          step.kind != pl::OpKind::AllGather)
        return makeStatus(StatusCode::kInvalidArgument,
                          "%s: %s has no kernel: run glm-specialize-kernels for %s first",
                          step.name.c_str(), op->getName().getStringRef().str().c_str(),
                          opt.tiles.c_str());
      entry.steps.push_back(std::move(step));
      ++index;
    }
    std::vector<BufferInfo *> arena;
    for (size_t i = firstBuffer; i < buffers.size(); ++i)
      if (!buffers[i].perContext)
        arena.push_back(&buffers[i]);
    entry.arena = planArena(arena);
    entries.push_back(std::move(entry));
  }

  std::vector<fb::Offset<pl::Kernel>> kernels;
  if (!kernelChoices.empty()) {
    std::vector<codegen::KernelSource> sources;
    for (const auto &c : kernelChoices) {
      codegen::KernelSource s;
      s.name = c.variant;
      s.source = c.source;
      s.headers = codegen::embeddedKernelFiles();
      s.arch = codeArch;
      sources.push_back(std::move(s));
    }
    codegen::NvrtcCompiler nvrtc(opt.cacheDir);
    auto compiled = nvrtc.compileAll(sources, opt.threads);
    for (size_t i = 0; i < compiled.size(); ++i) {
      if (!compiled[i].isOk())
        return compiled[i].status();
      const auto &k = *compiled[i];
      int staticSmem = 0;
      for (size_t p = k.log.find(" bytes smem"); p != std::string::npos;
           p = k.log.find(" bytes smem", p + 1)) {
        size_t s = k.log.rfind(' ', p - 1);
        staticSmem = std::max(staticSmem, std::atoi(k.log.c_str() + s + 1));
      }
      int spills = 0;
      for (const char *what : {" bytes spill stores", " bytes spill loads"})
        for (size_t p = k.log.find(what); p != std::string::npos; p = k.log.find(what, p + 1)) {
          size_t s = k.log.rfind(' ', p - 1);
          spills += std::atoi(k.log.c_str() + s + 1);
        }
      std::vector<fb::Offset<fb::String>> names;
      for (const std::string &e : kernelChoices[i].entries)
        names.push_back(b.CreateString(e));
      std::vector<fb::Offset<pl::Attr>> params;
      for (const auto &[key, value] : kernelChoices[i].params)
        params.push_back(pl::CreateAttr(b, b.CreateString(key), value));
      kernels.push_back(pl::CreateKernel(
          b, b.CreateString(kernelChoices[i].variant), b.CreateVector(names), b.CreateString(k.ptx),
          b.CreateVector(k.cubin), kernelChoices[i].threads, staticSmem,
          static_cast<int>(kernelChoices[i].dynamicSmem), spills,
          params.empty() ? 0 : b.CreateVector(params)));
    }
  }

  std::vector<fb::Offset<pl::Buffer>> bufs;
  for (const BufferInfo &bi : buffers)
    bufs.push_back(pl::CreateBuffer(b, b.CreateString(bi.name), bi.dtype, bi.elems, bi.offset,
                                    bi.perContext, b.CreateVector(bi.shape)));
  std::vector<fb::Offset<pl::EntryPoint>> eps;
  for (EntryInfo &e : entries) {
    std::vector<fb::Offset<pl::Step>> steps;
    for (StepInfo &s : e.steps)
      steps.push_back(pl::CreateStep(b, s.kind, b.CreateString(s.name), s.layer, s.kernel,
                                     b.CreateVector(s.inputs), b.CreateVector(s.outputs),
                                     b.CreateVector(s.weights), b.CreateVector(s.attrs),
                                     b.CreateVector(s.extraKernels)));
    eps.push_back(pl::CreateEntryPoint(b, b.CreateString(e.name), e.maxTokens, e.arena, e.output,
                                       b.CreateVector(steps), e.rank));
  }
  auto target = pl::CreateTarget(b, b.CreateString(opt.tiles), b.CreateString(codeArch),
                                 tiles ? tiles->smCount : 0,
                                 tiles ? static_cast<int>(tiles->maxSharedPerBlock) : 0);
  int64_t ctx = 0;
  if (auto v = gguf.getU64("glm-dsa.context_length"); v.isOk())
    ctx = static_cast<int64_t>(*v);
  auto config = pl::CreateModelConfig(
      b, cfg.getHidden(), cfg.getLayers(), cfg.getDenseLayers(), cfg.getHeads(), cfg.getQLora(),
      cfg.getKvLora(), cfg.getNope(), cfg.getRope(), cfg.getV(), cfg.getDenseFfn(),
      cfg.getExperts(), cfg.getExpertsUsed(), cfg.getSharedExperts(), cfg.getExpertFfn(),
      cfg.getVocab(), cfg.getIndexerHeads(), cfg.getIndexerDim(), cfg.getIndexTopk(),
      static_cast<int>(ctx), cfg.getRmsEps().getValueAsDouble(),
      cfg.getRopeTheta().getValueAsDouble(), cfg.getRoutedScale().getValueAsDouble(),
      cfg.getNormTopk());
  auto kv = pl::CreateKVLayout(b, cfg.getLayers(), cfg.getKvLora(), cfg.getRope(),
                               cfg.getIndexerDim(), opt.pageSize, act);
  auto root = pl::CreatePlan(
      b, glm5rt::plan::kFormatVersion, b.CreateString("glm5c"), target, config, act,
      opt.denseAttention ? pl::AttentionMode::Dense : pl::AttentionMode::Sparse,
      b.CreateString(glm5rt::gguf::headerFingerprint(gguf)), b.CreateString(ggufName),
      b.CreateVector(weights), b.CreateVector(kernels), b.CreateVector(bufs), kv, b.CreateVector(eps),
      static_cast<int>(ranks));
  pl::FinishPlanBuffer(b, root);
  return std::vector<uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
}

} // namespace glm5c

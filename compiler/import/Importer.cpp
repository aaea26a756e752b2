//===- Importer.cpp - GGUF header -> glm dialect module -------------------===//
//
// One decoder layer as the importer writes it (docs/model.md has the math):
//   a = rms_norm(h); q_lat = rms_norm(linear(a, q_a)); q = rope(linear(q_lat, q_b)) [T,H,nope+rope]
//   ckv = linear(a, kv_a_mqa); c = rms_norm(ckv[:kv_lora]); kpe = rope(ckv[kv_lora:])
//   indexer: qi = rope(linear(q_lat, idx.q_b)) [T,HI,DI]; ki = rope(layer_norm(linear(a, idx.k)));
//            wi = linear(a, idx.proj); cache_append(c, kpe, ki); idx = topk(indexer_score(qi, wi))
//   naive attention over the cache: keys/values expanded from the cached latent per head
//   h += linear(attention, attn_output); h += swiglu | moe(rms_norm(h))
//
//===----------------------------------------------------------------------===//
#include "compiler/import/Importer.h"

#include "dialects/glm/IR/GlmDialect.h"
#include "runtime/gguf/gguf_reader.h"
#include "runtime/gguf/glm5_layout.h"
#include "runtime/gguf/quant.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"

#include <cmath>

using namespace mlir;
using namespace glm5c::glm;
namespace gg = glm5rt::gguf;

namespace glm5c {
namespace {

// The indexer key's LayerNorm eps (GLM-5 builds it with 1e-6; the GGUF does not store it).
constexpr float kIndexerNormEps = 1e-6f;

class Importer {
public:
  Importer(MLIRContext &ctx, const gg::GgufFile &file, const ImportOptions &opt,
           const gg::Glm5Config &config)
      : ctx_(ctx), file_(file), name_(opt.displayName), c_(config), b_(&ctx) {}

  OwningOpRef<ModuleOp> run();

private:
  Location loc(llvm::StringRef tensor) {
    return NameLoc::get(StringAttr::get(&ctx_, name_ + ":" + tensor.str()));
  }
  GgufTensorAttr tensor(const std::string &name) {
    const gg::TensorInfo *t = file_.findTensor(name); // presence checked before building
    SmallVector<int64_t> shape(t->ne, t->ne + t->nDims);
    return GgufTensorAttr::get(&ctx_, name, static_cast<GgmlType>(t->type), shape);
  }
  RankedTensorType act(ArrayRef<int64_t> dims) {
    SmallVector<int64_t> shape = {tokens_};
    shape.append(dims.begin(), dims.end());
    return RankedTensorType::get(shape, b_.getF32Type());
  }
  Value linear(Value x, const std::string &w, ArrayRef<int64_t> outDims) {
    return LinearOp::create(b_, loc(w), act(outDims), x, tensor(w));
  }
  Value rmsNorm(Value x, const std::string &w) {
    return RMSNormOp::create(b_, loc(w), x.getType(), x, tensor(w), b_.getF32FloatAttr(c_.rmsEps));
  }
  Value applyRope(Value x, int64_t offset, llvm::StringRef at) {
    return RopeOp::create(b_, loc(at), x.getType(), x, positions_,
                          b_.getF32FloatAttr(c_.ropeTheta), b_.getI64IntegerAttr(c_.qkRopeDim),
                          b_.getI64IntegerAttr(offset));
  }
  Value layer(Value h, uint32_t L);
  Value ffn(Value f, uint32_t L);
  func::FuncOp entry(ModuleOp module, llvm::StringRef name, int64_t tokens);

  MLIRContext &ctx_;
  const gg::GgufFile &file_;
  std::string name_;
  const gg::Glm5Config &c_;
  OpBuilder b_;
  int64_t tokens_ = ShapedType::kDynamic;
  Value positions_, cache_;
};

Value Importer::layer(Value h, uint32_t L) {
  const std::string p = "blk." + std::to_string(L) + ".";
  const int64_t H = c_.heads, nope = c_.qkNopeDim, rope = c_.qkRopeDim, lora = c_.kvLoraRank;
  const int64_t HI = c_.indexerHeads, DI = c_.indexerHeadDim;
  const auto layerAttr = b_.getI64IntegerAttr(L);

  Value a = rmsNorm(h, p + "attn_norm.weight");
  Value qLat = rmsNorm(linear(a, p + "attn_q_a.weight", {c_.qLoraRank}), p + "attn_q_a_norm.weight");
  Value q = applyRope(linear(qLat, p + "attn_q_b.weight", {H, nope + rope}), nope, p + "attn_q_b.weight");

  Location kvLoc = loc(p + "attn_kv_a_mqa.weight");
  Value ckv = linear(a, p + "attn_kv_a_mqa.weight", {lora + rope});
  Value latent = rmsNorm(SliceOp::create(b_, kvLoc, act({lora}), ckv, 0, lora),
                         p + "attn_kv_a_norm.weight");
  Value kpe = applyRope(SliceOp::create(b_, kvLoc, act({rope}), ckv, lora, rope), 0,
                   p + "attn_kv_a_mqa.weight");

  // DSA lightning indexer: rope on the first `rope` dims of each 128-wide head ([rope | nope]).
  Value qi = applyRope(linear(qLat, p + "indexer.attn_q_b.weight", {HI, DI}), 0,
                  p + "indexer.attn_q_b.weight");
  Value kiRaw = linear(a, p + "indexer.attn_k.weight", {DI});
  Value ki = LayerNormOp::create(b_, loc(p + "indexer.k_norm.weight"), kiRaw.getType(), kiRaw,
                                 tensor(p + "indexer.k_norm.weight"),
                                 tensor(p + "indexer.k_norm.bias"),
                                 b_.getF32FloatAttr(kIndexerNormEps));
  ki = applyRope(ki, 0, p + "indexer.attn_k.weight");
  Value wi = linear(a, p + "indexer.proj.weight", {HI});

  CacheAppendOp::create(b_, kvLoc, cache_, layerAttr, positions_, latent, kpe, ki);
  Location idxLoc = loc(p + "indexer.proj.weight");
  Value scores = IndexerScoreOp::create(
      b_, idxLoc, RankedTensorType::get({tokens_, ShapedType::kDynamic}, b_.getF32Type()), cache_,
      layerAttr, qi, wi, positions_, b_.getF32FloatAttr(1.0f / std::sqrt(float(HI * DI))));
  Value selected = TopKOp::create(
      b_, idxLoc, RankedTensorType::get({tokens_, int64_t(c_.indexerTopK)}, b_.getI32Type()),
      scores, positions_, b_.getI64IntegerAttr(c_.indexerTopK));

  // Naive attention: per-head keys and values expanded from every cached latent row.
  auto rows = [&](int64_t w) {
    return RankedTensorType::get({ShapedType::kDynamic, w}, b_.getF32Type());
  };
  auto headRows = [&](int64_t w) {
    return RankedTensorType::get({ShapedType::kDynamic, H, w}, b_.getF32Type());
  };
  Value cAll = CacheReadOp::create(b_, kvLoc, rows(lora), cache_, layerAttr,
                                   CachePartAttr::get(&ctx_, CachePart::Latent));
  Value kpeAll = CacheReadOp::create(b_, kvLoc, rows(rope), cache_, layerAttr,
                                     CachePartAttr::get(&ctx_, CachePart::Rope));
  Value kNope = HeadLinearOp::create(b_, loc(p + "attn_k_b.weight"), headRows(nope), cAll,
                                     tensor(p + "attn_k_b.weight"), /*transpose=*/true);
  Value v = HeadLinearOp::create(b_, loc(p + "attn_v_b.weight"), headRows(c_.vHeadDim), cAll,
                                 tensor(p + "attn_v_b.weight"), /*transpose=*/false);
  Value o = AttentionOp::create(b_, loc(p + "attn_output.weight"), act({H, c_.vHeadDim}), q,
                                kNope, kpeAll, v, selected,
                                b_.getF32FloatAttr(1.0f / std::sqrt(float(nope + rope))));
  h = AddOp::create(b_, loc(p + "attn_output.weight"), h,
                    linear(o, p + "attn_output.weight", {c_.hidden}));
  Value f = rmsNorm(h, p + "ffn_norm.weight");
  return AddOp::create(b_, loc(p + "ffn_norm.weight"), h, ffn(f, L));
}

Value Importer::ffn(Value f, uint32_t L) {
  const std::string p = "blk." + std::to_string(L) + ".";
  if (!c_.isMoeLayer(L))
    return SwiGLUOp::create(b_, loc(p + "ffn_gate.weight"), f.getType(), f,
                            tensor(p + "ffn_gate.weight"), tensor(p + "ffn_up.weight"),
                            tensor(p + "ffn_down.weight"));
  const int64_t k = c_.expertsUsed;
  Value logits = linear(f, p + "ffn_gate_inp.weight", {c_.experts});
  auto gate = MoEGateOp::create(
      b_, loc(p + "ffn_gate_inp.weight"), act({k}),
      RankedTensorType::get({tokens_, k}, b_.getI32Type()), logits, tensor(p + "exp_probs_b.bias"),
      b_.getI64IntegerAttr(k), b_.getBoolAttr(c_.expertWeightsNorm),
      b_.getF32FloatAttr(c_.expertWeightsScale));
  Value routed = MoEExpertsOp::create(
      b_, loc(p + "ffn_gate_exps.weight"), f.getType(), f, gate.getWeights(), gate.getExperts(),
      tensor(p + "ffn_gate_exps.weight"), tensor(p + "ffn_up_exps.weight"),
      tensor(p + "ffn_down_exps.weight"));
  if (c_.sharedExperts == 0)
    return routed;
  Value shared = SwiGLUOp::create(b_, loc(p + "ffn_gate_shexp.weight"), f.getType(), f,
                                  tensor(p + "ffn_gate_shexp.weight"),
                                  tensor(p + "ffn_up_shexp.weight"),
                                  tensor(p + "ffn_down_shexp.weight"));
  return AddOp::create(b_, loc(p + "ffn_gate_shexp.weight"), routed, shared);
}

func::FuncOp Importer::entry(ModuleOp module, llvm::StringRef name, int64_t tokens) {
  tokens_ = tokens;
  b_.setInsertionPointToEnd(module.getBody());
  auto i32s = RankedTensorType::get({tokens}, b_.getI32Type());
  auto cacheType = KVCacheType::get(&ctx_, c_.mainLayers(), c_.kvLoraRank, c_.qkRopeDim,
                                    c_.indexerHeadDim);
  auto logitsType = act({int64_t(c_.vocab)});
  auto fn = func::FuncOp::create(b_, loc("token_embd.weight"), name,
                                 b_.getFunctionType({i32s, i32s, cacheType}, {logitsType}));
  fn.setArgAttr(0, "glm.name", b_.getStringAttr("tokens"));
  fn.setArgAttr(1, "glm.name", b_.getStringAttr("positions"));
  fn.setArgAttr(2, "glm.name", b_.getStringAttr("cache"));
  Block *body = fn.addEntryBlock();
  b_.setInsertionPointToStart(body);
  positions_ = body->getArgument(1);
  cache_ = body->getArgument(2);
  Value h = EmbedOp::create(b_, loc("token_embd.weight"), act({int64_t(c_.hidden)}),
                            body->getArgument(0), tensor("token_embd.weight"));
  for (uint32_t L = 0; L < c_.mainLayers(); ++L)
    h = layer(h, L);
  Value n = rmsNorm(h, "output_norm.weight");
  Value logits = LogitsOp::create(b_, loc("output.weight"), logitsType, n, tensor("output.weight"));
  func::ReturnOp::create(b_, loc("output.weight"), logits);
  return fn;
}

OwningOpRef<ModuleOp> Importer::run() {
  OwningOpRef<ModuleOp> module = ModuleOp::create(FileLineColLoc::get(&ctx_, name_, 0, 0));
  auto config = ModelConfigAttr::get(
      &ctx_, c_.hidden, c_.mainLayers(), c_.leadingDense, c_.heads, c_.qLoraRank, c_.kvLoraRank,
      c_.qkNopeDim, c_.qkRopeDim, c_.vHeadDim, c_.denseFfn, c_.experts, c_.expertsUsed,
      c_.sharedExperts, c_.expertFfn, c_.vocab, c_.indexerHeads, c_.indexerHeadDim,
      c_.indexerTopK, b_.getF32FloatAttr(c_.rmsEps), b_.getF32FloatAttr(c_.ropeTheta),
      b_.getF32FloatAttr(c_.expertWeightsScale),
      c_.expertWeightsNorm);
  (*module)->setAttr(kConfigAttrName, config);
  (*module)->setAttr("glm.source", StringAttr::get(&ctx_, name_));
  if (c_.nextnLayers > 0) {
    SmallVector<int64_t> mtp;
    for (uint32_t L = c_.mainLayers(); L < c_.blockCount; ++L) {
      mtp.push_back(L);
      emitRemark(loc("blk." + std::to_string(L) + ".nextn.eh_proj.weight"))
          << "blk." << L << " is the MTP (nextn) block: recognized and set aside, it serves "
          << "speculative decoding only and is not part of prefill or decode";
    }
    (*module)->setAttr("glm.mtp_blocks", DenseI64ArrayAttr::get(&ctx_, mtp));
  }
  entry(*module, "prefill", ShapedType::kDynamic);
  entry(*module, "decode", 1);
  return module;
}

} // namespace

OwningOpRef<ModuleOp> importGguf(MLIRContext &ctx, const gg::GgufFile &file,
                                 const ImportOptions &opt) {
  ctx.loadDialect<GlmDialect, func::FuncDialect>();
  Location fileLoc = FileLineColLoc::get(&ctx, opt.displayName, 0, 0);
  auto config = gg::readGlm5Config(file);
  if (!config.isOk()) {
    emitError(fileLoc) << config.status().message();
    return nullptr;
  }
  // Every tensor of the layout, with the expected shape and a type we can read; all problems
  // are reported, not only the first.
  bool ok = true;
  const std::vector<gg::ExpectedTensor> layout = gg::glm5Tensors(*config);
  for (const gg::ExpectedTensor &e : layout) {
    Location at = NameLoc::get(StringAttr::get(&ctx, opt.displayName + ":" + e.name));
    const gg::TensorInfo *t = file.findTensor(e.name);
    std::string shape = "[";
    for (size_t i = 0; i < e.ne.size(); ++i)
      shape += (i ? ", " : "") + std::to_string(e.ne[i]);
    shape += "]";
    if (!t) {
      if (!e.optional) {
        emitError(at) << "tensor '" << e.name << "' is missing (expected shape " << shape << ")";
        ok = false;
      }
      continue;
    }
    if (!std::equal(e.ne.begin(), e.ne.end(), t->ne, t->ne + t->nDims)) {
      emitError(at) << "tensor '" << e.name << "' has shape " << t->shapeString()
                    << ", expected " << shape;
      ok = false;
      continue;
    }
    if (!gg::canDequantize(t->type)) {
      emitError(at) << "tensor '" << e.name << "' has type " << gg::ggmlTypeName(t->type)
                    << ", which glm5c does not support (supported: F32, F16, BF16, Q8_0, Q4_0, "
                       "Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS)";
      ok = false;
    }
  }
  if (!ok)
    return nullptr;
  // A tensor the layout does not name (e.g. shared experts in a file whose metadata says there are
  // none) would be silently left out of the model: each is a warning, so that a file whose
  // metadata and tensors disagree does not compute something else unnoticed.
  for (const gg::TensorInfo *t : gg::tensorsOutsideLayout(file, layout))
    emitWarning(NameLoc::get(StringAttr::get(&ctx, opt.displayName + ":" + std::string(t->name))))
        << "tensor '" << t->name << "' is not part of the GLM-5 layout this file's metadata "
        << "describes: it is ignored";
  OwningOpRef<ModuleOp> module = Importer(ctx, file, opt, *config).run();
  if (failed(verify(*module)))
    return nullptr;
  return module;
}

} // namespace glm5c

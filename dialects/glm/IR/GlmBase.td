//===- GlmBase.td - the glm dialect, its enums, attributes and types ------===//
//
// The `glm` dialect describes GLM-5 at model level: one op per model operation, weights as
// typed references to GGUF tensors (never their data), target and model facts as typed
// attributes. docs/dialect.md walks through a layer.
//
//===----------------------------------------------------------------------===//

#ifndef GLM_BASE_TD
#define GLM_BASE_TD

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/DialectBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/OpBase.td"

def Glm_Dialect : Dialect {
  let name = "glm";
  let cppNamespace = "::glm5c::glm";
  let summary = "GLM-5 (glm-dsa) at model level: MLA with DSA sparse attention, MoE";
  let description = [{
    Ops of this dialect are the model-level operations of GLM-5's forward pass: embedding,
    norms, projections whose weights are `#glm.gguf_tensor` references, interleaved RoPE,
    KV-cache append, the DSA lightning indexer and its top-k, attention (the naive form the
    importer writes and the absorbed `glm.sparse_mla` the kernels implement), the MoE router and
    experts, residual adds and logits. Activations are `tensor<?x...xf32>` with a dynamic token
    dimension first; model dimensions are static. The KV cache is an SSA value of type
    `!glm.kv_cache` threaded through the entry points.
  }];
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

// ggml tensor type ids as GGUF stores them (docs/gguf.md "Tensor types").
def Glm_GgmlType : I32EnumAttr<"GgmlType", "ggml tensor type of a GGUF tensor", [
    I32EnumAttrCase<"F32", 0, "f32">, I32EnumAttrCase<"F16", 1, "f16">,
    I32EnumAttrCase<"Q4_0", 2, "q4_0">, I32EnumAttrCase<"Q4_1", 3, "q4_1">,
    I32EnumAttrCase<"Q5_0", 6, "q5_0">, I32EnumAttrCase<"Q5_1", 7, "q5_1">,
    I32EnumAttrCase<"Q8_0", 8, "q8_0">, I32EnumAttrCase<"Q8_1", 9, "q8_1">,
    I32EnumAttrCase<"Q2_K", 10, "q2_k">, I32EnumAttrCase<"Q3_K", 11, "q3_k">,
    I32EnumAttrCase<"Q4_K", 12, "q4_k">, I32EnumAttrCase<"Q5_K", 13, "q5_k">,
    I32EnumAttrCase<"Q6_K", 14, "q6_k">, I32EnumAttrCase<"Q8_K", 15, "q8_k">,
    I32EnumAttrCase<"IQ2_XXS", 16, "iq2_xxs">, I32EnumAttrCase<"IQ2_XS", 17, "iq2_xs">,
    I32EnumAttrCase<"IQ3_XXS", 18, "iq3_xxs">, I32EnumAttrCase<"IQ1_S", 19, "iq1_s">,
    I32EnumAttrCase<"IQ4_NL", 20, "iq4_nl">, I32EnumAttrCase<"IQ3_S", 21, "iq3_s">,
    I32EnumAttrCase<"IQ2_S", 22, "iq2_s">, I32EnumAttrCase<"IQ4_XS", 23, "iq4_xs">,
    I32EnumAttrCase<"I8", 24, "i8">, I32EnumAttrCase<"I16", 25, "i16">,
    I32EnumAttrCase<"I32", 26, "i32">, I32EnumAttrCase<"I64", 27, "i64">,
    I32EnumAttrCase<"F64", 28, "f64">, I32EnumAttrCase<"IQ1_M", 29, "iq1_m">,
    I32EnumAttrCase<"BF16", 30, "bf16">, I32EnumAttrCase<"TQ1_0", 34, "tq1_0">,
    I32EnumAttrCase<"TQ2_0", 35, "tq2_0">, I32EnumAttrCase<"MXFP4", 39, "mxfp4">,
    I32EnumAttrCase<"NVFP4", 40, "nvfp4">, I32EnumAttrCase<"Q1_0", 41, "q1_0">,
    I32EnumAttrCase<"Q2_0", 42, "q2_0">]> {
  let cppNamespace = "::glm5c::glm";
  let genSpecializedAttr = 0;
}

// Which part of a layer's cache row a value is.
def Glm_CachePart : I32EnumAttr<"CachePart", "part of a KV-cache row", [
    I32EnumAttrCase<"Latent", 0, "latent">, I32EnumAttrCase<"Rope", 1, "rope">,
    I32EnumAttrCase<"IndexKey", 2, "index_key">]> {
  let cppNamespace = "::glm5c::glm";
  let genSpecializedAttr = 0;
}
def Glm_CachePartAttr : EnumAttr<Glm_Dialect, Glm_CachePart, "cache_part">;

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

class Glm_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Glm_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Glm_GgufTensorAttr : Glm_Attr<"GgufTensor", "gguf_tensor"> {
  let summary = "a reference to a GGUF tensor: name, ggml type and shape, never the data";
  let description = [{
    Shape is in GGUF (ggml) order: `shape[0]` is the contiguous input dimension. The runtime
    finds the bytes by name in the GGUF the plan was compiled from.

    With `offsets` the reference is a box of the tensor (a rank's shard, glm-shard): `shape` is
    the box's shape and `offsets` where it starts in each dim of the whole tensor.

    Example: `#glm.gguf_tensor<"blk.0.attn_q_b.weight", q8_0, [2048, 16384]>`,
    `#glm.gguf_tensor<"blk.0.attn_q_b.weight", q8_0, [2048, 2048], offsets [0, 4096]>`
  }];
  let parameters = (ins StringRefParameter<"GGUF tensor name">:$name,
                        EnumParameter<Glm_GgmlType>:$type,
                        ArrayRefParameter<"int64_t", "shape, GGUF order">:$shape,
                        OptionalArrayRefParameter<"int64_t", "box offsets, GGUF order">:$offsets);
  let builders = [
    AttrBuilder<(ins "::llvm::StringRef":$name, "GgmlType":$type,
                     "::llvm::ArrayRef<int64_t>":$shape), [{
      return $_get($_ctxt, name, type, shape, ::llvm::ArrayRef<int64_t>());
    }]>
  ];
  let assemblyFormat = "`<` $name `,` $type `,` `[` $shape `]` (`,` `offsets` `[` $offsets^ `]`)? `>`";
  let genVerifyDecl = 1;
}

def Glm_MLADimsAttr : Glm_Attr<"MLADims", "mla_dims"> {
  let summary = "head dims of multi-head latent attention";
  let description = [{
    `nope` and `rope` split each query/key head (192 + 64 for GLM-5), `v` is the value head
    (256) and `kv_lora` the latent width (512) that the absorbed form attends over.

    Example: `#glm.mla_dims<nope = 192, rope = 64, v = 256, kv_lora = 512>`
  }];
  let parameters = (ins "int64_t":$nope, "int64_t":$rope, "int64_t":$v, "int64_t":$kv_lora);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Glm_ModelConfigAttr : Glm_Attr<"ModelConfig", "config"> {
  let summary = "GLM-5 hyper-parameters read from the GGUF metadata";
  let description = [{
    Attached to the module as `glm.config`; `glm-verify-model` checks every op against it.

    Example (the tiny fixture):
    ```mlir
    #glm.config<hidden = 256, layers = 4, dense_layers = 1, heads = 8, q_lora = 256,
                kv_lora = 512, nope = 192, rope = 64, v = 256, dense_ffn = 512, experts = 16,
                experts_used = 2, shared_experts = 1, expert_ffn = 128, vocab = 1024,
                indexer_heads = 8, indexer_dim = 128, index_topk = 16, rms_eps = 9.99999974E-6 : f32,
                rope_theta = 1.000000e+06 : f32, routed_scale = 2.500000e+00 : f32, norm_topk = true>
    ```
  }];
  let parameters = (ins "int64_t":$hidden, "int64_t":$layers, "int64_t":$dense_layers,
                        "int64_t":$heads, "int64_t":$q_lora, "int64_t":$kv_lora,
                        "int64_t":$nope, "int64_t":$rope, "int64_t":$v,
                        "int64_t":$dense_ffn, "int64_t":$experts, "int64_t":$experts_used,
                        "int64_t":$shared_experts, "int64_t":$expert_ffn, "int64_t":$vocab,
                        "int64_t":$indexer_heads, "int64_t":$indexer_dim,
                        "int64_t":$index_topk, "::mlir::FloatAttr":$rms_eps,
                        "::mlir::FloatAttr":$rope_theta, "::mlir::FloatAttr":$routed_scale,
                        "bool":$norm_topk);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    MLADimsAttr getMLADims() const;
  }];
}

def Glm_TargetAttr : Glm_Attr<"Target", "target"> {
  let summary = "the GPU a module is compiled for: tile target and code arch";
  let description = [{
    `tiles` chooses kernel variants and tile sizes; `code` is the arch the kernels are compiled
    for (they differ in emulation: SM120 tiles run on an H200 as sm_90 code). `max_smem` is the
    shared memory per block the tiles may use, `sms` the SM count splits are sized for.

    Example: `#glm.target<tiles = "sm_120a", code = "sm_90", sms = 188, max_smem = 101376>`
  }];
  let parameters = (ins StringRefParameter<"tile target">:$tiles,
                        StringRefParameter<"code arch">:$code, "int64_t":$sms,
                        "int64_t":$max_smem);
  let assemblyFormat = "`<` struct(params) `>`";
}

def Glm_KernelAttr : Glm_Attr<"Kernel", "kernel"> {
  let summary = "the kernel variant glm-specialize-kernels chose for an op";
  let description = [{
    Example: `#glm.kernel<variant = "sparse_mla_decode_bf16_t32_s2", threads = 128, smem = 95488>`
  }];
  let parameters = (ins StringRefParameter<"variant">:$variant, "int64_t":$threads,
                        "int64_t":$smem);
  let assemblyFormat = "`<` struct(params) `>`";
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

def Glm_KVCacheType : TypeDef<Glm_Dialect, "KVCache"> {
  let mnemonic = "kv_cache";
  let summary = "the KV cache of all layers: latent + rope key per token, and the indexer key";
  let description = [{
    Per layer and cached token: the normalized latent (`latent` values), the rotated shared
    rope key (`rope`) and the indexer key (`index_dim`). Storage, paging and dtype are the
    runtime's; ops name a layer and read or append rows.

    Example: `!glm.kv_cache<layers = 78, latent = 512, rope = 64, index_dim = 128>`
  }];
  let parameters = (ins "int64_t":$layers, "int64_t":$latent, "int64_t":$rope,
                        "int64_t":$index_dim);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // GLM_BASE_TD

//===- GlmOps.td - glm dialect operations ---------------------------------===//
//
// One op per model-level GLM-5 operation (docs/model.md for the math). Conventions: the first
// dimension of every activation is the token dimension (dynamic in prefill); weights are
// `#glm.gguf_tensor` attributes in GGUF order ({in, out} for a matrix); every verifier checks
// the weight shapes against the operand and result types, so passes trust them.
//
//===----------------------------------------------------------------------===//

#ifndef GLM_OPS_TD
#define GLM_OPS_TD

include "dialects/glm/IR/GlmBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

class Glm_Op<string mnemonic, list<Trait> traits = []>
    : Op<Glm_Dialect, mnemonic, traits> {
  let hasVerifier = 1;
}

def Glm_F32Tensor : RankedTensorOf<[F32]>;
def Glm_I32Tensor : RankedTensorOf<[I32]>;
def Glm_KVCache : Type<CPred<"::llvm::isa<::glm5c::glm::KVCacheType>($_self)">,
                       "glm KV cache", "::glm5c::glm::KVCacheType">;

def Glm_EmbedOp : Glm_Op<"embed", [Pure]> {
  let summary = "token embedding lookup";
  let description = [{
    Row `tokens[t]` of the table {hidden, vocab}; rows may be quantized.

    ```mlir
    %h = glm.embed %tokens {table = #glm.gguf_tensor<"token_embd.weight", q8_0, [256, 1024]>}
        : tensor<?xi32> -> tensor<?x256xf32>
    ```
  }];
  let arguments = (ins Glm_I32Tensor:$tokens, Glm_GgufTensorAttr:$table);
  let results = (outs Glm_F32Tensor:$result);
  let assemblyFormat = "$tokens attr-dict `:` type($tokens) `->` type($result)";
}

def Glm_RMSNormOp : Glm_Op<"rms_norm", [Pure, SameOperandsAndResultType]> {
  let summary = "RMSNorm over the last dimension, in fp32";
  let description = [{
    `y = w * x / sqrt(mean(x^2) + eps)` per row.

    ```mlir
    %a = glm.rms_norm %h {weight = #glm.gguf_tensor<"blk.0.attn_norm.weight", f32, [256]>,
                          eps = 1.0e-05 : f32} : tensor<?x256xf32>
    ```
  }];
  let arguments = (ins Glm_F32Tensor:$input, Glm_GgufTensorAttr:$weight, F32Attr:$eps);
  let results = (outs Glm_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Glm_LayerNormOp : Glm_Op<"layer_norm", [Pure, SameOperandsAndResultType]> {
  let summary = "LayerNorm with weight and bias over the last dimension (indexer key)";
  let description = [{
    `y = w * (x - mean) / sqrt(var + eps) + b` per row.

    ```mlir
    %k = glm.layer_norm %kraw {weight = #glm.gguf_tensor<"blk.0.indexer.k_norm.weight", f32, [128]>,
                               bias = #glm.gguf_tensor<"blk.0.indexer.k_norm.bias", f32, [128]>,
                               eps = 1.0e-06 : f32} : tensor<?x128xf32>
    ```
  }];
  let arguments = (ins Glm_F32Tensor:$input, Glm_GgufTensorAttr:$weight,
                       Glm_GgufTensorAttr:$bias, F32Attr:$eps);
  let results = (outs Glm_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Glm_LinearOp : Glm_Op<"linear", [Pure]> {
  let summary = "matrix product with a GGUF weight {in, out}";
  let description = [{
    `y[t] = W x[t]`. The input's dimensions after the token dimension are flattened into `in`,
    and the result's into `out`, so a projection can produce per-head layout directly.

    ```mlir
    %q = glm.linear %qlat {weight = #glm.gguf_tensor<"blk.0.attn_q_b.weight", q8_0, [256, 2048]>}
        : tensor<?x256xf32> -> tensor<?x8x256xf32>
    ```
  }];
  let arguments = (ins Glm_F32Tensor:$input, Glm_GgufTensorAttr:$weight);
  let results = (outs Glm_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def Glm_LinearsOp : Glm_Op<"linears", [Pure]> {
  let summary = "two to four matrix products of one input, with GGUF weights of one type";
  let description = [{
    `y_i[t] = W_i x[t]` for weights `w0`, `w1` and optionally `w2`, `w3` (in that order, one
    result each, shaped as `glm.linear`'s). What `glm-fuse-linears` makes of the decode
    products that read the same activation (q_a, kv_a and the indexer's key; q_b and the
    indexer's query): one kernel launch streams every weight.

    ```mlir
    %q, %kv = glm.linears %x {w0 = #glm.gguf_tensor<"blk.0.attn_q_a.weight", q8_0, [256, 128]>,
                              w1 = #glm.gguf_tensor<"blk.0.attn_kv_a_mqa.weight", q8_0, [256, 96]>}
        : tensor<1x256xf32> -> tensor<1x128xf32>, tensor<1x96xf32>
    ```
  }];
  let arguments = (ins Glm_F32Tensor:$input, Glm_GgufTensorAttr:$w0, Glm_GgufTensorAttr:$w1,
                       OptionalAttr<Glm_GgufTensorAttr>:$w2, OptionalAttr<Glm_GgufTensorAttr>:$w3);
  let results = (outs Variadic<Glm_F32Tensor>:$results);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($results)";
  let extraClassDeclaration = [{
    /// The weights in result order.
    ::llvm::SmallVector<GgufTensorAttr, 4> getWeights();
  }];
}

def Glm_HeadLinearOp : Glm_Op<"head_linear", [Pure]> {
  let summary = "per-head matrix product with a stacked weight {a, b, heads}";
  let description = [{
    Head `h` of the weight is a `b x a` matrix `W[h]` (ggml's mul_mat convention). Without
    `transpose`: `y[t,h] = W[h] x[t,h]` (`a -> b`); with it: `y[t,h] = W[h]^T x[t,h]` (`b -> a`).
    A rank-2 input `[T, in]` is shared by every head. This is how MLA uses `attn_k_b`
    {nope, kv_lora, heads} and `attn_v_b` {kv_lora, v, heads}: the naive form expands the
    latent into per-head keys (`attn_k_b` transposed) and values; the absorbed form folds
    `attn_k_b` into the query and applies `attn_v_b` to the attention's latent output.

    ```mlir
    %qlat = glm.head_linear %qnope {weight = #glm.gguf_tensor<"blk.0.attn_k_b.weight", f32, [192, 512, 8]>,
                                    transpose = false}
        : tensor<?x8x192xf32> -> tensor<?x8x512xf32>
    ```
  }];
  let arguments = (ins Glm_F32Tensor:$input, Glm_GgufTensorAttr:$weight, BoolAttr:$transpose);
  let results = (outs Glm_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def Glm_SliceOp : Glm_Op<"slice", [Pure]> {
  let summary = "a contiguous slice of the last dimension";
  let description = [{
    ```mlir
    %nope = glm.slice %q {offset = 0 : i64, size = 192 : i64} : tensor<?x8x256xf32> -> tensor<?x8x192xf32>
    ```
  }];
  let arguments = (ins Glm_F32Tensor:$input, I64Attr:$offset, I64Attr:$size);
  let results = (outs Glm_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def Glm_RopeOp : Glm_Op<"rope", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "interleaved RoPE on a slice of the last dimension";
  let description = [{
    For pair `i < dim/2` of the slice `[offset, offset + dim)` and angle
    `positions[t] * theta^(-2i/dim)`: `(x[2i], x[2i+1]) <- (x[2i] c - x[2i+1] s, x[2i] s + x[2i+1] c)`
    (adjacent pairs: GPT-J / ggml "NORM" style, for MLA and the indexer alike). The rest of the
    row passes through.

    ```mlir
    %q2 = glm.rope %q, %pos {theta = 1.0e+06 : f32, dim = 64 : i64, offset = 192 : i64}
        : tensor<?x8x256xf32>, tensor<?xi32>
    ```
  }];
  let arguments = (ins Glm_F32Tensor:$input, Glm_I32Tensor:$positions, F32Attr:$theta,
                       I64Attr:$dim, I64Attr:$offset);
  let results = (outs Glm_F32Tensor:$result);
  let assemblyFormat = "$input `,` $positions attr-dict `:` type($input) `,` type($positions)";
}

def Glm_CacheAppendOp : Glm_Op<"cache_append", [MemoryEffects<[MemWrite]>]> {
  let summary = "writes one layer's cache rows for the given positions";
  let description = [{
    Row `positions[t]` of layer `layer` gets the latent (kv_lora), the rotated rope key and the
    indexer key of token `t`.

    ```mlir
    glm.cache_append %cache[0], %pos, %latent, %kpe, %kidx
        : !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>, tensor<?xi32>,
          tensor<?x512xf32>, tensor<?x64xf32>, tensor<?x128xf32>
    ```
  }];
  let arguments = (ins Glm_KVCache:$cache, I64Attr:$layer, Glm_I32Tensor:$positions,
                       Glm_F32Tensor:$latent, Glm_F32Tensor:$rope_key, Glm_F32Tensor:$index_key);
  let assemblyFormat = [{
    $cache `[` $layer `]` `,` $positions `,` $latent `,` $rope_key `,` $index_key attr-dict `:`
    qualified(type($cache)) `,` type($positions) `,` type($latent) `,` type($rope_key) `,` type($index_key)
  }];
}

def Glm_RopeCacheAppendOp : Glm_Op<"rope_cache_append", [MemoryEffects<[MemWrite]>]> {
  let summary = "RoPE of the rope key and indexer key fused with the cache append";
  let description = [{
    Produced by `glm-fuse-rope-append`: rotates the first `rope_dim` values of `rope_key` and of
    `index_key` (interleaved, `theta`) and writes the rows, so the rotated keys never make a
    separate trip through memory.

    ```mlir
    glm.rope_cache_append %cache[0], %pos, %latent, %kpe_raw, %kidx_raw {theta = 1.0e+06 : f32, rope_dim = 64 : i64}
        : !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>, tensor<?xi32>,
          tensor<?x512xf32>, tensor<?x64xf32>, tensor<?x128xf32>
    ```
  }];
  let arguments = (ins Glm_KVCache:$cache, I64Attr:$layer, Glm_I32Tensor:$positions,
                       Glm_F32Tensor:$latent, Glm_F32Tensor:$rope_key, Glm_F32Tensor:$index_key,
                       F32Attr:$theta, I64Attr:$rope_dim);
  let assemblyFormat = [{
    $cache `[` $layer `]` `,` $positions `,` $latent `,` $rope_key `,` $index_key attr-dict `:`
    qualified(type($cache)) `,` type($positions) `,` type($latent) `,` type($rope_key) `,` type($index_key)
  }];
}

def Glm_CacheReadOp : Glm_Op<"cache_read", [MemoryEffects<[MemRead]>]> {
  let summary = "all cached rows of one part of one layer (the naive attention's keys)";
  let description = [{
    ```mlir
    %c = glm.cache_read %cache[0] latent : !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128> -> tensor<?x512xf32>
    ```
  }];
  let arguments = (ins Glm_KVCache:$cache, I64Attr:$layer, Glm_CachePartAttr:$part);
  let results = (outs Glm_F32Tensor:$result);
  let assemblyFormat = "$cache `[` $layer `]` $part attr-dict `:` qualified(type($cache)) `->` type($result)";
}

def Glm_IndexerScoreOp : Glm_Op<"indexer_score", [MemoryEffects<[MemRead]>]> {
  let summary = "DSA lightning-indexer scores of each query against every cached key";
  let description = [{
    `score[t, s] = scale * sum_h w[t,h] * ReLU(q[t,h] . k_s)` for cached positions
    `s <= positions[t]`; later positions are masked (-inf). ReLU is per head, before the
    weighted sum. `k_s` are layer `layer`'s cached indexer keys.

    ```mlir
    %s = glm.indexer_score %cache[0], %qi, %wi, %pos {scale = 0.03125 : f32}
        : !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>,
          tensor<?x8x128xf32>, tensor<?x8xf32>, tensor<?xi32> -> tensor<?x?xf32>
    ```
  }];
  let arguments = (ins Glm_KVCache:$cache, I64Attr:$layer, Glm_F32Tensor:$query,
                       Glm_F32Tensor:$head_weights, Glm_I32Tensor:$positions, F32Attr:$scale);
  let results = (outs Glm_F32Tensor:$scores);
  let assemblyFormat = [{
    $cache `[` $layer `]` `,` $query `,` $head_weights `,` $positions attr-dict `:` qualified(type($cache))
    `,` type($query) `,` type($head_weights) `,` type($positions) `->` type($scores)
  }];
}

def Glm_TopKOp : Glm_Op<"topk", [Pure]> {
  let summary = "the indexer's top-k cached positions per query, causal";
  let description = [{
    Row `t` holds the `min(k, positions[t] + 1)` positions `<= positions[t]` with the highest
    scores, ties broken toward the lower position (so every backend selects the same set),
    in ascending position order; unused slots are -1.

    ```mlir
    %idx = glm.topk %s, %pos {k = 16 : i64} : tensor<?x?xf32>, tensor<?xi32> -> tensor<?x16xi32>
    ```
  }];
  let arguments = (ins Glm_F32Tensor:$scores, Glm_I32Tensor:$positions, I64Attr:$k);
  let results = (outs Glm_I32Tensor:$indices);
  let assemblyFormat = [{
    $scores `,` $positions attr-dict `:` type($scores) `,` type($positions) `->` type($indices)
  }];
}

def Glm_AttentionOp : Glm_Op<"attention", [Pure]> {
  let summary = "MLA attention in the naive form, masked to the selected positions";
  let description = [{
    The form the importer writes (docs/model.md "Naive and absorbed attention"): per head,
    keys are `[k_nope[s,h] ; k_pe[s]]` (the rope key is shared by all heads), values `v[s,h]`,
    `p = softmax_s(scale * q[t,h] . k[s,h])` over `s` in `indices[t]` (-1 slots skipped),
    `o[t,h] = sum_s p v[s,h]`. `glm-absorb-mla` rewrites it into `glm.sparse_mla`.

    ```mlir
    %o = glm.attention %q, %knope, %kpe, %v, %idx {scale = 6.250000e-02 : f32}
        : tensor<?x8x256xf32>, tensor<?x8x192xf32>, tensor<?x64xf32>, tensor<?x8x256xf32>,
          tensor<?x16xi32> -> tensor<?x8x256xf32>
    ```
  }];
  let arguments = (ins Glm_F32Tensor:$query, Glm_F32Tensor:$key_nope, Glm_F32Tensor:$key_rope,
                       Glm_F32Tensor:$value, Glm_I32Tensor:$indices, F32Attr:$scale);
  let results = (outs Glm_F32Tensor:$result);
  let assemblyFormat = [{
    $query `,` $key_nope `,` $key_rope `,` $value `,` $indices attr-dict `:` type($query) `,`
    type($key_nope) `,` type($key_rope) `,` type($value) `,` type($indices) `->` type($result)
  }];
}

def Glm_SparseMLAOp : Glm_Op<"sparse_mla", [MemoryEffects<[MemRead]>]> {
  let summary = "absorbed sparse MLA over selected cache rows: latent output and LSE";
  let description = [{
    The form the kernels implement. With `q_lat[t,h]` (kv_lora wide, `attn_k_b` already folded
    in) and the rotated `q_pe[t,h]`, over `s` in `indices[t]` (-1 slots skipped):
    `score = scale * (q_lat . c_s + q_pe . kpe_s)`, `p = softmax_s(score)`,
    `o_lat[t,h] = sum_s p c_s`, `lse[t,h] = log sum_s exp(score)`. `c_s` and `kpe_s` are layer
    `layer`'s cached latent and rope key: one shared K/V "head" (MQA over the latent).

    ```mlir
    %olat, %lse = glm.sparse_mla %cache[0], %qlat, %qpe, %idx
        {scale = 6.250000e-02 : f32, dims = #glm.mla_dims<nope = 192, rope = 64, v = 256, kv_lora = 512>}
        : !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>, tensor<?x8x512xf32>,
          tensor<?x8x64xf32>, tensor<?x16xi32> -> tensor<?x8x512xf32>, tensor<?x8xf32>
    ```
  }];
  let arguments = (ins Glm_KVCache:$cache, I64Attr:$layer, Glm_F32Tensor:$q_latent,
                       Glm_F32Tensor:$q_rope, Glm_I32Tensor:$indices, F32Attr:$scale,
                       Glm_MLADimsAttr:$dims);
  let results = (outs Glm_F32Tensor:$output, Glm_F32Tensor:$lse);
  let assemblyFormat = [{
    $cache `[` $layer `]` `,` $q_latent `,` $q_rope `,` $indices attr-dict `:` qualified(type($cache)) `,`
    type($q_latent) `,` type($q_rope) `,` type($indices) `->` type($output) `,` type($lse)
  }];
}

def Glm_MoEGateOp : Glm_Op<"moe_gate", [Pure]> {
  let summary = "expert choice from router logits: sigmoid, biased top-k, normalized weights";
  let description = [{
    `s = sigmoid(logits)`; the `top_k` experts with the largest `s + bias` are chosen (the
    correction bias is for selection only, ties to the lower expert id); their weights are the
    unbiased `s`, divided by their sum when `normalize`, times `scale`.

    ```mlir
    %w, %ids = glm.moe_gate %logits {bias = #glm.gguf_tensor<"blk.1.exp_probs_b.bias", f32, [16]>,
                                     top_k = 2 : i64, normalize = true, scale = 2.5 : f32}
        : tensor<?x16xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
    ```
  }];
  let arguments = (ins Glm_F32Tensor:$logits, Glm_GgufTensorAttr:$bias, I64Attr:$top_k,
                       BoolAttr:$normalize, F32Attr:$scale);
  let results = (outs Glm_F32Tensor:$weights, Glm_I32Tensor:$experts);
  let assemblyFormat = "$logits attr-dict `:` type($logits) `->` type($weights) `,` type($experts)";
}

def Glm_MoERouterOp : Glm_Op<"moe_router", [Pure]> {
  let summary = "router projection fused with the gate (glm-fuse-router)";
  let description = [{
    `glm.linear` with the router weight {hidden, experts} followed by `glm.moe_gate`, in one op:
    the logits stay in registers.

    ```mlir
    %w, %ids = glm.moe_router %f {weight = #glm.gguf_tensor<"blk.1.ffn_gate_inp.weight", f32, [256, 16]>,
                                  bias = #glm.gguf_tensor<"blk.1.exp_probs_b.bias", f32, [16]>,
                                  top_k = 2 : i64, normalize = true, scale = 2.5 : f32}
        : tensor<?x256xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
    ```
  }];
  let arguments = (ins Glm_F32Tensor:$input, Glm_GgufTensorAttr:$weight,
                       Glm_GgufTensorAttr:$bias, I64Attr:$top_k, BoolAttr:$normalize,
                       F32Attr:$scale);
  let results = (outs Glm_F32Tensor:$weights, Glm_I32Tensor:$experts);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($weights) `,` type($experts)";
}

def Glm_MoEExpertsOp : Glm_Op<"moe_experts", [Pure]> {
  let summary = "routed SwiGLU experts, weighted and summed";
  let description = [{
    `y[t] = sum_k weights[t,k] * down_e (silu(gate_e x[t]) * up_e x[t])` with `e = experts[t,k]`;
    the stacked weights are {hidden, ffn, E} (gate, up) and {ffn, hidden, E} (down).

    ```mlir
    %y = glm.moe_experts %f, %w, %ids {
          gate = #glm.gguf_tensor<"blk.1.ffn_gate_exps.weight", q4_k, [256, 128, 16]>,
          up = #glm.gguf_tensor<"blk.1.ffn_up_exps.weight", q4_k, [256, 128, 16]>,
          down = #glm.gguf_tensor<"blk.1.ffn_down_exps.weight", q8_0, [128, 256, 16]>}
        : tensor<?x256xf32>, tensor<?x2xf32>, tensor<?x2xi32> -> tensor<?x256xf32>
    ```
  }];
  let arguments = (ins Glm_F32Tensor:$input, Glm_F32Tensor:$weights, Glm_I32Tensor:$experts,
                       Glm_GgufTensorAttr:$gate, Glm_GgufTensorAttr:$up, Glm_GgufTensorAttr:$down);
  let results = (outs Glm_F32Tensor:$result);
  let assemblyFormat = [{
    $input `,` $weights `,` $experts attr-dict `:` type($input) `,` type($weights) `,`
    type($experts) `->` type($result)
  }];
}

def Glm_SwiGLUOp : Glm_Op<"swiglu", [Pure, SameOperandsAndResultType]> {
  let summary = "SwiGLU feed-forward: dense layers and the shared expert";
  let description = [{
    `y = down (silu(gate x) * up x)`, gate/up {hidden, ffn}, down {ffn, hidden}.

    ```mlir
    %y = glm.swiglu %f {gate = #glm.gguf_tensor<"blk.0.ffn_gate.weight", f32, [256, 512]>,
                        up = #glm.gguf_tensor<"blk.0.ffn_up.weight", f32, [256, 512]>,
                        down = #glm.gguf_tensor<"blk.0.ffn_down.weight", f32, [512, 256]>}
        : tensor<?x256xf32>
    ```
  }];
  let arguments = (ins Glm_F32Tensor:$input, Glm_GgufTensorAttr:$gate, Glm_GgufTensorAttr:$up,
                       Glm_GgufTensorAttr:$down);
  let results = (outs Glm_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Glm_SwiGLUMulOp : Glm_Op<"swiglu_mul", [Pure, SameOperandsAndResultType]> {
  let summary = "SwiGLU's gate product: silu(gate) * up, elementwise";
  let description = [{
    `y = g / (1 + exp(-g)) * u`. What `glm-lower-swiglu` leaves between the gate/up projections
    and the down projection of a `glm.swiglu`, for targets whose kernels are per product.

    ```mlir
    %h = glm.swiglu_mul %g, %u : tensor<?x512xf32>
    ```
  }];
  let arguments = (ins Glm_F32Tensor:$gate, Glm_F32Tensor:$up);
  let results = (outs Glm_F32Tensor:$result);
  let assemblyFormat = "$gate `,` $up attr-dict `:` type($result)";
  let hasVerifier = 0;
}

def Glm_GateUpOp : Glm_Op<"gate_up", [Pure]> {
  let summary = "SwiGLU's gate and up projections and their gate product, as one op";
  let description = [{
    `y[t] = silu(Wg x[t]) * (Wu x[t])`, gate and up {hidden, ffn} of one GGUF type: what
    `glm-lower-swiglu` makes of a `glm.swiglu`'s first half at decode (one token), where one
    kernel streams both weights in one pipeline.

    ```mlir
    %h = glm.gate_up %x {gate = #glm.gguf_tensor<"blk.0.ffn_gate.weight", q4_k, [256, 512]>,
                         up = #glm.gguf_tensor<"blk.0.ffn_up.weight", q4_k, [256, 512]>}
        : tensor<1x256xf32> -> tensor<1x512xf32>
    ```
  }];
  let arguments = (ins Glm_F32Tensor:$input, Glm_GgufTensorAttr:$gate, Glm_GgufTensorAttr:$up);
  let results = (outs Glm_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def Glm_AddOp : Glm_Op<"add", [Pure, SameOperandsAndResultType, Commutative]> {
  let summary = "residual add";
  let description = [{
    ```mlir
    %h2 = glm.add %h, %attn : tensor<?x256xf32>
    ```
  }];
  let arguments = (ins Glm_F32Tensor:$lhs, Glm_F32Tensor:$rhs);
  let results = (outs Glm_F32Tensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
  let hasVerifier = 0;
}

def Glm_AllReduceOp : Glm_Op<"all_reduce", [SameOperandsAndResultType]> {
  let summary = "sum of a tensor over every rank of the mesh (a collective; glm-shard)";
  let description = [{
    Each rank contributes its partial `input` (an attention output projection over its heads, an
    FFN over its slice, its experts); every rank gets the sum, in rank order. Not pure: every
    rank must execute the same all-reduces in the same order, so none is folded or moved.

    ```mlir
    %sum = glm.all_reduce %partial : tensor<?x6144xf32>
    ```
  }];
  let arguments = (ins Glm_F32Tensor:$input);
  let results = (outs Glm_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Glm_AllGatherOp : Glm_Op<"all_gather"> {
  let summary = "every rank's tensor concatenated along the last dim, in rank order (a collective; glm-shard)";
  let description = [{
    Each rank contributes its slice `input` [tokens, C] (the logits of its rows of the
    vocabulary); every rank gets `result` [tokens, C x ranks], rank r's slice at columns
    [r C, (r + 1) C). Not pure, like glm.all_reduce: every rank executes the same collectives in
    the same order.

    ```mlir
    %all = glm.all_gather %part : tensor<?x19360xf32> -> tensor<?x154880xf32>
    ```
  }];
  let arguments = (ins Glm_F32Tensor:$input);
  let results = (outs Glm_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Glm_LogitsOp : Glm_Op<"logits", [Pure]> {
  let summary = "output projection to vocabulary logits (after the final norm)";
  let description = [{
    ```mlir
    %l = glm.logits %n {weight = #glm.gguf_tensor<"output.weight", q6_k, [256, 1024]>}
        : tensor<?x256xf32> -> tensor<?x1024xf32>
    ```
  }];
  let arguments = (ins Glm_F32Tensor:$input, Glm_GgufTensorAttr:$weight);
  let results = (outs Glm_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

#endif // GLM_OPS_TD

//===- Passes.td - glm graph passes ---------------------------------------===//
#ifndef GLM_PASSES_TD
#define GLM_PASSES_TD

include "mlir/Pass/PassBase.td"

def GlmVerifyModel : Pass<"glm-verify-model", "mlir::ModuleOp"> {
  let summary = "Check every op's shapes and attributes against the module's #glm.config";
  let description = [{
    Op verifiers check each op against its own operands; this pass checks the whole graph
    against the model: every GGUF tensor reference names a tensor of GLM-5's layout with the
    shape the config implies, head counts and head dims (nope/rope/v/latent) agree with the
    config, RoPE uses the config's theta and rope dim, the KV cache has one row part per
    config width, the MoE ops use the config's expert counts, top-k, normalization and routed
    scale, and the attention and indexer scales are the model's.
  }];
  let dependentDialects = ["glm5c::glm::GlmDialect"];
}

def GlmAbsorbMLA : Pass<"glm-absorb-mla", "mlir::ModuleOp"> {
  let summary = "Rewrite naive MLA attention into glm.sparse_mla (W_UK into q, W_UV after)";
  let description = [{
    Matches `glm.attention` whose per-head keys and values are expanded from the cached latent
    through `attn_k_b` (transposed) and `attn_v_b`, and whose shared rope key is the cached rope
    key of the same layer. Rewrites it into: slice q into nope and rope parts, fold `attn_k_b`
    into the nope part (q_lat = W_UK^T q_nope, kv_lora wide), `glm.sparse_mla` over the selected
    cache rows, and `attn_v_b` applied to its latent output. The per-token key/value expansion
    then has no users and disappears. Prefill and decode alike: the absorbed form is what the
    kernels implement. An attention op of another shape is an error.
  }];
  let dependentDialects = ["glm5c::glm::GlmDialect"];
}

def GlmFuseRopeAppend : Pass<"glm-fuse-rope-append", "mlir::ModuleOp"> {
  let summary = "Fuse the RoPE of the rope key and indexer key into the cache append";
  let description = [{
    `glm.rope` (offset 0) feeding only a `glm.cache_append`'s rope key and indexer key, with the
    same positions and theta, becomes one `glm.rope_cache_append`: the rotated keys are written
    once, to the cache, instead of to a temporary first.
  }];
  let dependentDialects = ["glm5c::glm::GlmDialect"];
}

def GlmFuseRouter : Pass<"glm-fuse-router", "mlir::ModuleOp"> {
  let summary = "Fuse the router projection with sigmoid, biased top-k and normalization";
  let description = [{
    `glm.linear` with a single use in `glm.moe_gate` becomes one `glm.moe_router`: logits,
    sigmoid, top-k and weight normalization in one pass over the token's row.
  }];
  let dependentDialects = ["glm5c::glm::GlmDialect"];
}

def GlmShard : Pass<"glm-shard", "mlir::ModuleOp"> {
  let summary = "Split prefill and decode into one function per rank: TP attention and FFNs, EP experts";
  let description = [{
    For `tp = N > 1` (and `ep = N`: the experts' partial sums share the FFN's all-reduce),
    every entry `@prefill` / `@decode` becomes `@prefill_rank<r>` / `@decode_rank<r>` for
    r < N, and the module gets `glm.ranks = N`. In rank r:
    - attention by heads: `attn_q_b` keeps the rows of heads [r H/N, (r+1) H/N), `attn_k_b` and
      `attn_v_b` those heads, every value between them (RoPE, slices, sparse MLA) H/N heads, and
      `attn_output` the matching input columns; its partial output is summed by `glm.all_reduce`
      before the residual add;
    - the dense FFNs and the shared expert by their hidden width: gate and up keep rows
      [r F/N, (r+1) F/N), down the matching input columns;
    - the routed experts [r E/N, (r+1) E/N): every rank routes every token (the router is
      replicated), computes only its experts, and the MoE output (routed + shared slice) is
      summed by one `glm.all_reduce`;
    - the head by vocabulary rows: `output.weight` keeps rows [r V/N, (r+1) V/N), `glm.logits`
      gives that slice of the logits, and `glm.all_gather` concatenates the slices in rank
      order (every rank gets every logit, so every rank samples the same token);
    - replicated: embedding, norms, q_a, kv_a, the latent and indexer caches (each rank writes
      the same rows), the indexer and its top-k, the router.
    Weight slices are GGUF tensor boxes (`offsets`); a box that cuts the rows' contiguous dim must
    cover whole quantization blocks. Errors name the tensor and the count that does not divide.
  }];
  let options = [
    Option<"tp", "tp", "int64_t", "1", "tensor-parallel ranks (attention heads, FFN width)">,
    Option<"ep", "ep", "int64_t", "1", "expert-parallel ranks (routed experts); must equal tp">
  ];
  let dependentDialects = ["glm5c::glm::GlmDialect"];
}

def GlmLowerSwiGLU : Pass<"glm-lower-swiglu", "mlir::ModuleOp"> {
  let summary = "Split glm.swiglu into its three projections and the gate product";
  let description = [{
    `glm.swiglu %x {gate, up, down}` becomes `glm.linear` (gate), `glm.linear` (up),
    `glm.swiglu_mul`, `glm.linear` (down): one op per kernel, for GPU targets whose quantized
    products are one kernel each. Where the input is one token (decode) and gate and up share
    their GGUF type, the first three are one `glm.gate_up` instead: its kernel streams both
    weights in one pipeline and applies the gate product in its epilogue. Host plans keep the
    fused op.
  }];
  let dependentDialects = ["glm5c::glm::GlmDialect"];
}

def GlmFuseLinears : Pass<"glm-fuse-linears", "mlir::ModuleOp"> {
  let summary = "One glm.linears for the decode products that read the same activation";
  let description = [{
    In one block, `glm.linear` ops of one token (decode) whose input is the same value and
    whose weights share their GGUF type become one `glm.linears` (at the first one's place, up
    to four products each, in program order): at GLM-5's decode q_a, kv_a and the indexer's
    key read the attention norm's output, q_b and the indexer's query the q_a norm's. One
    kernel launch then streams every weight. GPU targets only, after `glm-lower-swiglu`.
  }];
  let dependentDialects = ["glm5c::glm::GlmDialect"];
}

def GlmDenseAttention : Pass<"glm-dense-attention", "mlir::ModuleOp"> {
  let summary = "Make every query attend to all its causal positions (the dense reference)";
  let description = [{
    Rewrites each `glm.topk` to select `context` positions: with k at least the context, the
    selection is every position <= the query's, whatever the indexer scores, so attention is
    exactly dense (causal). This is the reference `glm5c compile --attention dense` builds to
    compare sparse attention against; the module gets `glm.attention = "dense"`.
  }];
  let options = [
    Option<"context", "context", "int64_t", "0", "context length (the model's)">,
  ];
  let dependentDialects = ["glm5c::glm::GlmDialect"];
}

#endif // GLM_PASSES_TD

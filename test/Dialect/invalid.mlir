// RUN: %glm5c-opt %s --split-input-file --verify-diagnostics

// One chunk per verifier message of the glm dialect (GlmDialect.cpp, GlmOps.cpp). Attribute and
// type errors are reported where the attribute or type is parsed.

// Tests that a GGUF tensor reference needs a name.
// expected-error @+1 {{GGUF tensor reference with an empty name}}
func.func @gguf_empty_name() attributes {glm.w = #glm.gguf_tensor<"", f32, [256]>} {
  return
}

// -----

// Tests that a GGUF tensor has at most 4 dims.
// expected-error @+1 {{GGUF tensor 'w' has 5 dims, expected 1 to 4}}
func.func @gguf_five_dims() attributes {glm.w = #glm.gguf_tensor<"w", f32, [1, 2, 3, 4, 5]>} {
  return
}

// -----

// Tests that every dim of a GGUF tensor is positive.
// expected-error @+1 {{GGUF tensor 'blk.0.attn_q_b.weight' has a non-positive dim 0}}
func.func @gguf_zero_dim() attributes {glm.w = #glm.gguf_tensor<"blk.0.attn_q_b.weight", q8_0, [256, 0]>} {
  return
}

// -----

// Tests that MLA dims are positive.
// expected-error @+1 {{MLA dims must be positive}}
func.func @mla_dims_zero() attributes {glm.dims = #glm.mla_dims<nope = 0, rope = 64, v = 256, kv_lora = 512>} {
  return
}

// -----

// Tests that the MLA rope dim is even.
// expected-error @+1 {{MLA rope dim 63 must be even (RoPE rotates pairs)}}
func.func @mla_dims_odd_rope() attributes {glm.dims = #glm.mla_dims<nope = 192, rope = 63, v = 256, kv_lora = 512>} {
  return
}

// -----

// Tests that the model config dims are positive.
// expected-error @+1 {{model config dims must be positive}}
module attributes {glm.config = #glm.config<hidden = 256, layers = 4, dense_layers = 1, heads = 0,
    q_lora = 256, kv_lora = 512, nope = 192, rope = 64, v = 256, dense_ffn = 512, experts = 16,
    experts_used = 2, shared_experts = 1, expert_ffn = 128, vocab = 1024, indexer_heads = 8,
    indexer_dim = 128, index_topk = 16, rms_eps = 1.0e-05 : f32, rope_theta = 1.0e+06 : f32,
    routed_scale = 2.5 : f32, norm_topk = true>} {
}

// -----

// Tests that the model config has at most as many dense layers as layers.
// expected-error @+1 {{dense_layers 5 must be in 0..4}}
module attributes {glm.config = #glm.config<hidden = 256, layers = 4, dense_layers = 5, heads = 8,
    q_lora = 256, kv_lora = 512, nope = 192, rope = 64, v = 256, dense_ffn = 512, experts = 16,
    experts_used = 2, shared_experts = 1, expert_ffn = 128, vocab = 1024, indexer_heads = 8,
    indexer_dim = 128, index_topk = 16, rms_eps = 1.0e-05 : f32, rope_theta = 1.0e+06 : f32,
    routed_scale = 2.5 : f32, norm_topk = true>} {
}

// -----

// Tests that the model config uses at most as many experts per token as there are experts.
// expected-error @+1 {{experts_used 17 exceeds experts 16}}
module attributes {glm.config = #glm.config<hidden = 256, layers = 4, dense_layers = 1, heads = 8,
    q_lora = 256, kv_lora = 512, nope = 192, rope = 64, v = 256, dense_ffn = 512, experts = 16,
    experts_used = 17, shared_experts = 1, expert_ffn = 128, vocab = 1024, indexer_heads = 8,
    indexer_dim = 128, index_topk = 16, rms_eps = 1.0e-05 : f32, rope_theta = 1.0e+06 : f32,
    routed_scale = 2.5 : f32, norm_topk = true>} {
}

// -----

// Tests that the model config has no negative number of shared experts.
// expected-error @+1 {{shared_experts must not be negative}}
module attributes {glm.config = #glm.config<hidden = 256, layers = 4, dense_layers = 1, heads = 8,
    q_lora = 256, kv_lora = 512, nope = 192, rope = 64, v = 256, dense_ffn = 512, experts = 16,
    experts_used = 2, shared_experts = -1, expert_ffn = 128, vocab = 1024, indexer_heads = 8,
    indexer_dim = 128, index_topk = 16, rms_eps = 1.0e-05 : f32, rope_theta = 1.0e+06 : f32,
    routed_scale = 2.5 : f32, norm_topk = true>} {
}

// -----

// Tests that the model config's float parameters are positive.
// expected-error @+1 {{rms_eps, rope_theta and routed_scale must be positive floats}}
module attributes {glm.config = #glm.config<hidden = 256, layers = 4, dense_layers = 1, heads = 8,
    q_lora = 256, kv_lora = 512, nope = 192, rope = 64, v = 256, dense_ffn = 512, experts = 16,
    experts_used = 2, shared_experts = 1, expert_ffn = 128, vocab = 1024, indexer_heads = 8,
    indexer_dim = 128, index_topk = 16, rms_eps = 1.0e-05 : f32, rope_theta = 0.0 : f32,
    routed_scale = 2.5 : f32, norm_topk = true>} {
}

// -----

// Tests that the model config's rope dim is even and fits the indexer head.
// expected-error @+1 {{rope dim 64 must be even and at most the indexer dim 32}}
module attributes {glm.config = #glm.config<hidden = 256, layers = 4, dense_layers = 1, heads = 8,
    q_lora = 256, kv_lora = 512, nope = 192, rope = 64, v = 256, dense_ffn = 512, experts = 16,
    experts_used = 2, shared_experts = 1, expert_ffn = 128, vocab = 1024, indexer_heads = 8,
    indexer_dim = 32, index_topk = 16, rms_eps = 1.0e-05 : f32, rope_theta = 1.0e+06 : f32,
    routed_scale = 2.5 : f32, norm_topk = true>} {
}

// -----

// Tests that the KV cache dims are positive.
// expected-error @+1 {{KV cache dims must be positive}}
func.func @kv_cache_zero(%c: !glm.kv_cache<layers = 4, latent = 512, rope = 0, index_dim = 128>) {
  return
}

// -----

// Tests that a weight must have the shape the operand and result imply ({in, out}).
func.func @linear_weight_shape(%x: tensor<?x256xf32>) -> tensor<?x8x256xf32> {
  // expected-error @+1 {{weight 'blk.0.attn_q_b.weight' has shape [256, 1024], expected [256, 2048]}}
  %q = glm.linear %x {weight = #glm.gguf_tensor<"blk.0.attn_q_b.weight", q8_0, [256, 1024]>}
      : tensor<?x256xf32> -> tensor<?x8x256xf32>
  return %q : tensor<?x8x256xf32>
}

// -----

// Tests that an activation's rank is checked against a range of ranks.
func.func @rms_norm_rank(%x: tensor<?x2x8x256xf32>) -> tensor<?x2x8x256xf32> {
  // expected-error @+1 {{input must have rank 2 to 3, got 'tensor<?x2x8x256xf32>'}}
  %y = glm.rms_norm %x {weight = #glm.gguf_tensor<"w", f32, [256]>, eps = 1.0e-05 : f32}
      : tensor<?x2x8x256xf32>
  return %y : tensor<?x2x8x256xf32>
}

// -----

// Tests that an activation's rank is checked against a single rank.
func.func @embed_result_rank(%t: tensor<?xi32>) -> tensor<?x1x256xf32> {
  // expected-error @+1 {{result must have rank 2, got 'tensor<?x1x256xf32>'}}
  %h = glm.embed %t {table = #glm.gguf_tensor<"token_embd.weight", q8_0, [256, 1024]>}
      : tensor<?xi32> -> tensor<?x1x256xf32>
  return %h : tensor<?x1x256xf32>
}

// -----

// Tests that only the token dimension of an activation may be dynamic.
func.func @dynamic_model_dim(%x: tensor<?x?xf32>) -> tensor<?x256xf32> {
  // expected-error @+1 {{input has a dynamic model dimension 1: 'tensor<?x?xf32>'}}
  %y = glm.linear %x {weight = #glm.gguf_tensor<"w", f32, [256, 256]>}
      : tensor<?x?xf32> -> tensor<?x256xf32>
  return %y : tensor<?x256xf32>
}

// -----

// Tests that static token dimensions must agree.
func.func @token_dims_differ(%x: tensor<1x256xf32>) -> tensor<2x256xf32> {
  // expected-error @+1 {{token dimensions differ: 'tensor<1x256xf32>' vs 'tensor<2x256xf32>'}}
  %y = glm.linear %x {weight = #glm.gguf_tensor<"w", f32, [256, 256]>}
      : tensor<1x256xf32> -> tensor<2x256xf32>
  return %y : tensor<2x256xf32>
}

// -----

// Tests that positions are a rank-1 tensor.
func.func @positions_rank(%k: tensor<?x64xf32>, %pos: tensor<?x1xi32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{positions must be rank 1, got 'tensor<?x1xi32>'}}
  %r = glm.rope %k, %pos {theta = 1.0e+06 : f32, dim = 64 : i64, offset = 0 : i64}
      : tensor<?x64xf32>, tensor<?x1xi32>
  return %r : tensor<?x64xf32>
}

// -----

// Tests that static positions have one entry per token.
func.func @positions_tokens(%k: tensor<2x64xf32>, %pos: tensor<3xi32>) -> tensor<2x64xf32> {
  // expected-error @+1 {{positions 'tensor<3xi32>' do not match the tokens of 'tensor<2x64xf32>'}}
  %r = glm.rope %k, %pos {theta = 1.0e+06 : f32, dim = 64 : i64, offset = 0 : i64}
      : tensor<2x64xf32>, tensor<3xi32>
  return %r : tensor<2x64xf32>
}

// -----

// Tests that glm.embed takes a rank-1 tensor of tokens.
func.func @embed_tokens_rank(%t: tensor<?x1xi32>) -> tensor<?x256xf32> {
  // expected-error @+1 {{tokens must be rank 1}}
  %h = glm.embed %t {table = #glm.gguf_tensor<"token_embd.weight", q8_0, [256, 1024]>}
      : tensor<?x1xi32> -> tensor<?x256xf32>
  return %h : tensor<?x256xf32>
}

// -----

// Tests that the embedding table's rows are as wide as the result.
func.func @embed_table(%t: tensor<?xi32>) -> tensor<?x256xf32> {
  // expected-error @+1 {{table 'token_embd.weight' has shape [128, 1024], expected [256, vocab]}}
  %h = glm.embed %t {table = #glm.gguf_tensor<"token_embd.weight", q8_0, [128, 1024]>}
      : tensor<?xi32> -> tensor<?x256xf32>
  return %h : tensor<?x256xf32>
}

// -----

// Tests that a norm's eps is positive.
func.func @rms_norm_eps(%x: tensor<?x256xf32>) -> tensor<?x256xf32> {
  // expected-error @+1 {{eps must be positive}}
  %y = glm.rms_norm %x {weight = #glm.gguf_tensor<"blk.0.attn_norm.weight", f32, [256]>, eps = 0.0 : f32}
      : tensor<?x256xf32>
  return %y : tensor<?x256xf32>
}

// -----

// Tests that a norm's weight is as wide as the normalized rows.
func.func @rms_norm_weight(%x: tensor<?x256xf32>) -> tensor<?x256xf32> {
  // expected-error @+1 {{weight 'blk.0.attn_norm.weight' has shape [512], expected [256]}}
  %y = glm.rms_norm %x {weight = #glm.gguf_tensor<"blk.0.attn_norm.weight", f32, [512]>, eps = 1.0e-05 : f32}
      : tensor<?x256xf32>
  return %y : tensor<?x256xf32>
}

// -----

// Tests that the layer norm's bias is as wide as the normalized rows.
func.func @layer_norm_bias(%k: tensor<?x128xf32>) -> tensor<?x128xf32> {
  // expected-error @+1 {{bias 'blk.0.indexer.k_norm.bias' has shape [64], expected [128]}}
  %n = glm.layer_norm %k {weight = #glm.gguf_tensor<"blk.0.indexer.k_norm.weight", f32, [128]>,
                          bias = #glm.gguf_tensor<"blk.0.indexer.k_norm.bias", f32, [64]>,
                          eps = 1.0e-06 : f32} : tensor<?x128xf32>
  return %n : tensor<?x128xf32>
}

// -----

// Tests that a rank-3 input of glm.head_linear has as many heads as the result.
func.func @head_linear_heads(%q: tensor<?x4x192xf32>) -> tensor<?x8x512xf32> {
  // expected-error @+1 {{input has 4 heads, result 8}}
  %y = glm.head_linear %q {weight = #glm.gguf_tensor<"blk.0.attn_k_b.weight", q8_0, [192, 512, 8]>,
                           transpose = false} : tensor<?x4x192xf32> -> tensor<?x8x512xf32>
  return %y : tensor<?x8x512xf32>
}

// -----

// Tests that a transposed glm.head_linear maps b -> a for a weight {a, b, heads}.
func.func @head_linear_transpose(%lat: tensor<?x512xf32>) -> tensor<?x8x192xf32> {
  // expected-error @+1 {{weight 'blk.0.attn_k_b.weight' has shape [512, 192, 8], expected [192, 512, 8]}}
  %y = glm.head_linear %lat {weight = #glm.gguf_tensor<"blk.0.attn_k_b.weight", q8_0, [512, 192, 8]>,
                             transpose = true} : tensor<?x512xf32> -> tensor<?x8x192xf32>
  return %y : tensor<?x8x192xf32>
}

// -----

// Tests that glm.slice keeps every dimension but the last.
func.func @slice_not_last(%q: tensor<?x8x256xf32>) -> tensor<?x4x256xf32> {
  // expected-error @+1 {{slices only the last dimension: 'tensor<?x8x256xf32>' -> 'tensor<?x4x256xf32>'}}
  %y = glm.slice %q {offset = 0 : i64, size = 256 : i64} : tensor<?x8x256xf32> -> tensor<?x4x256xf32>
  return %y : tensor<?x4x256xf32>
}

// -----

// Tests that a slice lies within the row.
func.func @slice_range(%kv: tensor<?x576xf32>) -> tensor<?x128xf32> {
  // expected-error @+1 {{slice [512, 640) of 576 values does not give 'tensor<?x128xf32>'}}
  %y = glm.slice %kv {offset = 512 : i64, size = 128 : i64} : tensor<?x576xf32> -> tensor<?x128xf32>
  return %y : tensor<?x128xf32>
}

// -----

// Tests that a slice's size is the result's last dimension.
func.func @slice_size(%kv: tensor<?x576xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{slice [0, 32) of 576 values does not give 'tensor<?x64xf32>'}}
  %y = glm.slice %kv {offset = 0 : i64, size = 32 : i64} : tensor<?x576xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// Tests that the rope dim is even.
func.func @rope_odd_dim(%q: tensor<?x8x256xf32>, %pos: tensor<?xi32>) -> tensor<?x8x256xf32> {
  // expected-error @+1 {{rope dim 63 must be positive and even}}
  %r = glm.rope %q, %pos {theta = 1.0e+06 : f32, dim = 63 : i64, offset = 192 : i64}
      : tensor<?x8x256xf32>, tensor<?xi32>
  return %r : tensor<?x8x256xf32>
}

// -----

// Tests that the rotated slice lies within the row.
func.func @rope_slice(%q: tensor<?x8x256xf32>, %pos: tensor<?xi32>) -> tensor<?x8x256xf32> {
  // expected-error @+1 {{rope slice [224, 288) exceeds the row of 256}}
  %r = glm.rope %q, %pos {theta = 1.0e+06 : f32, dim = 64 : i64, offset = 224 : i64}
      : tensor<?x8x256xf32>, tensor<?xi32>
  return %r : tensor<?x8x256xf32>
}

// -----

// Tests that the rope theta is positive.
func.func @rope_theta(%q: tensor<?x8x256xf32>, %pos: tensor<?xi32>) -> tensor<?x8x256xf32> {
  // expected-error @+1 {{theta must be positive}}
  %r = glm.rope %q, %pos {theta = -1.0e+06 : f32, dim = 64 : i64, offset = 192 : i64}
      : tensor<?x8x256xf32>, tensor<?xi32>
  return %r : tensor<?x8x256xf32>
}

// -----

// Tests that glm.cache_append names a layer of the cache.
func.func @cache_append_layer(%c: !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>,
                              %pos: tensor<?xi32>, %lat: tensor<?x512xf32>, %kpe: tensor<?x64xf32>,
                              %kidx: tensor<?x128xf32>) {
  // expected-error @+1 {{layer 4 of a cache of 4 layers}}
  glm.cache_append %c[4], %pos, %lat, %kpe, %kidx
      : !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>, tensor<?xi32>,
        tensor<?x512xf32>, tensor<?x64xf32>, tensor<?x128xf32>
  return
}

// -----

// Tests that appended rows are as wide as the cache's part.
func.func @cache_append_width(%c: !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>,
                              %pos: tensor<?xi32>, %lat: tensor<?x512xf32>, %kpe: tensor<?x32xf32>,
                              %kidx: tensor<?x128xf32>) {
  // expected-error @+1 {{rope key rows are 32 wide, the cache holds 64}}
  glm.cache_append %c[0], %pos, %lat, %kpe, %kidx
      : !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>, tensor<?xi32>,
        tensor<?x512xf32>, tensor<?x32xf32>, tensor<?x128xf32>
  return
}

// -----

// Tests that glm.rope_cache_append's rope_dim fits the rope key.
func.func @rope_cache_append_dim(%c: !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>,
                                 %pos: tensor<?xi32>, %lat: tensor<?x512xf32>, %kpe: tensor<?x64xf32>,
                                 %kidx: tensor<?x128xf32>) {
  // expected-error @+1 {{rope_dim 128 must be even and fit the rope and index keys}}
  glm.rope_cache_append %c[0], %pos, %lat, %kpe, %kidx {theta = 1.0e+06 : f32, rope_dim = 128 : i64}
      : !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>, tensor<?xi32>,
        tensor<?x512xf32>, tensor<?x64xf32>, tensor<?x128xf32>
  return
}

// -----

// Tests that glm.rope_cache_append's theta is positive.
func.func @rope_cache_append_theta(%c: !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>,
                                   %pos: tensor<?xi32>, %lat: tensor<?x512xf32>, %kpe: tensor<?x64xf32>,
                                   %kidx: tensor<?x128xf32>) {
  // expected-error @+1 {{theta must be positive}}
  glm.rope_cache_append %c[0], %pos, %lat, %kpe, %kidx {theta = 0.0 : f32, rope_dim = 64 : i64}
      : !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>, tensor<?xi32>,
        tensor<?x512xf32>, tensor<?x64xf32>, tensor<?x128xf32>
  return
}

// -----

// Tests that glm.cache_read names a layer of the cache.
func.func @cache_read_layer(%c: !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>)
    -> tensor<?x512xf32> {
  // expected-error @+1 {{layer 7 of a cache of 4 layers}}
  %r = glm.cache_read %c[7] latent
      : !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128> -> tensor<?x512xf32>
  return %r : tensor<?x512xf32>
}

// -----

// Tests that glm.cache_read's rows are as wide as the part it reads.
func.func @cache_read_width(%c: !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>)
    -> tensor<?x64xf32> {
  // expected-error @+1 {{index_key rows are 128 wide, not 64}}
  %r = glm.cache_read %c[0] index_key
      : !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128> -> tensor<?x64xf32>
  return %r : tensor<?x64xf32>
}

// -----

// Tests that glm.indexer_score names a layer of the cache.
func.func @indexer_score_layer(%c: !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>,
                               %q: tensor<?x8x128xf32>, %w: tensor<?x8xf32>, %pos: tensor<?xi32>)
    -> tensor<?x?xf32> {
  // expected-error @+1 {{layer 4 of a cache of 4 layers}}
  %s = glm.indexer_score %c[4], %q, %w, %pos {scale = 0.03125 : f32}
      : !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>,
        tensor<?x8x128xf32>, tensor<?x8xf32>, tensor<?xi32> -> tensor<?x?xf32>
  return %s : tensor<?x?xf32>
}

// -----

// Tests that the indexer query heads are as wide as the cached indexer keys.
func.func @indexer_score_width(%c: !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>,
                               %q: tensor<?x8x64xf32>, %w: tensor<?x8xf32>, %pos: tensor<?xi32>)
    -> tensor<?x?xf32> {
  // expected-error @+1 {{query heads are 64 wide, indexer keys 128}}
  %s = glm.indexer_score %c[0], %q, %w, %pos {scale = 0.03125 : f32}
      : !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>,
        tensor<?x8x64xf32>, tensor<?x8xf32>, tensor<?xi32> -> tensor<?x?xf32>
  return %s : tensor<?x?xf32>
}

// -----

// Tests that there is one indexer head weight per query head.
func.func @indexer_score_heads(%c: !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>,
                               %q: tensor<?x8x128xf32>, %w: tensor<?x4xf32>, %pos: tensor<?xi32>)
    -> tensor<?x?xf32> {
  // expected-error @+1 {{head weights for 4 heads, query has 8}}
  %s = glm.indexer_score %c[0], %q, %w, %pos {scale = 0.03125 : f32}
      : !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>,
        tensor<?x8x128xf32>, tensor<?x4xf32>, tensor<?xi32> -> tensor<?x?xf32>
  return %s : tensor<?x?xf32>
}

// -----

// Tests that the indexer scores are [tokens, cached positions].
func.func @indexer_score_scores(%c: !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>,
                                %q: tensor<?x8x128xf32>, %w: tensor<?x8xf32>, %pos: tensor<?xi32>)
    -> tensor<?x8x?xf32> {
  // expected-error @+1 {{scores must be [tokens, cached positions], got 'tensor<?x8x?xf32>'}}
  %s = glm.indexer_score %c[0], %q, %w, %pos {scale = 0.03125 : f32}
      : !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>,
        tensor<?x8x128xf32>, tensor<?x8xf32>, tensor<?xi32> -> tensor<?x8x?xf32>
  return %s : tensor<?x8x?xf32>
}

// -----

// Tests that glm.topk takes rank-2 scores.
func.func @topk_scores(%s: tensor<?xf32>, %pos: tensor<?xi32>) -> tensor<?x16xi32> {
  // expected-error @+1 {{scores must be [tokens, cached positions], got 'tensor<?xf32>'}}
  %i = glm.topk %s, %pos {k = 16 : i64} : tensor<?xf32>, tensor<?xi32> -> tensor<?x16xi32>
  return %i : tensor<?x16xi32>
}

// -----

// Tests that glm.topk's k is positive.
func.func @topk_zero(%s: tensor<?x?xf32>, %pos: tensor<?xi32>) -> tensor<?x16xi32> {
  // expected-error @+1 {{k must be positive}}
  %i = glm.topk %s, %pos {k = 0 : i64} : tensor<?x?xf32>, tensor<?xi32> -> tensor<?x16xi32>
  return %i : tensor<?x16xi32>
}

// -----

// Tests that glm.topk's indices are [tokens, k].
func.func @topk_indices(%s: tensor<?x?xf32>, %pos: tensor<?xi32>) -> tensor<?x8xi32> {
  // expected-error @+1 {{indices must be [tokens, 16], got 'tensor<?x8xi32>'}}
  %i = glm.topk %s, %pos {k = 16 : i64} : tensor<?x?xf32>, tensor<?xi32> -> tensor<?x8xi32>
  return %i : tensor<?x8xi32>
}

// -----

// Tests that the naive attention's query, keys, values and result have the same heads.
func.func @attention_heads(%q: tensor<?x8x256xf32>, %kn: tensor<?x4x192xf32>, %kr: tensor<?x64xf32>,
                           %v: tensor<?x8x256xf32>, %idx: tensor<?x16xi32>) -> tensor<?x8x256xf32> {
  // expected-error @+1 {{query, keys, values and result must have 8 heads}}
  %o = glm.attention %q, %kn, %kr, %v, %idx {scale = 6.250000e-02 : f32}
      : tensor<?x8x256xf32>, tensor<?x4x192xf32>, tensor<?x64xf32>, tensor<?x8x256xf32>,
        tensor<?x16xi32> -> tensor<?x8x256xf32>
  return %o : tensor<?x8x256xf32>
}

// -----

// Tests that the query heads are as wide as the nope and rope keys together.
func.func @attention_key_width(%q: tensor<?x8x256xf32>, %kn: tensor<?x8x128xf32>, %kr: tensor<?x64xf32>,
                               %v: tensor<?x8x256xf32>, %idx: tensor<?x16xi32>) -> tensor<?x8x256xf32> {
  // expected-error @+1 {{query heads are 256 wide, keys 128 + 64}}
  %o = glm.attention %q, %kn, %kr, %v, %idx {scale = 6.250000e-02 : f32}
      : tensor<?x8x256xf32>, tensor<?x8x128xf32>, tensor<?x64xf32>, tensor<?x8x256xf32>,
        tensor<?x16xi32> -> tensor<?x8x256xf32>
  return %o : tensor<?x8x256xf32>
}

// -----

// Tests that the result heads are as wide as the value heads.
func.func @attention_value_width(%q: tensor<?x8x256xf32>, %kn: tensor<?x8x192xf32>, %kr: tensor<?x64xf32>,
                                 %v: tensor<?x8x256xf32>, %idx: tensor<?x16xi32>) -> tensor<?x8x128xf32> {
  // expected-error @+1 {{result heads are 128 wide, values 256}}
  %o = glm.attention %q, %kn, %kr, %v, %idx {scale = 6.250000e-02 : f32}
      : tensor<?x8x256xf32>, tensor<?x8x192xf32>, tensor<?x64xf32>, tensor<?x8x256xf32>,
        tensor<?x16xi32> -> tensor<?x8x128xf32>
  return %o : tensor<?x8x128xf32>
}

// -----

// Tests that the naive attention's indices are [tokens, k].
func.func @attention_indices(%q: tensor<?x8x256xf32>, %kn: tensor<?x8x192xf32>, %kr: tensor<?x64xf32>,
                             %v: tensor<?x8x256xf32>, %idx: tensor<?x16x1xi32>) -> tensor<?x8x256xf32> {
  // expected-error @+1 {{indices must be [tokens, k], got 'tensor<?x16x1xi32>'}}
  %o = glm.attention %q, %kn, %kr, %v, %idx {scale = 6.250000e-02 : f32}
      : tensor<?x8x256xf32>, tensor<?x8x192xf32>, tensor<?x64xf32>, tensor<?x8x256xf32>,
        tensor<?x16x1xi32> -> tensor<?x8x256xf32>
  return %o : tensor<?x8x256xf32>
}

// -----

// Tests that glm.sparse_mla names a layer of the cache.
func.func @sparse_mla_layer(%c: !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>,
                            %ql: tensor<?x8x512xf32>, %qr: tensor<?x8x64xf32>, %idx: tensor<?x16xi32>) {
  // expected-error @+1 {{layer 4 of a cache of 4 layers}}
  %o, %lse = glm.sparse_mla %c[4], %ql, %qr, %idx
      {scale = 6.250000e-02 : f32, dims = #glm.mla_dims<nope = 192, rope = 64, v = 256, kv_lora = 512>}
      : !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>, tensor<?x8x512xf32>,
        tensor<?x8x64xf32>, tensor<?x16xi32> -> tensor<?x8x512xf32>, tensor<?x8xf32>
  return
}

// -----

// Tests that glm.sparse_mla's dims match the cache.
func.func @sparse_mla_dims(%c: !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>,
                           %ql: tensor<?x8x512xf32>, %qr: tensor<?x8x64xf32>, %idx: tensor<?x16xi32>) {
  // expected-error @+1 {{dims #glm.mla_dims<nope = 192, rope = 64, v = 256, kv_lora = 256> do not match the cache '!glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>'}}
  %o, %lse = glm.sparse_mla %c[0], %ql, %qr, %idx
      {scale = 6.250000e-02 : f32, dims = #glm.mla_dims<nope = 192, rope = 64, v = 256, kv_lora = 256>}
      : !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>, tensor<?x8x512xf32>,
        tensor<?x8x64xf32>, tensor<?x16xi32> -> tensor<?x8x512xf32>, tensor<?x8xf32>
  return
}

// -----

// Tests that the latent and rope query rows are as wide as the dims say.
func.func @sparse_mla_query_width(%c: !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>,
                                  %ql: tensor<?x8x512xf32>, %qr: tensor<?x8x32xf32>, %idx: tensor<?x16xi32>) {
  // expected-error @+1 {{q_latent/q_rope rows are 512/32 wide, dims say 512/64}}
  %o, %lse = glm.sparse_mla %c[0], %ql, %qr, %idx
      {scale = 6.250000e-02 : f32, dims = #glm.mla_dims<nope = 192, rope = 64, v = 256, kv_lora = 512>}
      : !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>, tensor<?x8x512xf32>,
        tensor<?x8x32xf32>, tensor<?x16xi32> -> tensor<?x8x512xf32>, tensor<?x8xf32>
  return
}

// -----

// Tests that glm.sparse_mla's queries, output and lse have the same heads.
func.func @sparse_mla_heads(%c: !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>,
                            %ql: tensor<?x8x512xf32>, %qr: tensor<?x8x64xf32>, %idx: tensor<?x16xi32>) {
  // expected-error @+1 {{q_latent, q_rope, output and lse must have 8 heads}}
  %o, %lse = glm.sparse_mla %c[0], %ql, %qr, %idx
      {scale = 6.250000e-02 : f32, dims = #glm.mla_dims<nope = 192, rope = 64, v = 256, kv_lora = 512>}
      : !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>, tensor<?x8x512xf32>,
        tensor<?x8x64xf32>, tensor<?x16xi32> -> tensor<?x8x512xf32>, tensor<?x4xf32>
  return
}

// -----

// Tests that glm.sparse_mla's latent output has the shape of the latent query.
func.func @sparse_mla_output(%c: !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>,
                             %ql: tensor<?x8x512xf32>, %qr: tensor<?x8x64xf32>, %idx: tensor<?x16xi32>) {
  // expected-error @+1 {{output 'tensor<?x8x256xf32>' must have the shape of q_latent 'tensor<?x8x512xf32>'}}
  %o, %lse = glm.sparse_mla %c[0], %ql, %qr, %idx
      {scale = 6.250000e-02 : f32, dims = #glm.mla_dims<nope = 192, rope = 64, v = 256, kv_lora = 512>}
      : !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>, tensor<?x8x512xf32>,
        tensor<?x8x64xf32>, tensor<?x16xi32> -> tensor<?x8x256xf32>, tensor<?x8xf32>
  return
}

// -----

// Tests that glm.sparse_mla's indices are [tokens, k].
func.func @sparse_mla_indices(%c: !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>,
                              %ql: tensor<?x8x512xf32>, %qr: tensor<?x8x64xf32>, %idx: tensor<?xi32>) {
  // expected-error @+1 {{indices must be [tokens, k], got 'tensor<?xi32>'}}
  %o, %lse = glm.sparse_mla %c[0], %ql, %qr, %idx
      {scale = 6.250000e-02 : f32, dims = #glm.mla_dims<nope = 192, rope = 64, v = 256, kv_lora = 512>}
      : !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>, tensor<?x8x512xf32>,
        tensor<?x8x64xf32>, tensor<?xi32> -> tensor<?x8x512xf32>, tensor<?x8xf32>
  return
}

// -----

// Tests that glm.sparse_mla's scale is positive.
func.func @sparse_mla_scale(%c: !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>,
                            %ql: tensor<?x8x512xf32>, %qr: tensor<?x8x64xf32>, %idx: tensor<?x16xi32>) {
  // expected-error @+1 {{scale must be positive}}
  %o, %lse = glm.sparse_mla %c[0], %ql, %qr, %idx
      {scale = 0.0 : f32, dims = #glm.mla_dims<nope = 192, rope = 64, v = 256, kv_lora = 512>}
      : !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>, tensor<?x8x512xf32>,
        tensor<?x8x64xf32>, tensor<?x16xi32> -> tensor<?x8x512xf32>, tensor<?x8xf32>
  return
}

// -----

// Tests that the gate's correction bias has one entry per expert.
func.func @moe_gate_bias(%l: tensor<?x16xf32>) {
  // expected-error @+1 {{bias 'blk.1.exp_probs_b.bias' has shape [8], expected [16]}}
  %w, %ids = glm.moe_gate %l {bias = #glm.gguf_tensor<"blk.1.exp_probs_b.bias", f32, [8]>,
                              top_k = 2 : i64, normalize = true, scale = 2.5 : f32}
      : tensor<?x16xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  return
}

// -----

// Tests that the gate chooses at most as many experts as there are.
func.func @moe_gate_top_k(%l: tensor<?x16xf32>) {
  // expected-error @+1 {{top_k 17 must be in 1..16}}
  %w, %ids = glm.moe_gate %l {bias = #glm.gguf_tensor<"blk.1.exp_probs_b.bias", f32, [16]>,
                              top_k = 17 : i64, normalize = true, scale = 2.5 : f32}
      : tensor<?x16xf32> -> tensor<?x17xf32>, tensor<?x17xi32>
  return
}

// -----

// Tests that the gate's routed scale is positive.
func.func @moe_gate_scale(%l: tensor<?x16xf32>) {
  // expected-error @+1 {{scale must be positive}}
  %w, %ids = glm.moe_gate %l {bias = #glm.gguf_tensor<"blk.1.exp_probs_b.bias", f32, [16]>,
                              top_k = 2 : i64, normalize = true, scale = -2.5 : f32}
      : tensor<?x16xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  return
}

// -----

// Tests that the gate's results are [tokens, top_k].
func.func @moe_gate_results(%l: tensor<?x16xf32>) {
  // expected-error @+1 {{results must be [tokens, 2], got 'tensor<?x2xf32>' and 'tensor<?x4xi32>'}}
  %w, %ids = glm.moe_gate %l {bias = #glm.gguf_tensor<"blk.1.exp_probs_b.bias", f32, [16]>,
                              top_k = 2 : i64, normalize = true, scale = 2.5 : f32}
      : tensor<?x16xf32> -> tensor<?x2xf32>, tensor<?x4xi32>
  return
}

// -----

// Tests that the router weight is {hidden, experts}.
func.func @moe_router_weight(%x: tensor<?x256xf32>) {
  // expected-error @+1 {{weight 'blk.1.ffn_gate_inp.weight' has shape [128, 16], expected [256, experts]}}
  %w, %ids = glm.moe_router %x {weight = #glm.gguf_tensor<"blk.1.ffn_gate_inp.weight", f32, [128, 16]>,
                                bias = #glm.gguf_tensor<"blk.1.exp_probs_b.bias", f32, [16]>,
                                top_k = 2 : i64, normalize = true, scale = 2.5 : f32}
      : tensor<?x256xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  return
}

// -----

// Tests that the fused router's gate is checked against the router weight's experts.
func.func @moe_router_top_k(%x: tensor<?x256xf32>) {
  // expected-error @+1 {{top_k 0 must be in 1..16}}
  %w, %ids = glm.moe_router %x {weight = #glm.gguf_tensor<"blk.1.ffn_gate_inp.weight", f32, [256, 16]>,
                                bias = #glm.gguf_tensor<"blk.1.exp_probs_b.bias", f32, [16]>,
                                top_k = 0 : i64, normalize = true, scale = 2.5 : f32}
      : tensor<?x256xf32> -> tensor<?x0xf32>, tensor<?x0xi32>
  return
}

// -----

// Tests that glm.moe_experts' result has the input's type.
func.func @moe_experts_result(%x: tensor<?x256xf32>, %w: tensor<?x2xf32>, %ids: tensor<?x2xi32>) -> tensor<1x256xf32> {
  // expected-error @+1 {{input and result must be the same [tokens, hidden] type}}
  %y = glm.moe_experts %x, %w, %ids {
        gate = #glm.gguf_tensor<"blk.1.ffn_gate_exps.weight", q4_k, [256, 128, 16]>,
        up = #glm.gguf_tensor<"blk.1.ffn_up_exps.weight", q4_k, [256, 128, 16]>,
        down = #glm.gguf_tensor<"blk.1.ffn_down_exps.weight", q8_0, [128, 256, 16]>}
      : tensor<?x256xf32>, tensor<?x2xf32>, tensor<?x2xi32> -> tensor<1x256xf32>
  return %y : tensor<1x256xf32>
}

// -----

// Tests that glm.moe_experts' weights and expert ids have the same [tokens, k] shape.
func.func @moe_experts_weights(%x: tensor<?x256xf32>, %w: tensor<?x2xf32>, %ids: tensor<?x3xi32>) -> tensor<?x256xf32> {
  // expected-error @+1 {{weights and experts must both be [tokens, k] with a static k, got 'tensor<?x2xf32>' and 'tensor<?x3xi32>'}}
  %y = glm.moe_experts %x, %w, %ids {
        gate = #glm.gguf_tensor<"blk.1.ffn_gate_exps.weight", q4_k, [256, 128, 16]>,
        up = #glm.gguf_tensor<"blk.1.ffn_up_exps.weight", q4_k, [256, 128, 16]>,
        down = #glm.gguf_tensor<"blk.1.ffn_down_exps.weight", q8_0, [128, 256, 16]>}
      : tensor<?x256xf32>, tensor<?x2xf32>, tensor<?x3xi32> -> tensor<?x256xf32>
  return %y : tensor<?x256xf32>
}

// -----

// Tests that glm.moe_experts' gate weight is stacked over the experts.
func.func @moe_experts_unstacked(%x: tensor<?x256xf32>, %w: tensor<?x2xf32>, %ids: tensor<?x2xi32>) -> tensor<?x256xf32> {
  // expected-error @+1 {{gate 'blk.1.ffn_gate_exps.weight' must be stacked [hidden, ffn, experts], got [256, 128]}}
  %y = glm.moe_experts %x, %w, %ids {
        gate = #glm.gguf_tensor<"blk.1.ffn_gate_exps.weight", q4_k, [256, 128]>,
        up = #glm.gguf_tensor<"blk.1.ffn_up_exps.weight", q4_k, [256, 128, 16]>,
        down = #glm.gguf_tensor<"blk.1.ffn_down_exps.weight", q8_0, [128, 256, 16]>}
      : tensor<?x256xf32>, tensor<?x2xf32>, tensor<?x2xi32> -> tensor<?x256xf32>
  return %y : tensor<?x256xf32>
}

// -----

// Tests that glm.moe_experts picks at most as many experts per token as there are.
func.func @moe_experts_k(%x: tensor<?x256xf32>, %w: tensor<?x32xf32>, %ids: tensor<?x32xi32>) -> tensor<?x256xf32> {
  // expected-error @+1 {{32 experts per token of 16}}
  %y = glm.moe_experts %x, %w, %ids {
        gate = #glm.gguf_tensor<"blk.1.ffn_gate_exps.weight", q4_k, [256, 128, 16]>,
        up = #glm.gguf_tensor<"blk.1.ffn_up_exps.weight", q4_k, [256, 128, 16]>,
        down = #glm.gguf_tensor<"blk.1.ffn_down_exps.weight", q8_0, [128, 256, 16]>}
      : tensor<?x256xf32>, tensor<?x32xf32>, tensor<?x32xi32> -> tensor<?x256xf32>
  return %y : tensor<?x256xf32>
}

// -----

// Tests that the stacked gate weight's input dim is the hidden size.
func.func @moe_experts_gate(%x: tensor<?x256xf32>, %w: tensor<?x2xf32>, %ids: tensor<?x2xi32>) -> tensor<?x256xf32> {
  // expected-error @+1 {{gate 'blk.1.ffn_gate_exps.weight' has shape [128, 256, 16], expected [256, ffn, experts]}}
  %y = glm.moe_experts %x, %w, %ids {
        gate = #glm.gguf_tensor<"blk.1.ffn_gate_exps.weight", q4_k, [128, 256, 16]>,
        up = #glm.gguf_tensor<"blk.1.ffn_up_exps.weight", q4_k, [256, 128, 16]>,
        down = #glm.gguf_tensor<"blk.1.ffn_down_exps.weight", q8_0, [128, 256, 16]>}
      : tensor<?x256xf32>, tensor<?x2xf32>, tensor<?x2xi32> -> tensor<?x256xf32>
  return %y : tensor<?x256xf32>
}

// -----

// Tests that the stacked down weight is {ffn, hidden, experts}.
func.func @moe_experts_down(%x: tensor<?x256xf32>, %w: tensor<?x2xf32>, %ids: tensor<?x2xi32>) -> tensor<?x256xf32> {
  // expected-error @+1 {{down 'blk.1.ffn_down_exps.weight' has shape [256, 128, 16], expected [128, 256, 16]}}
  %y = glm.moe_experts %x, %w, %ids {
        gate = #glm.gguf_tensor<"blk.1.ffn_gate_exps.weight", q4_k, [256, 128, 16]>,
        up = #glm.gguf_tensor<"blk.1.ffn_up_exps.weight", q4_k, [256, 128, 16]>,
        down = #glm.gguf_tensor<"blk.1.ffn_down_exps.weight", q8_0, [256, 128, 16]>}
      : tensor<?x256xf32>, tensor<?x2xf32>, tensor<?x2xi32> -> tensor<?x256xf32>
  return %y : tensor<?x256xf32>
}

// -----

// Tests that the dense SwiGLU's gate weight is {hidden, ffn}.
func.func @swiglu_gate(%x: tensor<?x256xf32>) -> tensor<?x256xf32> {
  // expected-error @+1 {{gate 'blk.0.ffn_gate.weight' has shape [256, 512, 1], expected [256, ffn]}}
  %y = glm.swiglu %x {gate = #glm.gguf_tensor<"blk.0.ffn_gate.weight", f32, [256, 512, 1]>,
                      up = #glm.gguf_tensor<"blk.0.ffn_up.weight", f32, [256, 512]>,
                      down = #glm.gguf_tensor<"blk.0.ffn_down.weight", f32, [512, 256]>}
      : tensor<?x256xf32>
  return %y : tensor<?x256xf32>
}

// -----

// Tests that the SwiGLU's up weight has the gate's shape.
func.func @swiglu_up(%x: tensor<?x256xf32>) -> tensor<?x256xf32> {
  // expected-error @+1 {{up 'blk.0.ffn_up.weight' has shape [256, 128], expected [256, 512]}}
  %y = glm.swiglu %x {gate = #glm.gguf_tensor<"blk.0.ffn_gate.weight", f32, [256, 512]>,
                      up = #glm.gguf_tensor<"blk.0.ffn_up.weight", f32, [256, 128]>,
                      down = #glm.gguf_tensor<"blk.0.ffn_down.weight", f32, [512, 256]>}
      : tensor<?x256xf32>
  return %y : tensor<?x256xf32>
}

// -----

// Tests that the output weight is {hidden, vocab}.
func.func @logits_weight(%n: tensor<?x256xf32>) -> tensor<?x1024xf32> {
  // expected-error @+1 {{weight 'output.weight' has shape [1024, 256], expected [256, 1024]}}
  %l = glm.logits %n {weight = #glm.gguf_tensor<"output.weight", q6_k, [1024, 256]>}
      : tensor<?x256xf32> -> tensor<?x1024xf32>
  return %l : tensor<?x1024xf32>
}

// -----

// Tests that a negative layer index is rejected (it must not wrap to a huge unsigned value).
!cache = !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>
func.func @negative_layer(%cache: !cache) -> tensor<?x512xf32> {
  // expected-error @+1 {{layer -1 of a cache of 4 layers}}
  %c = glm.cache_read %cache[-1] latent : !cache -> tensor<?x512xf32>
  return %c : tensor<?x512xf32>
}

// -----

// Tests that a negative top_k is rejected by the range check.
func.func @negative_top_k(%l: tensor<?x16xf32>) -> tensor<?x2xf32> {
  // expected-error @+1 {{top_k -2 must be in 1..16}}
  %w, %ids = glm.moe_gate %l {bias = #glm.gguf_tensor<"blk.1.exp_probs_b.bias", f32, [16]>, top_k = -2 : i64, normalize = true, scale = 2.5 : f32} : tensor<?x16xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  return %w : tensor<?x2xf32>
}

// -----

// Tests that a negative k is rejected as not positive.
func.func @negative_k(%s: tensor<?x?xf32>, %pos: tensor<?xi32>) -> tensor<?x16xi32> {
  // expected-error @+1 {{k must be positive}}
  %i = glm.topk %s, %pos {k = -16 : i64} : tensor<?x?xf32>, tensor<?xi32> -> tensor<?x16xi32>
  return %i : tensor<?x16xi32>
}

// -----

// Tests that the gate's results must have the logits' token count.
func.func @gate_tokens(%l: tensor<1x16xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{token dimensions differ: 'tensor<1x16xf32>' vs 'tensor<3x2xf32>'}}
  %w, %ids = glm.moe_gate %l {bias = #glm.gguf_tensor<"blk.1.exp_probs_b.bias", f32, [16]>, top_k = 2 : i64, normalize = true, scale = 2.5 : f32} : tensor<1x16xf32> -> tensor<3x2xf32>, tensor<1x2xi32>
  return %w : tensor<3x2xf32>
}

// -----

// Tests that naive attention needs a positive scale, as glm.sparse_mla does.
func.func @attention_scale(%q: tensor<?x8x256xf32>, %kn: tensor<?x8x192xf32>, %kpe: tensor<?x64xf32>, %v: tensor<?x8x256xf32>, %idx: tensor<?x16xi32>) -> tensor<?x8x256xf32> {
  // expected-error @+1 {{scale must be positive}}
  %o = glm.attention %q, %kn, %kpe, %v, %idx {scale = -1.0 : f32} : tensor<?x8x256xf32>, tensor<?x8x192xf32>, tensor<?x64xf32>, tensor<?x8x256xf32>, tensor<?x16xi32> -> tensor<?x8x256xf32>
  return %o : tensor<?x8x256xf32>
}

// -----

// Tests that the number of experts per token must be static.
func.func @experts_dynamic_k(%x: tensor<?x256xf32>, %w: tensor<?x?xf32>, %ids: tensor<?x?xi32>) -> tensor<?x256xf32> {
  // expected-error @+1 {{weights and experts must both be [tokens, k] with a static k}}
  %y = glm.moe_experts %x, %w, %ids {gate = #glm.gguf_tensor<"blk.1.ffn_gate_exps.weight", f32, [256, 128, 16]>, up = #glm.gguf_tensor<"blk.1.ffn_up_exps.weight", f32, [256, 128, 16]>, down = #glm.gguf_tensor<"blk.1.ffn_down_exps.weight", f32, [128, 256, 16]>} : tensor<?x256xf32>, tensor<?x?xf32>, tensor<?x?xi32> -> tensor<?x256xf32>
  return %y : tensor<?x256xf32>
}

// -----

// Tests that glm.gate_up rejects gate and up of different GGUF types (one kernel streams both).
func.func @gate_up_types(%x: tensor<1x256xf32>) -> tensor<1x512xf32> {
  // expected-error @+1 {{gate and up have different GGUF types}}
  %h = glm.gate_up %x {gate = #glm.gguf_tensor<"g", q4_k, [256, 512]>,
                       up = #glm.gguf_tensor<"u", q6_k, [256, 512]>}
      : tensor<1x256xf32> -> tensor<1x512xf32>
  return %h : tensor<1x512xf32>
}

// -----

// Tests that glm.gate_up checks its weights' shape against the input and result widths.
func.func @gate_up_shape(%x: tensor<1x256xf32>) -> tensor<1x512xf32> {
  // expected-error @+1 {{up 'u' has shape [256, 256], expected [256, 512]}}
  %h = glm.gate_up %x {gate = #glm.gguf_tensor<"g", q4_k, [256, 512]>,
                       up = #glm.gguf_tensor<"u", q4_k, [256, 256]>}
      : tensor<1x256xf32> -> tensor<1x512xf32>
  return %h : tensor<1x512xf32>
}

// -----

// Tests that glm.linears has one result per weight.
func.func @linears_results(%x: tensor<1x256xf32>) -> tensor<1x128xf32> {
  // expected-error @+1 {{has 2 weights and 1 results}}
  %a = glm.linears %x {w0 = #glm.gguf_tensor<"a", q8_0, [256, 128]>,
                       w1 = #glm.gguf_tensor<"b", q8_0, [256, 96]>}
      : tensor<1x256xf32> -> tensor<1x128xf32>
  return %a : tensor<1x128xf32>
}

// -----

// Tests that glm.linears rejects weights of different GGUF types (one kernel streams them all).
func.func @linears_types(%x: tensor<1x256xf32>) -> tensor<1x128xf32> {
  // expected-error @+1 {{w1 'b' is not of w0's GGUF type}}
  %a, %b = glm.linears %x {w0 = #glm.gguf_tensor<"a", q8_0, [256, 128]>,
                           w1 = #glm.gguf_tensor<"b", q4_k, [256, 96]>}
      : tensor<1x256xf32> -> tensor<1x128xf32>, tensor<1x96xf32>
  return %a : tensor<1x128xf32>
}

// -----

// Tests that glm.linears checks each weight's shape against the input and its result.
func.func @linears_shape(%x: tensor<1x256xf32>) -> tensor<1x128xf32> {
  // expected-error @+1 {{w1 'b' has shape [256, 64], expected [256, 96]}}
  %a, %b = glm.linears %x {w0 = #glm.gguf_tensor<"a", q8_0, [256, 128]>,
                           w1 = #glm.gguf_tensor<"b", q8_0, [256, 64]>}
      : tensor<1x256xf32> -> tensor<1x128xf32>, tensor<1x96xf32>
  return %a : tensor<1x128xf32>
}

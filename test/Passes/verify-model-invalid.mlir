// RUN: %glm5c-opt %s --split-input-file --glm-verify-model --verify-diagnostics

// Tests that a module without a model config cannot be verified.
// expected-error @+1 {{module has no 'glm.config' attribute to verify against}}
module {
  func.func @f(%h: tensor<?x256xf32>) -> tensor<?x256xf32> {
    return %h : tensor<?x256xf32>
  }
}

// -----

// Tests that a reference to a tensor the model does not have is reported.
module attributes {glm.config = #glm.config<hidden = 256, layers = 4, dense_layers = 1, heads = 8, q_lora = 256, kv_lora = 512, nope = 192, rope = 64, v = 256, dense_ffn = 512, experts = 16, experts_used = 2, shared_experts = 1, expert_ffn = 128, vocab = 1024, indexer_heads = 8, indexer_dim = 128, index_topk = 16, rms_eps = 9.99999974E-6 : f32, rope_theta = 1.000000e+06 : f32, routed_scale = 2.500000e+00 : f32, norm_topk = true>} {
  func.func @f(%h: tensor<?x256xf32>) -> tensor<?x256xf32> {
    // expected-error @+1 {{references 'blk.9.attn_norm.weight', which is not a tensor of this model}}
    %a = glm.rms_norm %h {weight = #glm.gguf_tensor<"blk.9.attn_norm.weight", f32, [256]>, eps = 9.99999974E-6 : f32} : tensor<?x256xf32>
    return %a : tensor<?x256xf32>
  }
}

// -----

// Tests that a reference whose shape disagrees with the config is reported (the op itself is
// consistent: a q_a projection to 128 instead of q_lora 256).
module attributes {glm.config = #glm.config<hidden = 256, layers = 4, dense_layers = 1, heads = 8, q_lora = 256, kv_lora = 512, nope = 192, rope = 64, v = 256, dense_ffn = 512, experts = 16, experts_used = 2, shared_experts = 1, expert_ffn = 128, vocab = 1024, indexer_heads = 8, indexer_dim = 128, index_topk = 16, rms_eps = 9.99999974E-6 : f32, rope_theta = 1.000000e+06 : f32, routed_scale = 2.500000e+00 : f32, norm_topk = true>} {
  func.func @f(%h: tensor<?x256xf32>) -> tensor<?x128xf32> {
    // expected-error @+1 {{references 'blk.0.attn_q_a.weight' with a shape that does not match the model config (expected [256, 256])}}
    %q = glm.linear %h {weight = #glm.gguf_tensor<"blk.0.attn_q_a.weight", f32, [256, 128]>} : tensor<?x256xf32> -> tensor<?x128xf32>
    return %q : tensor<?x128xf32>
  }
}

// -----

// Tests that RoPE with another theta than the model's is reported.
module attributes {glm.config = #glm.config<hidden = 256, layers = 4, dense_layers = 1, heads = 8, q_lora = 256, kv_lora = 512, nope = 192, rope = 64, v = 256, dense_ffn = 512, experts = 16, experts_used = 2, shared_experts = 1, expert_ffn = 128, vocab = 1024, indexer_heads = 8, indexer_dim = 128, index_topk = 16, rms_eps = 9.99999974E-6 : f32, rope_theta = 1.000000e+06 : f32, routed_scale = 2.500000e+00 : f32, norm_topk = true>} {
  func.func @f(%x: tensor<?x64xf32>, %pos: tensor<?xi32>) -> tensor<?x64xf32> {
    // expected-error @+1 {{rotates 64 dims with theta 1.000000e+04, the model 64 with theta 1.000000e+06}}
    %r = glm.rope %x, %pos {theta = 1.0e4 : f32, dim = 64 : i64, offset = 0 : i64} : tensor<?x64xf32>, tensor<?xi32>
    return %r : tensor<?x64xf32>
  }
}

// -----

// Tests that an RMSNorm eps other than the model's is reported.
module attributes {glm.config = #glm.config<hidden = 256, layers = 4, dense_layers = 1, heads = 8, q_lora = 256, kv_lora = 512, nope = 192, rope = 64, v = 256, dense_ffn = 512, experts = 16, experts_used = 2, shared_experts = 1, expert_ffn = 128, vocab = 1024, indexer_heads = 8, indexer_dim = 128, index_topk = 16, rms_eps = 9.99999974E-6 : f32, rope_theta = 1.000000e+06 : f32, routed_scale = 2.500000e+00 : f32, norm_topk = true>} {
  func.func @f(%h: tensor<?x256xf32>) -> tensor<?x256xf32> {
    // expected-error @+1 {{eps 1.000000e-06 differs from the model's 1.000000e-05}}
    %a = glm.rms_norm %h {weight = #glm.gguf_tensor<"blk.0.attn_norm.weight", f32, [256]>, eps = 1.0e-6 : f32} : tensor<?x256xf32>
    return %a : tensor<?x256xf32>
  }
}

// -----

// Tests that naive attention with the wrong head count or scale is reported.
module attributes {glm.config = #glm.config<hidden = 256, layers = 4, dense_layers = 1, heads = 8, q_lora = 256, kv_lora = 512, nope = 192, rope = 64, v = 256, dense_ffn = 512, experts = 16, experts_used = 2, shared_experts = 1, expert_ffn = 128, vocab = 1024, indexer_heads = 8, indexer_dim = 128, index_topk = 16, rms_eps = 9.99999974E-6 : f32, rope_theta = 1.000000e+06 : f32, routed_scale = 2.500000e+00 : f32, norm_topk = true>} {
  func.func @f(%q: tensor<?x4x256xf32>, %kn: tensor<?x4x192xf32>, %kpe: tensor<?x64xf32>, %v: tensor<?x4x256xf32>, %idx: tensor<?x16xi32>) -> tensor<?x4x256xf32> {
    // expected-error @+2 {{has 4 attention heads, the model has 8}}
    // expected-error @+1 {{scale 4.166667e-02 is not 1/sqrt(256)}}
    %o = glm.attention %q, %kn, %kpe, %v, %idx {scale = 0.0416666679 : f32} : tensor<?x4x256xf32>, tensor<?x4x192xf32>, tensor<?x64xf32>, tensor<?x4x256xf32>, tensor<?x16xi32> -> tensor<?x4x256xf32>
    return %o : tensor<?x4x256xf32>
  }
}

// -----

// Tests that sparse MLA with other dims or scale than the model's is reported.
!cache = !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>
module attributes {glm.config = #glm.config<hidden = 256, layers = 4, dense_layers = 1, heads = 8, q_lora = 256, kv_lora = 512, nope = 192, rope = 64, v = 256, dense_ffn = 512, experts = 16, experts_used = 2, shared_experts = 1, expert_ffn = 128, vocab = 1024, indexer_heads = 8, indexer_dim = 128, index_topk = 16, rms_eps = 9.99999974E-6 : f32, rope_theta = 1.000000e+06 : f32, routed_scale = 2.500000e+00 : f32, norm_topk = true>} {
  func.func @f(%cache: !cache, %ql: tensor<?x8x512xf32>, %qr: tensor<?x8x64xf32>, %idx: tensor<?x16xi32>) -> tensor<?x8x512xf32> {
    // expected-error @+2 {{dims #glm.mla_dims<nope = 128, rope = 64, v = 256, kv_lora = 512> differ from the model's #glm.mla_dims<nope = 192, rope = 64, v = 256, kv_lora = 512>}}
    // expected-error @+1 {{scale 7.216878e-02 is not 1/sqrt(256)}}
    %o, %lse = glm.sparse_mla %cache[0], %ql, %qr, %idx {scale = 0.0721687824 : f32, dims = #glm.mla_dims<nope = 128, rope = 64, v = 256, kv_lora = 512>} : !cache, tensor<?x8x512xf32>, tensor<?x8x64xf32>, tensor<?x16xi32> -> tensor<?x8x512xf32>, tensor<?x8xf32>
    return %o : tensor<?x8x512xf32>
  }
}

// -----

// Tests that the indexer's head count and scale are checked.
!cache = !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>
module attributes {glm.config = #glm.config<hidden = 256, layers = 4, dense_layers = 1, heads = 8, q_lora = 256, kv_lora = 512, nope = 192, rope = 64, v = 256, dense_ffn = 512, experts = 16, experts_used = 2, shared_experts = 1, expert_ffn = 128, vocab = 1024, indexer_heads = 8, indexer_dim = 128, index_topk = 16, rms_eps = 9.99999974E-6 : f32, rope_theta = 1.000000e+06 : f32, routed_scale = 2.500000e+00 : f32, norm_topk = true>} {
  func.func @f(%cache: !cache, %q: tensor<?x4x128xf32>, %w: tensor<?x4xf32>, %pos: tensor<?xi32>) -> tensor<?x?xf32> {
    // expected-error @+2 {{has 4 indexer heads, the model has 8}}
    // expected-error @+1 {{scale 4.419417e-02 is not 1/sqrt(8 * 128)}}
    %s = glm.indexer_score %cache[0], %q, %w, %pos {scale = 0.0441941738 : f32} : !cache, tensor<?x4x128xf32>, tensor<?x4xf32>, tensor<?xi32> -> tensor<?x?xf32>
    return %s : tensor<?x?xf32>
  }
}

// -----

// Tests that a top-k other than the model's index_topk is reported.
module attributes {glm.config = #glm.config<hidden = 256, layers = 4, dense_layers = 1, heads = 8, q_lora = 256, kv_lora = 512, nope = 192, rope = 64, v = 256, dense_ffn = 512, experts = 16, experts_used = 2, shared_experts = 1, expert_ffn = 128, vocab = 1024, indexer_heads = 8, indexer_dim = 128, index_topk = 16, rms_eps = 9.99999974E-6 : f32, rope_theta = 1.000000e+06 : f32, routed_scale = 2.500000e+00 : f32, norm_topk = true>} {
  func.func @f(%s: tensor<?x?xf32>, %pos: tensor<?xi32>) -> tensor<?x8xi32> {
    // expected-error @+1 {{selects 8 positions, the model's index_topk is 16}}
    %i = glm.topk %s, %pos {k = 8 : i64} : tensor<?x?xf32>, tensor<?xi32> -> tensor<?x8xi32>
    return %i : tensor<?x8xi32>
  }
}

// -----

// Tests that routing that disagrees with the model (normalization off) is reported.
module attributes {glm.config = #glm.config<hidden = 256, layers = 4, dense_layers = 1, heads = 8, q_lora = 256, kv_lora = 512, nope = 192, rope = 64, v = 256, dense_ffn = 512, experts = 16, experts_used = 2, shared_experts = 1, expert_ffn = 128, vocab = 1024, indexer_heads = 8, indexer_dim = 128, index_topk = 16, rms_eps = 9.99999974E-6 : f32, rope_theta = 1.000000e+06 : f32, routed_scale = 2.500000e+00 : f32, norm_topk = true>} {
  func.func @f(%l: tensor<?x16xf32>) -> tensor<?x2xf32> {
    // expected-error @+1 {{routes to 2 experts (normalize false, scale 2.500000e+00), the model to 2 (normalize true, scale 2.500000e+00)}}
    %w, %ids = glm.moe_gate %l {bias = #glm.gguf_tensor<"blk.1.exp_probs_b.bias", f32, [16]>, top_k = 2 : i64, normalize = false, scale = 2.5 : f32} : tensor<?x16xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
    return %w : tensor<?x2xf32>
  }
}

// -----

// Tests that a cache that does not fit the model is reported.
!cache = !glm.kv_cache<layers = 3, latent = 512, rope = 64, index_dim = 128>
module attributes {glm.config = #glm.config<hidden = 256, layers = 4, dense_layers = 1, heads = 8, q_lora = 256, kv_lora = 512, nope = 192, rope = 64, v = 256, dense_ffn = 512, experts = 16, experts_used = 2, shared_experts = 1, expert_ffn = 128, vocab = 1024, indexer_heads = 8, indexer_dim = 128, index_topk = 16, rms_eps = 9.99999974E-6 : f32, rope_theta = 1.000000e+06 : f32, routed_scale = 2.500000e+00 : f32, norm_topk = true>} {
  func.func @f(%cache: !cache) -> tensor<?x512xf32> {
    // expected-error @+1 {{uses a cache '!glm.kv_cache<layers = 3, latent = 512, rope = 64, index_dim = 128>' that does not fit the model}}
    %c = glm.cache_read %cache[0] latent : !cache -> tensor<?x512xf32>
    return %c : tensor<?x512xf32>
  }
}

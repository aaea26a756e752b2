// RUN: %glm5c-opt %s --split-input-file --glm-verify-model | FileCheck %s

// Tests that ops agreeing with the tiny model's config pass unchanged: GGUF references with the
// layout's names and shapes, RoPE with the model's theta and dim, the model's norm eps, MLA dims
// and scales, indexer scale and top-k, and routing.
!cache = !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>
module attributes {glm.config = #glm.config<hidden = 256, layers = 4, dense_layers = 1, heads = 8, q_lora = 256, kv_lora = 512, nope = 192, rope = 64, v = 256, dense_ffn = 512, experts = 16, experts_used = 2, shared_experts = 1, expert_ffn = 128, vocab = 1024, indexer_heads = 8, indexer_dim = 128, index_topk = 16, rms_eps = 9.99999974E-6 : f32, rope_theta = 1.000000e+06 : f32, routed_scale = 2.500000e+00 : f32, norm_topk = true>} {
  // CHECK-LABEL: func.func @layer
  func.func @layer(%h: tensor<?x256xf32>, %pos: tensor<?xi32>, %cache: !cache, %qi: tensor<?x8x128xf32>, %wi: tensor<?x8xf32>, %qlat: tensor<?x8x512xf32>, %qpe: tensor<?x8x64xf32>) -> tensor<?x2xf32> {
    // CHECK: glm.rms_norm
    %a = glm.rms_norm %h {weight = #glm.gguf_tensor<"blk.1.attn_norm.weight", f32, [256]>, eps = 9.99999974E-6 : f32} : tensor<?x256xf32>
    // CHECK: glm.linear
    %q = glm.linear %a {weight = #glm.gguf_tensor<"blk.1.attn_q_a.weight", q8_0, [256, 256]>} : tensor<?x256xf32> -> tensor<?x256xf32>
    // CHECK: glm.rope
    %r = glm.rope %qi, %pos {theta = 1.0e6 : f32, dim = 64 : i64, offset = 0 : i64} : tensor<?x8x128xf32>, tensor<?xi32>
    // CHECK: glm.indexer_score
    %s = glm.indexer_score %cache[1], %r, %wi, %pos {scale = 0.03125 : f32} : !cache, tensor<?x8x128xf32>, tensor<?x8xf32>, tensor<?xi32> -> tensor<?x?xf32>
    // CHECK: glm.topk
    %idx = glm.topk %s, %pos {k = 16 : i64} : tensor<?x?xf32>, tensor<?xi32> -> tensor<?x16xi32>
    // CHECK: glm.sparse_mla
    %o, %lse = glm.sparse_mla %cache[1], %qlat, %qpe, %idx {scale = 0.0625 : f32, dims = #glm.mla_dims<nope = 192, rope = 64, v = 256, kv_lora = 512>} : !cache, tensor<?x8x512xf32>, tensor<?x8x64xf32>, tensor<?x16xi32> -> tensor<?x8x512xf32>, tensor<?x8xf32>
    // CHECK: glm.moe_router
    %w, %ids = glm.moe_router %a {weight = #glm.gguf_tensor<"blk.1.ffn_gate_inp.weight", f32, [256, 16]>, bias = #glm.gguf_tensor<"blk.1.exp_probs_b.bias", f32, [16]>, top_k = 2 : i64, normalize = true, scale = 2.5 : f32} : tensor<?x256xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
    return %w : tensor<?x2xf32>
  }
}

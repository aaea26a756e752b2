// RUN: %glm5c-opt %s --split-input-file | %glm5c-opt --split-input-file | FileCheck %s

// Round trips of every glm op, attribute and type. Dims are the tiny fixture's (hidden 256,
// 8 heads, q_lora 256, kv_lora 512, nope 192, rope 64, v 256, indexer 8 x 128, 16 experts top-2,
// expert ffn 128, dense ffn 512, vocab 1024) unless a chunk says otherwise.

// Tests that #glm.gguf_tensor round-trips with 1 to 4 dims and several ggml types (discardable
// attributes print sorted by name).
// CHECK-LABEL: func.func @gguf_tensor
// CHECK-SAME: glm.four = #glm.gguf_tensor<"four.weight", bf16, [2, 3, 4, 5]>
// CHECK-SAME: glm.gate_exps = #glm.gguf_tensor<"blk.1.ffn_gate_exps.weight", q4_k, [256, 128, 16]>
// CHECK-SAME: glm.iq = #glm.gguf_tensor<"iq.weight", iq2_xxs, [256, 8]>
// CHECK-SAME: glm.mx = #glm.gguf_tensor<"mx.weight", mxfp4, [32, 8]>
// CHECK-SAME: glm.norm = #glm.gguf_tensor<"blk.0.attn_norm.weight", f32, [256]>
// CHECK-SAME: glm.q_b = #glm.gguf_tensor<"blk.0.attn_q_b.weight", q8_0, [256, 2048]>
func.func @gguf_tensor() attributes {
    glm.norm = #glm.gguf_tensor<"blk.0.attn_norm.weight", f32, [256]>,
    glm.q_b = #glm.gguf_tensor<"blk.0.attn_q_b.weight", q8_0, [256, 2048]>,
    glm.gate_exps = #glm.gguf_tensor<"blk.1.ffn_gate_exps.weight", q4_k, [256, 128, 16]>,
    glm.four = #glm.gguf_tensor<"four.weight", bf16, [2, 3, 4, 5]>,
    glm.iq = #glm.gguf_tensor<"iq.weight", iq2_xxs, [256, 8]>,
    glm.mx = #glm.gguf_tensor<"mx.weight", mxfp4, [32, 8]>} {
  return
}

// -----

// Tests that #glm.mla_dims round-trips with its parameters in declaration order.
// CHECK-LABEL: func.func @mla_dims
// CHECK-SAME: glm.dims = #glm.mla_dims<nope = 192, rope = 64, v = 256, kv_lora = 512>
func.func @mla_dims() attributes {glm.dims = #glm.mla_dims<nope = 192, rope = 64, v = 256, kv_lora = 512>} {
  return
}

// -----

// Tests that #glm.config round-trips as the module attribute glm.config (the tiny fixture).
// CHECK: module attributes {glm.config = #glm.config<hidden = 256, layers = 4, dense_layers = 1, heads = 8,
// CHECK-SAME: q_lora = 256, kv_lora = 512, nope = 192, rope = 64, v = 256, dense_ffn = 512,
// CHECK-SAME: experts = 16, experts_used = 2, shared_experts = 1, expert_ffn = 128, vocab = 1024,
// CHECK-SAME: indexer_heads = 8, indexer_dim = 128, index_topk = 16, rms_eps = 9.99999974E-6 : f32,
// CHECK-SAME: rope_theta = 1.000000e+06 : f32, routed_scale = 2.500000e+00 : f32, norm_topk = true>}
// CHECK-LABEL: func.func @config
module attributes {glm.config = #glm.config<hidden = 256, layers = 4, dense_layers = 1, heads = 8,
    q_lora = 256, kv_lora = 512, nope = 192, rope = 64, v = 256, dense_ffn = 512, experts = 16,
    experts_used = 2, shared_experts = 1, expert_ffn = 128, vocab = 1024, indexer_heads = 8,
    indexer_dim = 128, index_topk = 16, rms_eps = 1.0e-05 : f32, rope_theta = 1.0e+06 : f32,
    routed_scale = 2.5 : f32, norm_topk = true>} {
  func.func @config() {
    return
  }
}

// -----

// Tests that #glm.config round-trips with GLM-5's full dims, no dense layers and norm_topk false.
// CHECK: module attributes {glm.config = #glm.config<hidden = 6144, layers = 78, dense_layers = 0, heads = 64,
// CHECK-SAME: q_lora = 2048, kv_lora = 512, nope = 192, rope = 64, v = 256, dense_ffn = 12288,
// CHECK-SAME: experts = 256, experts_used = 8, shared_experts = 0, expert_ffn = 2048, vocab = 154880,
// CHECK-SAME: indexer_heads = 32, indexer_dim = 128, index_topk = 2048,
// CHECK-SAME: norm_topk = false>}
// CHECK-LABEL: func.func @config_full
module attributes {glm.config = #glm.config<hidden = 6144, layers = 78, dense_layers = 0, heads = 64,
    q_lora = 2048, kv_lora = 512, nope = 192, rope = 64, v = 256, dense_ffn = 12288, experts = 256,
    experts_used = 8, shared_experts = 0, expert_ffn = 2048, vocab = 154880, indexer_heads = 32,
    indexer_dim = 128, index_topk = 2048, rms_eps = 1.0e-05 : f32, rope_theta = 1.0e+06 : f32,
    routed_scale = 2.5 : f32, norm_topk = false>} {
  func.func @config_full() {
    return
  }
}

// -----

// Tests that !glm.kv_cache round-trips as an argument and a result type.
// CHECK-LABEL: func.func @kv_cache
// CHECK-SAME: (%[[C:[^:]+]]: !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>)
// CHECK-SAME: -> !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>
// CHECK: return %[[C]] : !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>
func.func @kv_cache(%c: !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>)
    -> !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128> {
  return %c : !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>
}

// -----

// Tests that glm.embed round-trips for a dynamic and a static token dimension.
// CHECK-LABEL: func.func @embed
// CHECK-SAME: (%[[TOK:[^:]+]]: tensor<?xi32>, %[[ONE:[^:]+]]: tensor<1xi32>)
// CHECK: %[[H:.+]] = glm.embed %[[TOK]] {table = #glm.gguf_tensor<"token_embd.weight", q8_0, [256, 1024]>}
// CHECK-SAME: : tensor<?xi32> -> tensor<?x256xf32>
// CHECK: %[[H1:.+]] = glm.embed %[[ONE]] {table = #glm.gguf_tensor<"token_embd.weight", q8_0, [256, 1024]>}
// CHECK-SAME: : tensor<1xi32> -> tensor<1x256xf32>
// CHECK: return %[[H]], %[[H1]]
func.func @embed(%tokens: tensor<?xi32>, %one: tensor<1xi32>) -> (tensor<?x256xf32>, tensor<1x256xf32>) {
  %h = glm.embed %tokens {table = #glm.gguf_tensor<"token_embd.weight", q8_0, [256, 1024]>}
      : tensor<?xi32> -> tensor<?x256xf32>
  %h1 = glm.embed %one {table = #glm.gguf_tensor<"token_embd.weight", q8_0, [256, 1024]>}
      : tensor<1xi32> -> tensor<1x256xf32>
  return %h, %h1 : tensor<?x256xf32>, tensor<1x256xf32>
}

// -----

// Tests that glm.rms_norm round-trips on rows and on per-head rows (attributes print sorted).
// CHECK-LABEL: func.func @rms_norm
// CHECK-SAME: (%[[H:[^:]+]]: tensor<?x256xf32>, %[[Q:[^:]+]]: tensor<1x8x128xf32>)
// CHECK: %[[A:.+]] = glm.rms_norm %[[H]] {eps = 9.99999974E-6 : f32,
// CHECK-SAME: weight = #glm.gguf_tensor<"blk.0.attn_norm.weight", f32, [256]>} : tensor<?x256xf32>
// CHECK: %[[B:.+]] = glm.rms_norm %[[Q]] {eps = 9.99999974E-6 : f32,
// CHECK-SAME: weight = #glm.gguf_tensor<"head_norm.weight", f32, [128]>} : tensor<1x8x128xf32>
// CHECK: return %[[A]], %[[B]]
func.func @rms_norm(%h: tensor<?x256xf32>, %q: tensor<1x8x128xf32>) -> (tensor<?x256xf32>, tensor<1x8x128xf32>) {
  %a = glm.rms_norm %h {weight = #glm.gguf_tensor<"blk.0.attn_norm.weight", f32, [256]>,
                        eps = 1.0e-05 : f32} : tensor<?x256xf32>
  %b = glm.rms_norm %q {weight = #glm.gguf_tensor<"head_norm.weight", f32, [128]>,
                        eps = 1.0e-05 : f32} : tensor<1x8x128xf32>
  return %a, %b : tensor<?x256xf32>, tensor<1x8x128xf32>
}

// -----

// Tests that glm.layer_norm round-trips with its weight and bias (the indexer key norm).
// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: (%[[K:[^:]+]]: tensor<?x128xf32>)
// CHECK: %[[N:.+]] = glm.layer_norm %[[K]] {bias = #glm.gguf_tensor<"blk.0.indexer.k_norm.bias", f32, [128]>,
// CHECK-SAME: eps = 9.99999997E-7 : f32, weight = #glm.gguf_tensor<"blk.0.indexer.k_norm.weight", f32, [128]>}
// CHECK-SAME: : tensor<?x128xf32>
// CHECK: return %[[N]]
func.func @layer_norm(%k: tensor<?x128xf32>) -> tensor<?x128xf32> {
  %n = glm.layer_norm %k {weight = #glm.gguf_tensor<"blk.0.indexer.k_norm.weight", f32, [128]>,
                          bias = #glm.gguf_tensor<"blk.0.indexer.k_norm.bias", f32, [128]>,
                          eps = 1.0e-06 : f32} : tensor<?x128xf32>
  return %n : tensor<?x128xf32>
}

// -----

// Tests that glm.linear round-trips rank 2 -> 2, rank 2 -> 3 (per-head result) and 3 -> 2.
// CHECK-LABEL: func.func @linear
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x256xf32>, %[[O:[^:]+]]: tensor<1x8x256xf32>)
// CHECK: %[[QA:.+]] = glm.linear %[[X]] {weight = #glm.gguf_tensor<"blk.0.attn_q_a.weight", q8_0, [256, 256]>}
// CHECK-SAME: : tensor<?x256xf32> -> tensor<?x256xf32>
// CHECK: %[[QB:.+]] = glm.linear %[[QA]] {weight = #glm.gguf_tensor<"blk.0.attn_q_b.weight", q8_0, [256, 2048]>}
// CHECK-SAME: : tensor<?x256xf32> -> tensor<?x8x256xf32>
// CHECK: %[[OUT:.+]] = glm.linear %[[O]] {weight = #glm.gguf_tensor<"blk.0.attn_output.weight", q8_0, [2048, 256]>}
// CHECK-SAME: : tensor<1x8x256xf32> -> tensor<1x256xf32>
// CHECK: return %[[QB]], %[[OUT]]
func.func @linear(%x: tensor<?x256xf32>, %o: tensor<1x8x256xf32>) -> (tensor<?x8x256xf32>, tensor<1x256xf32>) {
  %qa = glm.linear %x {weight = #glm.gguf_tensor<"blk.0.attn_q_a.weight", q8_0, [256, 256]>}
      : tensor<?x256xf32> -> tensor<?x256xf32>
  %qb = glm.linear %qa {weight = #glm.gguf_tensor<"blk.0.attn_q_b.weight", q8_0, [256, 2048]>}
      : tensor<?x256xf32> -> tensor<?x8x256xf32>
  %out = glm.linear %o {weight = #glm.gguf_tensor<"blk.0.attn_output.weight", q8_0, [2048, 256]>}
      : tensor<1x8x256xf32> -> tensor<1x256xf32>
  return %qb, %out : tensor<?x8x256xf32>, tensor<1x256xf32>
}

// -----

// Tests that glm.head_linear round-trips transposed on a rank-2 input shared by every head
// (the naive key expansion) and untransposed on a rank-3 input (the absorbed query).
// CHECK-LABEL: func.func @head_linear
// CHECK-SAME: (%[[LAT:[^:]+]]: tensor<?x512xf32>, %[[QN:[^:]+]]: tensor<1x8x192xf32>)
// CHECK: %[[KN:.+]] = glm.head_linear %[[LAT]] {transpose = true,
// CHECK-SAME: weight = #glm.gguf_tensor<"blk.0.attn_k_b.weight", q8_0, [192, 512, 8]>}
// CHECK-SAME: : tensor<?x512xf32> -> tensor<?x8x192xf32>
// CHECK: %[[QL:.+]] = glm.head_linear %[[QN]] {transpose = false,
// CHECK-SAME: weight = #glm.gguf_tensor<"blk.0.attn_k_b.weight", q8_0, [192, 512, 8]>}
// CHECK-SAME: : tensor<1x8x192xf32> -> tensor<1x8x512xf32>
// CHECK: return %[[KN]], %[[QL]]
func.func @head_linear(%lat: tensor<?x512xf32>, %qnope: tensor<1x8x192xf32>)
    -> (tensor<?x8x192xf32>, tensor<1x8x512xf32>) {
  %knope = glm.head_linear %lat {weight = #glm.gguf_tensor<"blk.0.attn_k_b.weight", q8_0, [192, 512, 8]>,
                                 transpose = true} : tensor<?x512xf32> -> tensor<?x8x192xf32>
  %qlat = glm.head_linear %qnope {weight = #glm.gguf_tensor<"blk.0.attn_k_b.weight", q8_0, [192, 512, 8]>,
                                  transpose = false} : tensor<1x8x192xf32> -> tensor<1x8x512xf32>
  return %knope, %qlat : tensor<?x8x192xf32>, tensor<1x8x512xf32>
}

// -----

// Tests that glm.slice round-trips on rows and on per-head rows.
// CHECK-LABEL: func.func @slice
// CHECK-SAME: (%[[KV:[^:]+]]: tensor<?x576xf32>, %[[Q:[^:]+]]: tensor<1x8x256xf32>)
// CHECK: %[[KPE:.+]] = glm.slice %[[KV]] {offset = 512 : i64, size = 64 : i64} : tensor<?x576xf32> -> tensor<?x64xf32>
// CHECK: %[[QN:.+]] = glm.slice %[[Q]] {offset = 0 : i64, size = 192 : i64} : tensor<1x8x256xf32> -> tensor<1x8x192xf32>
// CHECK: return %[[KPE]], %[[QN]]
func.func @slice(%kv: tensor<?x576xf32>, %q: tensor<1x8x256xf32>) -> (tensor<?x64xf32>, tensor<1x8x192xf32>) {
  %kpe = glm.slice %kv {offset = 512 : i64, size = 64 : i64} : tensor<?x576xf32> -> tensor<?x64xf32>
  %qnope = glm.slice %q {offset = 0 : i64, size = 192 : i64} : tensor<1x8x256xf32> -> tensor<1x8x192xf32>
  return %kpe, %qnope : tensor<?x64xf32>, tensor<1x8x192xf32>
}

// -----

// Tests that glm.rope round-trips on the query's rope slice and on the shared rope key.
// CHECK-LABEL: func.func @rope
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<?x8x256xf32>, %[[POS:[^:]+]]: tensor<?xi32>, %[[K:[^:]+]]: tensor<1x64xf32>, %[[P1:[^:]+]]: tensor<1xi32>)
// CHECK: %[[QR:.+]] = glm.rope %[[Q]], %[[POS]] {dim = 64 : i64, offset = 192 : i64, theta = 1.000000e+06 : f32}
// CHECK-SAME: : tensor<?x8x256xf32>, tensor<?xi32>
// CHECK: %[[KR:.+]] = glm.rope %[[K]], %[[P1]] {dim = 64 : i64, offset = 0 : i64, theta = 1.000000e+06 : f32}
// CHECK-SAME: : tensor<1x64xf32>, tensor<1xi32>
// CHECK: return %[[QR]], %[[KR]]
func.func @rope(%q: tensor<?x8x256xf32>, %pos: tensor<?xi32>, %k: tensor<1x64xf32>, %p1: tensor<1xi32>)
    -> (tensor<?x8x256xf32>, tensor<1x64xf32>) {
  %qr = glm.rope %q, %pos {theta = 1.0e+06 : f32, dim = 64 : i64, offset = 192 : i64}
      : tensor<?x8x256xf32>, tensor<?xi32>
  %kr = glm.rope %k, %p1 {theta = 1.0e+06 : f32, dim = 64 : i64, offset = 0 : i64}
      : tensor<1x64xf32>, tensor<1xi32>
  return %qr, %kr : tensor<?x8x256xf32>, tensor<1x64xf32>
}

// -----

// Tests that glm.cache_append round-trips for a prefill of dynamically many tokens.
// CHECK-LABEL: func.func @cache_append
// CHECK-SAME: (%[[C:[^:]+]]: !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>,
// CHECK-SAME: %[[POS:[^:]+]]: tensor<?xi32>, %[[LAT:[^:]+]]: tensor<?x512xf32>, %[[KPE:[^:]+]]: tensor<?x64xf32>, %[[KIDX:[^:]+]]: tensor<?x128xf32>)
// CHECK: glm.cache_append %[[C]][3], %[[POS]], %[[LAT]], %[[KPE]], %[[KIDX]]
// CHECK-SAME: : !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>, tensor<?xi32>,
// CHECK-SAME: tensor<?x512xf32>, tensor<?x64xf32>, tensor<?x128xf32>
func.func @cache_append(%cache: !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>,
                        %pos: tensor<?xi32>, %latent: tensor<?x512xf32>, %kpe: tensor<?x64xf32>,
                        %kidx: tensor<?x128xf32>) {
  glm.cache_append %cache[3], %pos, %latent, %kpe, %kidx
      : !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>, tensor<?xi32>,
        tensor<?x512xf32>, tensor<?x64xf32>, tensor<?x128xf32>
  return
}

// -----

// Tests that glm.rope_cache_append round-trips for a single decode token.
// CHECK-LABEL: func.func @rope_cache_append
// CHECK-SAME: (%[[C:[^:]+]]: !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>,
// CHECK-SAME: %[[POS:[^:]+]]: tensor<1xi32>, %[[LAT:[^:]+]]: tensor<1x512xf32>, %[[KPE:[^:]+]]: tensor<1x64xf32>, %[[KIDX:[^:]+]]: tensor<1x128xf32>)
// CHECK: glm.rope_cache_append %[[C]][0], %[[POS]], %[[LAT]], %[[KPE]], %[[KIDX]]
// CHECK-SAME: {rope_dim = 64 : i64, theta = 1.000000e+06 : f32}
// CHECK-SAME: : !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>, tensor<1xi32>,
// CHECK-SAME: tensor<1x512xf32>, tensor<1x64xf32>, tensor<1x128xf32>
func.func @rope_cache_append(%cache: !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>,
                             %pos: tensor<1xi32>, %latent: tensor<1x512xf32>, %kpe: tensor<1x64xf32>,
                             %kidx: tensor<1x128xf32>) {
  glm.rope_cache_append %cache[0], %pos, %latent, %kpe, %kidx {theta = 1.0e+06 : f32, rope_dim = 64 : i64}
      : !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>, tensor<1xi32>,
        tensor<1x512xf32>, tensor<1x64xf32>, tensor<1x128xf32>
  return
}

// -----

// Tests that glm.cache_read round-trips for each cache part.
// CHECK-LABEL: func.func @cache_read
// CHECK-SAME: (%[[C:[^:]+]]: !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>)
// CHECK: %[[L:.+]] = glm.cache_read %[[C]][0] latent : !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128> -> tensor<?x512xf32>
// CHECK: %[[R:.+]] = glm.cache_read %[[C]][1] rope : !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128> -> tensor<?x64xf32>
// CHECK: %[[I:.+]] = glm.cache_read %[[C]][3] index_key : !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128> -> tensor<?x128xf32>
// CHECK: return %[[L]], %[[R]], %[[I]]
func.func @cache_read(%cache: !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>)
    -> (tensor<?x512xf32>, tensor<?x64xf32>, tensor<?x128xf32>) {
  %l = glm.cache_read %cache[0] latent
      : !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128> -> tensor<?x512xf32>
  %r = glm.cache_read %cache[1] rope
      : !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128> -> tensor<?x64xf32>
  %i = glm.cache_read %cache[3] index_key
      : !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128> -> tensor<?x128xf32>
  return %l, %r, %i : tensor<?x512xf32>, tensor<?x64xf32>, tensor<?x128xf32>
}

// -----

// Tests that glm.indexer_score round-trips with a dynamic and a static token dimension.
// CHECK-LABEL: func.func @indexer_score
// CHECK-SAME: (%[[C:[^:]+]]: !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>,
// CHECK-SAME: %[[Q:[^:]+]]: tensor<?x8x128xf32>, %[[W:[^:]+]]: tensor<?x8xf32>, %[[POS:[^:]+]]: tensor<?xi32>,
// CHECK-SAME: %[[Q1:[^:]+]]: tensor<1x8x128xf32>, %[[W1:[^:]+]]: tensor<1x8xf32>, %[[P1:[^:]+]]: tensor<1xi32>)
// CHECK: %[[S:.+]] = glm.indexer_score %[[C]][0], %[[Q]], %[[W]], %[[POS]] {scale = 3.125000e-02 : f32}
// CHECK-SAME: : !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>, tensor<?x8x128xf32>,
// CHECK-SAME: tensor<?x8xf32>, tensor<?xi32> -> tensor<?x?xf32>
// CHECK: %[[S1:.+]] = glm.indexer_score %[[C]][2], %[[Q1]], %[[W1]], %[[P1]] {scale = 3.125000e-02 : f32}
// CHECK-SAME: : !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>, tensor<1x8x128xf32>,
// CHECK-SAME: tensor<1x8xf32>, tensor<1xi32> -> tensor<1x?xf32>
// CHECK: return %[[S]], %[[S1]]
func.func @indexer_score(%cache: !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>,
                         %q: tensor<?x8x128xf32>, %w: tensor<?x8xf32>, %pos: tensor<?xi32>,
                         %q1: tensor<1x8x128xf32>, %w1: tensor<1x8xf32>, %p1: tensor<1xi32>)
    -> (tensor<?x?xf32>, tensor<1x?xf32>) {
  %s = glm.indexer_score %cache[0], %q, %w, %pos {scale = 0.03125 : f32}
      : !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>,
        tensor<?x8x128xf32>, tensor<?x8xf32>, tensor<?xi32> -> tensor<?x?xf32>
  %s1 = glm.indexer_score %cache[2], %q1, %w1, %p1 {scale = 0.03125 : f32}
      : !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>,
        tensor<1x8x128xf32>, tensor<1x8xf32>, tensor<1xi32> -> tensor<1x?xf32>
  return %s, %s1 : tensor<?x?xf32>, tensor<1x?xf32>
}

// -----

// Tests that glm.topk round-trips with a dynamic and a static token dimension.
// CHECK-LABEL: func.func @topk
// CHECK-SAME: (%[[S:[^:]+]]: tensor<?x?xf32>, %[[POS:[^:]+]]: tensor<?xi32>, %[[S1:[^:]+]]: tensor<1x?xf32>, %[[P1:[^:]+]]: tensor<1xi32>)
// CHECK: %[[I:.+]] = glm.topk %[[S]], %[[POS]] {k = 16 : i64} : tensor<?x?xf32>, tensor<?xi32> -> tensor<?x16xi32>
// CHECK: %[[I1:.+]] = glm.topk %[[S1]], %[[P1]] {k = 16 : i64} : tensor<1x?xf32>, tensor<1xi32> -> tensor<1x16xi32>
// CHECK: return %[[I]], %[[I1]]
func.func @topk(%s: tensor<?x?xf32>, %pos: tensor<?xi32>, %s1: tensor<1x?xf32>, %p1: tensor<1xi32>)
    -> (tensor<?x16xi32>, tensor<1x16xi32>) {
  %idx = glm.topk %s, %pos {k = 16 : i64} : tensor<?x?xf32>, tensor<?xi32> -> tensor<?x16xi32>
  %idx1 = glm.topk %s1, %p1 {k = 16 : i64} : tensor<1x?xf32>, tensor<1xi32> -> tensor<1x16xi32>
  return %idx, %idx1 : tensor<?x16xi32>, tensor<1x16xi32>
}

// -----

// Tests that glm.attention (the naive form) round-trips.
// CHECK-LABEL: func.func @attention
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<?x8x256xf32>, %[[KN:[^:]+]]: tensor<?x8x192xf32>, %[[KR:[^:]+]]: tensor<?x64xf32>,
// CHECK-SAME: %[[V:[^:]+]]: tensor<?x8x256xf32>, %[[IDX:[^:]+]]: tensor<?x16xi32>)
// CHECK: %[[O:.+]] = glm.attention %[[Q]], %[[KN]], %[[KR]], %[[V]], %[[IDX]] {scale = 6.250000e-02 : f32}
// CHECK-SAME: : tensor<?x8x256xf32>, tensor<?x8x192xf32>, tensor<?x64xf32>, tensor<?x8x256xf32>,
// CHECK-SAME: tensor<?x16xi32> -> tensor<?x8x256xf32>
// CHECK: return %[[O]]
func.func @attention(%q: tensor<?x8x256xf32>, %knope: tensor<?x8x192xf32>, %kpe: tensor<?x64xf32>,
                     %v: tensor<?x8x256xf32>, %idx: tensor<?x16xi32>) -> tensor<?x8x256xf32> {
  %o = glm.attention %q, %knope, %kpe, %v, %idx {scale = 6.250000e-02 : f32}
      : tensor<?x8x256xf32>, tensor<?x8x192xf32>, tensor<?x64xf32>, tensor<?x8x256xf32>,
        tensor<?x16xi32> -> tensor<?x8x256xf32>
  return %o : tensor<?x8x256xf32>
}

// -----

// Tests that glm.attention round-trips for one decode token over a static number of cached rows.
// CHECK-LABEL: func.func @attention_decode
// CHECK: glm.attention
// CHECK-SAME: : tensor<1x8x256xf32>, tensor<20x8x192xf32>, tensor<20x64xf32>, tensor<20x8x256xf32>,
// CHECK-SAME: tensor<1x16xi32> -> tensor<1x8x256xf32>
func.func @attention_decode(%q: tensor<1x8x256xf32>, %knope: tensor<20x8x192xf32>, %kpe: tensor<20x64xf32>,
                            %v: tensor<20x8x256xf32>, %idx: tensor<1x16xi32>) -> tensor<1x8x256xf32> {
  %o = glm.attention %q, %knope, %kpe, %v, %idx {scale = 6.250000e-02 : f32}
      : tensor<1x8x256xf32>, tensor<20x8x192xf32>, tensor<20x64xf32>, tensor<20x8x256xf32>,
        tensor<1x16xi32> -> tensor<1x8x256xf32>
  return %o : tensor<1x8x256xf32>
}

// -----

// Tests that glm.sparse_mla (the absorbed form) round-trips with its two results.
// CHECK-LABEL: func.func @sparse_mla
// CHECK-SAME: (%[[C:[^:]+]]: !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>,
// CHECK-SAME: %[[QL:[^:]+]]: tensor<?x8x512xf32>, %[[QR:[^:]+]]: tensor<?x8x64xf32>, %[[IDX:[^:]+]]: tensor<?x16xi32>)
// CHECK: %[[O:.+]], %[[LSE:.+]] = glm.sparse_mla %[[C]][1], %[[QL]], %[[QR]], %[[IDX]]
// CHECK-SAME: {dims = #glm.mla_dims<nope = 192, rope = 64, v = 256, kv_lora = 512>, scale = 6.250000e-02 : f32}
// CHECK-SAME: : !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>, tensor<?x8x512xf32>,
// CHECK-SAME: tensor<?x8x64xf32>, tensor<?x16xi32> -> tensor<?x8x512xf32>, tensor<?x8xf32>
// CHECK: return %[[O]], %[[LSE]]
func.func @sparse_mla(%cache: !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>,
                      %qlat: tensor<?x8x512xf32>, %qpe: tensor<?x8x64xf32>, %idx: tensor<?x16xi32>)
    -> (tensor<?x8x512xf32>, tensor<?x8xf32>) {
  %olat, %lse = glm.sparse_mla %cache[1], %qlat, %qpe, %idx
      {scale = 6.250000e-02 : f32, dims = #glm.mla_dims<nope = 192, rope = 64, v = 256, kv_lora = 512>}
      : !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>, tensor<?x8x512xf32>,
        tensor<?x8x64xf32>, tensor<?x16xi32> -> tensor<?x8x512xf32>, tensor<?x8xf32>
  return %olat, %lse : tensor<?x8x512xf32>, tensor<?x8xf32>
}

// -----

// Tests that a GLM-5-sized absorbed attention round-trips: 64 heads, top-2048 indices, 78 cached
// layers, output projection back to hidden 6144, for one decode token.
// CHECK-LABEL: func.func @sparse_mla_glm5
// CHECK-SAME: (%[[C:[^:]+]]: !glm.kv_cache<layers = 78, latent = 512, rope = 64, index_dim = 128>,
// CHECK-SAME: %[[QN:[^:]+]]: tensor<1x64x192xf32>, %[[QR:[^:]+]]: tensor<1x64x64xf32>, %[[IDX:[^:]+]]: tensor<1x2048xi32>)
// CHECK: %[[QL:.+]] = glm.head_linear %[[QN]] {transpose = false,
// CHECK-SAME: weight = #glm.gguf_tensor<"blk.77.attn_k_b.weight", q8_0, [192, 512, 64]>}
// CHECK-SAME: : tensor<1x64x192xf32> -> tensor<1x64x512xf32>
// CHECK: %[[O:.+]], %[[LSE:.+]] = glm.sparse_mla %[[C]][77], %[[QL]], %[[QR]], %[[IDX]]
// CHECK-SAME: {dims = #glm.mla_dims<nope = 192, rope = 64, v = 256, kv_lora = 512>, scale = 6.250000e-02 : f32}
// CHECK-SAME: : !glm.kv_cache<layers = 78, latent = 512, rope = 64, index_dim = 128>, tensor<1x64x512xf32>,
// CHECK-SAME: tensor<1x64x64xf32>, tensor<1x2048xi32> -> tensor<1x64x512xf32>, tensor<1x64xf32>
// CHECK: %[[V:.+]] = glm.head_linear %[[O]] {transpose = false,
// CHECK-SAME: weight = #glm.gguf_tensor<"blk.77.attn_v_b.weight", q8_0, [512, 256, 64]>}
// CHECK-SAME: : tensor<1x64x512xf32> -> tensor<1x64x256xf32>
// CHECK: %[[Y:.+]] = glm.linear %[[V]] {weight = #glm.gguf_tensor<"blk.77.attn_output.weight", q8_0, [16384, 6144]>}
// CHECK-SAME: : tensor<1x64x256xf32> -> tensor<1x6144xf32>
// CHECK: return %[[Y]], %[[LSE]]
func.func @sparse_mla_glm5(%cache: !glm.kv_cache<layers = 78, latent = 512, rope = 64, index_dim = 128>,
                           %qnope: tensor<1x64x192xf32>, %qpe: tensor<1x64x64xf32>, %idx: tensor<1x2048xi32>)
    -> (tensor<1x6144xf32>, tensor<1x64xf32>) {
  %qlat = glm.head_linear %qnope {weight = #glm.gguf_tensor<"blk.77.attn_k_b.weight", q8_0, [192, 512, 64]>,
                                  transpose = false} : tensor<1x64x192xf32> -> tensor<1x64x512xf32>
  %olat, %lse = glm.sparse_mla %cache[77], %qlat, %qpe, %idx
      {scale = 6.250000e-02 : f32, dims = #glm.mla_dims<nope = 192, rope = 64, v = 256, kv_lora = 512>}
      : !glm.kv_cache<layers = 78, latent = 512, rope = 64, index_dim = 128>, tensor<1x64x512xf32>,
        tensor<1x64x64xf32>, tensor<1x2048xi32> -> tensor<1x64x512xf32>, tensor<1x64xf32>
  %o = glm.head_linear %olat {weight = #glm.gguf_tensor<"blk.77.attn_v_b.weight", q8_0, [512, 256, 64]>,
                              transpose = false} : tensor<1x64x512xf32> -> tensor<1x64x256xf32>
  %y = glm.linear %o {weight = #glm.gguf_tensor<"blk.77.attn_output.weight", q8_0, [16384, 6144]>}
      : tensor<1x64x256xf32> -> tensor<1x6144xf32>
  return %y, %lse : tensor<1x6144xf32>, tensor<1x64xf32>
}

// -----

// Tests that glm.moe_gate round-trips with its two results.
// CHECK-LABEL: func.func @moe_gate
// CHECK-SAME: (%[[L:[^:]+]]: tensor<?x16xf32>)
// CHECK: %[[W:.+]], %[[E:.+]] = glm.moe_gate %[[L]] {bias = #glm.gguf_tensor<"blk.1.exp_probs_b.bias", f32, [16]>,
// CHECK-SAME: normalize = true, scale = 2.500000e+00 : f32, top_k = 2 : i64}
// CHECK-SAME: : tensor<?x16xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
// CHECK: return %[[W]], %[[E]]
func.func @moe_gate(%logits: tensor<?x16xf32>) -> (tensor<?x2xf32>, tensor<?x2xi32>) {
  %w, %ids = glm.moe_gate %logits {bias = #glm.gguf_tensor<"blk.1.exp_probs_b.bias", f32, [16]>,
                                   top_k = 2 : i64, normalize = true, scale = 2.5 : f32}
      : tensor<?x16xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  return %w, %ids : tensor<?x2xf32>, tensor<?x2xi32>
}

// -----

// Tests that glm.moe_router (router projection fused with the gate) round-trips.
// CHECK-LABEL: func.func @moe_router
// CHECK-SAME: (%[[X:[^:]+]]: tensor<1x256xf32>)
// CHECK: %[[W:.+]], %[[E:.+]] = glm.moe_router %[[X]] {bias = #glm.gguf_tensor<"blk.1.exp_probs_b.bias", f32, [16]>,
// CHECK-SAME: normalize = false, scale = 1.000000e+00 : f32, top_k = 2 : i64,
// CHECK-SAME: weight = #glm.gguf_tensor<"blk.1.ffn_gate_inp.weight", f32, [256, 16]>}
// CHECK-SAME: : tensor<1x256xf32> -> tensor<1x2xf32>, tensor<1x2xi32>
// CHECK: return %[[W]], %[[E]]
func.func @moe_router(%x: tensor<1x256xf32>) -> (tensor<1x2xf32>, tensor<1x2xi32>) {
  %w, %ids = glm.moe_router %x {weight = #glm.gguf_tensor<"blk.1.ffn_gate_inp.weight", f32, [256, 16]>,
                                bias = #glm.gguf_tensor<"blk.1.exp_probs_b.bias", f32, [16]>,
                                top_k = 2 : i64, normalize = false, scale = 1.0 : f32}
      : tensor<1x256xf32> -> tensor<1x2xf32>, tensor<1x2xi32>
  return %w, %ids : tensor<1x2xf32>, tensor<1x2xi32>
}

// -----

// Tests that glm.moe_experts round-trips with stacked, mixed-type expert weights.
// CHECK-LABEL: func.func @moe_experts
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x256xf32>, %[[W:[^:]+]]: tensor<?x2xf32>, %[[E:[^:]+]]: tensor<?x2xi32>)
// CHECK: %[[Y:.+]] = glm.moe_experts %[[X]], %[[W]], %[[E]]
// CHECK-SAME: {down = #glm.gguf_tensor<"blk.1.ffn_down_exps.weight", q8_0, [128, 256, 16]>,
// CHECK-SAME: gate = #glm.gguf_tensor<"blk.1.ffn_gate_exps.weight", q4_k, [256, 128, 16]>,
// CHECK-SAME: up = #glm.gguf_tensor<"blk.1.ffn_up_exps.weight", q4_k, [256, 128, 16]>}
// CHECK-SAME: : tensor<?x256xf32>, tensor<?x2xf32>, tensor<?x2xi32> -> tensor<?x256xf32>
// CHECK: return %[[Y]]
func.func @moe_experts(%x: tensor<?x256xf32>, %w: tensor<?x2xf32>, %ids: tensor<?x2xi32>) -> tensor<?x256xf32> {
  %y = glm.moe_experts %x, %w, %ids {
        gate = #glm.gguf_tensor<"blk.1.ffn_gate_exps.weight", q4_k, [256, 128, 16]>,
        up = #glm.gguf_tensor<"blk.1.ffn_up_exps.weight", q4_k, [256, 128, 16]>,
        down = #glm.gguf_tensor<"blk.1.ffn_down_exps.weight", q8_0, [128, 256, 16]>}
      : tensor<?x256xf32>, tensor<?x2xf32>, tensor<?x2xi32> -> tensor<?x256xf32>
  return %y : tensor<?x256xf32>
}

// -----

// Tests that glm.swiglu round-trips as a dense FFN (width 512) and as the shared expert (128).
// CHECK-LABEL: func.func @swiglu
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x256xf32>, %[[X1:[^:]+]]: tensor<1x256xf32>)
// CHECK: %[[D:.+]] = glm.swiglu %[[X]] {down = #glm.gguf_tensor<"blk.0.ffn_down.weight", f32, [512, 256]>,
// CHECK-SAME: gate = #glm.gguf_tensor<"blk.0.ffn_gate.weight", f32, [256, 512]>,
// CHECK-SAME: up = #glm.gguf_tensor<"blk.0.ffn_up.weight", f32, [256, 512]>} : tensor<?x256xf32>
// CHECK: %[[S:.+]] = glm.swiglu %[[X1]] {down = #glm.gguf_tensor<"blk.1.ffn_down_shexp.weight", q8_0, [128, 256]>,
// CHECK-SAME: gate = #glm.gguf_tensor<"blk.1.ffn_gate_shexp.weight", q8_0, [256, 128]>,
// CHECK-SAME: up = #glm.gguf_tensor<"blk.1.ffn_up_shexp.weight", q8_0, [256, 128]>} : tensor<1x256xf32>
// CHECK: return %[[D]], %[[S]]
func.func @swiglu(%x: tensor<?x256xf32>, %x1: tensor<1x256xf32>) -> (tensor<?x256xf32>, tensor<1x256xf32>) {
  %d = glm.swiglu %x {gate = #glm.gguf_tensor<"blk.0.ffn_gate.weight", f32, [256, 512]>,
                      up = #glm.gguf_tensor<"blk.0.ffn_up.weight", f32, [256, 512]>,
                      down = #glm.gguf_tensor<"blk.0.ffn_down.weight", f32, [512, 256]>}
      : tensor<?x256xf32>
  %s = glm.swiglu %x1 {gate = #glm.gguf_tensor<"blk.1.ffn_gate_shexp.weight", q8_0, [256, 128]>,
                       up = #glm.gguf_tensor<"blk.1.ffn_up_shexp.weight", q8_0, [256, 128]>,
                       down = #glm.gguf_tensor<"blk.1.ffn_down_shexp.weight", q8_0, [128, 256]>}
      : tensor<1x256xf32>
  return %d, %s : tensor<?x256xf32>, tensor<1x256xf32>
}

// -----

// Tests that glm.add round-trips with a dynamic and a static token dimension.
// CHECK-LABEL: func.func @add
// CHECK-SAME: (%[[A:[^:]+]]: tensor<?x256xf32>, %[[B:[^:]+]]: tensor<?x256xf32>, %[[C:[^:]+]]: tensor<1x256xf32>)
// CHECK: %[[S:.+]] = glm.add %[[A]], %[[B]] : tensor<?x256xf32>
// CHECK: %[[T:.+]] = glm.add %[[C]], %[[C]] : tensor<1x256xf32>
// CHECK: return %[[S]], %[[T]]
func.func @add(%a: tensor<?x256xf32>, %b: tensor<?x256xf32>, %c: tensor<1x256xf32>)
    -> (tensor<?x256xf32>, tensor<1x256xf32>) {
  %s = glm.add %a, %b : tensor<?x256xf32>
  %t = glm.add %c, %c : tensor<1x256xf32>
  return %s, %t : tensor<?x256xf32>, tensor<1x256xf32>
}

// -----

// Tests that glm.logits round-trips with a dynamic and a static token dimension.
// CHECK-LABEL: func.func @logits
// CHECK-SAME: (%[[N:[^:]+]]: tensor<?x256xf32>, %[[N1:[^:]+]]: tensor<1x256xf32>)
// CHECK: %[[L:.+]] = glm.logits %[[N]] {weight = #glm.gguf_tensor<"output.weight", q6_k, [256, 1024]>}
// CHECK-SAME: : tensor<?x256xf32> -> tensor<?x1024xf32>
// CHECK: %[[L1:.+]] = glm.logits %[[N1]] {weight = #glm.gguf_tensor<"output.weight", q6_k, [256, 1024]>}
// CHECK-SAME: : tensor<1x256xf32> -> tensor<1x1024xf32>
// CHECK: return %[[L]], %[[L1]]
func.func @logits(%n: tensor<?x256xf32>, %n1: tensor<1x256xf32>) -> (tensor<?x1024xf32>, tensor<1x1024xf32>) {
  %l = glm.logits %n {weight = #glm.gguf_tensor<"output.weight", q6_k, [256, 1024]>}
      : tensor<?x256xf32> -> tensor<?x1024xf32>
  %l1 = glm.logits %n1 {weight = #glm.gguf_tensor<"output.weight", q6_k, [256, 1024]>}
      : tensor<1x256xf32> -> tensor<1x1024xf32>
  return %l, %l1 : tensor<?x1024xf32>, tensor<1x1024xf32>
}

// -----

// Tests that #glm.target and #glm.kernel round-trip.
// CHECK: module attributes {glm.target = #glm.target<tiles = "sm_120a", code = "sm_90", sms = 188, max_smem = 101376>}
module attributes {glm.target = #glm.target<tiles = "sm_120a", code = "sm_90", sms = 188, max_smem = 101376>} {
  // CHECK-LABEL: func.func @kernel_attr
  // CHECK: glm.add {{.*}} {glm.kernel = #glm.kernel<variant = "add_bf16", threads = 256, smem = 0>}
  func.func @kernel_attr(%x: tensor<?x256xf32>) -> tensor<?x256xf32> {
    %y = glm.add %x, %x {glm.kernel = #glm.kernel<variant = "add_bf16", threads = 256, smem = 0>} : tensor<?x256xf32>
    return %y : tensor<?x256xf32>
  }
}

// -----

// Tests that glm.swiglu_mul round-trips.
// CHECK-LABEL: func.func @swiglu_mul
// CHECK: %[[H:.+]] = glm.swiglu_mul %{{.+}}, %{{.+}} : tensor<?x512xf32>
func.func @swiglu_mul(%g: tensor<?x512xf32>, %u: tensor<?x512xf32>) -> tensor<?x512xf32> {
  %h = glm.swiglu_mul %g, %u : tensor<?x512xf32>
  return %h : tensor<?x512xf32>
}

// -----

// Tests that glm.gate_up round-trips.
// CHECK-LABEL: func.func @gate_up
// CHECK: glm.gate_up %{{.+}} {gate = #glm.gguf_tensor<"blk.0.ffn_gate.weight", q4_k, [256, 512]>, up = #glm.gguf_tensor<"blk.0.ffn_up.weight", q4_k, [256, 512]>} : tensor<1x256xf32> -> tensor<1x512xf32>
func.func @gate_up(%x: tensor<1x256xf32>) -> tensor<1x512xf32> {
  %h = glm.gate_up %x {gate = #glm.gguf_tensor<"blk.0.ffn_gate.weight", q4_k, [256, 512]>,
                       up = #glm.gguf_tensor<"blk.0.ffn_up.weight", q4_k, [256, 512]>}
      : tensor<1x256xf32> -> tensor<1x512xf32>
  return %h : tensor<1x512xf32>
}

// -----

// Tests that glm.linears round-trips, with two and with three weights.
// CHECK-LABEL: func.func @linears
// CHECK: glm.linears %{{.+}} {w0 = #glm.gguf_tensor<"a", q8_0, [256, 128]>, w1 = #glm.gguf_tensor<"b", q8_0, [256, 96]>} : tensor<1x256xf32> -> tensor<1x128xf32>, tensor<1x96xf32>
// CHECK: glm.linears %{{.+}} {w0 = {{.+}}, w1 = {{.+}}, w2 = #glm.gguf_tensor<"c", q8_0, [256, 128]>} : tensor<1x256xf32> -> tensor<1x128xf32>, tensor<1x96xf32>, tensor<1x2x64xf32>
func.func @linears(%x: tensor<1x256xf32>) -> tensor<1x2x64xf32> {
  %a, %b = glm.linears %x {w0 = #glm.gguf_tensor<"a", q8_0, [256, 128]>,
                           w1 = #glm.gguf_tensor<"b", q8_0, [256, 96]>}
      : tensor<1x256xf32> -> tensor<1x128xf32>, tensor<1x96xf32>
  %c:3 = glm.linears %x {w0 = #glm.gguf_tensor<"a", q8_0, [256, 128]>,
                         w1 = #glm.gguf_tensor<"b", q8_0, [256, 96]>,
                         w2 = #glm.gguf_tensor<"c", q8_0, [256, 128]>}
      : tensor<1x256xf32> -> tensor<1x128xf32>, tensor<1x96xf32>, tensor<1x2x64xf32>
  return %c#2 : tensor<1x2x64xf32>
}

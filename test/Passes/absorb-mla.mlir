// RUN: %glm5c-opt %s --split-input-file --glm-absorb-mla | FileCheck %s

// Tests that prefill's naive attention becomes q-side absorption (attn_k_b folded into the nope
// part of q), glm.sparse_mla over the cache, and attn_v_b applied to its latent output; the
// per-token key/value expansion disappears.
!cache = !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>
// CHECK-LABEL: func.func @prefill
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<?x8x256xf32>, %[[IDX:[^:]+]]: tensor<?x16xi32>, %[[CACHE:[^:]+]]: !glm.kv_cache
func.func @prefill(%q: tensor<?x8x256xf32>, %idx: tensor<?x16xi32>, %cache: !cache) -> tensor<?x8x256xf32> {
  // CHECK-NOT: glm.cache_read
  // CHECK-DAG: %[[NOPE:.+]] = glm.slice %[[Q]] {offset = 0 : i64, size = 192 : i64} : tensor<?x8x256xf32> -> tensor<?x8x192xf32>
  // CHECK-DAG: %[[ROPE:.+]] = glm.slice %[[Q]] {offset = 192 : i64, size = 64 : i64} : tensor<?x8x256xf32> -> tensor<?x8x64xf32>
  // CHECK: %[[QLAT:.+]] = glm.head_linear %[[NOPE]] {transpose = false, weight = #glm.gguf_tensor<"blk.2.attn_k_b.weight", f32, [192, 512, 8]>} : tensor<?x8x192xf32> -> tensor<?x8x512xf32>
  // CHECK: %[[O:.+]], %[[LSE:.+]] = glm.sparse_mla %[[CACHE]][2], %[[QLAT]], %[[ROPE]], %[[IDX]]
  // CHECK-SAME: dims = #glm.mla_dims<nope = 192, rope = 64, v = 256, kv_lora = 512>, scale = 6.250000e-02 : f32
  // CHECK-SAME: -> tensor<?x8x512xf32>, tensor<?x8xf32>
  // CHECK: %[[V:.+]] = glm.head_linear %[[O]] {transpose = false, weight = #glm.gguf_tensor<"blk.2.attn_v_b.weight", f32, [512, 256, 8]>} : tensor<?x8x512xf32> -> tensor<?x8x256xf32>
  // CHECK: return %[[V]]
  %c = glm.cache_read %cache[2] latent : !cache -> tensor<?x512xf32>
  %kpe = glm.cache_read %cache[2] rope : !cache -> tensor<?x64xf32>
  %kn = glm.head_linear %c {weight = #glm.gguf_tensor<"blk.2.attn_k_b.weight", f32, [192, 512, 8]>, transpose = true} : tensor<?x512xf32> -> tensor<?x8x192xf32>
  %v = glm.head_linear %c {weight = #glm.gguf_tensor<"blk.2.attn_v_b.weight", f32, [512, 256, 8]>, transpose = false} : tensor<?x512xf32> -> tensor<?x8x256xf32>
  %o = glm.attention %q, %kn, %kpe, %v, %idx {scale = 0.0625 : f32} : tensor<?x8x256xf32>, tensor<?x8x192xf32>, tensor<?x64xf32>, tensor<?x8x256xf32>, tensor<?x16xi32> -> tensor<?x8x256xf32>
  return %o : tensor<?x8x256xf32>
}

// -----

// Tests that decode (one static token) is absorbed the same way, with GLM-5's full head count
// and quantized weights kept as they are.
!cache = !glm.kv_cache<layers = 78, latent = 512, rope = 64, index_dim = 128>
// CHECK-LABEL: func.func @decode
func.func @decode(%q: tensor<1x64x256xf32>, %idx: tensor<1x2048xi32>, %cache: !cache) -> tensor<1x64x256xf32> {
  // CHECK: glm.head_linear {{.*}}"blk.77.attn_k_b.weight", q8_0, [192, 512, 64]>} : tensor<1x64x192xf32> -> tensor<1x64x512xf32>
  // CHECK: glm.sparse_mla %{{.*}}[77], {{.*}} : !glm.kv_cache<layers = 78, latent = 512, rope = 64, index_dim = 128>, tensor<1x64x512xf32>, tensor<1x64x64xf32>, tensor<1x2048xi32> -> tensor<1x64x512xf32>, tensor<1x64xf32>
  // CHECK: glm.head_linear {{.*}}"blk.77.attn_v_b.weight", q8_0, [512, 256, 64]>} : tensor<1x64x512xf32> -> tensor<1x64x256xf32>
  // CHECK-NOT: glm.attention
  %c = glm.cache_read %cache[77] latent : !cache -> tensor<?x512xf32>
  %kpe = glm.cache_read %cache[77] rope : !cache -> tensor<?x64xf32>
  %kn = glm.head_linear %c {weight = #glm.gguf_tensor<"blk.77.attn_k_b.weight", q8_0, [192, 512, 64]>, transpose = true} : tensor<?x512xf32> -> tensor<?x64x192xf32>
  %v = glm.head_linear %c {weight = #glm.gguf_tensor<"blk.77.attn_v_b.weight", q8_0, [512, 256, 64]>, transpose = false} : tensor<?x512xf32> -> tensor<?x64x256xf32>
  %o = glm.attention %q, %kn, %kpe, %v, %idx {scale = 0.0625 : f32} : tensor<1x64x256xf32>, tensor<?x64x192xf32>, tensor<?x64xf32>, tensor<?x64x256xf32>, tensor<1x2048xi32> -> tensor<1x64x256xf32>
  return %o : tensor<1x64x256xf32>
}

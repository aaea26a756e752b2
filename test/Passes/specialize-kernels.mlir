// RUN: %glm5c-opt %s --split-input-file --glm-specialize-kernels | FileCheck %s
// RUN: %glm5c-opt %s --split-input-file --glm-specialize-kernels=target=sm_90 | FileCheck %s --check-prefix=SM90

// Tests that the module's #glm.target picks the sparse-MLA variant whose tiles fit its shared
// memory (32-row tiles in a ring of two tiles on SM120's 101376 B; the same on Hopper, where two
// such CTAs share an SM), with 8 heads per CTA for ops of at most 8 heads, and that the pass option overrides the target (the top-k's cache of
// scores in shared memory is twice as large on Hopper). SM120 holds one such CTA per SM, so its
// variants gather rows as bulk copies (_bulk); Hopper's two per SM gather with cp.async.
!cache = !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>
module attributes {glm.target = #glm.target<tiles = "sm_120a", code = "sm_120a", sms = 188, max_smem = 101376>} {
  // CHECK-LABEL: func.func @decode
  // SM90-LABEL: func.func @decode
  func.func @decode(%cache: !cache, %ql: tensor<1x8x512xf32>, %qr: tensor<1x8x64xf32>, %idx: tensor<1x16xi32>) -> tensor<1x8x512xf32> {
    // CHECK: glm.sparse_mla {{.*}}glm.kernel = #glm.kernel<variant = "sparse_mla_decode_bf16_t32_r4_h8_bulk", threads = 256, smem = 84864>
    // SM90: glm.sparse_mla {{.*}}glm.kernel = #glm.kernel<variant = "sparse_mla_decode_bf16_t32_r4_h8", threads = 256, smem = 84864>
    %o, %lse = glm.sparse_mla %cache[0], %ql, %qr, %idx {scale = 0.0625 : f32, dims = #glm.mla_dims<nope = 192, rope = 64, v = 256, kv_lora = 512>} : !cache, tensor<1x8x512xf32>, tensor<1x8x64xf32>, tensor<1x16xi32> -> tensor<1x8x512xf32>, tensor<1x8xf32>
    return %o : tensor<1x8x512xf32>
  }
  // CHECK-LABEL: func.func @decode16
  func.func @decode16(%cache: !cache, %ql: tensor<1x16x512xf32>, %qr: tensor<1x16x64xf32>, %idx: tensor<1x16xi32>) -> tensor<1x16x512xf32> {
    // CHECK: glm.sparse_mla {{.*}}glm.kernel = #glm.kernel<variant = "sparse_mla_decode_bf16_t32_r4_bulk", threads = 256, smem = 94720>
    %o, %lse = glm.sparse_mla %cache[0], %ql, %qr, %idx {scale = 0.0625 : f32, dims = #glm.mla_dims<nope = 192, rope = 64, v = 256, kv_lora = 512>} : !cache, tensor<1x16x512xf32>, tensor<1x16x64xf32>, tensor<1x16xi32> -> tensor<1x16x512xf32>, tensor<1x16xf32>
    return %o : tensor<1x16x512xf32>
  }
  // CHECK-LABEL: func.func @select
  // SM90-LABEL: func.func @select
  func.func @select(%s: tensor<1x?xf32>, %pos: tensor<1xi32>) -> tensor<1x16xi32> {
    // CHECK: glm.topk {{.*}}variant = "topk_radix_p64_c8192"
    // SM90: glm.topk {{.*}}variant = "topk_radix_p64_c16384"
    %i = glm.topk %s, %pos {k = 16 : i64} : tensor<1x?xf32>, tensor<1xi32> -> tensor<1x16xi32>
    return %i : tensor<1x16xi32>
  }
}

// RUN: %glm5c-opt %s --glm-dense-attention=context=4096 | FileCheck %s

// Tests that the top-k takes the whole context (so every causal position is selected), the
// attention consumes the wider index set, and the module is marked dense.
// CHECK: module attributes {glm.attention = "dense"}
!cache = !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>
// CHECK-LABEL: func.func @f
func.func @f(%cache: !cache, %s: tensor<?x?xf32>, %pos: tensor<?xi32>, %ql: tensor<?x8x512xf32>, %qr: tensor<?x8x64xf32>) -> tensor<?x8x512xf32> {
  // CHECK: %[[IDX:.+]] = glm.topk %{{.+}}, %{{.+}} {k = 4096 : i64} : tensor<?x?xf32>, tensor<?xi32> -> tensor<?x4096xi32>
  // CHECK: glm.sparse_mla %{{.+}}[0], %{{.+}}, %{{.+}}, %[[IDX]] {{.*}} tensor<?x4096xi32> ->
  %idx = glm.topk %s, %pos {k = 16 : i64} : tensor<?x?xf32>, tensor<?xi32> -> tensor<?x16xi32>
  %o, %lse = glm.sparse_mla %cache[0], %ql, %qr, %idx {scale = 0.0625 : f32, dims = #glm.mla_dims<nope = 192, rope = 64, v = 256, kv_lora = 512>} : !cache, tensor<?x8x512xf32>, tensor<?x8x64xf32>, tensor<?x16xi32> -> tensor<?x8x512xf32>, tensor<?x8xf32>
  return %o : tensor<?x8x512xf32>
}

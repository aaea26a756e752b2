// RUN: %glm5c-opt %s --glm-fuse-linears | FileCheck %s

// Tests that decode products of one input and one GGUF type become one glm.linears at the first
// one's place (weights and results in program order), while a product of another type and one
// of another input stay glm.linear.
// CHECK-LABEL: func.func @decode
// CHECK-SAME: (%[[X:[^:]+]]: tensor<1x256xf32>, %[[Z:[^:]+]]: tensor<1x128xf32>)
func.func @decode(%x: tensor<1x256xf32>, %z: tensor<1x128xf32>)
    -> (tensor<1x128xf32>, tensor<1x96xf32>, tensor<1x2x64xf32>, tensor<1x32xf32>, tensor<1x64xf32>) {
  // CHECK: %[[R:.+]]:3 = glm.linears %[[X]] {w0 = #glm.gguf_tensor<"blk.0.attn_q_a.weight", q8_0, [256, 128]>, w1 = #glm.gguf_tensor<"blk.0.attn_kv_a_mqa.weight", q8_0, [256, 96]>, w2 = #glm.gguf_tensor<"blk.0.indexer.attn_k.weight", q8_0, [256, 128]>} : tensor<1x256xf32> -> tensor<1x128xf32>, tensor<1x96xf32>, tensor<1x2x64xf32>
  // CHECK-NEXT: %[[P:.+]] = glm.linear %[[X]] {weight = #glm.gguf_tensor<"blk.0.indexer.proj.weight", f32, [256, 32]>}
  // CHECK-NEXT: %[[O:.+]] = glm.linear %[[Z]]
  // CHECK-NEXT: return %[[R]]#0, %[[R]]#1, %[[R]]#2, %[[P]], %[[O]]
  %q = glm.linear %x {weight = #glm.gguf_tensor<"blk.0.attn_q_a.weight", q8_0, [256, 128]>} : tensor<1x256xf32> -> tensor<1x128xf32>
  %kv = glm.linear %x {weight = #glm.gguf_tensor<"blk.0.attn_kv_a_mqa.weight", q8_0, [256, 96]>} : tensor<1x256xf32> -> tensor<1x96xf32>
  %k = glm.linear %x {weight = #glm.gguf_tensor<"blk.0.indexer.attn_k.weight", q8_0, [256, 128]>} : tensor<1x256xf32> -> tensor<1x2x64xf32>
  %p = glm.linear %x {weight = #glm.gguf_tensor<"blk.0.indexer.proj.weight", f32, [256, 32]>} : tensor<1x256xf32> -> tensor<1x32xf32>
  %o = glm.linear %z {weight = #glm.gguf_tensor<"blk.0.other.weight", q8_0, [128, 64]>} : tensor<1x128xf32> -> tensor<1x64xf32>
  return %q, %kv, %k, %p, %o : tensor<1x128xf32>, tensor<1x96xf32>, tensor<1x2x64xf32>, tensor<1x32xf32>, tensor<1x64xf32>
}

// Tests that five products of one input make a group of four and leave the fifth alone.
// CHECK-LABEL: func.func @five
// CHECK: glm.linears %{{.+}} {w0 = {{.*}}"a"{{.*}}, w1 = {{.*}}"b"{{.*}}, w2 = {{.*}}"c"{{.*}}, w3 = {{.*}}"d"
// CHECK-NEXT: glm.linear %{{.+}} {weight = #glm.gguf_tensor<"e"
// CHECK-NOT: glm.linears
func.func @five(%x: tensor<1x64xf32>) -> (tensor<1x32xf32>, tensor<1x32xf32>, tensor<1x32xf32>, tensor<1x32xf32>, tensor<1x32xf32>) {
  %a = glm.linear %x {weight = #glm.gguf_tensor<"a", q4_k, [64, 32]>} : tensor<1x64xf32> -> tensor<1x32xf32>
  %b = glm.linear %x {weight = #glm.gguf_tensor<"b", q4_k, [64, 32]>} : tensor<1x64xf32> -> tensor<1x32xf32>
  %c = glm.linear %x {weight = #glm.gguf_tensor<"c", q4_k, [64, 32]>} : tensor<1x64xf32> -> tensor<1x32xf32>
  %d = glm.linear %x {weight = #glm.gguf_tensor<"d", q4_k, [64, 32]>} : tensor<1x64xf32> -> tensor<1x32xf32>
  %e = glm.linear %x {weight = #glm.gguf_tensor<"e", q4_k, [64, 32]>} : tensor<1x64xf32> -> tensor<1x32xf32>
  return %a, %b, %c, %d, %e : tensor<1x32xf32>, tensor<1x32xf32>, tensor<1x32xf32>, tensor<1x32xf32>, tensor<1x32xf32>
}

// Tests that prefill's products (dynamic tokens) stay one per launch.
// CHECK-LABEL: func.func @prefill
// CHECK-NOT: glm.linears
func.func @prefill(%x: tensor<?x256xf32>) -> (tensor<?x128xf32>, tensor<?x96xf32>) {
  %q = glm.linear %x {weight = #glm.gguf_tensor<"blk.0.attn_q_a.weight", q8_0, [256, 128]>} : tensor<?x256xf32> -> tensor<?x128xf32>
  %kv = glm.linear %x {weight = #glm.gguf_tensor<"blk.0.attn_kv_a_mqa.weight", q8_0, [256, 96]>} : tensor<?x256xf32> -> tensor<?x96xf32>
  return %q, %kv : tensor<?x128xf32>, tensor<?x96xf32>
}

// RUN: %glm5c-opt %s --glm-lower-swiglu | FileCheck %s

// Tests that a SwiGLU block becomes the gate and up projections (widening to ffn), the gate
// product, and the down projection back to hidden, with the block's own weights.
// CHECK-LABEL: func.func @ffn
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x256xf32>)
func.func @ffn(%x: tensor<?x256xf32>) -> tensor<?x256xf32> {
  // CHECK: %[[G:.+]] = glm.linear %[[X]] {weight = #glm.gguf_tensor<"blk.0.ffn_gate.weight", q8_0, [256, 512]>} : tensor<?x256xf32> -> tensor<?x512xf32>
  // CHECK: %[[U:.+]] = glm.linear %[[X]] {weight = #glm.gguf_tensor<"blk.0.ffn_up.weight", q8_0, [256, 512]>} : tensor<?x256xf32> -> tensor<?x512xf32>
  // CHECK: %[[H:.+]] = glm.swiglu_mul %[[G]], %[[U]] : tensor<?x512xf32>
  // CHECK: %[[Y:.+]] = glm.linear %[[H]] {weight = #glm.gguf_tensor<"blk.0.ffn_down.weight", q8_0, [512, 256]>} : tensor<?x512xf32> -> tensor<?x256xf32>
  // CHECK: return %[[Y]]
  // CHECK-NOT: glm.swiglu %
  %y = glm.swiglu %x {gate = #glm.gguf_tensor<"blk.0.ffn_gate.weight", q8_0, [256, 512]>, up = #glm.gguf_tensor<"blk.0.ffn_up.weight", q8_0, [256, 512]>, down = #glm.gguf_tensor<"blk.0.ffn_down.weight", q8_0, [512, 256]>} : tensor<?x256xf32>
  return %y : tensor<?x256xf32>
}

// Tests that at decode (one token) gate and up of one GGUF type become one glm.gate_up, and the
// down projection follows it.
// CHECK-LABEL: func.func @ffn_decode
// CHECK-SAME: (%[[X:[^:]+]]: tensor<1x256xf32>)
func.func @ffn_decode(%x: tensor<1x256xf32>) -> tensor<1x256xf32> {
  // CHECK: %[[H:.+]] = glm.gate_up %[[X]] {gate = #glm.gguf_tensor<"blk.1.ffn_gate_shexp.weight", q4_k, [256, 512]>, up = #glm.gguf_tensor<"blk.1.ffn_up_shexp.weight", q4_k, [256, 512]>} : tensor<1x256xf32> -> tensor<1x512xf32>
  // CHECK-NEXT: %[[Y:.+]] = glm.linear %[[H]] {weight = #glm.gguf_tensor<"blk.1.ffn_down_shexp.weight", q6_k, [512, 256]>} : tensor<1x512xf32> -> tensor<1x256xf32>
  // CHECK-NEXT: return %[[Y]]
  %y = glm.swiglu %x {gate = #glm.gguf_tensor<"blk.1.ffn_gate_shexp.weight", q4_k, [256, 512]>, up = #glm.gguf_tensor<"blk.1.ffn_up_shexp.weight", q4_k, [256, 512]>, down = #glm.gguf_tensor<"blk.1.ffn_down_shexp.weight", q6_k, [512, 256]>} : tensor<1x256xf32>
  return %y : tensor<1x256xf32>
}

// Tests that gate and up of different GGUF types keep the per-product form at decode.
// CHECK-LABEL: func.func @ffn_decode_mixed
// CHECK: glm.linear
// CHECK-NEXT: glm.linear
// CHECK-NEXT: glm.swiglu_mul
// CHECK-NOT: glm.gate_up
func.func @ffn_decode_mixed(%x: tensor<1x256xf32>) -> tensor<1x256xf32> {
  %y = glm.swiglu %x {gate = #glm.gguf_tensor<"blk.0.ffn_gate.weight", q4_k, [256, 512]>, up = #glm.gguf_tensor<"blk.0.ffn_up.weight", q5_k, [256, 512]>, down = #glm.gguf_tensor<"blk.0.ffn_down.weight", q6_k, [512, 256]>} : tensor<1x256xf32>
  return %y : tensor<1x256xf32>
}

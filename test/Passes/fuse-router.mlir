// RUN: %glm5c-opt %s --split-input-file --glm-fuse-router | FileCheck %s

// Tests that the router projection feeding only the gate becomes one glm.moe_router carrying
// both the projection weight and the gate's bias, top-k, normalization and scale.
// CHECK-LABEL: func.func @fused
// CHECK-SAME: (%[[F:[^:]+]]: tensor<?x256xf32>)
func.func @fused(%f: tensor<?x256xf32>) -> (tensor<?x2xf32>, tensor<?x2xi32>) {
  // CHECK-NOT: glm.linear
  // CHECK: %[[W:.+]], %[[IDS:.+]] = glm.moe_router %[[F]] {bias = #glm.gguf_tensor<"blk.1.exp_probs_b.bias", f32, [16]>, normalize = true, scale = 2.500000e+00 : f32, top_k = 2 : i64, weight = #glm.gguf_tensor<"blk.1.ffn_gate_inp.weight", f32, [256, 16]>} : tensor<?x256xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  // CHECK: return %[[W]], %[[IDS]]
  %l = glm.linear %f {weight = #glm.gguf_tensor<"blk.1.ffn_gate_inp.weight", f32, [256, 16]>} : tensor<?x256xf32> -> tensor<?x16xf32>
  %w, %ids = glm.moe_gate %l {bias = #glm.gguf_tensor<"blk.1.exp_probs_b.bias", f32, [16]>, top_k = 2 : i64, normalize = true, scale = 2.5 : f32} : tensor<?x16xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  return %w, %ids : tensor<?x2xf32>, tensor<?x2xi32>
}

// -----

// Tests that logits with another user stay a separate glm.linear (they must be materialized).
// CHECK-LABEL: func.func @logits_used
func.func @logits_used(%f: tensor<?x256xf32>) -> (tensor<?x2xf32>, tensor<?x16xf32>) {
  // CHECK: glm.linear
  // CHECK: glm.moe_gate
  // CHECK-NOT: glm.moe_router
  %l = glm.linear %f {weight = #glm.gguf_tensor<"blk.1.ffn_gate_inp.weight", f32, [256, 16]>} : tensor<?x256xf32> -> tensor<?x16xf32>
  %w, %ids = glm.moe_gate %l {bias = #glm.gguf_tensor<"blk.1.exp_probs_b.bias", f32, [16]>, top_k = 2 : i64, normalize = true, scale = 2.5 : f32} : tensor<?x16xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  return %w, %l : tensor<?x2xf32>, tensor<?x16xf32>
}

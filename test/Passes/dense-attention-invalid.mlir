// RUN: %glm5c-opt %s --glm-dense-attention --verify-diagnostics

// Tests that the pass refuses to run without the model's context length.
// expected-error @+1 {{glm-dense-attention needs context > 0 (the model's context length)}}
module {
  func.func @f(%x: tensor<1x256xf32>) -> tensor<1x256xf32> {
    return %x : tensor<1x256xf32>
  }
}

// RUN: %glm5c-opt %s --split-input-file --glm-absorb-mla --verify-diagnostics

// Tests that keys not expanded from the latent by a transposed attn_k_b product are refused.
!cache = !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>
func.func @keys_not_transposed(%q: tensor<?x8x256xf32>, %kn: tensor<?x8x192xf32>, %idx: tensor<?x16xi32>, %cache: !cache) -> tensor<?x8x256xf32> {
  %c = glm.cache_read %cache[0] latent : !cache -> tensor<?x512xf32>
  %kpe = glm.cache_read %cache[0] rope : !cache -> tensor<?x64xf32>
  %v = glm.head_linear %c {weight = #glm.gguf_tensor<"blk.0.attn_v_b.weight", f32, [512, 256, 8]>, transpose = false} : tensor<?x512xf32> -> tensor<?x8x256xf32>
  // expected-error @+1 {{cannot absorb this attention into glm.sparse_mla: key_nope is not expanded from the latent by a transposed glm.head_linear (attn_k_b)}}
  %o = glm.attention %q, %kn, %kpe, %v, %idx {scale = 0.0625 : f32} : tensor<?x8x256xf32>, tensor<?x8x192xf32>, tensor<?x64xf32>, tensor<?x8x256xf32>, tensor<?x16xi32> -> tensor<?x8x256xf32>
  return %o : tensor<?x8x256xf32>
}

// -----

// Tests that values not expanded by a plain attn_v_b product are refused.
!cache = !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>
func.func @values_not_expanded(%q: tensor<?x8x256xf32>, %v: tensor<?x8x256xf32>, %idx: tensor<?x16xi32>, %cache: !cache) -> tensor<?x8x256xf32> {
  %c = glm.cache_read %cache[0] latent : !cache -> tensor<?x512xf32>
  %kpe = glm.cache_read %cache[0] rope : !cache -> tensor<?x64xf32>
  %kn = glm.head_linear %c {weight = #glm.gguf_tensor<"blk.0.attn_k_b.weight", f32, [192, 512, 8]>, transpose = true} : tensor<?x512xf32> -> tensor<?x8x192xf32>
  // expected-error @+1 {{value is not expanded from the latent by a glm.head_linear (attn_v_b)}}
  %o = glm.attention %q, %kn, %kpe, %v, %idx {scale = 0.0625 : f32} : tensor<?x8x256xf32>, tensor<?x8x192xf32>, tensor<?x64xf32>, tensor<?x8x256xf32>, tensor<?x16xi32> -> tensor<?x8x256xf32>
  return %o : tensor<?x8x256xf32>
}

// -----

// Tests that keys and values expanded from two different latents are refused.
!cache = !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>
func.func @two_latents(%q: tensor<?x8x256xf32>, %idx: tensor<?x16xi32>, %cache: !cache) -> tensor<?x8x256xf32> {
  %c = glm.cache_read %cache[0] latent : !cache -> tensor<?x512xf32>
  %c1 = glm.cache_read %cache[1] latent : !cache -> tensor<?x512xf32>
  %kpe = glm.cache_read %cache[0] rope : !cache -> tensor<?x64xf32>
  %kn = glm.head_linear %c {weight = #glm.gguf_tensor<"blk.0.attn_k_b.weight", f32, [192, 512, 8]>, transpose = true} : tensor<?x512xf32> -> tensor<?x8x192xf32>
  %v = glm.head_linear %c1 {weight = #glm.gguf_tensor<"blk.0.attn_v_b.weight", f32, [512, 256, 8]>, transpose = false} : tensor<?x512xf32> -> tensor<?x8x256xf32>
  // expected-error @+1 {{keys and values are not expanded from one glm.cache_read of the latent}}
  %o = glm.attention %q, %kn, %kpe, %v, %idx {scale = 0.0625 : f32} : tensor<?x8x256xf32>, tensor<?x8x192xf32>, tensor<?x64xf32>, tensor<?x8x256xf32>, tensor<?x16xi32> -> tensor<?x8x256xf32>
  return %o : tensor<?x8x256xf32>
}

// -----

// Tests that a rope key from another layer than the latent is refused.
!cache = !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>
func.func @rope_other_layer(%q: tensor<?x8x256xf32>, %idx: tensor<?x16xi32>, %cache: !cache) -> tensor<?x8x256xf32> {
  %c = glm.cache_read %cache[0] latent : !cache -> tensor<?x512xf32>
  %kpe = glm.cache_read %cache[3] rope : !cache -> tensor<?x64xf32>
  %kn = glm.head_linear %c {weight = #glm.gguf_tensor<"blk.0.attn_k_b.weight", f32, [192, 512, 8]>, transpose = true} : tensor<?x512xf32> -> tensor<?x8x192xf32>
  %v = glm.head_linear %c {weight = #glm.gguf_tensor<"blk.0.attn_v_b.weight", f32, [512, 256, 8]>, transpose = false} : tensor<?x512xf32> -> tensor<?x8x256xf32>
  // expected-error @+1 {{key_rope is not the cached rope key of the latent's layer}}
  %o = glm.attention %q, %kn, %kpe, %v, %idx {scale = 0.0625 : f32} : tensor<?x8x256xf32>, tensor<?x8x192xf32>, tensor<?x64xf32>, tensor<?x8x256xf32>, tensor<?x16xi32> -> tensor<?x8x256xf32>
  return %o : tensor<?x8x256xf32>
}

// RUN: %glm5c-opt %s --split-input-file --glm-specialize-kernels --verify-diagnostics

// Tests that a target whose shared memory holds no variant gets one error per op kind, with
// the number of ops and a note for every candidate and the limit it exceeded.
!cache = !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>
module attributes {glm.target = #glm.target<tiles = "sm_120a", code = "sm_120a", sms = 188, max_smem = 90000>} {
  func.func @two(%cache: !cache, %ql: tensor<1x8x512xf32>, %qr: tensor<1x8x64xf32>, %idx: tensor<1x16xi32>) -> tensor<1x8x512xf32> {
    // expected-error @+2 {{no kernel variant for glm.sparse_mla fits sm_120a (2 ops)}}
    // expected-note @+1 {{candidate sparse_mla_decode_bf16_t32_r4: needs 94720 B shared memory, sm_120a allows 90000 B}}
    %o, %lse = glm.sparse_mla %cache[0], %ql, %qr, %idx {scale = 0.0625 : f32, dims = #glm.mla_dims<nope = 192, rope = 64, v = 256, kv_lora = 512>} : !cache, tensor<1x8x512xf32>, tensor<1x8x64xf32>, tensor<1x16xi32> -> tensor<1x8x512xf32>, tensor<1x8xf32>
    %o2, %lse2 = glm.sparse_mla %cache[1], %ql, %qr, %idx {scale = 0.0625 : f32, dims = #glm.mla_dims<nope = 192, rope = 64, v = 256, kv_lora = 512>} : !cache, tensor<1x8x512xf32>, tensor<1x8x64xf32>, tensor<1x16xi32> -> tensor<1x8x512xf32>, tensor<1x8xf32>
    return %o : tensor<1x8x512xf32>
  }
}

// -----

// Tests that the naive attention form is refused with the reason (it must be absorbed first).
module attributes {glm.target = #glm.target<tiles = "sm_120a", code = "sm_120a", sms = 188, max_smem = 101376>} {
  func.func @naive(%q: tensor<?x8x256xf32>, %kn: tensor<?x8x192xf32>, %kpe: tensor<?x64xf32>, %v: tensor<?x8x256xf32>, %idx: tensor<?x16xi32>) -> tensor<?x8x256xf32> {
    // expected-error @+2 {{no kernel variant for glm.attention fits sm_120a (1 op)}}
    // expected-note @+1 {{candidate glm.attention: the naive attention form has no kernel: run glm-absorb-mla first (glm-pipeline does)}}
    %o = glm.attention %q, %kn, %kpe, %v, %idx {scale = 0.0625 : f32} : tensor<?x8x256xf32>, tensor<?x8x192xf32>, tensor<?x64xf32>, tensor<?x8x256xf32>, tensor<?x16xi32> -> tensor<?x8x256xf32>
    return %o : tensor<?x8x256xf32>
  }
}

// -----

// Tests that a family's constraint rejects every candidate with its reason: norm kernels read
// F32 weight vectors, and a BF16 norm weight is refused rather than misread.
module attributes {glm.target = #glm.target<tiles = "sm_90", code = "sm_90", sms = 132, max_smem = 232448>} {
  func.func @bf16_norm(%x: tensor<1x256xf32>) -> tensor<1x256xf32> {
    // expected-error @+9 {{no kernel variant for glm.rms_norm fits sm_90 (1 op)}}
    // expected-note @+8 {{candidate rms_norm_bf16_d256_t32: needs an F32 weight (norm vectors are F32 in GGUF files), got BF16}}
    // expected-note @+7 {{candidate rms_norm_bf16_d256_t64: needs an F32 weight (norm vectors are F32 in GGUF files), got BF16}}
    // expected-note @+6 {{candidate rms_norm_bf16_d256_t128: needs an F32 weight (norm vectors are F32 in GGUF files), got BF16}}
    // expected-note @+5 {{candidate rms_norm_bf16_d256_t256: needs an F32 weight (norm vectors are F32 in GGUF files), got BF16}}
    // expected-note @+4 {{candidate rms_norm_bf16_d256_t384: needs an F32 weight (norm vectors are F32 in GGUF files), got BF16}}
    // expected-note @+3 {{candidate rms_norm_bf16_d256_t512: needs an F32 weight (norm vectors are F32 in GGUF files), got BF16}}
    // expected-note @+2 {{candidate rms_norm_bf16_d256_t768: needs an F32 weight (norm vectors are F32 in GGUF files), got BF16}}
    // expected-note @+1 {{candidate rms_norm_bf16_d256_t1024: needs an F32 weight (norm vectors are F32 in GGUF files), got BF16}}
    %y = glm.rms_norm %x {weight = #glm.gguf_tensor<"blk.0.attn_norm.weight", bf16, [256]>, eps = 1.0e-5 : f32} : tensor<1x256xf32>
    return %y : tensor<1x256xf32>
  }
}

// -----

// Tests that a module without a target and without the option is refused.
// expected-error @+1 {{no target: give --target or a module attribute glm.target}}
module {
  func.func @f(%x: tensor<1x256xf32>) -> tensor<1x256xf32> {
    return %x : tensor<1x256xf32>
  }
}

// -----

// Tests that an unknown target name is refused with the known ones.
// expected-error @+1 {{unknown target 'sm_75' (known: sm_120a, sm_120, sm_90a, sm_90)}}
module attributes {glm.target = #glm.target<tiles = "sm_75", code = "sm_75", sms = 40, max_smem = 65536>} {
  func.func @f(%x: tensor<1x256xf32>) -> tensor<1x256xf32> {
    return %x : tensor<1x256xf32>
  }
}

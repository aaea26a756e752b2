// RUN: %glm5c-opt %s --split-input-file --glm-fuse-rope-append | FileCheck %s

// Tests that RoPE of the rope key and of the indexer key, used only by the append, is folded
// into one glm.rope_cache_append that takes the unrotated keys.
!cache = !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>
// CHECK-LABEL: func.func @fused
// CHECK-SAME: (%[[CACHE:[^:]+]]: !glm.kv_cache<{{.*}}>, %[[POS:[^:]+]]: tensor<?xi32>, %[[C:[^:]+]]: tensor<?x512xf32>, %[[KPE:[^:]+]]: tensor<?x64xf32>, %[[KI:[^:]+]]: tensor<?x128xf32>)
func.func @fused(%cache: !cache, %pos: tensor<?xi32>, %c: tensor<?x512xf32>, %kpe: tensor<?x64xf32>, %ki: tensor<?x128xf32>) {
  // CHECK-NOT: glm.rope %
  // CHECK: glm.rope_cache_append %[[CACHE]][3], %[[POS]], %[[C]], %[[KPE]], %[[KI]] {rope_dim = 64 : i64, theta = 1.000000e+06 : f32}
  // CHECK-NOT: glm.cache_append
  %r = glm.rope %kpe, %pos {theta = 1.0e6 : f32, dim = 64 : i64, offset = 0 : i64} : tensor<?x64xf32>, tensor<?xi32>
  %i = glm.rope %ki, %pos {theta = 1.0e6 : f32, dim = 64 : i64, offset = 0 : i64} : tensor<?x128xf32>, tensor<?xi32>
  glm.cache_append %cache[3], %pos, %c, %r, %i : !cache, tensor<?xi32>, tensor<?x512xf32>, tensor<?x64xf32>, tensor<?x128xf32>
  return
}

// -----

// Tests that a rotated key with another use stays unfused (it must exist in memory anyway).
!cache = !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>
// CHECK-LABEL: func.func @other_use
func.func @other_use(%cache: !cache, %pos: tensor<?xi32>, %c: tensor<?x512xf32>, %kpe: tensor<?x64xf32>, %ki: tensor<?x128xf32>) -> tensor<?x64xf32> {
  // CHECK: glm.rope
  // CHECK: glm.rope
  // CHECK: glm.cache_append
  // CHECK-NOT: glm.rope_cache_append
  %r = glm.rope %kpe, %pos {theta = 1.0e6 : f32, dim = 64 : i64, offset = 0 : i64} : tensor<?x64xf32>, tensor<?xi32>
  %i = glm.rope %ki, %pos {theta = 1.0e6 : f32, dim = 64 : i64, offset = 0 : i64} : tensor<?x128xf32>, tensor<?xi32>
  glm.cache_append %cache[0], %pos, %c, %r, %i : !cache, tensor<?xi32>, tensor<?x512xf32>, tensor<?x64xf32>, tensor<?x128xf32>
  return %r : tensor<?x64xf32>
}

// -----

// Tests that keys rotated at other positions than the append's stay unfused.
!cache = !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>
// CHECK-LABEL: func.func @other_positions
func.func @other_positions(%cache: !cache, %pos: tensor<?xi32>, %pos2: tensor<?xi32>, %c: tensor<?x512xf32>, %kpe: tensor<?x64xf32>, %ki: tensor<?x128xf32>) {
  // CHECK: glm.cache_append
  // CHECK-NOT: glm.rope_cache_append
  %r = glm.rope %kpe, %pos2 {theta = 1.0e6 : f32, dim = 64 : i64, offset = 0 : i64} : tensor<?x64xf32>, tensor<?xi32>
  %i = glm.rope %ki, %pos {theta = 1.0e6 : f32, dim = 64 : i64, offset = 0 : i64} : tensor<?x128xf32>, tensor<?xi32>
  glm.cache_append %cache[0], %pos, %c, %r, %i : !cache, tensor<?xi32>, tensor<?x512xf32>, tensor<?x64xf32>, tensor<?x128xf32>
  return
}

// -----

// Tests that keys rotated with different thetas stay unfused (one fused op has one theta).
!cache = !glm.kv_cache<layers = 4, latent = 512, rope = 64, index_dim = 128>
// CHECK-LABEL: func.func @two_thetas
func.func @two_thetas(%cache: !cache, %pos: tensor<?xi32>, %c: tensor<?x512xf32>, %kpe: tensor<?x64xf32>, %ki: tensor<?x128xf32>) {
  // CHECK: glm.cache_append
  // CHECK-NOT: glm.rope_cache_append
  %r = glm.rope %kpe, %pos {theta = 1.0e6 : f32, dim = 64 : i64, offset = 0 : i64} : tensor<?x64xf32>, tensor<?xi32>
  %i = glm.rope %ki, %pos {theta = 1.0e4 : f32, dim = 64 : i64, offset = 0 : i64} : tensor<?x128xf32>, tensor<?xi32>
  glm.cache_append %cache[0], %pos, %c, %r, %i : !cache, tensor<?xi32>, tensor<?x512xf32>, tensor<?x64xf32>, tensor<?x128xf32>
  return
}

// Host reference kernels for GLM-5 (docs/model.md): the numerics every GPU kernel is tested
// against, and the runtime's CPU backend.
//
// Conventions shared by every function below:
// - Activations are row-major float arrays; T is the number of tokens. Shapes are listed
//   outermost first ([T, H, D]); weights are listed in GGUF `ne` order ({in, out}, ne[0]
//   contiguous), as docs/model.md ("GGUF tensors") does.
// - Dot products and reductions accumulate in double; results are stored as float. The order of
//   every sum is fixed, so a result never depends on the thread count.
// - Functions returning Status validate their shapes against the weights' dims and name what
//   mismatched; on error the outputs are unspecified. Void functions trust their arguments
//   (pointers sized as documented); their preconditions are listed.
// - Outputs never alias inputs unless a function says so.
#pragma once

#include "runtime/gguf/ggml_types.h"
#include "runtime/support/status.h"

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace glm5rt::host {

// A GGUF weight: type, data, dims in GGUF order (ne[0] contiguous). Row r of a {ne0, ne1, ne2}
// tensor is the ne0 elements at r * rowBytes (r over ne1 * ne2). Dims at and past nDims are
// ignored (read as 1). The data is trusted to hold ggmlTensorBytes(type, ne, nDims) bytes; the
// GGUF reader checked that at load.
struct Weight {
  gguf::GgmlType type = gguf::GgmlType::F32;
  const uint8_t *data = nullptr;
  uint64_t ne[4] = {1, 1, 1, 1};
  uint32_t nDims = 0;
};

// A weight of `type` over `data` with dims `ne` (1 to 4 of them, GGUF order).
Weight makeWeight(gguf::GgmlType type, const void *data, std::initializer_list<uint64_t> ne);
// The number of ne0-element rows: the product of ne[1..nDims).
uint64_t weightRows(const Weight &w);
// "{192, 512, 64}".
std::string weightDims(const Weight &w);
// Ok when `w` is usable: 1 to 4 dims, no zero dim, data present, a type dequantizeRow handles
// and ne0 a whole number of its blocks. `what` names the caller and the weight in the message.
Status checkWeight(const Weight &w, const char *what);

// Dequantizes rows [r0, r0 + n) of w into out (n * ne0 floats).
Status dequantRows(const Weight &w, uint64_t r0, uint64_t n, float *out);

// Token embedding lookup: out[t] = row tokens[t] of table {H, V}; out is [T, H]. A token outside
// [0, V) is an error naming it and its index.
Status embed(const int32_t *tokens, int64_t T, const Weight &table, float *out);

// RMSNorm (docs/model.md "Forward pass"): y = w * x / sqrt(mean(x^2) + eps) per row of D; w {D}.
// y may alias x.
Status rmsNorm(const float *x, int64_t rows, int64_t D, const Weight &w, float eps, float *y);

// LayerNorm with bias (the indexer key norm, docs/model.md "DSA lightning indexer"):
// y = (x - mean) / sqrt(var + eps) * w + b with the biased variance (mean of squared
// deviations); w and b {D}. y may alias x.
Status layerNorm(const float *x, int64_t rows, int64_t D, const Weight &w, const Weight &b,
                 float eps, float *y);

// y[t][n] = sum_k W[n][k] x[t][k] for W {K, N} (row n has K elements); x [T, K], y [T, N].
Status linear(const float *x, int64_t T, const Weight &W, float *y);
// The same, checking that W takes K inputs
// ("linear: weight {256, 2048} does not take 512 inputs").
Status linear(const float *x, int64_t T, int64_t K, const Weight &W, float *y);

// Per-head products (glm.head_linear; docs/model.md "kv_b and its split"). W {a, b, H}: head h is
// a b x a matrix (row j of head h = tensor row h * b + j, a elements).
// transpose=false: y[t,h,j] = sum_i W[h][j][i] x[t,h,i]  (in = a, out = b)
// transpose=true:  y[t,h,i] = sum_j W[h][j][i] x[t,h,j]  (in = b, out = a)
// sharedInput: x is [T, in], used by every head; otherwise x is [T, H, in]. y is [T, H, out].
// A 2-dim W is one head.
Status headLinear(const float *x, int64_t T, bool sharedInput, const Weight &W, bool transpose,
                  float *y);

// Interleaved RoPE (docs/model.md "RoPE") on columns [offset, offset + dim) of each of
// T * rowsPerToken rows of width `width`. Row r belongs to token r / rowsPerToken and is rotated
// by angle positions[token] * theta^(-2i / dim) for pair i; pairs (2i, 2i + 1) are adjacent:
// (x0, x1) <- (x0 c - x1 s, x0 s + x1 c). Angles and the rotation are computed in double.
// Preconditions: dim even, 0 <= offset, offset + dim <= width. Other columns are untouched.
void rope(float *x, int64_t T, int64_t rowsPerToken, int64_t width, const int32_t *positions,
          float theta, int64_t dim, int64_t offset);

// The KV cache of all layers on the host (docs/model.md "KV cache per token"): per layer,
// `capacity` rows of latent (kvLora), rope key (rope) and indexer key (indexDim), indexed by
// position. Rows never written read as zeros.
class KVCache {
public:
  KVCache() = default;
  // Dims must be non-negative and small enough to allocate; `create` checks that first.
  KVCache(int64_t layers, int64_t capacity, int64_t kvLora, int64_t rope, int64_t indexDim);
  // Checks the dims (non-negative, total size without overflow) before allocating.
  static StatusOr<KVCache> create(int64_t layers, int64_t capacity, int64_t kvLora, int64_t rope,
                                  int64_t indexDim);

  // Writes row positions[t] of each part of `layer` from row t of latent [T, kvLora],
  // ropeKey [T, rope] and indexKey [T, indexDim]. A layer out of range, or a position < 0 or
  // >= capacity, is an error and nothing is written.
  Status append(int64_t layer, const int32_t *positions, int64_t T, const float *latent,
                const float *ropeKey, const float *indexKey);

  // All `capacity` rows of one part of `layer` ([capacity, dim]); layer must be in range.
  const float *latent(int64_t layer) const;
  const float *ropeKey(int64_t layer) const;
  const float *indexKey(int64_t layer) const;
  // One past the highest position written in `layer` (0 before the first append): the number
  // of keys attention and the indexer must scan.
  int64_t length(int64_t layer) const;

  int64_t layers() const { return layers_; }
  int64_t capacity() const { return capacity_; }
  int64_t kvLora() const { return kvLora_; }
  int64_t ropeDim() const { return rope_; }
  int64_t indexDim() const { return indexDim_; }

private:
  int64_t layers_ = 0, capacity_ = 0, kvLora_ = 0, rope_ = 0, indexDim_ = 0;
  std::vector<float> latent_, ropeKey_, indexKey_; // [layers, capacity, dim] each
  std::vector<int64_t> length_;                    // per layer
};

// DSA indexer scores (docs/model.md "DSA lightning indexer"), ReLU per head before the weighted
// sum: scores[t][s] = scale * sum_h w[t][h] * max(0, q[t,h,:] . keys[s,:]) for
// s <= positions[t], -INFINITY for s > positions[t]; s < nKeys. q [T, HI, DI], w [T, HI],
// keys [nKeys, DI], scores [T, nKeys].
void indexerScore(const float *q, const float *w, int64_t T, int64_t HI, int64_t DI,
                  const float *keys, int64_t nKeys, const int32_t *positions, float scale,
                  float *scores);

// Causal top-k: row t selects the min(k, positions[t] + 1) positions s <= positions[t] with the
// highest scores (scores [T, nKeys]); ties go to the LOWER position, NaN ranks below every
// number. The selected positions are written in ascending order to indices [T, k], remaining
// slots -1. Candidates are also bounded by nKeys: positions[t] >= nKeys selects among all keys.
void topK(const float *scores, int64_t T, int64_t nKeys, const int32_t *positions, int64_t k,
          int32_t *indices);

// Dense selection (the --attention dense reference): row t of out [T, width] is
// 0, 1, .., positions[t], then -1 up to width. A row of a negative position is all -1. Error when
// positions[t] + 1 > width.
Status causalAll(const int32_t *positions, int64_t T, int32_t *out, int64_t width);

// Naive MLA attention, the form the importer writes (docs/model.md "Naive and absorbed
// attention"): q [T, H, nope + rope] (each head [nope | rope]), kNope [C, H, nope], kRope [C, rope]
// shared by the heads, v [C, H, dv], indices [T, K]:
// o[t,h] = sum_s softmax_s(scale * (q_nope . kNope[s,h] + q_pe . kRope[s])) v[s,h] over the
// s in indices[t]; slots of -1 (or any value outside [0, C)) are skipped. Scores and softmax in
// double. A row with no valid index gives zeros. o is [T, H, dv].
void attention(const float *q, const float *kNope, const float *kRope, const float *v, int64_t T,
               int64_t C, int64_t H, int64_t nope, int64_t rope, int64_t dv, const int32_t *indices,
               int64_t K, float scale, float *o);

// Absorbed sparse MLA (glm.sparse_mla): qLat [T, H, L], qRope [T, H, R], latent [C, L],
// ropeKey [C, R]; score_s = scale * (qLat . latent[s] + qRope . ropeKey[s]) over the s in
// indices[t] (skipped as in attention); oLat [T, H, L] = sum_s softmax(score)_s latent[s];
// lse [T, H] = log sum_s exp(score_s) (natural log). A row with no valid index: oLat 0,
// lse -INFINITY. Scores and softmax in double.
void sparseMla(const float *qLat, const float *qRope, int64_t T, int64_t H, int64_t L, int64_t R,
               const float *latent, const float *ropeKey, int64_t C, const int32_t *indices,
               int64_t K, float scale, float *oLat, float *lse);

// MoE gate (docs/model.md "MoE"): s = sigmoid(logits) (logits [T, E]); choose the k experts
// with the largest s + bias (bias {E}; ties: lower expert id); weights = s[chosen] (unbiased),
// divided by their sum (+1e-20) if normalize, times scale. ids [T, k] are written in descending
// order of s + bias, weights [T, k] alongside. s is rounded to float before use; s + bias is
// compared in double.
Status moeGate(const float *logits, int64_t T, int64_t E, const Weight &bias, int64_t k,
               bool normalize, float scale, float *weights, int32_t *ids);

// SwiGLU FFN (docs/model.md "Forward pass"): y = down(silu(gate x) * up x), gate and up {Hd, F},
// down {F, Hd}, silu(z) = z / (1 + exp(-z)); x and y [T, Hd].
Status swiglu(const float *x, int64_t T, const Weight &gate, const Weight &up, const Weight &down,
              float *y);

// SwiGLU's hidden layer (glm.gate_up): h = silu(gate x) * (up x), gate and up {Hd, F}; x [T, Hd],
// h [T, F].
Status gateUp(const float *x, int64_t T, const Weight &gate, const Weight &up, float *h);

// Routed experts: stacked gate and up {Hd, F, E}, down {F, Hd, E}; expert e of gate and up is rows
// [e * F, (e + 1) * F), of down rows [e * Hd, (e + 1) * Hd).
// y[t] = sum_j weights[t][j] * expert_{ids[t][j]}(x[t]) (weights and ids [T, k], x and y
// [T, Hd]). The sum runs in ascending expert id (then slot) order, in double. An id out of
// [0, allExperts) is an error naming the token and slot. A rank's shard holds the model's experts
// [firstExpert, firstExpert + E) (allExperts: the model's count, default E); slots routed
// elsewhere contribute nothing here.
Status moeExperts(const float *x, int64_t T, const float *weights, const int32_t *ids, int64_t k,
                  const Weight &gate, const Weight &up, const Weight &down, float *y,
                  int64_t firstExpert = 0, int64_t allExperts = -1);

// y = a + b elementwise over n floats; y may alias a or b.
void add(const float *a, const float *b, int64_t n, float *y);

} // namespace glm5rt::host

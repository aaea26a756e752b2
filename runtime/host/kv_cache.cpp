// The host KV cache: per layer, position-indexed rows of MLA latent, rope key and indexer key
// (docs/model.md "KV cache per token").
#include "runtime/host/ops.h"

#include "runtime/gguf/ggml_types.h"

#include <algorithm>
#include <cstring>

namespace glm5rt::host {

namespace {

size_t partSize(int64_t layers, int64_t capacity, int64_t dim) {
  return static_cast<size_t>(layers) * static_cast<size_t>(capacity) * static_cast<size_t>(dim);
}

} // namespace

KVCache::KVCache(int64_t layers, int64_t capacity, int64_t kvLora, int64_t rope, int64_t indexDim)
    : layers_(layers), capacity_(capacity), kvLora_(kvLora), rope_(rope), indexDim_(indexDim),
      latent_(partSize(layers, capacity, kvLora), 0.0f),
      ropeKey_(partSize(layers, capacity, rope), 0.0f),
      indexKey_(partSize(layers, capacity, indexDim), 0.0f),
      length_(static_cast<size_t>(layers), 0) {}

StatusOr<KVCache> KVCache::create(int64_t layers, int64_t capacity, int64_t kvLora, int64_t rope,
                                  int64_t indexDim) {
  if (layers < 0 || capacity < 0 || kvLora < 0 || rope < 0 || indexDim < 0)
    return makeStatus(StatusCode::kInvalidArgument,
                      "KVCache: negative dim (layers %lld, capacity %lld, latent %lld, rope %lld, "
                      "index %lld)",
                      static_cast<long long>(layers), static_cast<long long>(capacity),
                      static_cast<long long>(kvLora), static_cast<long long>(rope),
                      static_cast<long long>(indexDim));
  // Floats per layer and position, then in all; each part must also be addressable.
  uint64_t row = 0, rows = 0, total = 0;
  if (gguf::addOverflows(static_cast<uint64_t>(kvLora), static_cast<uint64_t>(rope), &row) ||
      gguf::addOverflows(row, static_cast<uint64_t>(indexDim), &row) ||
      gguf::mulOverflows(static_cast<uint64_t>(layers), static_cast<uint64_t>(capacity), &rows) ||
      gguf::mulOverflows(rows, row, &total) || gguf::mulOverflows(total, 4, &total) ||
      total > (uint64_t(1) << 62))
    return makeStatus(StatusCode::kResourceExhausted,
                      "KVCache: %lld layers x %lld positions x (%lld + %lld + %lld) floats is too "
                      "large",
                      static_cast<long long>(layers), static_cast<long long>(capacity),
                      static_cast<long long>(kvLora), static_cast<long long>(rope),
                      static_cast<long long>(indexDim));
  return KVCache(layers, capacity, kvLora, rope, indexDim);
}

Status KVCache::append(int64_t layer, const int32_t *positions, int64_t T, const float *latent,
                       const float *ropeKey, const float *indexKey) {
  if (layer < 0 || layer >= layers_)
    return makeStatus(StatusCode::kInvalidArgument, "KVCache::append: layer %lld of %lld",
                      static_cast<long long>(layer), static_cast<long long>(layers_));
  if (T < 0)
    return makeStatus(StatusCode::kInvalidArgument, "KVCache::append: negative token count %lld",
                      static_cast<long long>(T));
  // Check every position before writing, so a failed append leaves the cache as it was.
  for (int64_t t = 0; t < T; ++t) {
    if (positions[t] < 0)
      return makeStatus(StatusCode::kInvalidArgument,
                        "KVCache::append: token %lld has negative position %d",
                        static_cast<long long>(t), positions[t]);
    if (positions[t] >= capacity_)
      return makeStatus(StatusCode::kResourceExhausted,
                        "KVCache::append: token %lld at position %d is past the cache capacity "
                        "of %lld positions",
                        static_cast<long long>(t), positions[t], static_cast<long long>(capacity_));
  }
  auto copyRows = [&](std::vector<float> &part, int64_t dim, const float *src) {
    float *base = part.data() + static_cast<size_t>(layer * capacity_ * dim);
    for (int64_t t = 0; t < T && dim > 0; ++t)
      std::memcpy(base + positions[t] * dim, src + t * dim, static_cast<size_t>(dim) * 4);
  };
  copyRows(latent_, kvLora_, latent);
  copyRows(ropeKey_, rope_, ropeKey);
  copyRows(indexKey_, indexDim_, indexKey);
  for (int64_t t = 0; t < T; ++t)
    length_[layer] = std::max<int64_t>(length_[layer], positions[t] + 1);
  return Status::ok();
}

const float *KVCache::latent(int64_t layer) const {
  return latent_.data() + static_cast<size_t>(layer * capacity_ * kvLora_);
}
const float *KVCache::ropeKey(int64_t layer) const {
  return ropeKey_.data() + static_cast<size_t>(layer * capacity_ * rope_);
}
const float *KVCache::indexKey(int64_t layer) const {
  return indexKey_.data() + static_cast<size_t>(layer * capacity_ * indexDim_);
}
int64_t KVCache::length(int64_t layer) const { return length_[layer]; }

} // namespace glm5rt::host

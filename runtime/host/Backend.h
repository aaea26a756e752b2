// The host backend: executes a plan's step lists with the reference kernels of ops.h, reading
// weights from the mapped GGUF in their quant formats. Slow, exact (fp32 activations, fp64
// sums): the CI path and the reference the cuda backend is checked against step by step.
#pragma once

#include "runtime/backend/Backend.h"
#include "runtime/gguf/gguf_reader.h"
#include "runtime/host/ops.h"
#include "runtime/plan/Plan.h"
#include "runtime/support/status.h"

#include <memory>
#include <string>
#include <vector>

namespace glm5rt::host {

class Mesh;

class Backend : public glm5rt::Backend {
public:
  // Binds the plan's weight table to `gguf` (checked against the plan's fingerprint and every
  // weight's type, shape and extent) and allocates a KV cache of `contextCapacity` positions.
  // A sharded plan's rank `rank` runs its own step lists, its AllReduce steps through `mesh`
  // (runtime/host/Mesh.h; required when the plan has several ranks).
  static StatusOr<std::unique_ptr<Backend>> create(const plan::LoadedPlan &plan,
                                                   const gguf::GgufFile &gguf,
                                                   int64_t contextCapacity, int rank = 0,
                                                   Mesh *mesh = nullptr);

  Status run(const std::string &entry, const int32_t *tokens, const int32_t *positions, int64_t T,
             std::vector<float> *logits) override;
  int64_t contextCapacity() const override { return cache_.capacity(); }
  int64_t vocab() const override { return plan_.config()->vocab(); }
  int64_t maxChunk() const override { return int64_t(1) << 30; }
  const char *name() const override { return "host"; }
  Status setStepOutputs(const StepTrace &t,
                        const std::vector<std::vector<float>> &values) override;

private:
  Backend(const glm5::plan::Plan &p) : plan_(p) {}
  Status runStep(const glm5::plan::Step &s, int64_t T, const int32_t *tokens,
                 const int32_t *positions);

  const glm5::plan::Plan &plan_;
  int rank_ = 0;
  Mesh *mesh_ = nullptr;
  std::vector<Weight> weights_;
  // Boxes of tensors (a rank's shards) gathered into contiguous copies.
  std::vector<std::vector<uint8_t>> boxes_;
  KVCache cache_;
  // Per buffer id: float data, or int32 for I32 buffers; `width` of per-context buffers.
  std::vector<std::vector<float>> f_;
  std::vector<std::vector<int32_t>> i_;
  std::vector<int64_t> contextWidth_;
};

} // namespace glm5rt::host

// The host backend: executes a plan's step lists with the reference kernels of ops.h, reading
// weights from the mapped GGUF in their quant formats. Slow, exact (fp32 activations, fp64
// sums): the CI path and the reference the cuda backend is checked against step by step.
#pragma once

#include "runtime/gguf/gguf_reader.h"
#include "runtime/host/ops.h"
#include "runtime/plan/Plan.h"
#include "runtime/support/status.h"

#include <memory>
#include <string>
#include <vector>

namespace glm5rt::host {

class Backend {
public:
  // Binds the plan's weight table to `gguf` (checked against the plan's fingerprint and every
  // weight's type, shape and extent) and allocates a KV cache of `contextCapacity` positions.
  static StatusOr<std::unique_ptr<Backend>> create(const plan::LoadedPlan &plan,
                                                   const gguf::GgufFile &gguf,
                                                   int64_t contextCapacity);

  // Runs entry point `entry` ("prefill" or "decode") for T tokens at `positions` (each below
  // the capacity; decode takes T = 1). Fills logits [T, vocab].
  Status run(const std::string &entry, const int32_t *tokens, const int32_t *positions, int64_t T,
             std::vector<float> *logits);

  int64_t contextCapacity() const { return cache_.capacity(); }
  int64_t vocab() const { return plan_.config()->vocab(); }

  // Called after each step with its name, index and output buffers (for --check and dumps).
  struct StepTrace {
    const glm5::plan::Step *step;
    int index;
    const std::vector<float> *output; // the first output, as float (ids converted)
  };
  void setTrace(void (*fn)(const StepTrace &, void *), void *user) {
    trace_ = fn;
    traceUser_ = user;
  }

private:
  Backend(const glm5::plan::Plan &p) : plan_(p) {}
  Status runStep(const glm5::plan::Step &s, int64_t T, const int32_t *tokens,
                 const int32_t *positions);

  const glm5::plan::Plan &plan_;
  std::vector<Weight> weights_;
  KVCache cache_;
  // Per buffer id: float data, or int32 for I32 buffers; `width` of per-context buffers.
  std::vector<std::vector<float>> f_;
  std::vector<std::vector<int32_t>> i_;
  std::vector<int64_t> contextWidth_;
  void (*trace_)(const StepTrace &, void *) = nullptr;
  void *traceUser_ = nullptr;
};

} // namespace glm5rt::host

// A mesh of ranks on the host (sharded plans, glm5c compile --tp N): one host backend per rank,
// each running its rank's step list on its own thread, the plan's AllReduce steps summed and
// AllGather steps concatenated through shared memory. It is what CI runs to check that a sharded plan computes the
// single-rank plan's logits, and the reference the multi-GPU runtime is checked against.
#pragma once
#include "runtime/backend/Backend.h"
#include "runtime/gguf/gguf_reader.h"
#include "runtime/plan/Plan.h"
#include "runtime/support/status.h"

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace glm5rt::host {

class Backend;

// Collectives between `ranks` threads. Invariant: every rank calls the same collectives in the
// same order (the plan's step lists pair them up one to one); once one rank aborts, every call
// returns an error instead of waiting for it.
class Mesh {
public:
  explicit Mesh(int ranks);
  int ranks() const { return ranks_; }
  // out = sum over ranks of each rank's n floats at `data`, added in rank order in double, so
  // every rank gets bitwise the same sum. Blocks until every rank has contributed.
  Status allReduce(int rank, const float *data, int64_t n, float *out);
  // out [rows, ranks * cols] = every rank's [rows, cols] at `data`, rank r's at columns
  // [r cols, (r + 1) cols). Blocks until every rank has contributed.
  Status allGather(int rank, const float *data, int64_t rows, int64_t cols, float *out);
  // Releases every waiting rank with an error (a rank failed and will not arrive).
  void abort();
  // Makes the mesh usable again after every rank has returned.
  void reset();

private:
  Status barrier(std::unique_lock<std::mutex> &lock);
  // Puts this rank's n floats at `data` where every rank reads them, waits for every rank, and
  // checks that all published as many (else the step lists do not pair up: aborts the mesh).
  Status publish(std::unique_lock<std::mutex> &lock, int rank, const float *data, int64_t n,
                 const char *what);
  const int ranks_;
  std::mutex m_;
  std::condition_variable cv_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  bool aborted_ = false;
  std::vector<const float *> data_;
  std::vector<int64_t> count_;
};

// The glm5rt::Backend of a sharded plan on the host: rank 0's logits (every rank gets the same
// ones: the vocabulary slices are all-gathered).
class MeshBackend : public glm5rt::Backend {
public:
  static StatusOr<std::unique_ptr<MeshBackend>> create(const plan::LoadedPlan &plan,
                                                       const gguf::GgufFile &gguf,
                                                       int64_t contextCapacity);
  ~MeshBackend() override;
  Status run(const std::string &entry, const int32_t *tokens, const int32_t *positions, int64_t T,
             std::vector<float> *logits) override;
  int64_t contextCapacity() const override;
  int64_t vocab() const override;
  int64_t maxChunk() const override;
  const char *name() const override { return "host mesh"; }

private:
  MeshBackend() = default;
  std::unique_ptr<Mesh> mesh_;
  std::vector<std::unique_ptr<host::Backend>> ranks_; // one per rank
};

} // namespace glm5rt::host

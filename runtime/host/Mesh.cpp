// Host mesh (see Mesh.h).
#include "runtime/host/Mesh.h"
#include "runtime/host/Backend.h"

#include <thread>

namespace glm5rt::host {

Mesh::Mesh(int ranks) : ranks_(ranks), data_(static_cast<size_t>(ranks)), count_(static_cast<size_t>(ranks)) {}

Status Mesh::barrier(std::unique_lock<std::mutex> &lock) {
  if (aborted_)
    return makeStatus(StatusCode::kAborted, "another rank of the mesh failed");
  const uint64_t gen = generation_;
  if (++arrived_ == ranks_) {
    arrived_ = 0;
    ++generation_;
    cv_.notify_all();
    return Status::ok();
  }
  cv_.wait(lock, [&] { return generation_ != gen || aborted_; });
  return aborted_ ? makeStatus(StatusCode::kAborted, "another rank of the mesh failed")
                  : Status::ok();
}

Status Mesh::publish(std::unique_lock<std::mutex> &lock, int rank, const float *data, int64_t n,
                     const char *what) {
  data_[static_cast<size_t>(rank)] = data;
  count_[static_cast<size_t>(rank)] = n;
  GLM5_RETURN_IF_ERROR(barrier(lock)); // every rank's input is in place
  for (int r = 1; r < ranks_; ++r)
    if (count_[static_cast<size_t>(r)] != count_[0]) {
      aborted_ = true;
      cv_.notify_all();
      return makeStatus(StatusCode::kInternal,
                        "%s of %lld floats on rank 0 but %lld on rank %d: the ranks' step lists "
                        "do not pair up",
                        what, static_cast<long long>(count_[0]),
                        static_cast<long long>(count_[static_cast<size_t>(r)]), r);
    }
  return Status::ok();
}

Status Mesh::allReduce(int rank, const float *data, int64_t n, float *out) {
  std::unique_lock<std::mutex> lock(m_);
  GLM5_RETURN_IF_ERROR(publish(lock, rank, data, n, "all-reduce"));
  lock.unlock();
  // Inputs stay put until the second barrier: each rank reads them all, writes only `out`.
  std::vector<float> sum(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    double acc = 0;
    for (int r = 0; r < ranks_; ++r)
      acc += data_[static_cast<size_t>(r)][i];
    sum[static_cast<size_t>(i)] = static_cast<float>(acc);
  }
  lock.lock();
  GLM5_RETURN_IF_ERROR(barrier(lock)); // every rank has read every input
  lock.unlock();
  std::copy(sum.begin(), sum.end(), out);
  return Status::ok();
}

Status Mesh::allGather(int rank, const float *data, int64_t rows, int64_t cols, float *out) {
  std::unique_lock<std::mutex> lock(m_);
  GLM5_RETURN_IF_ERROR(publish(lock, rank, data, rows * cols, "all-gather"));
  lock.unlock();
  // Inputs stay put until the second barrier; `out` is this rank's own buffer.
  std::vector<float> all(static_cast<size_t>(rows * cols * ranks_));
  for (int64_t t = 0; t < rows; ++t)
    for (int r = 0; r < ranks_; ++r)
      std::copy(data_[static_cast<size_t>(r)] + t * cols, data_[static_cast<size_t>(r)] + (t + 1) * cols,
                all.begin() + (t * ranks_ + r) * cols);
  lock.lock();
  GLM5_RETURN_IF_ERROR(barrier(lock)); // every rank has read every slice
  lock.unlock();
  std::copy(all.begin(), all.end(), out);
  return Status::ok();
}

void Mesh::abort() {
  std::lock_guard<std::mutex> lock(m_);
  aborted_ = true;
  cv_.notify_all();
}

void Mesh::reset() {
  std::lock_guard<std::mutex> lock(m_);
  aborted_ = false;
  arrived_ = 0;
}

StatusOr<std::unique_ptr<MeshBackend>> MeshBackend::create(const plan::LoadedPlan &plan,
                                                           const gguf::GgufFile &gguf,
                                                           int64_t contextCapacity) {
  const int ranks = plan.plan().ranks();
  std::unique_ptr<MeshBackend> m(new MeshBackend());
  m->mesh_ = std::make_unique<Mesh>(ranks);
  for (int r = 0; r < ranks; ++r) {
    auto b = host::Backend::create(plan, gguf, contextCapacity, r, m->mesh_.get());
    if (!b.isOk())
      return b.status().withContext(strFormat("rank %d", r));
    m->ranks_.push_back(std::move(b).value());
  }
  return m;
}

MeshBackend::~MeshBackend() = default;

Status MeshBackend::run(const std::string &entry, const int32_t *tokens, const int32_t *positions,
                        int64_t T, std::vector<float> *logits) {
  const size_t n = ranks_.size();
  std::vector<Status> status(n);
  std::vector<std::vector<float>> out(n);
  ranks_[0]->setTrace(trace_); // traces show rank 0's steps
  auto work = [&](size_t r) {
    status[r] = ranks_[r]->run(entry, tokens, positions, T, &out[r]);
    if (!status[r].isOk())
      mesh_->abort();
  };
  std::vector<std::thread> threads;
  for (size_t r = 1; r < n; ++r)
    threads.emplace_back(work, r);
  work(0);
  for (std::thread &t : threads)
    t.join();
  mesh_->reset();
  // The first rank that failed for its own reason (the others report the abort).
  for (size_t r = 0; r < n; ++r)
    if (!status[r].isOk() && status[r].code() != StatusCode::kAborted)
      return status[r].withContext(strFormat("rank %zu", r));
  for (size_t r = 0; r < n; ++r)
    if (!status[r].isOk())
      return status[r];
  *logits = std::move(out[0]);
  return Status::ok();
}

int64_t MeshBackend::contextCapacity() const { return ranks_[0]->contextCapacity(); }
int64_t MeshBackend::vocab() const { return ranks_[0]->vocab(); }
int64_t MeshBackend::maxChunk() const { return ranks_[0]->maxChunk(); }

} // namespace glm5rt::host

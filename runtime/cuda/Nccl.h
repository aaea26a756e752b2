// NCCL, loaded at run time (dlopen of libnccl.so.2, or of the file GLM5_NCCL_LIBRARY names) and
// only for plans with several ranks: the
// collectives of a sharded plan between GPUs (docs/runtime.md "Several GPUs"). The types are
// the subset of nccl.h's stable ABI this runtime uses (checked against the header by a unit
// test where the CUDA toolkit is installed), so nothing links against NCCL.
#pragma once
#include "runtime/cuda/Driver.h"
#include "runtime/support/status.h"

#include <array>
#include <memory>
#include <cstdint>
#include <string>

namespace glm5rt::cuda {

// NCCL's unique id: 128 opaque bytes that rank 0 creates and every rank passes to init.
using NcclId = std::array<char, 128>;

class Nccl {
public:
  // Loads libnccl.so.2 once; the error names the library and what would help.
  static StatusOr<const Nccl *> load();
  int version() const { return version_; } // e.g. 22805 for 2.28.5

  StatusOr<NcclId> uniqueId() const;

  // One rank's communicator on the current device (the process's CUDA context).
  class Comm {
  public:
    ~Comm();
    Comm(const Comm &) = delete;
    Comm &operator=(const Comm &) = delete;
    int rank() const { return rank_; }
    int ranks() const { return ranks_; }
    // out = sum over the ranks of `count` elements (bf16 or f32) at `in`, enqueued on `stream`
    // (capturable in a CUDA graph). in may equal out.
    Status allReduce(DevicePtr in, DevicePtr out, uint64_t count, bool bf16, Stream stream) const;
    // out = the ranks' `count` elements each, concatenated in rank order ([ranks][count]),
    // enqueued on `stream` (capturable).
    Status allGather(DevicePtr in, DevicePtr out, uint64_t count, bool bf16, Stream stream) const;

  private:
    friend class Nccl;
    Comm(const Nccl *nccl, void *comm, int rank, int ranks)
        : nccl_(nccl), comm_(comm), rank_(rank), ranks_(ranks) {}
    const Nccl *nccl_;
    void *comm_;
    int rank_, ranks_;
  };
  StatusOr<std::unique_ptr<Comm>> initRank(const NcclId &id, int rank, int ranks) const;

private:
  Status check(int result, const char *call) const;
  void *lib_ = nullptr;
  int version_ = 0;
  int (*getVersion_)(int *) = nullptr;
  int (*getUniqueId_)(NcclId *) = nullptr;
  int (*commInitRank_)(void **, int, NcclId, int) = nullptr;
  int (*commDestroy_)(void *) = nullptr;
  int (*allReduce_)(const void *, void *, size_t, int, int, void *, Stream) = nullptr;
  int (*allGather_)(const void *, void *, size_t, int, void *, Stream) = nullptr;
  const char *(*getErrorString_)(int) = nullptr;
};

// The ABI constants used (nccl.h: ncclFloat32, ncclBfloat16, ncclSum, ncclSuccess).
inline constexpr int kNcclFloat32 = 7, kNcclBfloat16 = 9, kNcclSum = 0, kNcclSuccess = 0;

// Bootstrap of the unique id between the ranks' processes through a file: rank 0 writes it
// (to a temporary name, then renames, so a reader never sees half of it); the others wait up to
// `timeoutMs` for it. On one host the file lives in a temporary directory; across hosts, on a
// shared file system.
Status writeNcclId(const std::string &path, const NcclId &id);
StatusOr<NcclId> readNcclId(const std::string &path, int timeoutMs);

} // namespace glm5rt::cuda

// NCCL loaded at run time (see Nccl.h).
#include "runtime/cuda/Nccl.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <thread>

namespace glm5rt::cuda {

StatusOr<const Nccl *> Nccl::load() {
  static Nccl *instance = nullptr;
  static Status status;
  if (instance || !status.isOk())
    return instance ? StatusOr<const Nccl *>(instance) : StatusOr<const Nccl *>(status);
  auto fail = [&](Status s) -> StatusOr<const Nccl *> {
    status = s;
    return s;
  };
  // GLM5_NCCL_LIBRARY names the library file where the loader's search path does not find it.
  const char *path = std::getenv("GLM5_NCCL_LIBRARY");
  void *lib = dlopen(path && *path ? path : "libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    return fail(makeStatus(StatusCode::kNotFound,
                           "cannot load NCCL (%s), which plans with several ranks need on GPUs: "
                           "%s; install NCCL (it ships with the CUDA toolkit) and add its folder "
                           "to LD_LIBRARY_PATH, or set GLM5_NCCL_LIBRARY to the file",
                           path && *path ? path : "libnccl.so.2", dlerror()));
  Nccl *n = new Nccl();
  n->lib_ = lib;
  struct Entry {
    void **slot;
    const char *name;
  } entries[] = {
      {reinterpret_cast<void **>(&n->getVersion_), "ncclGetVersion"},
      {reinterpret_cast<void **>(&n->getUniqueId_), "ncclGetUniqueId"},
      {reinterpret_cast<void **>(&n->commInitRank_), "ncclCommInitRank"},
      {reinterpret_cast<void **>(&n->commDestroy_), "ncclCommDestroy"},
      {reinterpret_cast<void **>(&n->allReduce_), "ncclAllReduce"},
      {reinterpret_cast<void **>(&n->allGather_), "ncclAllGather"},
      {reinterpret_cast<void **>(&n->getErrorString_), "ncclGetErrorString"},
  };
  for (const Entry &e : entries)
    if (!(*e.slot = dlsym(lib, e.name)))
      return fail(makeStatus(StatusCode::kNotFound, "libnccl.so.2 lacks %s", e.name));
  Status v = n->check(n->getVersion_(&n->version_), "ncclGetVersion");
  if (!v.isOk())
    return fail(v);
  if (n->version_ < 21000) // bf16 all-reduce and CUDA-graph capture
    return fail(makeStatus(StatusCode::kFailedPrecondition,
                           "NCCL %d is older than 2.10, the first with bf16 collectives",
                           n->version_));
  instance = n;
  return instance;
}

Status Nccl::check(int result, const char *call) const {
  if (result == kNcclSuccess)
    return Status::ok();
  return makeStatus(StatusCode::kInternal, "%s failed: %s (NCCL error %d)", call,
                    getErrorString_ ? getErrorString_(result) : "?", result);
}

StatusOr<NcclId> Nccl::uniqueId() const {
  NcclId id{};
  GLM5_RETURN_IF_ERROR(check(getUniqueId_(&id), "ncclGetUniqueId"));
  return id;
}

StatusOr<std::unique_ptr<Nccl::Comm>> Nccl::initRank(const NcclId &id, int rank, int ranks) const {
  if (ranks < 1 || rank < 0 || rank >= ranks)
    return makeStatus(StatusCode::kInvalidArgument, "NCCL rank %d of %d", rank, ranks);
  void *comm = nullptr;
  GLM5_RETURN_IF_ERROR(check(commInitRank_(&comm, ranks, id, rank), "ncclCommInitRank")
                           .withContext(strFormat("rank %d of %d", rank, ranks)));
  return std::unique_ptr<Comm>(new Comm(this, comm, rank, ranks));
}

Nccl::Comm::~Comm() {
  if (comm_)
    nccl_->commDestroy_(comm_);
}

Status Nccl::Comm::allReduce(DevicePtr in, DevicePtr out, uint64_t count, bool bf16,
                             Stream stream) const {
  return nccl_->check(nccl_->allReduce_(reinterpret_cast<const void *>(in),
                                        reinterpret_cast<void *>(out), count,
                                        bf16 ? kNcclBfloat16 : kNcclFloat32, kNcclSum, comm_,
                                        stream),
                      "ncclAllReduce");
}

Status Nccl::Comm::allGather(DevicePtr in, DevicePtr out, uint64_t count, bool bf16,
                             Stream stream) const {
  return nccl_->check(nccl_->allGather_(reinterpret_cast<const void *>(in),
                                        reinterpret_cast<void *>(out), count,
                                        bf16 ? kNcclBfloat16 : kNcclFloat32, comm_, stream),
                      "ncclAllGather");
}

Status writeNcclId(const std::string &path, const NcclId &id) {
  const std::string tmp = path + ".tmp";
  FILE *f = std::fopen(tmp.c_str(), "wb");
  if (!f)
    return makeStatus(StatusCode::kIoError, "cannot write %s: %s", tmp.c_str(), std::strerror(errno));
  const bool ok = std::fwrite(id.data(), 1, id.size(), f) == id.size();
  if (std::fclose(f) != 0 || !ok || std::rename(tmp.c_str(), path.c_str()) != 0)
    return makeStatus(StatusCode::kIoError, "cannot write %s: %s", path.c_str(), std::strerror(errno));
  return Status::ok();
}

StatusOr<NcclId> readNcclId(const std::string &path, int timeoutMs) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
  for (;;) {
    if (FILE *f = std::fopen(path.c_str(), "rb")) {
      NcclId id{};
      const size_t n = std::fread(id.data(), 1, id.size(), f);
      std::fclose(f);
      if (n != id.size())
        return makeStatus(StatusCode::kDataLoss, "%s holds %zu bytes, not an NCCL id of %zu",
                          path.c_str(), n, id.size());
      return id;
    }
    if (std::chrono::steady_clock::now() > until)
      return makeStatus(StatusCode::kNotFound,
                        "rank 0 did not publish the NCCL id at %s within %d ms: did it fail?",
                        path.c_str(), timeoutMs);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

} // namespace glm5rt::cuda

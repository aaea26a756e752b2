// One process per GPU for a sharded plan (see RankProcesses.h).
#include "runtime/cuda/RankProcesses.h"

#include "runtime/cuda/Driver.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <string>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace glm5rt::cuda {

namespace {

std::vector<pid_t> &children() {
  static std::vector<pid_t> pids;
  return pids;
}

// How many devices CUDA_VISIBLE_DEVICES lists (-1 when it is unset: then the driver's count
// decides, and a rank without a GPU fails when it opens it).
int visibleListed() {
  const char *v = std::getenv("CUDA_VISIBLE_DEVICES");
  if (!v)
    return -1;
  if (!*v)
    return 0;
  int n = 1;
  for (const char *c = v; *c; ++c)
    n += *c == ',';
  return n;
}

// Rank 0, at exit: waits for the ranks the watchdog has not reaped yet (a failure among them
// is the watchdog's to report). The ranks meet in a collective every layer, so on a normal exit
// they end within a step of rank 0; one still running after 10 s is waiting for a rank 0 that
// left on an error, and is terminated.
void reapChildren() {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (pid_t pid : children()) {
    int st = 0;
    while (waitpid(pid, &st, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > until) {
        kill(pid, SIGTERM);
        waitpid(pid, &st, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
}

} // namespace

StatusOr<RankProcess> startRankProcesses(int ranks) {
  if (ranks < 2)
    return makeStatus(StatusCode::kInvalidArgument, "startRankProcesses: %d ranks", ranks);
  const int listed = visibleListed();
  if (listed >= 0 && listed < ranks)
    return makeStatus(StatusCode::kFailedPrecondition,
                      "the plan has %d ranks, one GPU each, but CUDA_VISIBLE_DEVICES lists %d",
                      ranks, listed);
  const char *tmp = std::getenv("TMPDIR");
  const std::string idPath = std::string(tmp && *tmp ? tmp : "/tmp") + "/glm5-run-nccl-" +
                             std::to_string(getpid()) + ".id";
  std::remove(idPath.c_str());
  std::fflush(nullptr);
  RankProcess me;
  me.ranks = ranks;
  for (int r = 1; r < ranks && me.rank == 0; ++r) {
    pid_t pid = fork();
    if (pid < 0)
      return makeStatus(StatusCode::kResourceExhausted, "cannot start rank %d: fork failed", r);
    if (pid == 0) {
      me.rank = r;
      prctl(PR_SET_PDEATHSIG, SIGTERM); // rank 0 gone: so is this rank
      int null = open("/dev/null", O_WRONLY);
      if (null >= 0)
        dup2(null, STDOUT_FILENO); // rank 0 alone prints the results
      children().clear();
    } else {
      children().push_back(pid);
    }
  }
  if (me.rank == 0) {
    std::atexit(reapChildren);
    // A rank that dies leaves the others waiting in a collective: end the job instead. The
    // watchdog reaps the ranks as they end; reapChildren waits at exit for the rest.
    std::thread([pids = children()] {
      for (;;) {
        int st = 0;
        const pid_t pid = waitpid(-1, &st, 0);
        if (pid <= 0)
          return; // no rank left
        if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
          std::fprintf(stderr, "glm5-run: a rank process (pid %d) failed; stopping every rank\n",
                       static_cast<int>(pid));
          for (pid_t p : pids)
            kill(p, SIGTERM);
          _exit(1);
        }
      }
    }).detach();
  }
  // Every rank sees every GPU and takes the r-th: NCCL then reaches its peers directly (NVLink
  // or PCIe peer-to-peer); a process that saw only its own GPU would fall back to copies through
  // host memory. The rank's driver context is current before NCCL starts, so NCCL's CUDA runtime
  // works on that GPU; the backend gets the same Driver.
  GLM5_ASSIGN_OR_RETURN(Driver * drv, Driver::get(me.rank));
  GLM5_ASSIGN_OR_RETURN(const Nccl *nccl, Nccl::load());
  NcclId id{};
  if (me.rank == 0) {
    GLM5_ASSIGN_OR_RETURN(id, nccl->uniqueId());
    GLM5_RETURN_IF_ERROR(writeNcclId(idPath, id));
  } else {
    GLM5_ASSIGN_OR_RETURN(id, readNcclId(idPath, 120000));
  }
  GLM5_ASSIGN_OR_RETURN(me.comm, nccl->initRank(id, me.rank, ranks));
  // NCCL connects the ranks at their first collective: one here, so the connection set-up is
  // not counted in (or captured into) the first prefill.
  Stream stream;
  DevicePtr buf = 0;
  GLM5_RETURN_IF_ERROR(drv->streamCreate(&stream));
  GLM5_RETURN_IF_ERROR(drv->malloc(&buf, 256, "NCCL warm-up"));
  GLM5_RETURN_IF_ERROR(drv->memsetD8(buf, 0, 256));
  GLM5_RETURN_IF_ERROR(me.comm->allReduce(buf, buf, 64, false, stream));
  GLM5_RETURN_IF_ERROR(drv->synchronize(stream));
  GLM5_RETURN_IF_ERROR(drv->free(buf));
  return me;
}

} // namespace glm5rt::cuda

// One process per GPU for a sharded plan (glm5c compile --tp N): the calling process becomes
// rank 0 and forks ranks 1..N-1 before any process touches CUDA; rank r opens the r-th visible
// GPU (every rank sees all of them, so NCCL can reach its peers directly). Every rank then runs
// the same command on the same inputs, so their collectives pair up; only rank 0 writes to
// stdout.
// Rank 0 reaps the others at exit (terminating, after 10 s, a rank left waiting for a rank 0
// that failed), and a watchdog thread ends the job when a rank dies (its peers would otherwise
// wait in a collective forever); a rank whose parent dies is terminated.
#pragma once
#include "runtime/cuda/Nccl.h"
#include "runtime/support/status.h"

#include <memory>

namespace glm5rt::cuda {

struct RankProcess {
  int rank = 0, ranks = 1;
  std::unique_ptr<Nccl::Comm> comm; // this rank's communicator, on its GPU
};

// Forks the ranks, then (in every process) opens the rank's GPU (Driver::get(rank): the backend
// later gets the same driver), loads NCCL, joins the communicator, rank 0 publishing the unique
// id through a file in TMPDIR, and runs one warm-up all-reduce. Returns this process's rank and
// communicator. Call once, before any CUDA use.
StatusOr<RankProcess> startRankProcesses(int ranks);

} // namespace glm5rt::cuda

// The cuda backend: runs a GPU plan's step lists with the plan's kernels through the CUDA driver
// API (runtime/cuda/Driver), on one stream.
//
// Memory, all allocated in create() so a run never allocates:
//   - weights: one device allocation holding every tensor of the plan's weight table in its GGUF
//     quant format (the kernels dequantize in registers), uploaded from the mapped GGUF with a
//     progress line;
//   - the activation arena: max over entry points of arena_bytes_per_token x chunk capacity
//     (buffer b lives at offset_per_token(b) x chunk capacity; the plan's liveness-based
//     assignment makes buffers share bytes);
//   - per-context buffers (indexer scores, [chunk, context] fp32): slots shared by buffers whose
//     lifetimes do not overlap;
//   - the paged KV cache: per layer [slots, latent + rope] and [slots, index_dim] in the plan's
//     cache dtype, slots = pages x kv.page_size, pages from --ctx or from free memory
//     (runtime/kv), one block table for the one sequence;
//   - workspaces (split-K partials and counters, router logits, MoE grouping, top-k state, sparse
//     MLA partials), sized by a dry run of every step's launch geometry over every chunk length;
//     counters and the top-k state are zeroed once (every complete launch re-arms them).
//
// Launch geometry comes from runtime/launch (the same functions the compiler's registry uses),
// the argument order from each kernel's signature in codegen/kernels (one launcher per op kind,
// below in Backend.cpp).
#pragma once

#include "runtime/backend/Backend.h"
#include "runtime/cuda/Driver.h"
#include "runtime/cuda/Nccl.h"
#include "runtime/gguf/gguf_reader.h"
#include "runtime/kv/PagedKv.h"
#include "runtime/launch/Attention.h"
#include "runtime/plan/Plan.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace glm5rt::cuda {

// The largest prefill chunk: CUDA's grid y limit (a chunk's tokens are the per-token kernels'
// grid y).
constexpr int64_t kMaxChunk = 65535;

struct BackendOptions {
  int64_t contextTokens = 0; // --ctx; 0: as much as the free memory holds (model context max)
  int64_t chunk = 512;       // most tokens of one prefill call (1..kMaxChunk)
  bool progress = true;      // weight upload progress on stderr
  bool graphs = true;        // replay one-token steps as a CUDA graph
  // Launch each kernel overlapped with the one before it (programmatic dependent launch: its
  // CTAs are scheduled while the predecessor drains and wait in glm_grid_chain); false: each
  // launch starts after the one before it has ended.
  bool overlap = true;
  // Which of a sparse-MLA op's kernels to launch (launch::sparseMlaPick): auto, or one forced
  // where the plan has it (glm5-run --mla-kernel).
  launch::SparseMlaForce mlaKernel = launch::SparseMlaForce::kAuto;
  // The spread merge of sparse MLA's splits where the grid fits the device at once
  // (launch::sparseMlaSpread: its CTAs wait for each other, so the SM count and occupancy the
  // device reports must all be this process's); false: clustered merges only (glm5-run
  // --mla-merge cluster, e.g. on a GPU shared with other processes).
  bool mlaSpread = true;
  // A sharded plan (several ranks): this process's rank and its NCCL communicator (the plan's
  // AllReduce steps); the backend loads only the rank's weights and runs its entry points.
  const Nccl::Comm *comm = nullptr;
};

class Backend : public glm5rt::Backend {
public:
  static StatusOr<std::unique_ptr<Backend>> create(const plan::LoadedPlan &plan,
                                                   const gguf::GgufFile &gguf,
                                                   const BackendOptions &options);
  ~Backend() override;

  Status run(const std::string &entry, const int32_t *tokens, const int32_t *positions, int64_t T,
             std::vector<float> *logits) override;
  int64_t contextCapacity() const override { return capacity_; }
  int64_t vocab() const override { return plan_.config()->vocab(); }
  int64_t maxChunk() const override { return chunk_; }
  const char *name() const override { return "cuda"; }
  Status enableProfile() override;
  std::string profileReport() const override;
  Status enableGraphTime() override;
  std::string graphTimeReport() const override;

  Status setStepOutputs(const StepTrace &t,
                        const std::vector<std::vector<float>> &values) override;

  const DeviceInfo &device() const { return drv_->info(); }
  uint64_t weightBytes() const { return weightBytes_; }
  uint64_t deviceBytes() const { return allocated_; }

private:
  explicit Backend(const glm5::plan::Plan &p) : plan_(p) {}

  // Workspace sizes (bytes) the launches need; the dry run takes the maximum over every step and
  // chunk length.
  struct Needs {
    int64_t splitWs = 0, splitCounters = 0;     // qlinear decode split-K
    int64_t routerLogits = 0, routerCounters = 0;
    int64_t moePairs = 0, moeH = 0, moeOut = 0; // routed experts
    int64_t topkWs = 0, topkGridWs = 0, topkPos = 0;
    int64_t mlaOPart = 0, mlaLsePart = 0, mlaCounters = 0;
    int64_t gather = 0; // all-gather of several tokens: NCCL's [ranks][T, C] before the reorder
  };
  struct Fn {
    Function f = nullptr;
    const glm5::plan::Kernel *k = nullptr;
  };
  // Sparse MLA's occupancy on this device per kernel: CTAs per SM, largest placeable cluster.
  std::map<Function, std::pair<int, int>> mlaOccupancy_;
  // Resident CTAs per SM on this device, per kernel, at the one launch size each is asked for
  // (the indexer score kernel's, the MoE decode phases').
  std::map<Function, int> occupancy_;
  StatusOr<int> ctasPerSm(Function f, int threads, int64_t smem);
  // topk_cluster's largest placeable cluster per kernel (at its largest shared memory; 1 if
  // none), and how many such clusters the device holds at once per shared-memory size.
  std::map<Function, int> topkClusters_;
  std::map<std::pair<Function, int64_t>, int> topkResident_;
  StatusOr<int> topkCluster(Function f, const launch::TopKParams &p);
  StatusOr<int> topkResident(Function f, const launch::TopKParams &p, int cluster, int64_t cols);

  Status alloc(DevicePtr *p, uint64_t bytes, const std::string &what);
  Status loadKernels();
  Status uploadWeights(const gguf::GgufFile &gguf, bool progress);
  Status planMemory(const BackendOptions &o);
  // The kernel of a step (primary: part 0; extra kernels 1..) and its entry `name`.
  StatusOr<Fn> fn(const glm5::plan::Step &s, int part, const char *name) const;
  // Launches step `s` for T tokens whose last position is `last` (cached positions 0..last).
  // dry: only accumulates the workspace sizes into needs_.
  Status launchStep(const glm5::plan::Step &s, int64_t T, int64_t last, bool dry);
  // Captures the one-token call `ep` with the indexer's and top-k's column bound `cols`.
  Status captureGraph(const glm5::plan::EntryPoint &ep, int64_t cols);
  // The column bound of a one-token call's graph whose last position is `last`
  // (launch::decodeGraphColumns with the plan's top-k steps; decodeGraphs_).
  StatusOr<int64_t> graphColumns(const glm5::plan::EntryPoint &ep, int64_t last);
  // Synchronizes, checks the embedding's token check and downloads the logits.
  Status finishRun(const glm5::plan::EntryPoint &ep, int64_t T, std::vector<float> *logits);
  Status traceStep(const std::string &entry, const glm5::plan::Step &s, int index, int64_t T,
                   int64_t last, const int32_t *positions);

  struct OutputView;
  OutputView outputView(const glm5::plan::Step &s, int o, int64_t T, int64_t last) const;
  DevicePtr buffer(int id) const;
  uint64_t bufferBytes(int id, int64_t T) const;

  const glm5::plan::Plan &plan_;
  Driver *drv_ = nullptr;
  Stream stream_ = nullptr;
  std::vector<Module> modules_;
  std::vector<std::map<std::string, Function>> functions_; // per plan kernel, by entry
  std::vector<DevicePtr> allocations_;
  uint64_t allocated_ = 0;

  DevicePtr weights_ = 0;
  uint64_t weightBytes_ = 0;
  std::vector<DevicePtr> weightPtr_; // per plan weight

  int64_t chunk_ = 0;    // the arena's token capacity
  int64_t capacity_ = 0; // cached positions
  DevicePtr arena_ = 0;
  std::vector<DevicePtr> perContext_; // per buffer id (0 when in the arena)

  kv::KvGeometry geometry_;
  int64_t slots_ = 0;
  std::unique_ptr<kv::PagePool> pool_;
  std::unique_ptr<kv::BlockTable> table_;
  int64_t tableUploaded_ = -1; // mapped tokens when the device copy was made
  DevicePtr kv_ = 0, index_ = 0, blockTable_ = 0;

  bool useGraphs_ = true;
  bool overlap_ = true; // BackendOptions::overlap
  launch::SparseMlaForce mlaKernel_ = launch::SparseMlaForce::kAuto; // BackendOptions::mlaKernel
  bool mlaSpread_ = true;                                             // BackendOptions::mlaSpread
  // Profiling (enableProfile): an event before every step of a call and one after the last;
  // the times are summed per (entry, "op kind kernel variant") after the call's synchronize.
  struct ProfileRow {
    int64_t calls = 0;
    double ms = 0;
  };
  bool profile_ = false;
  std::vector<Event> profEvents_;
  std::map<std::pair<std::string, std::string>, ProfileRow> profileRows_;
  std::map<std::string, int64_t> profileCalls_; // entry -> calls
  Status profileAccumulate(const glm5::plan::EntryPoint &ep);
  // Graph timing (enableGraphTime): events around each decode graph replay, the replays'
  // device times in ms.
  Event graphEvents_[2] = {nullptr, nullptr};
  std::vector<float> graphMs_;
  int rank_ = 0;                      // of a sharded plan
  const Nccl::Comm *comm_ = nullptr;  // its communicator (null for one rank)
  // One-token graphs by column bound (graphColumns): a graph fixes its launches, and one
  // captured at the capacity would run the multi-CTA top-k even while every row is short
  // enough for topk_row (runtime/launch/Attention.cpp topKGrid).
  std::map<int64_t, GraphExec> decodeGraphs_;
  int64_t rowTopkCols_ = -1;    // the top-k steps' one-CTA-per-row limit; -1: not yet computed
  int64_t clusterTopkCols_ = 0; // their one-cluster-per-row limit (with rowTopkCols_)
  Status decodeGraphFailed_; // a failed capture: later calls launch step by step
  Needs needs_;
  int64_t traceLast_ = 0; // last position of the call being traced
  DevicePtr tokens_ = 0, positions_ = 0, seqIds_ = 0, embedErr_ = 0;
  DevicePtr splitWs_ = 0, splitCounters_ = 0, routerLogits_ = 0, routerCounters_ = 0;
  DevicePtr moeOffsets_ = 0, moePairOf_ = 0, moeH_ = 0, moeOut_ = 0;
  DevicePtr topkWs_ = 0, topkGridWs_ = 0, topkPos_ = 0, mlaOPart_ = 0, mlaLsePart_ = 0, mlaCounters_ = 0;
  DevicePtr gatherWs_ = 0;
};

} // namespace glm5rt::cuda

// Loading a plan: flatbuffers verification, then semantic checks (indices in range, sizes
// consistent, entry points present), every failure a status naming the element
// (`plan.entries[1].steps[17] "blk.3.attn_q_b": ...`). After load the hot path trusts the plan.
#pragma once

#include "runtime/gguf/gguf_reader.h"
#include "runtime/schema/plan_generated.h"
#include "runtime/support/mapped_file.h"
#include "runtime/support/status.h"

#include <memory>
#include <string>
#include <vector>

namespace glm5rt::plan {

// Bumped whenever a plan of the previous version would not run right (plan.fbs changed
// incompatibly, or the kernels' contract with the runtime did); a plan of another version is
// refused. 2: every kernel begins with glm_grid_chain (the cuda backend launches overlapped).
// 3: the top-k module has the topk_cluster entry and its cluster_keys parameter.
// 4: the GateUp and Linears op kinds (glm.gate_up: a decode FFN's gate and up in one kernel;
//    glm.linears: a decode activation's products in one kernel).
// 5: the top-k module has the topk_grid entry (its workspace follows topk.cuh GLM_TK_GR_WS_ROW).
inline constexpr uint32_t kFormatVersion = 5;

// Bytes of one element of a plan buffer or of the KV cache.
inline uint64_t dtypeBytes(glm5::plan::DType t) { return t == glm5::plan::DType::BF16 ? 2 : 4; }

class LoadedPlan {
public:
  static StatusOr<std::unique_ptr<LoadedPlan>> open(const std::string &path);
  // Verifies bytes held by the caller (they must outlive the LoadedPlan).
  static StatusOr<std::unique_ptr<LoadedPlan>> fromBytes(const std::string &name,
                                                         const uint8_t *data, size_t size);
  const glm5::plan::Plan &plan() const { return *plan_; }
  const std::string &path() const { return path_; }

private:
  Status verify();

  std::string path_;
  std::unique_ptr<MappedFile> file_;
  const glm5::plan::Plan *plan_ = nullptr;
  const uint8_t *data_ = nullptr;
  size_t size_ = 0;
};

const char *opKindName(glm5::plan::OpKind kind);

// The step's attribute named `key`, or null (every backend reads steps' attributes this way).
const glm5::plan::Attr *stepAttr(const glm5::plan::Step &s, const char *key);
// Its integer / float value, 0 when the step has no such attribute.
int64_t stepInt(const glm5::plan::Step &s, const char *key);
float stepFloat(const glm5::plan::Step &s, const char *key);

// The first of the model's routed experts a MoEExperts step holds: its gate box's offset in the
// experts dim on a rank of a sharded plan, 0 otherwise.
int64_t firstExpert(const glm5::plan::Plan &plan, const glm5::plan::Step &s);

// A weight that is a rank's box of its tensor (view_offset / view_shape): its bytes gathered
// from the mapped tensor `t` into `store` as a contiguous tensor of dims `ne` (rows of dim 0,
// whole blocks, checked, taken from every row the box covers in dims 1..3). Both backends load
// boxes this way; a malformed box is a kDataLoss error naming the weight.
Status gatherBox(const glm5::plan::Weight &w, const gguf::TensorInfo &t, std::vector<uint8_t> *store,
                 uint64_t ne[4]);

// The bytes a weight occupies once loaded: its box's (whole blocks of dim 0 times the other
// dims) for a rank's box, else the tensor's.
uint64_t loadedBytes(const glm5::plan::Weight &w);

// Entry point `name` ("prefill", "decode") of rank `rank`, or a kNotFound error naming it.
StatusOr<const glm5::plan::EntryPoint *> findEntry(const glm5::plan::Plan &plan,
                                                   const std::string &name, int rank);

// Which weights rank `rank`'s entry points use (a sharded plan's weight table holds every
// rank's boxes; a rank loads only its own and the replicated ones).
std::vector<bool> weightsOfRank(const glm5::plan::Plan &plan, int rank);

// Checks that `gguf` is the file the plan was compiled from (header fingerprint) and that every
// weight of the table is there with the recorded type and shape. `planPath` names the plan.
Status checkGguf(const glm5::plan::Plan &plan, const gguf::GgufFile &gguf,
                 const std::string &planPath);

} // namespace glm5rt::plan

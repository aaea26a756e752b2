// What every backend offers the tools: run an entry point of the plan ("prefill" for a chunk of
// tokens, "decode" for one) at given positions and return the logits; the host and cuda
// backends implement it (runtime/host, runtime/cuda). A trace hook sees every step's first
// output as float, which `glm5-run --check` uses to compare backends step by step.
#pragma once

#include "runtime/schema/plan_generated.h"
#include "runtime/support/status.h"

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace glm5rt {

struct StepTrace {
  const std::string *entry;
  const glm5::plan::Step *step;
  int index;                       // in the entry's step list
  // Every output [T, ...] as float, in the step's order; ids as their values; TopK: the
  // selected positions; per-context ones (indexer scores): [T, cached positions].
  const std::vector<std::vector<float>> *outputs;
  int64_t T;
  const int32_t *positions;         // [T]
};

class Backend {
public:
  virtual ~Backend() = default;

  // Runs entry point `entry` for T tokens at `positions` (consecutive, each below the context
  // capacity; decode takes T = 1; prefill at most maxChunk()). Fills logits [T, vocab].
  virtual Status run(const std::string &entry, const int32_t *tokens, const int32_t *positions,
                     int64_t T, std::vector<float> *logits) = 0;
  virtual int64_t contextCapacity() const = 0;
  virtual int64_t vocab() const = 0;
  // Most tokens one prefill call takes.
  virtual int64_t maxChunk() const = 0;
  virtual const char *name() const = 0;

  // Per-kernel timing (`glm5-run --profile`): from now on every call runs step by step and each
  // step's device time is summed per (entry, op kind, kernel); profileReport() prints the
  // table. Backends without device timers refuse.
  virtual Status enableProfile() {
    return makeStatus(StatusCode::kUnimplemented, "the %s backend has no per-step timer", name());
  }
  virtual std::string profileReport() const { return ""; }

  // Decode-step timing (`glm5-run --graph-time`): each one-token call replayed as a graph is
  // timed with device events around the replay (the launches inside the graph, overlapped as in
  // a normal run, included; the host's work between tokens not). graphTimeReport() prints the
  // median, lowest and highest. Backends without graphs refuse.
  virtual Status enableGraphTime() {
    return makeStatus(StatusCode::kUnimplemented, "the %s backend replays no graphs", name());
  }
  virtual std::string graphTimeReport() const { return ""; }

  // Called after each step (slows a GPU backend down: it synchronizes and downloads).
  using TraceFn = std::function<void(const StepTrace &)>;
  void setTrace(TraceFn fn) { trace_ = std::move(fn); }

  // Replaces the outputs of the step just traced by `values` (same layout as the trace's), so
  // the next steps start from them: --check uses it to measure each step on the reference's
  // inputs. Only valid inside the trace callback.
  virtual Status setStepOutputs(const StepTrace &t, const std::vector<std::vector<float>> &values) {
    (void)t;
    (void)values;
    return makeStatus(StatusCode::kUnimplemented, "%s cannot take another backend's outputs",
                      name());
  }

protected:
  // What every setStepOutputs checks first: one value list per output of the step.
  static Status checkOutputCount(const StepTrace &t, size_t given) {
    const auto *outs = t.step->outputs();
    if (outs && given == outs->size())
      return Status::ok();
    return makeStatus(StatusCode::kInvalidArgument, "step %s: %zu outputs given, it has %u",
                      t.step->name()->c_str(), given, outs ? outs->size() : 0u);
  }

  TraceFn trace_;
};

} // namespace glm5rt

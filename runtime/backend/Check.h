// `glm5-run --check`: runs every call on a reference backend (host) and on the backend under
// test (cuda), step by step, and compares each step's first output: relative error
// ||test - ref|| / ||ref|| for values (causal part only for per-context scores), the fraction
// of selected positions that differ for index sets (top-k positions, expert ids; order
// ignored). By default each step of the tested backend starts from the reference's outputs of
// the step before, so every step is measured on its own. Reports every step beyond tolerance in
// order.
#pragma once

#include "runtime/backend/Backend.h"

#include <memory>
#include <string>
#include <vector>

namespace glm5rt {

struct CheckOptions {
  double tolerance = 3e-2;     // relative error per step
  double topkTolerance = 0.1;  // fraction of selected positions (or expert ids) that may differ
  bool isolate = true;         // each step of the tested backend starts from the reference's
                               // outputs (setStepOutputs); false: both run freely
};

struct StepDiff {
  std::string entry, step;     // entry point, step name
  std::string op;
  int call = 0;                // the n-th run() of the session
  int index = 0;               // step index in the entry
  int output = 0;              // which output of the step
  double error = 0;            // relative error, or differing fraction for top-k
  bool selection = false;      // an index set (top-k positions, expert ids)
  bool exceeded = false;
};

class CheckingBackend : public Backend {
public:
  CheckingBackend(std::unique_ptr<Backend> test, std::unique_ptr<Backend> reference,
                  CheckOptions options);

  // Runs the reference, then the backend under test comparing step by step; returns the
  // tested backend's logits.
  Status run(const std::string &entry, const int32_t *tokens, const int32_t *positions,
             int64_t T, std::vector<float> *logits) override;
  int64_t contextCapacity() const override;
  int64_t vocab() const override { return test_->vocab(); }
  int64_t maxChunk() const override;
  const char *name() const override { return test_->name(); }

  // Steps beyond tolerance, in execution order; the worst step of each kind; counts.
  const std::vector<StepDiff> &failures() const { return failures_; }
  std::string report() const;

private:
  std::unique_ptr<Backend> test_, ref_;
  CheckOptions options_;
  std::vector<std::vector<std::vector<float>>> refOutputs_; // per step index: its outputs
  int calls_ = 0;
  double lastLogitsError_ = 0, worstLogitsError_ = 0;
  int64_t compared_ = 0;
  StepDiff worstValue_, worstSelection_;
  std::vector<StepDiff> failures_;
};

// Relative error ||a - b|| / ||b|| (0 when both are zero); a size mismatch or NaN gives +inf.
double relativeError(const std::vector<float> &a, const std::vector<float> &b);

} // namespace glm5rt

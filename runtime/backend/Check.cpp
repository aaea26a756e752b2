// Step-by-step comparison of two backends (see Check.h).
#include "runtime/backend/Check.h"
#include "runtime/plan/Plan.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

namespace glm5rt {

namespace pl = glm5::plan;

double relativeError(const std::vector<float> &a, const std::vector<float> &b) {
  if (a.size() != b.size())
    return std::numeric_limits<double>::infinity();
  double e2 = 0, r2 = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i]))
      return std::numeric_limits<double>::infinity();
    const double d = static_cast<double>(a[i]) - b[i];
    e2 += d * d;
    r2 += static_cast<double>(b[i]) * b[i];
  }
  if (r2 == 0)
    return e2 == 0 ? 0 : std::numeric_limits<double>::infinity();
  return std::sqrt(e2 / r2);
}

namespace {

// Fraction of the reference's selected positions (>= 0) that the test did not select, per row
// of `k` entries, over all rows.
double selectionDiff(const std::vector<float> &test, const std::vector<float> &ref, int64_t T) {
  if (test.size() != ref.size() || T <= 0)
    return 1.0;
  const size_t k = ref.size() / static_cast<size_t>(T);
  int64_t total = 0, missing = 0;
  for (int64_t r = 0; r < T; ++r) {
    std::set<float> got(test.begin() + r * k, test.begin() + (r + 1) * k);
    for (size_t i = 0; i < k; ++i) {
      float v = ref[r * k + i];
      if (v < 0)
        continue;
      ++total;
      missing += got.count(v) ? 0 : 1;
    }
    // The test selecting more real positions than the reference is a difference too.
    int64_t extra = 0;
    for (float v : got)
      extra += v >= 0 ? 1 : 0;
    int64_t refCount = 0;
    for (size_t i = 0; i < k; ++i)
      refCount += ref[r * k + i] >= 0 ? 1 : 0;
    missing += std::max<int64_t>(0, extra - refCount);
  }
  return total ? static_cast<double>(missing) / static_cast<double>(total) : 0.0;
}

// Per-context outputs ([T, cached positions]): only the causal part (column <= the row's
// position) is defined; the rest is dropped from both.
void causal(std::vector<float> &v, int64_t T, const int32_t *positions) {
  const size_t cols = v.size() / static_cast<size_t>(T);
  std::vector<float> kept;
  for (int64_t r = 0; r < T; ++r)
    for (size_t c = 0; c < cols && static_cast<int64_t>(c) <= positions[r]; ++c)
      kept.push_back(v[r * cols + c]);
  v.swap(kept);
}

} // namespace

CheckingBackend::CheckingBackend(std::unique_ptr<Backend> test, std::unique_ptr<Backend> reference,
                                 CheckOptions options)
    : test_(std::move(test)), ref_(std::move(reference)), options_(options) {}

int64_t CheckingBackend::contextCapacity() const {
  return std::min(test_->contextCapacity(), ref_->contextCapacity());
}

int64_t CheckingBackend::maxChunk() const { return std::min(test_->maxChunk(), ref_->maxChunk()); }

Status CheckingBackend::run(const std::string &entry, const int32_t *tokens,
                            const int32_t *positions, int64_t T, std::vector<float> *logits) {
  ++calls_;
  refOutputs_.clear();
  ref_->setTrace([&](const StepTrace &t) {
    refOutputs_.resize(static_cast<size_t>(t.index) + 1);
    refOutputs_[static_cast<size_t>(t.index)] = *t.outputs;
  });
  std::vector<float> refLogits;
  GLM5_RETURN_IF_ERROR(ref_->run(entry, tokens, positions, T, &refLogits)
                           .withContext(std::string("reference ") + ref_->name()));
  Status forced;
  test_->setTrace([&](const StepTrace &t) {
    if (static_cast<size_t>(t.index) >= refOutputs_.size())
      return;
    const std::vector<std::vector<float>> &wantAll = refOutputs_[static_cast<size_t>(t.index)];
    for (size_t o = 0; o < t.outputs->size() && o < wantAll.size(); ++o) {
      std::vector<float> got = (*t.outputs)[o], want = wantAll[o];
      StepDiff d;
      d.entry = entry;
      d.step = t.step->name()->str();
      d.op = plan::opKindName(t.step->op());
      d.call = calls_;
      d.index = t.index;
      d.output = static_cast<int>(o);
      const bool ids = t.step->op() == pl::OpKind::MoERouter && o == 1;
      if (t.step->op() == pl::OpKind::TopK || ids) {
        // Index sets: expert ids per token, selected positions per query; order is free.
        d.selection = true;
        d.error = selectionDiff(got, want, t.T);
        d.exceeded = d.error > options_.topkTolerance;
      } else {
        // Per-context outputs (the indexer's scores): compare the causal part.
        if (t.step->op() == pl::OpKind::IndexerScore) {
          causal(got, t.T, t.positions);
          causal(want, t.T, t.positions);
        }
        d.error = relativeError(got, want);
        d.exceeded = !(d.error <= options_.tolerance);
      }
      ++compared_;
      StepDiff &worst = d.selection ? worstSelection_ : worstValue_;
      if (worst.step.empty() || !(d.error <= worst.error))
        worst = d;
      if (d.exceeded)
        failures_.push_back(d);
    }
    // Each step starts from the reference's outputs: its error is its own, not the sum of
    // every earlier step's (bf16 activations would otherwise flip expert and top-k choices
    // downstream and compare different computations).
    if (options_.isolate && forced.isOk())
      forced = test_->setStepOutputs(t, wantAll);
  });
  Status st = test_->run(entry, tokens, positions, T, logits);
  test_->setTrace(nullptr);
  ref_->setTrace(nullptr);
  GLM5_RETURN_IF_ERROR(st);
  GLM5_RETURN_IF_ERROR(forced);
  lastLogitsError_ = relativeError(*logits, refLogits);
  worstLogitsError_ = std::max(worstLogitsError_, lastLogitsError_);
  return Status::ok();
}

std::string CheckingBackend::report() const {
  auto line = [](const StepDiff &d) {
    return strFormat("%s call %d step %d (%s %s) output %d: %s %.3g", d.entry.c_str(), d.call,
                     d.index, d.op.c_str(), d.step.c_str(), d.output,
                     d.selection ? "selected positions differing" : "relative error", d.error);
  };
  std::string r = strFormat("check %s against %s: %d calls, %lld step outputs compared%s, "
                            "tolerance %.3g (index sets %.3g)\n",
                            test_->name(), ref_->name(), calls_, static_cast<long long>(compared_),
                            options_.isolate ? " (each step on the reference's inputs)" : "",
                            options_.tolerance, options_.topkTolerance);
  // Isolated, the logits are the reference's (the last step's outputs are replaced too); its
  // own error is the Logits step's, among the step errors.
  if (!options_.isolate)
    r += strFormat("  logits, free-running: largest relative error %.3g\n", worstLogitsError_);
  if (!worstValue_.step.empty())
    r += "  largest value error: " + line(worstValue_) + "\n";
  if (!worstSelection_.step.empty())
    r += "  largest selection difference: " + line(worstSelection_) + "\n";
  if (failures_.empty()) {
    r += "  every step within tolerance\n";
  } else {
    r += strFormat("  %zu step outputs beyond tolerance; the first:\n  ", failures_.size()) +
         line(failures_.front()) + "\n";
  }
  return r;
}

} // namespace glm5rt

// glm5-run --check's comparison (runtime/backend/Check.h) on scripted backends: values by
// relative error, index sets by membership (order free), per-context scores on their causal
// part only, each tested step re-fed the reference's outputs, and the report naming the first
// step beyond tolerance.
#include "runtime/backend/Check.h"

#include <gtest/gtest.h>

#include <flatbuffers/flatbuffers.h>

#include <cmath>
#include <limits>

namespace glm5rt {
namespace {

namespace pl = glm5::plan;

// Steps of a fake entry point: (op, name, output count).
struct FakeSteps {
  flatbuffers::FlatBufferBuilder b;
  std::vector<const pl::Step *> steps;
  FakeSteps(const std::vector<std::pair<pl::OpKind, int>> &ops) {
    std::vector<flatbuffers::Offset<pl::Step>> made;
    int buffer = 0;
    for (size_t i = 0; i < ops.size(); ++i) {
      std::vector<int> outs;
      for (int o = 0; o < ops[i].second; ++o)
        outs.push_back(buffer++);
      std::vector<flatbuffers::Offset<pl::Attr>> attrs;
      made.push_back(pl::CreateStep(b, ops[i].first, b.CreateString("step" + std::to_string(i)),
                                    -1, -1, b.CreateVector(std::vector<int>{}),
                                    b.CreateVector(outs), 0, b.CreateVector(attrs)));
    }
    b.Finish(pl::CreateEntryPoint(b, b.CreateString("decode"), 1, 0, 0, b.CreateVector(made)));
    auto *ep = flatbuffers::GetRoot<pl::EntryPoint>(b.GetBufferPointer());
    for (const pl::Step *s : *ep->steps())
      steps.push_back(s);
  }
};

// A backend that "runs" by tracing scripted outputs, step by step; with `recordForced` it keeps
// what setStepOutputs gave it.
class Scripted : public Backend {
public:
  Scripted(const FakeSteps &steps, std::vector<std::vector<std::vector<float>>> outputs)
      : steps_(steps), outputs_(std::move(outputs)) {}
  Status run(const std::string &entry, const int32_t *, const int32_t *positions, int64_t T,
             std::vector<float> *logits) override {
    for (size_t i = 0; i < steps_.steps.size(); ++i)
      if (trace_)
        trace_({&entry, steps_.steps[i], static_cast<int>(i), &outputs_[i], T, positions});
    *logits = outputs_.back()[0];
    return Status::ok();
  }
  Status setStepOutputs(const StepTrace &t, const std::vector<std::vector<float>> &v) override {
    forced.push_back({t.index, v});
    return Status::ok();
  }
  int64_t contextCapacity() const override { return 64; }
  int64_t vocab() const override { return 4; }
  int64_t maxChunk() const override { return 8; }
  const char *name() const override { return "scripted"; }
  std::vector<std::pair<int, std::vector<std::vector<float>>>> forced;

private:
  const FakeSteps &steps_;
  std::vector<std::vector<std::vector<float>>> outputs_;
};

TEST(Check, RelativeError) {
  EXPECT_EQ(relativeError({1, 2}, {1, 2}), 0.0);
  EXPECT_NEAR(relativeError({3, 4.5}, {3, 4}), 0.1, 1e-12);
  EXPECT_TRUE(std::isinf(relativeError({1}, {1, 2})));
  EXPECT_TRUE(std::isinf(relativeError({std::nanf("")}, {1})));
}

TEST(Check, ComparesEveryOutputAndReFeedsTheReference) {
  // Linear, TopK (k = 4 over T = 2 rows), IndexerScore ([T = 2, 3 cached positions]), Logits.
  FakeSteps steps({{pl::OpKind::Linear, 1},
                   {pl::OpKind::TopK, 1},
                   {pl::OpKind::IndexerScore, 1},
                   {pl::OpKind::Logits, 1}});
  std::vector<std::vector<std::vector<float>>> ref = {
      {{1, 2, 3, 4}},
      {{0, 1, 2, -1, 3, 1, 0, 2}},
      {{0.5f, -INFINITY, -INFINITY, 0.25f, 0.75f, -INFINITY}},
      {{1, 0, 0, 0}}};
  auto test = ref;
  test[0][0][3] = 4.4f;                  // 4.4 vs 4: relative error 0.4 / sqrt(30) = 0.073
  test[1][0] = {2, 1, 0, -1, 0, 2, 3, 1}; // the same sets in another order
  test[2][0][2] = 0;                      // past row 0's position (0): not compared
  auto *t = new Scripted(steps, test);
  auto *r = new Scripted(steps, ref);
  CheckingBackend check{std::unique_ptr<Backend>(t), std::unique_ptr<Backend>(r), CheckOptions{}};
  std::vector<float> logits;
  const int32_t tokens[2] = {5, 6}, positions[2] = {0, 1};
  ASSERT_TRUE(check.run("decode", tokens, positions, 2, &logits).isOk());
  ASSERT_EQ(check.failures().size(), 1u);
  EXPECT_EQ(check.failures()[0].index, 0);
  EXPECT_NEAR(check.failures()[0].error, 0.4 / std::sqrt(30.0), 1e-6);
  EXPECT_NE(check.report().find("decode call 1 step 0 (Linear step0) output 0: relative error"),
            std::string::npos)
      << check.report();
  // Every step of the tested backend was handed the reference's outputs.
  ASSERT_EQ(t->forced.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(t->forced[i].first, static_cast<int>(i));
    EXPECT_EQ(t->forced[i].second, ref[i]);
  }
  EXPECT_TRUE(r->forced.empty());
}

TEST(Check, SelectionDifferences) {
  FakeSteps steps({{pl::OpKind::TopK, 1}, {pl::OpKind::Logits, 1}});
  std::vector<std::vector<std::vector<float>>> ref = {{{0, 1, 2, 3}}, {{1, 0, 0, 0}}};
  auto test = ref;
  test[0][0] = {0, 1, 2, 7}; // one of four positions differs
  CheckOptions o;
  o.topkTolerance = 0.2;
  o.isolate = false;
  CheckingBackend check{std::make_unique<Scripted>(steps, test),
                        std::make_unique<Scripted>(steps, ref), o};
  std::vector<float> logits;
  const int32_t tokens[1] = {5}, positions[1] = {3};
  ASSERT_TRUE(check.run("decode", tokens, positions, 1, &logits).isOk());
  ASSERT_EQ(check.failures().size(), 1u);
  EXPECT_TRUE(check.failures()[0].selection);
  EXPECT_DOUBLE_EQ(check.failures()[0].error, 0.25);
  EXPECT_NE(check.report().find("logits, free-running"), std::string::npos);
}

} // namespace
} // namespace glm5rt

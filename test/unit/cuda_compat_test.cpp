// Plan/device compatibility without a GPU: which kernel image the driver gets (cubin, PTX to
// JIT, or an error naming the plan's arch and the device), and the shared-memory check.
#include "runtime/cuda/Compatibility.h"

#include <gtest/gtest.h>

#include <flatbuffers/flatbuffers.h>

#include <string>
#include <vector>

namespace glm5rt::cuda {
namespace {

namespace pl = glm5::plan;

// A plan with only a target and kernels (all the check reads). Each kernel has PTX; `cubin`
// says whether it has a cubin too.
struct FakePlan {
  flatbuffers::FlatBufferBuilder b;
  const pl::Plan *plan = nullptr;

  FakePlan(const std::string &tiles, const std::string &code, bool cubin = true,
           std::vector<int> dynamicSmem = {1024, 95488}) {
    std::vector<flatbuffers::Offset<pl::Kernel>> kernels;
    for (size_t i = 0; i < dynamicSmem.size(); ++i) {
      std::vector<uint8_t> bytes = {0x7f, 'E', 'L', 'F'};
      auto k = pl::CreateKernel(
          b, b.CreateString("kernel_" + std::to_string(i)),
          b.CreateVectorOfStrings(std::vector<std::string>{"entry"}),
          b.CreateString(".version 9.0\n.target " + code + "\n"),
          cubin ? b.CreateVector(bytes) : 0, 128, /*static_smem=*/256, dynamicSmem[i], 0);
      kernels.push_back(k);
    }
    auto target = pl::CreateTarget(b, b.CreateString(tiles), b.CreateString(code), 188, 101376);
    pl::PlanBuilder pb(b);
    pb.add_target(target);
    pb.add_kernels(b.CreateVector(kernels));
    auto root = pb.Finish();
    b.Finish(root);
    plan = flatbuffers::GetRoot<pl::Plan>(b.GetBufferPointer());
  }
};

DeviceInfo h200() { return {"NVIDIA H200", 9, 0, 132, 232448, size_t(141) << 30}; }
DeviceInfo rtxPro6000() {
  return {"NVIDIA RTX PRO 6000 Blackwell Workstation Edition", 12, 0, 188, 101376,
          size_t(96) << 30};
}

std::string errorOf(const FakePlan &p, const DeviceInfo &d) {
  auto images = chooseKernelImages(*p.plan, d);
  EXPECT_FALSE(images.isOk());
  return images.isOk() ? "" : images.status().message();
}

TEST(CudaCompat, ParseArch) {
  int cc = 0;
  bool a = false;
  EXPECT_TRUE(parseArch("sm_120a", &cc, &a));
  EXPECT_EQ(cc, 120);
  EXPECT_TRUE(a);
  EXPECT_TRUE(parseArch("sm_90", &cc, &a));
  EXPECT_EQ(cc, 90);
  EXPECT_FALSE(a);
  for (const char *bad : {"", "sm_", "sm_9", "compute_90", "sm_90b", "sm_1200", "host"})
    EXPECT_FALSE(parseArch(bad, &cc, &a)) << bad;
}

TEST(CudaCompat, NativeCubin) {
  FakePlan p("sm_120a", "sm_120a");
  auto images = chooseKernelImages(*p.plan, rtxPro6000());
  ASSERT_TRUE(images.isOk()) << images.status().message();
  ASSERT_EQ(images->size(), 2u);
  EXPECT_TRUE((*images)[0].cubin);
  EXPECT_EQ((*images)[0].size, 4u);
}

TEST(CudaCompat, EmulatedTilesRunAsSm90Code) {
  FakePlan p("sm_120a", "sm_90");
  auto images = chooseKernelImages(*p.plan, h200());
  ASSERT_TRUE(images.isOk()) << images.status().message();
  EXPECT_TRUE((*images)[1].cubin);
}

TEST(CudaCompat, PtxIsJittedOnANewerDevice) {
  // sm_90 cubins do not run on 12.0, but sm_90 PTX JIT-compiles there.
  FakePlan p("sm_90", "sm_90");
  auto images = chooseKernelImages(*p.plan, rtxPro6000());
  ASSERT_TRUE(images.isOk()) << images.status().message();
  EXPECT_FALSE((*images)[0].cubin);
  EXPECT_NE(std::string(static_cast<const char *>((*images)[0].data)).find(".target sm_90"),
            std::string::npos);
}

TEST(CudaCompat, ArchSpecificCodeNeedsThatExactDevice) {
  FakePlan p("sm_120a", "sm_120a");
  const std::string m = errorOf(p, h200());
  EXPECT_NE(m.find("built for sm_120a (tiles sm_120a)"), std::string::npos) << m;
  EXPECT_NE(m.find("NVIDIA H200 (compute capability 9.0) cannot run"), std::string::npos) << m;
  EXPECT_NE(m.find("--target sm_120a --run-on sm_90"), std::string::npos) << m;
  FakePlan q("sm_90a", "sm_90a");
  EXPECT_NE(errorOf(q, rtxPro6000()).find("built for sm_90a"), std::string::npos);
}

TEST(CudaCompat, OlderDeviceCannotRunNewerCode) {
  FakePlan p("sm_120", "sm_120");
  const std::string m = errorOf(p, h200());
  EXPECT_NE(m.find("recompile with `glm5c compile --target sm_90`"), std::string::npos) << m;
}

TEST(CudaCompat, MissingCubinFallsBackToPtxOnlyWhereItRuns) {
  FakePlan p("sm_90", "sm_90", /*cubin=*/false);
  auto images = chooseKernelImages(*p.plan, h200());
  ASSERT_TRUE(images.isOk()) << images.status().message();
  EXPECT_FALSE((*images)[0].cubin);
}

TEST(CudaCompat, SharedMemoryBeyondTheDevice) {
  // 256 static + 110000 dynamic fits an H200 (232448 B) but not SM120 (101376 B).
  FakePlan p("sm_90", "sm_90", true, {110000});
  EXPECT_TRUE(chooseKernelImages(*p.plan, h200()).isOk());
  FakePlan q("sm_120", "sm_120", true, {110000});
  const std::string m = errorOf(q, rtxPro6000());
  EXPECT_NE(m.find("kernel_0 needs 110256 B of shared memory per block"), std::string::npos) << m;
  EXPECT_NE(m.find("allows 101376 B"), std::string::npos) << m;
}

TEST(CudaCompat, HostPlanIsRefused) {
  FakePlan p("host", "", false, {});
  const std::string m = errorOf(p, h200());
  EXPECT_NE(m.find("compiled for the host backend"), std::string::npos) << m;
  EXPECT_NE(m.find("--device host"), std::string::npos) << m;
}

TEST(CudaCompat, CorruptCodeArch) {
  FakePlan p("sm_90", "sm90");
  EXPECT_NE(errorOf(p, h200()).find("code_arch 'sm90'"), std::string::npos);
}

} // namespace
} // namespace glm5rt::cuda

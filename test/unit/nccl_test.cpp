// NCCL as the runtime loads it (runtime/cuda/Nccl.h), without a GPU: the ABI constants agree
// with the toolkit's nccl.h, the library loads and reports its version (where the toolkit ships
// it), and the unique-id bootstrap file round-trips, waits for a late writer, and fails clearly.
#include "runtime/cuda/Nccl.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <thread>
#include <unistd.h>

#if __has_include(<nccl.h>)
#include <nccl.h>
static_assert(ncclFloat32 == glm5rt::cuda::kNcclFloat32 && ncclBfloat16 == glm5rt::cuda::kNcclBfloat16 &&
                  ncclSum == glm5rt::cuda::kNcclSum && ncclSuccess == glm5rt::cuda::kNcclSuccess,
              "the NCCL ABI constants of runtime/cuda/Nccl.h differ from nccl.h");
static_assert(sizeof(ncclUniqueId) == sizeof(glm5rt::cuda::NcclId), "NCCL unique id size");
#endif

namespace {

using namespace glm5rt::cuda;

TEST(Nccl, LoadsAndReportsItsVersion) {
#ifdef GLM5C_TEST_NCCL_LIBRARY
  setenv("GLM5_NCCL_LIBRARY", GLM5C_TEST_NCCL_LIBRARY, 0);
#endif
  auto n = Nccl::load();
  if (!n.isOk())
    GTEST_SKIP() << n.status().message();
  EXPECT_GE((*n)->version(), 21000);
}

std::string tempPath(const char *tag) {
  return std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/glm5c-nccl-" +
         tag + "-" + std::to_string(getpid());
}

TEST(Nccl, IdFileRoundTripsAndWaitsForTheWriter) {
  const std::string path = tempPath("id");
  std::remove(path.c_str());
  NcclId id{};
  for (size_t i = 0; i < id.size(); ++i)
    id[i] = static_cast<char>(i * 7 + 3);
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ASSERT_TRUE(writeNcclId(path, id).isOk());
  });
  auto got = readNcclId(path, 5000);
  writer.join();
  ASSERT_TRUE(got.isOk()) << got.status().message();
  EXPECT_EQ(*got, id);
  std::remove(path.c_str());
}

TEST(Nccl, IdFileErrorsNameTheProblem) {
  const std::string path = tempPath("missing");
  std::remove(path.c_str());
  auto late = readNcclId(path, 30);
  ASSERT_FALSE(late.isOk());
  EXPECT_NE(late.status().message().find("did not publish the NCCL id"), std::string::npos);
  FILE *f = std::fopen(path.c_str(), "wb");
  std::fputs("short", f);
  std::fclose(f);
  auto bad = readNcclId(path, 30);
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("not an NCCL id"), std::string::npos);
  std::remove(path.c_str());
}

} // namespace

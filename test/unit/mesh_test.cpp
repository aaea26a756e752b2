// The host mesh's collectives (runtime/host/Mesh.h): every rank gets the same rank-ordered sum,
// an all-gather puts each rank's columns in rank order, several collectives in a row pair up, a rank that fails releases the others with an error
// instead of leaving them waiting, and the mesh works again after reset.
#include "runtime/host/Mesh.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

using glm5rt::StatusCode;
using glm5rt::host::Mesh;

namespace {

TEST(Mesh, AllReduceSumsEveryRankInRankOrder) {
  const int ranks = 4, n = 1000, rounds = 5;
  Mesh mesh(ranks);
  std::vector<std::vector<float>> out(ranks, std::vector<float>(n));
  std::vector<bool> ok(ranks, true);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      for (int round = 0; round < rounds; ++round) {
        std::vector<float> mine(n);
        for (int i = 0; i < n; ++i)
          mine[i] = static_cast<float>((r + 1) * 1000 + i + round);
        ok[r] = ok[r] && mesh.allReduce(r, mine.data(), n, out[r].data()).isOk();
        for (int i = 0; i < n; ++i) // 1000 * (1 + 2 + 3 + 4) + 4 * (i + round)
          ok[r] = ok[r] && out[r][i] == static_cast<float>(10000 + 4 * (i + round));
      }
    });
  for (auto &t : threads)
    t.join();
  for (int r = 0; r < ranks; ++r)
    EXPECT_TRUE(ok[r]) << "rank " << r;
}

TEST(Mesh, AllGatherPutsEachRanksColumnsInRankOrder) {
  // 3 ranks, 2 rows of 4 columns each: out row t = rank 0's row t | rank 1's | rank 2's, twice
  // in a row (the second call pairs up with the second of every rank).
  const int ranks = 3, rows = 2, cols = 4;
  Mesh mesh(ranks);
  std::vector<bool> ok(ranks, true);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      for (int round = 0; round < 2; ++round) {
        std::vector<float> mine(rows * cols), out(rows * cols * ranks, -1.f);
        for (int i = 0; i < rows * cols; ++i)
          mine[i] = static_cast<float>(100 * r + i + 1000 * round);
        ok[r] = ok[r] && mesh.allGather(r, mine.data(), rows, cols, out.data()).isOk();
        for (int t = 0; t < rows; ++t)
          for (int s = 0; s < ranks; ++s)
            for (int c = 0; c < cols; ++c)
              ok[r] = ok[r] && out[(t * ranks + s) * cols + c] ==
                                   static_cast<float>(100 * s + t * cols + c + 1000 * round);
      }
    });
  for (auto &t : threads)
    t.join();
  for (int r = 0; r < ranks; ++r)
    EXPECT_TRUE(ok[r]) << "rank " << r;
}

TEST(Mesh, AbortReleasesWaitingRanks) {
  Mesh mesh(3);
  std::vector<glm5rt::Status> st(2);
  std::vector<std::thread> threads;
  float x = 1, y = 0;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      float out = 0;
      st[r] = mesh.allReduce(r, &x, 1, &out);
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  mesh.abort(); // rank 2 failed before its all-reduce
  for (auto &t : threads)
    t.join();
  for (const auto &s : st) {
    EXPECT_EQ(s.code(), StatusCode::kAborted);
    EXPECT_NE(s.message().find("another rank of the mesh failed"), std::string::npos);
  }
  EXPECT_EQ(mesh.allReduce(0, &x, 1, &y).code(), StatusCode::kAborted);
  mesh.reset();
  Mesh solo(1);
  ASSERT_TRUE(solo.allReduce(0, &x, 1, &y).isOk());
  EXPECT_EQ(y, 1.f);
}

TEST(Mesh, MismatchedSizesAreAnError) {
  Mesh mesh(2);
  std::vector<glm5rt::Status> st(2);
  std::vector<float> a(4, 1.f), b(3, 1.f), out(4);
  std::thread t([&] { st[1] = mesh.allReduce(1, b.data(), 3, out.data()); });
  std::vector<float> out0(4);
  st[0] = mesh.allReduce(0, a.data(), 4, out0.data());
  t.join();
  // Both fail: the rank that sees the mismatch first says why, the other is released.
  EXPECT_FALSE(st[0].isOk());
  EXPECT_FALSE(st[1].isOk());
  EXPECT_TRUE(st[0].message().find("do not pair up") != std::string::npos ||
              st[1].message().find("do not pair up") != std::string::npos)
      << st[0].message() << " / " << st[1].message();
}

} // namespace

// Progress lines with a fake clock: plain lines at every 10% off a terminal, an in-place bar on
// one (throttled), rate and ETA from the clock, and one final line.
#include "runtime/support/progress.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

namespace glm5rt {
namespace {

std::string readAll(FILE *f) {
  std::fflush(f);
  std::rewind(f);
  std::string s;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0)
    s.append(buf, n);
  return s;
}

TEST(Progress, BytesText) {
  EXPECT_EQ(Progress::bytesText(17), "17 B");
  EXPECT_EQ(Progress::bytesText(12000), "12.0 kB");
  EXPECT_EQ(Progress::bytesText(512e6), "512.0 MB");
  EXPECT_EQ(Progress::bytesText(8.7e9), "8.70 GB");
}

TEST(Progress, PlainLinesAtEveryTenthAndAFinalLine) {
  FILE *f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  double now = 0;
  {
    Progress p("upload", 1000000000, f, /*terminal=*/false, [&] { return now; });
    for (int i = 0; i < 100; ++i) {
      now += 0.1;
      p.advance(10000000); // 100 MB/s
    }
    p.finish();
    p.finish(); // idempotent
  }
  const std::string out = readAll(f);
  std::fclose(f);
  // 10%..90%: nine lines, then the final one; no terminal control characters.
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 10) << out;
  EXPECT_EQ(out.find('\r'), std::string::npos);
  EXPECT_NE(out.find("upload:  10%  100.0 MB / 1.00 GB  100.0 MB/s  ETA 9 s\n"), std::string::npos)
      << out;
  EXPECT_NE(out.find("upload:  90%  900.0 MB / 1.00 GB  100.0 MB/s  ETA 1 s\n"), std::string::npos)
      << out;
  EXPECT_NE(out.find("upload: 1.00 GB in 10.0 s (100.0 MB/s)\n"), std::string::npos) << out;
}

TEST(Progress, TerminalBarIsRedrawnInPlaceAndThrottled) {
  FILE *f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  double now = 0;
  {
    Progress p("weights", 400, f, /*terminal=*/true, [&] { return now; });
    now = 1;
    p.advance(100); // drawn
    p.advance(50);  // same instant: throttled
    now = 2;
    p.advance(50); // drawn: 200 of 400 in 2 s
    p.finish();
  }
  const std::string out = readAll(f);
  std::fclose(f);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\r'), 3) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  EXPECT_NE(out.find("\r\033[Kweights: [######..................]  25%  100 B / 400 B"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("[############............]  50%  200 B / 400 B  100 B/s  ETA 2 s"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("weights: 200 B in 2.0 s (100 B/s)\n"), std::string::npos) << out;
}

TEST(Progress, ConcurrentAdvanceCountsEveryByte) {
  FILE *f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    Progress p("gen", 8 * 100000, f, false);
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t)
      threads.emplace_back([&] {
        for (int i = 0; i < 100000; ++i)
          p.advance(1);
      });
    for (auto &t : threads)
      t.join();
    p.finish();
  }
  const std::string out = readAll(f);
  std::fclose(f);
  EXPECT_NE(out.find("gen: 800.0 kB in"), std::string::npos) << out;
  EXPECT_LE(std::count(out.begin(), out.end(), '\n'), 10) << out;
}

} // namespace
} // namespace glm5rt

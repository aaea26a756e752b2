// A minimal parallel loop for host-side batch work (fixture generation, dequantization):
// items are handed out dynamically, the first error stops the loop and is returned.
#pragma once

#include "runtime/support/status.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace glm5rt {

// Runs fn(i) for i in [0, n) on `threads` threads (0: one per hardware thread). fn must be safe
// to call concurrently for distinct i; results must not depend on which thread runs which i.
template <typename Fn> Status parallelFor(size_t n, uint32_t threads, Fn fn) {
  std::atomic<size_t> next{0};
  std::mutex mu;
  Status first;
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) {
      Status s = fn(i);
      if (!s.isOk()) {
        std::lock_guard<std::mutex> lock(mu);
        if (first.isOk())
          first = std::move(s);
        next = n; // stop handing out work
      }
    }
  };
  uint32_t count = threads ? threads : std::max(1u, std::thread::hardware_concurrency());
  count = static_cast<uint32_t>(std::min<size_t>(count, std::max<size_t>(n, 1)));
  std::vector<std::thread> pool;
  for (uint32_t t = 1; t < count; ++t)
    pool.emplace_back(worker);
  worker();
  for (std::thread &t : pool)
    t.join();
  return first;
}

} // namespace glm5rt

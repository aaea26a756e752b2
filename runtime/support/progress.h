// Progress of a long byte-moving job (weight upload, fixture generation): on a terminal one
// line redrawn in place with a bar, bytes done/total, rate and ETA; otherwise (logs, CI, pipes)
// a plain line at every 10% so the output stays readable. advance() may be called from several
// threads; drawing is throttled (at most every 100 ms on a terminal) and never blocks workers
// for longer than one line's formatting.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>

namespace glm5rt {

class Progress {
public:
  using Clock = std::function<double()>; // seconds, monotonic

  // `out` receives the drawing; `terminal` chooses the in-place bar. The default clock is
  // std::chrono::steady_clock.
  Progress(std::string label, uint64_t totalBytes, FILE *out, bool terminal,
           Clock clock = nullptr);
  // For stderr, with `terminal` from isatty.
  static Progress toStderr(std::string label, uint64_t totalBytes);

  void advance(uint64_t bytes);
  // Draws the final line: "<label>: <total> in <s> (<rate>)". Idempotent.
  void finish();

  // "1.50 GB", "512.0 MB", "12.0 kB", "17 B" (decimal units, like disk and link rates).
  static std::string bytesText(double bytes);

private:
  void draw(uint64_t done, double now, bool final);

  std::string label_;
  uint64_t total_;
  FILE *out_;
  bool terminal_;
  Clock clock_;
  double start_;
  std::atomic<uint64_t> done_{0};
  std::mutex mutex_;     // guards what follows and the output
  double lastDraw_ = -1; // seconds
  int lastDecile_ = 0;   // plain mode: last 10% step printed
  bool finished_ = false;
};

} // namespace glm5rt

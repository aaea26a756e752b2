// Progress lines (see progress.h).
#include "runtime/support/progress.h"

#include "runtime/support/status.h"

#include <unistd.h>

#include <algorithm>

namespace glm5rt {

namespace {

double steadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string durationText(double s) {
  if (s < 60)
    return strFormat("%.0f s", s);
  if (s < 3600)
    return strFormat("%d min %02d s", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  return strFormat("%d h %02d min", static_cast<int>(s) / 3600, static_cast<int>(s) / 60 % 60);
}

} // namespace

Progress::Progress(std::string label, uint64_t totalBytes, FILE *out, bool terminal, Clock clock)
    : label_(std::move(label)), total_(totalBytes), out_(out), terminal_(terminal),
      clock_(clock ? std::move(clock) : Clock(steadySeconds)), start_(clock_()) {}

Progress Progress::toStderr(std::string label, uint64_t totalBytes) {
  return Progress(std::move(label), totalBytes, stderr, isatty(fileno(stderr)) != 0);
}

std::string Progress::bytesText(double b) {
  if (b >= 1e9)
    return strFormat("%.2f GB", b / 1e9);
  if (b >= 1e6)
    return strFormat("%.1f MB", b / 1e6);
  if (b >= 1e3)
    return strFormat("%.1f kB", b / 1e3);
  return strFormat("%.0f B", b);
}

void Progress::advance(uint64_t bytes) {
  const uint64_t done = done_.fetch_add(bytes) + bytes;
  // Cheap checks first, so most calls from workers return without the lock.
  if (terminal_) {
    std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
    if (!lock.owns_lock() || finished_)
      return;
    const double now = clock_();
    if (now - lastDraw_ < 0.1)
      return;
    lastDraw_ = now;
    draw(std::min(done, total_), now, false);
  } else {
    const int decile = total_ ? static_cast<int>(std::min<uint64_t>(done, total_) * 10 / total_) : 10;
    if (decile <= lastDecile_ || decile >= 10)
      return; // the last step is finish()'s line
    std::lock_guard<std::mutex> lock(mutex_);
    if (finished_ || decile <= lastDecile_)
      return;
    lastDecile_ = decile;
    draw(std::min(done, total_), clock_(), false);
  }
}

void Progress::finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (finished_)
    return;
  finished_ = true;
  draw(done_.load(), clock_(), true);
}

void Progress::draw(uint64_t done, double now, bool final) {
  const double elapsed = std::max(now - start_, 1e-9);
  const double rate = static_cast<double>(done) / elapsed;
  const double fraction = total_ ? static_cast<double>(done) / static_cast<double>(total_) : 1;
  std::string line;
  if (final) {
    line = strFormat("%s: %s in %.1f s (%s/s)", label_.c_str(), bytesText(done).c_str(), elapsed,
                     bytesText(rate).c_str());
  } else {
    const std::string eta =
        rate > 0 ? durationText(static_cast<double>(total_ - done) / rate) : std::string("?");
    std::string bar;
    if (terminal_) {
      const int width = 24, filled = static_cast<int>(fraction * width);
      bar = "[" + std::string(filled, '#') + std::string(width - filled, '.') + "] ";
    }
    line = strFormat("%s: %s%3.0f%%  %s / %s  %s/s  ETA %s", label_.c_str(), bar.c_str(),
                     fraction * 100, bytesText(done).c_str(), bytesText(total_).c_str(),
                     bytesText(rate).c_str(), eta.c_str());
  }
  // On a terminal: return to the line start and clear it (ESC [ K), newline only at the end.
  if (terminal_)
    std::fprintf(out_, "\r\033[K%s%s", line.c_str(), final ? "\n" : "");
  else
    std::fprintf(out_, "%s\n", line.c_str());
  std::fflush(out_);
}

} // namespace glm5rt

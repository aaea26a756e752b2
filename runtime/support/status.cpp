// Status formatting helpers.
#include "runtime/support/status.h"

#include <vector>

namespace glm5rt {

const char *statusCodeName(StatusCode code) {
  switch (code) {
  case StatusCode::kOk: return "ok";
  case StatusCode::kInvalidArgument: return "invalid-argument";
  case StatusCode::kNotFound: return "not-found";
  case StatusCode::kDataLoss: return "data-loss";
  case StatusCode::kUnimplemented: return "unimplemented";
  case StatusCode::kIoError: return "io-error";
  case StatusCode::kResourceExhausted: return "resource-exhausted";
  case StatusCode::kInternal: return "internal";
  case StatusCode::kFailedPrecondition: return "failed-precondition";
  case StatusCode::kAborted: return "aborted";
  }
  return "unknown";
}

std::string Status::toString() const {
  if (isOk())
    return "ok";
  return std::string(statusCodeName(code_)) + ": " + message_;
}

Status Status::withContext(const std::string &context) const {
  if (isOk())
    return *this;
  return Status(code_, context + ": " + message_);
}

static std::string vformat(const char *fmt, va_list args) {
  va_list copy;
  va_copy(copy, args);
  int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  if (n < 0)
    return fmt;
  std::vector<char> buf(static_cast<size_t>(n) + 1);
  std::vsnprintf(buf.data(), buf.size(), fmt, args);
  return std::string(buf.data(), static_cast<size_t>(n));
}

std::string strFormat(const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string s = vformat(fmt, args);
  va_end(args);
  return s;
}

Status makeStatus(StatusCode code, const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string s = vformat(fmt, args);
  va_end(args);
  return Status(code, std::move(s));
}

} // namespace glm5rt

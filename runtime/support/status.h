// Status: the runtime's error type — a code plus a message naming the element that failed.
//
// The runtime builds without exceptions; every fallible function returns a Status or a
// StatusOr<T>. Messages name the key, tensor or plan element and the byte offset when there is one
// (docs/conventions.md "Errors").
#pragma once

#include <cstdarg>
#include <cstdio>
#include <string>
#include <utility>

namespace glm5rt {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument, // bad flag or bad call
  kNotFound,        // a file, key or tensor that is not there
  kDataLoss,        // a file whose bytes contradict its own format (truncated, hostile, corrupt)
  kUnimplemented,   // valid input we do not support (a quant type without a dequantizer, ...)
  kIoError,         // the OS refused (open, mmap, write)
  kResourceExhausted,
  kInternal,
  kFailedPrecondition, // valid input this machine cannot run (a plan for another GPU arch, ...)
  kAborted,            // stopped because another part (a rank of a mesh) failed
};

const char *statusCodeName(StatusCode code);

class [[nodiscard]] Status {
public:
  Status() = default;
  Status(StatusCode code, std::string message)
      : code_(code), message_(std::move(message)) {}

  static Status ok() { return Status(); }
  bool isOk() const { return code_ == StatusCode::kOk; }
  explicit operator bool() const { return isOk(); }
  StatusCode code() const { return code_; }
  const std::string &message() const { return message_; }
  // "data-loss: <message>"
  std::string toString() const;

  // Returns a copy whose message is prefixed with `context: `.
  Status withContext(const std::string &context) const;

private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// printf-style message construction for statuses.
std::string strFormat(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
Status makeStatus(StatusCode code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

// A value or the Status explaining why there is none. T must be default-constructible or movable.
template <typename T> class [[nodiscard]] StatusOr {
public:
  StatusOr(Status status) : status_(std::move(status)) {}
  StatusOr(T value) : value_(std::move(value)), has_(true) {}
  bool isOk() const { return has_; }
  const Status &status() const { return status_; }
  T &value() & { return value_; }
  const T &value() const & { return value_; }
  T &&value() && { return std::move(value_); }
  T *operator->() { return &value_; }
  const T *operator->() const { return &value_; }
  T &operator*() { return value_; }
  const T &operator*() const { return value_; }

private:
  Status status_;
  T value_{};
  bool has_ = false;
};

} // namespace glm5rt

// Propagates a non-ok Status from an expression to the caller.
#define GLM5_RETURN_IF_ERROR(expr)                                             \
  do {                                                                         \
    ::glm5rt::Status glm5_status_ = (expr);                                    \
    if (!glm5_status_.isOk())                                                  \
      return glm5_status_;                                                     \
  } while (0)

// `GLM5_ASSIGN_OR_RETURN(T x, statusOrExpr);` declares x from an ok StatusOr, or returns its
// Status to the caller.
#define GLM5_CONCAT_INNER_(a, b) a##b
#define GLM5_CONCAT_(a, b) GLM5_CONCAT_INNER_(a, b)
#define GLM5_ASSIGN_OR_RETURN(decl, expr)                                      \
  auto GLM5_CONCAT_(glm5_or_, __LINE__) = (expr);                              \
  if (!GLM5_CONCAT_(glm5_or_, __LINE__).isOk())                                \
    return GLM5_CONCAT_(glm5_or_, __LINE__).status();                         \
  decl = std::move(GLM5_CONCAT_(glm5_or_, __LINE__)).value()

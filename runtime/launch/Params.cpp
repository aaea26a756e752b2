// Kernel params (see Params.h).
#include "runtime/launch/Params.h"

namespace glm5rt::launch {

StatusOr<int64_t> kernelParam(const glm5::plan::Kernel &k, const char *key, int64_t lo,
                              int64_t hi) {
  const std::string name = k.variant() ? k.variant()->str() : "?";
  if (k.params())
    for (const glm5::plan::Attr *a : *k.params())
      if (a->key() && a->key()->str() == key) {
        if (a->is_float() || a->is_string() || a->i() < lo || a->i() > hi)
          return makeStatus(StatusCode::kDataLoss,
                            "plan kernel %s: params.%s is outside [%lld, %lld]", name.c_str(), key,
                            static_cast<long long>(lo), static_cast<long long>(hi));
        return a->i();
      }
  return makeStatus(StatusCode::kDataLoss, "plan kernel %s: params.%s is missing", name.c_str(),
                    key);
}

} // namespace glm5rt::launch

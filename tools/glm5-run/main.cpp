// glm5-run: loads a plan and its GGUF and runs GLM-5. A thin main over the runtime.
//   glm5-run score MODEL.plan --weights MODEL.gguf --tokens 1,2,3 --prefill P [--out F.npy]
//            [--device host] [--ctx N]
// Tokens [0, P) go through prefill, tokens [P, n) through one-token decode steps; nothing is
// added (no BOS, no template). Row i of the logits is the distribution after token i.
#include "runtime/cli/Npy.h"
#include "runtime/gguf/gguf_reader.h"
#include "runtime/host/Backend.h"
#include "runtime/plan/Plan.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using glm5rt::Status;

const char *kUsage =
    "usage:\n"
    "  glm5-run score MODEL.plan --weights MODEL.gguf --tokens ID,ID,... --prefill P\n"
    "                 [--out LOGITS.npy] [--device host] [--ctx N]\n";

int usage(const std::string &why) {
  if (!why.empty())
    std::fprintf(stderr, "glm5-run: %s\n", why.c_str());
  std::fputs(kUsage, stderr);
  return 2;
}

int fail(const Status &s) {
  std::fprintf(stderr, "glm5-run: error: %s\n", s.message().c_str());
  return 1;
}

bool parseTokens(const std::string &s, std::vector<int32_t> *out) {
  size_t p = 0;
  while (p < s.size()) {
    size_t c = s.find(',', p);
    std::string item = s.substr(p, c == std::string::npos ? std::string::npos : c - p);
    char *end = nullptr;
    errno = 0;
    long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end || errno || v < 0 || v > INT32_MAX)
      return false;
    out->push_back(static_cast<int32_t>(v));
    if (c == std::string::npos)
      break;
    p = c + 1;
  }
  return !out->empty();
}

int cmdScore(int argc, char **argv) {
  std::string planPath, weights, out, device = "host";
  std::vector<int32_t> tokens;
  long prefill = -1, ctx = 0;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "--weights" && v) {
      weights = v;
      ++i;
    } else if (a == "--tokens" && v) {
      if (!parseTokens(v, &tokens))
        return usage("--tokens takes comma-separated non-negative token ids");
      ++i;
    } else if (a == "--prefill" && v) {
      prefill = std::atol(v);
      ++i;
    } else if (a == "--out" && v) {
      out = v;
      ++i;
    } else if (a == "--device" && v) {
      device = v;
      ++i;
    } else if (a == "--ctx" && v) {
      ctx = std::atol(v);
      ++i;
    } else if (planPath.empty() && a[0] != '-') {
      planPath = a;
    } else {
      return usage("score: unexpected argument '" + a + "'");
    }
  }
  if (planPath.empty() || weights.empty() || tokens.empty())
    return usage("score needs MODEL.plan, --weights and --tokens");
  const long n = static_cast<long>(tokens.size());
  if (prefill < 1 || prefill > n)
    return usage("--prefill P needs 1 <= P <= the number of tokens (" + std::to_string(n) + ")");
  if (device != "host")
    return usage("--device takes host (the cuda backend is not built yet)");
  auto plan = glm5rt::plan::LoadedPlan::open(planPath);
  if (!plan.isOk())
    return fail(plan.status());
  auto gguf = glm5rt::gguf::GgufFile::open(weights);
  if (!gguf.isOk())
    return fail(gguf.status());
  const long maxCtx = (*plan)->plan().config()->context_length();
  if (ctx <= 0)
    ctx = n;
  if (n > ctx || (maxCtx > 0 && ctx > maxCtx))
    return fail(glm5rt::makeStatus(glm5rt::StatusCode::kInvalidArgument,
                                   "%ld tokens do not fit a context of %ld (the model's context "
                                   "length is %ld); raise --ctx",
                                   n, ctx, maxCtx));
  auto backend = glm5rt::host::Backend::create(**plan, **gguf, ctx);
  if (!backend.isOk())
    return fail(backend.status());
  const int64_t vocab = (*backend)->vocab();
  std::vector<float> all;
  all.reserve(static_cast<size_t>(n * vocab));
  std::vector<int32_t> pos(static_cast<size_t>(prefill));
  for (long i = 0; i < prefill; ++i)
    pos[static_cast<size_t>(i)] = static_cast<int32_t>(i);
  for (long i = 0; i < n; ++i)
    if (tokens[static_cast<size_t>(i)] >= vocab)
      return fail(glm5rt::makeStatus(glm5rt::StatusCode::kInvalidArgument,
                                     "token %d at index %ld is outside the vocabulary of %lld",
                                     tokens[static_cast<size_t>(i)], i,
                                     static_cast<long long>(vocab)));
  std::vector<float> logits;
  Status s = (*backend)->run("prefill", tokens.data(), pos.data(), prefill, &logits);
  if (!s.isOk())
    return fail(s);
  all.insert(all.end(), logits.begin(), logits.end());
  for (long i = prefill; i < n; ++i) {
    int32_t p = static_cast<int32_t>(i);
    s = (*backend)->run("decode", &tokens[static_cast<size_t>(i)], &p, 1, &logits);
    if (!s.isOk())
      return fail(s);
    all.insert(all.end(), logits.begin(), logits.end());
  }
  if (!out.empty()) {
    s = glm5rt::cli::writeNpyF32(out, all, n, vocab);
    if (!s.isOk())
      return fail(s);
  }
  // A summary per position: the argmax token and its logit.
  for (long i = 0; i < n; ++i) {
    const float *row = all.data() + i * vocab;
    long best = 0;
    for (long v = 1; v < vocab; ++v)
      if (row[v] > row[best])
        best = v;
    std::printf("%ld %s token %d -> argmax %ld (%.6g)\n", i, i < prefill ? "prefill" : "decode ",
                tokens[static_cast<size_t>(i)], best, row[best]);
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2)
    return usage("");
  std::string cmd = argv[1];
  if (cmd == "score")
    return cmdScore(argc - 2, argv + 2);
  if (cmd == "--help" || cmd == "-h") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  return usage("unknown command '" + cmd + "' (text generation arrives with the tokenizer)");
}

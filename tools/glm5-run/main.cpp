// glm5-run: loads a plan and its GGUF and runs GLM-5. A thin main over the runtime.
//   glm5-run MODEL.plan --weights MODEL.gguf -p TEXT [-n N] [--chat] [--temp T] [--top-k K]
//            [--top-p P] [--seed S] [--device cuda|host] [--check] [--ctx N] [--profile]
//            [--graph-time]
// streams the generated text, stops at an end-of-generation token or after N tokens, and
// prints prefill and decode tokens/s on stderr.
//   glm5-run score MODEL.plan --weights MODEL.gguf --tokens 1,2,3 --prefill P [--out F.npy]
//            [--device cuda|host] [--check] [--ctx N]
// Tokens [0, P) go through prefill, tokens [P, n) through one-token decode steps; nothing is
// added (no BOS, no template). Row i of the logits is the distribution after token i.
#include "runtime/backend/Check.h"
#include "runtime/cli/Args.h"
#include "runtime/cli/Npy.h"
#include "runtime/cuda/Backend.h"
#include "runtime/gguf/gguf_reader.h"
#include "runtime/host/Backend.h"
#include "runtime/host/Mesh.h"
#include "runtime/cuda/RankProcesses.h"
#include "runtime/plan/Plan.h"
#include "runtime/sampler/Sampler.h"
#include "runtime/support/progress.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <chrono>
#include <cmath>

#include <algorithm>
#include <map>
#include <new>
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
    "  glm5-run MODEL.plan --weights MODEL.gguf -p TEXT [-n N] [--chat] [--temp T]\n"
    "           [--top-k K] [--top-p P] [--seed S] [--device cuda|host]\n"
    "           [--check[-free] [TOL]] [--ctx N] [--chunk N] [--profile] [--graph-time]\n"
    "  glm5-run tokenize --weights MODEL.gguf -p TEXT [--special]\n"
    "           prints the token ids of TEXT (special tokens matched with --special)\n"
    "  glm5-run score MODEL.plan --weights MODEL.gguf --tokens ID,ID,... --prefill P\n"
    "                 [--out LOGITS.npy] [--device cuda|host] [--check [TOL]] [--ctx N]\n"
    "                 [--chunk N] [--dump-selections SEL.json]\n"
    "  --device: cuda (default for GPU plans) or host (plain C++ reference kernels; default for\n"
    "  host plans). --check: runs every step on cuda and on host, each cuda step from host's\n"
    "  outputs of the step before, and reports the steps whose outputs differ by more than TOL\n"
    "  (relative; default 3e-2 for bf16 plans, 1e-3 for f32); --check-free: both run freely\n"
    "  (errors accumulate). Prefill runs in chunks of at most --chunk tokens (default 512);\n"
    "  cuda replays each decode step as a CUDA graph (--no-graph: launches step by step) and\n"
    "  launches each kernel overlapped with the one before it (--no-overlap: one after another).\n"
    "  --mla-kernel auto|base|two-per-sm|wide (cuda): which of a sparse-MLA op's kernels runs:\n"
    "  chosen per device and batch (auto), or forced where the plan has it: the step's own, its\n"
    "  two-CTAs-per-SM form (SM120 tiles), the 32-heads-per-CTA one (ops of >= 32 heads).\n"
    "  --mla-merge auto|cluster (cuda): how sparse MLA merges its splits: auto takes the spread\n"
    "  merge where the whole launch fits the device at once (its CTAs wait for each other);\n"
    "  cluster never does (a GPU shared with other processes, whose SMs this one cannot count\n"
    "  on).\n"
    "  --profile (cuda): launches step by step and prints each kernel's device time per call\n"
    "  of prefill and decode on stderr, largest first. --graph-time (cuda): times each decode\n"
    "  step's graph replay on the device and prints the median, lowest and highest on stderr.\n";

int usage(const std::string &why) {
  if (!why.empty())
    std::fprintf(stderr, "glm5-run: %s\n", why.c_str());
  std::fputs(kUsage, stderr);
  return 2;
}

// An argument no command option took: an option that takes a value but came last gets that said,
// rather than being called unexpected. `cmd` prefixes the message ("score: ", or empty).
int unexpectedArgument(const std::string &cmd, const std::string &a, bool last) {
  static const char *const kValueOptions[] = {
      "--weights", "-p",     "--prompt", "-n",     "--ctx",        "--chunk",      "--temp",
      "--top-k",   "--top-p", "--seed",  "--device", "--mla-kernel", "--mla-merge", "--tokens",
      "--prefill", "--out",   "--dump-selections"};
  if (last)
    for (const char *o : kValueOptions)
      if (a == o)
        return usage(cmd + a + " takes a value");
  return usage(cmd + "unexpected argument '" + a + "'");
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
    uint64_t v = 0;
    if (!glm5rt::cli::parseUnsigned(item.c_str(), INT32_MAX, &v))
      return false;
    out->push_back(static_cast<int32_t>(v));
    if (c == std::string::npos)
      break;
    p = c + 1;
  }
  return !out->empty();
}

// A numeric option's value: the whole argument, a finite number in [lo, hi] (strtod also reads
// "nan" and "inf", which every range comparison would let through).
bool parseNumber(const char *v, double lo, double hi, double *out) {
  if (!v || !*v)
    return false;
  char *end = nullptr;
  const double x = std::strtod(v, &end);
  if (*end || !std::isfinite(x) || x < lo || x > hi)
    return false;
  *out = x;
  return true;
}
// Integer options take parseUnsigned(v, lo, hi, &out): the whole argument, decimal digits only,
// in [lo, hi] ("2.5", "1e3", "+4" and " 4" are refused, not read as a prefix or rounded).
using glm5rt::cli::parseUnsigned;
// Token counts: a context, a chunk, a prefill length (positions are 32-bit).
bool parseTokenCount(const char *v, long *out) {
  uint64_t x = 0;
  if (!parseUnsigned(v, 1, INT32_MAX, &x))
    return false;
  *out = static_cast<long>(x);
  return true;
}

// Runs tokens[0, n) through the prefill entry in chunks of at most `chunk` tokens (positions
// continue across chunks; the KV cache carries the context). `all` gets every row of logits
// (everyRow) or only the last token's (generation: a long prompt's rows would take prompt x
// vocab floats, about 20 GB at 32K tokens of GLM-5's vocabulary).
Status prefillChunked(glm5rt::Backend &backend, const int32_t *tokens, long n, long chunk,
                      bool everyRow, std::vector<float> *all) {
  std::vector<float> logits;
  std::vector<int32_t> pos;
  chunk = std::min<long>(chunk, static_cast<long>(backend.maxChunk()));
  for (long start = 0; start < n; start += chunk) {
    long len = std::min(chunk, n - start);
    pos.resize(static_cast<size_t>(len));
    for (long i = 0; i < len; ++i)
      pos[static_cast<size_t>(i)] = static_cast<int32_t>(start + i);
    GLM5_RETURN_IF_ERROR(backend.run("prefill", tokens + start, pos.data(), len, &logits));
    if (everyRow)
      all->insert(all->end(), logits.begin(), logits.end());
    else if (start + len == n)
      all->assign(logits.end() - static_cast<long>(logits.size()) / len, logits.end());
  }
  return Status::ok();
}

struct DeviceChoice {
  std::string device; // "", "cuda" or "host"; "" = from the plan
  bool check = false;
  bool isolate = true;  // --check: each step on the reference's inputs; --check-free: not
  bool graphs = true;   // --no-graph: decode steps launched one by one
  bool overlap = true;  // --no-overlap: no programmatic dependent launch
  glm5rt::launch::SparseMlaForce mlaKernel = glm5rt::launch::SparseMlaForce::kAuto;
  bool mlaSpread = true; // --mla-merge cluster: false
  double tolerance = 0; // 0 = from the plan's activation dtype
};

bool parseMlaKernel(const std::string &v, DeviceChoice *dc) {
  using glm5rt::launch::SparseMlaForce;
  if (v == "auto")
    dc->mlaKernel = SparseMlaForce::kAuto;
  else if (v == "base")
    dc->mlaKernel = SparseMlaForce::kBase;
  else if (v == "two-per-sm")
    dc->mlaKernel = SparseMlaForce::kTwoPerSm;
  else if (v == "wide")
    dc->mlaKernel = SparseMlaForce::kWide;
  else
    return false;
  return true;
}

bool parseMlaMerge(const std::string &v, DeviceChoice *dc) {
  if (v != "auto" && v != "cluster")
    return false;
  dc->mlaSpread = v == "auto";
  return true;
}

// The backend a command runs on: the plan's kind decides by default (host plans on the host
// backend, GPU plans on cuda); --check wraps cuda and host in a step-by-step comparison.
glm5rt::StatusOr<std::unique_ptr<glm5rt::Backend>>
makeBackend(const DeviceChoice &choice, const glm5rt::plan::LoadedPlan &plan,
            const glm5rt::gguf::GgufFile &gguf, long ctx, long chunk) {
  const auto &p = plan.plan();
  const bool hostPlan = p.target() && p.target()->tiles() && p.target()->tiles()->str() == "host";
  std::string device = choice.device.empty() ? (hostPlan ? "host" : "cuda") : choice.device;
  auto makeHost = [&]() -> glm5rt::StatusOr<std::unique_ptr<glm5rt::Backend>> {
    if (p.ranks() > 1) { // a sharded plan: one host backend per rank, threads, shared memory
      GLM5_ASSIGN_OR_RETURN(auto m, glm5rt::host::MeshBackend::create(plan, gguf, ctx));
      return std::unique_ptr<glm5rt::Backend>(std::move(m));
    }
    GLM5_ASSIGN_OR_RETURN(auto b, glm5rt::host::Backend::create(plan, gguf, ctx));
    return std::unique_ptr<glm5rt::Backend>(std::move(b));
  };
  auto makeCuda = [&]() -> glm5rt::StatusOr<std::unique_ptr<glm5rt::Backend>> {
    glm5rt::cuda::BackendOptions o;
    o.contextTokens = ctx;
    o.chunk = chunk;
    o.graphs = choice.graphs;
    o.overlap = choice.overlap;
    o.mlaKernel = choice.mlaKernel;
    o.mlaSpread = choice.mlaSpread;
    // A sharded plan: one process per rank and GPU (this one is rank 0 until it forks), joined
    // by NCCL; the communicator lives as long as the process.
    static glm5rt::cuda::RankProcess rankProcess;
    if (p.ranks() > 1) {
      GLM5_ASSIGN_OR_RETURN(rankProcess, glm5rt::cuda::startRankProcesses(p.ranks()));
      o.comm = rankProcess.comm.get();
    }
    GLM5_ASSIGN_OR_RETURN(auto b, glm5rt::cuda::Backend::create(plan, gguf, o));
    std::fprintf(stderr, "glm5-run: %scuda on %s (sm_%d%d, %d SMs): %s, weights %.1f MB, %s of "
                 "device memory, context %lld tokens\n",
                 p.ranks() > 1 ? glm5rt::strFormat("rank %d of %d: ", rankProcess.rank,
                                                   p.ranks()).c_str() : "",
                 b->device().name.c_str(), b->device().major, b->device().minor,
                 b->device().smCount, p.target()->code_arch()->c_str(), b->weightBytes() / 1e6,
                 glm5rt::Progress::bytesText(static_cast<double>(b->deviceBytes())).c_str(),
                 static_cast<long long>(b->contextCapacity()));
    return std::unique_ptr<glm5rt::Backend>(std::move(b));
  };
  if (choice.check) {
    if (hostPlan)
      return glm5rt::makeStatus(glm5rt::StatusCode::kInvalidArgument,
                                "--check compares the cuda backend with the host backend: it "
                                "needs a GPU plan, and %s is a host plan",
                                plan.path().c_str());
    GLM5_ASSIGN_OR_RETURN(auto test, makeCuda());
    GLM5_ASSIGN_OR_RETURN(auto ref, makeHost());
    glm5rt::CheckOptions co;
    const bool f32 = p.activation_dtype() == glm5::plan::DType::F32;
    co.tolerance = choice.tolerance > 0 ? choice.tolerance : f32 ? 1e-3 : 3e-2;
    co.topkTolerance = f32 ? 0.0 : 0.1;
    co.isolate = choice.isolate;
    return std::unique_ptr<glm5rt::Backend>(
        new glm5rt::CheckingBackend(std::move(test), std::move(ref), co));
  }
  if (device == "host")
    return makeHost();
  if (device == "cuda") {
    if (hostPlan)
      return glm5rt::makeStatus(glm5rt::StatusCode::kInvalidArgument,
                                "%s is a host plan (compiled with --target host): it has no "
                                "kernels; compile for the GPU (glm5c compile --target sm_90 or "
                                "sm_120a) or use --device host",
                                plan.path().c_str());
    return makeCuda();
  }
  return glm5rt::makeStatus(glm5rt::StatusCode::kInvalidArgument,
                            "--device takes cuda or host, not '%s'", device.c_str());
}

// --check's verdict after a run: the report on stderr, and whether every step was within
// tolerance.
bool checkVerdict(glm5rt::Backend &b) {
  auto *c = dynamic_cast<glm5rt::CheckingBackend *>(&b);
  if (!c)
    return true;
  std::fputs(c->report().c_str(), stderr);
  return c->failures().empty();
}

// Parses --check [TOL]; returns the arguments consumed after --check (0 or 1).
int parseCheck(int i, int argc, char **argv, DeviceChoice *dc) {
  dc->check = true;
  dc->isolate = std::string(argv[i]) != "--check-free";
  if (i + 1 < argc) {
    char *end = nullptr;
    double t = std::strtod(argv[i + 1], &end);
    if (*argv[i + 1] && !*end && std::isfinite(t) && t > 0) { // "inf" would pass every step
      dc->tolerance = t;
      return 1;
    }
  }
  return 0;
}

// The options of both score and generate that pick and steer the backend: --device, --check
// [TOL], --check-free [TOL], --no-graph, --no-overlap, --mla-kernel, --mla-merge. Returns
// whether argv[*i] is one of them; if so it is applied to *dc and *i moves past its value, and a
// bad value leaves the usage line in *bad. (An option missing its value is not one of them.)
bool parseDeviceOption(int *i, int argc, char **argv, DeviceChoice *dc, std::string *bad) {
  const std::string a = argv[*i];
  const char *v = *i + 1 < argc ? argv[*i + 1] : nullptr;
  if (a == "--device" && v) {
    dc->device = v;
  } else if (a == "--check" || a == "--check-free") {
    *i += parseCheck(*i, argc, argv, dc);
    return true;
  } else if (a == "--no-graph") {
    dc->graphs = false;
    return true;
  } else if (a == "--no-overlap") {
    dc->overlap = false;
    return true;
  } else if (a == "--mla-kernel" && v) {
    if (!parseMlaKernel(v, dc))
      *bad = "--mla-kernel takes auto, base, two-per-sm or wide";
  } else if (a == "--mla-merge" && v) {
    if (!parseMlaMerge(v, dc))
      *bad = "--mla-merge takes auto or cluster";
  } else {
    return false;
  }
  ++*i; // the option's value
  return true;
}

// The discrete decisions of every query row, per layer (score --dump-selections): the indexer's
// selected positions (the TopK step of each layer) and the router's experts (output 1 of MoERouter / MoEGate). Fidelity checks compare
// them with the reference's, and replay them in the reference to separate rounding from routing.
struct SelectionDump {
  using Rows = std::map<int, std::map<int, std::vector<int>>>; // layer -> position -> sorted ids
  int layer = -1;
  Rows rows, experts;
  static void take(const glm5rt::StepTrace &t, size_t output, std::vector<int> *dst, int64_t r) {
    const std::vector<float> &v = (*t.outputs)[output];
    const size_t k = v.size() / static_cast<size_t>(t.T);
    dst->clear();
    for (size_t i = 0; i < k; ++i)
      if (v[r * k + i] >= 0)
        dst->push_back(static_cast<int>(v[r * k + i]));
    std::sort(dst->begin(), dst->end());
  }
  void record(const glm5rt::StepTrace &t) {
    const glm5::plan::OpKind op = t.step->op();
    // Steps run in layer order and only attention steps carry their layer: a layer's MoE steps
    // come after its attention, so they belong to the last layer seen.
    if (t.step->layer() >= 0)
      layer = t.step->layer();
    if (t.T <= 0)
      return;
    if (op == glm5::plan::OpKind::TopK)
      for (int64_t r = 0; r < t.T; ++r)
        take(t, 0, &rows[layer][t.positions[r]], r);
    if (op == glm5::plan::OpKind::MoERouter || op == glm5::plan::OpKind::MoEGate)
      for (int64_t r = 0; r < t.T; ++r)
        take(t, 1, &experts[layer][t.positions[r]], r);
  }
  // JSON: {"index_topk": k, "layers": {"L": {"pos": [positions...]}}, "experts": {"L": {"pos":
  // [ids...]}}}; indexer rows pos >= k only (the rows before select every causal position).
  static void writeRows(FILE *f, const Rows &rows, int64_t minPos) {
    bool firstLayer = true;
    for (const auto &[layer, byPos] : rows) {
      std::fprintf(f, "%s\"%d\": {", firstLayer ? "" : ", ", layer);
      firstLayer = false;
      bool firstRow = true;
      for (const auto &[pos, sel] : byPos) {
        if (pos < minPos)
          continue;
        std::fprintf(f, "%s\"%d\": [", firstRow ? "" : ", ", pos);
        firstRow = false;
        for (size_t i = 0; i < sel.size(); ++i)
          std::fprintf(f, i ? ", %d" : "%d", sel[i]);
        std::fputc(']', f);
      }
      std::fputc('}', f);
    }
  }
  Status write(const std::string &path, int64_t k) const {
    FILE *f = std::fopen(path.c_str(), "w");
    if (!f)
      return glm5rt::makeStatus(glm5rt::StatusCode::kInvalidArgument, "cannot write %s: %s",
                                path.c_str(), std::strerror(errno));
    std::fprintf(f, "{\"index_topk\": %lld, \"layers\": {", static_cast<long long>(k));
    writeRows(f, rows, k);
    std::fputs("}, \"experts\": {", f);
    writeRows(f, experts, 0);
    std::fputs("}}\n", f);
    return std::fclose(f) == 0 ? Status::ok()
                               : glm5rt::makeStatus(glm5rt::StatusCode::kInvalidArgument,
                                                    "cannot write %s", path.c_str());
  }
};

int cmdScore(int argc, char **argv) {
  std::string planPath, weights, out, selectionsPath;
  DeviceChoice dc;
  std::vector<int32_t> tokens;
  long prefill = -1, ctx = 0, chunk = 512;
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
      if (!parseTokenCount(v, &prefill))
        return usage("--prefill takes a positive number of tokens");
      ++i;
    } else if (a == "--out" && v) {
      out = v;
      ++i;
    } else if (a == "--dump-selections" && v) {
      selectionsPath = v;
      ++i;
    } else if (std::string bad; parseDeviceOption(&i, argc, argv, &dc, &bad)) {
      if (!bad.empty())
        return usage(bad);
    } else if (a == "--ctx" && v) {
      if (!parseTokenCount(v, &ctx))
        return usage("--ctx takes a positive number of tokens");
      ++i;
    } else if (a == "--chunk" && v) {
      if (!parseTokenCount(v, &chunk))
        return usage("--chunk takes a positive number of tokens");
      ++i;
    } else if (planPath.empty() && a[0] != '-') {
      planPath = a;
    } else {
      return unexpectedArgument("score: ", a, i + 1 == argc);
    }
  }
  if (planPath.empty() || weights.empty() || tokens.empty())
    return usage("score needs MODEL.plan, --weights and --tokens");
  const long n = static_cast<long>(tokens.size());
  if (prefill < 1 || prefill > n)
    return usage("--prefill P needs 1 <= P <= the number of tokens (" + std::to_string(n) + ")");
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
  if (!selectionsPath.empty() && dc.check)
    return usage("--dump-selections and --check do not combine");
  auto backend = makeBackend(dc, **plan, **gguf, ctx, chunk);
  if (!backend.isOk())
    return fail(backend.status());
  const int64_t vocab = (*backend)->vocab();
  SelectionDump selections;
  if (!selectionsPath.empty())
    (*backend)->setTrace([&](const glm5rt::StepTrace &t) { selections.record(t); });
  std::vector<float> all;
  try {
    all.reserve(static_cast<size_t>(n * vocab)); // every row: no reallocation below
  } catch (const std::bad_alloc &) {
    return fail(glm5rt::makeStatus(glm5rt::StatusCode::kResourceExhausted,
                                   "the logits of %ld tokens (%.1f GB) do not fit this machine's "
                                   "memory; score fewer tokens",
                                   n, double(n) * double(vocab) * 4 / 1e9));
  }
  for (long i = 0; i < n; ++i)
    if (tokens[static_cast<size_t>(i)] >= vocab)
      return fail(glm5rt::makeStatus(glm5rt::StatusCode::kInvalidArgument,
                                     "token %d at index %ld is outside the vocabulary of %lld",
                                     tokens[static_cast<size_t>(i)], i,
                                     static_cast<long long>(vocab)));
  std::vector<float> logits;
  Status s = prefillChunked(**backend, tokens.data(), prefill, chunk, /*everyRow=*/true, &all);
  if (!s.isOk())
    return fail(s);
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
  if (!selectionsPath.empty()) {
    s = selections.write(selectionsPath, (*plan)->plan().config()->index_topk());
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
  return checkVerdict(**backend) ? 0 : 1;
}

int cmdTokenize(int argc, char **argv) {
  std::string weights, text;
  bool special = false, haveText = false;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--weights" && i + 1 < argc) {
      weights = argv[++i];
    } else if ((a == "-p" || a == "--prompt") && i + 1 < argc) {
      text = argv[++i];
      haveText = true;
    } else if (a == "--special") {
      special = true;
    } else {
      return unexpectedArgument("tokenize: ", a, i + 1 == argc);
    }
  }
  if (weights.empty() || !haveText)
    return usage("tokenize needs --weights and -p TEXT");
  auto gguf = glm5rt::gguf::GgufFile::open(weights);
  if (!gguf.isOk())
    return fail(gguf.status());
  auto tok = glm5rt::tokenizer::Tokenizer::fromGguf(**gguf);
  if (!tok.isOk())
    return fail(tok.status());
  std::vector<int32_t> ids = (*tok)->encode(text, special);
  for (size_t i = 0; i < ids.size(); ++i)
    std::printf(i ? ",%d" : "%d", ids[i]);
  std::printf("\n");
  return 0;
}

int cmdGenerate(int argc, char **argv) {
  std::string planPath, weights, prompt;
  DeviceChoice dc;
  long n = 64, ctx = 0, chunk = 512;
  bool chat = false, havePrompt = false, profile = false, graphTime = false;
  glm5rt::sampler::SamplerOptions so;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : nullptr;
    double x = 0;
    uint64_t u = 0;
    if (a == "--weights" && v) {
      weights = v;
      ++i;
    } else if ((a == "-p" || a == "--prompt") && v) {
      prompt = v;
      havePrompt = true;
      ++i;
    } else if (a == "-n" && v) {
      if (!parseUnsigned(v, 1, 10000000, &u))
        return usage("-n takes a positive number of tokens");
      n = static_cast<long>(u);
      ++i;
    } else if (a == "--ctx" && v) {
      if (!parseTokenCount(v, &ctx))
        return usage("--ctx takes a positive number of tokens");
      ++i;
    } else if (a == "--chunk" && v) {
      if (!parseTokenCount(v, &chunk))
        return usage("--chunk takes a positive number of tokens");
      ++i;
    } else if (a == "--temp" && v) {
      if (!parseNumber(v, 0, 1e30, &x))
        return usage("--temp takes a non-negative number");
      so.temperature = static_cast<float>(x);
      ++i;
    } else if (a == "--top-k" && v) {
      if (!parseUnsigned(v, 0, INT32_MAX, &u))
        return usage("--top-k takes a non-negative integer");
      so.topK = static_cast<int>(u);
      ++i;
    } else if (a == "--top-p" && v) {
      if (!parseNumber(v, 0, 1, &x) || x == 0)
        return usage("--top-p takes a number in (0, 1]");
      so.topP = static_cast<float>(x);
      ++i;
    } else if (a == "--seed" && v) {
      if (!parseUnsigned(v, 0, UINT64_MAX, &so.seed))
        return usage("--seed takes a non-negative integer below 2^64");
      ++i;
    } else if (std::string bad; parseDeviceOption(&i, argc, argv, &dc, &bad)) {
      if (!bad.empty())
        return usage(bad);
    } else if (a == "--chat") {
      chat = true;
    } else if (a == "--profile") {
      profile = true;
    } else if (a == "--graph-time") {
      graphTime = true;
    } else if (planPath.empty() && a[0] != '-') {
      planPath = a;
    } else {
      return unexpectedArgument("", a, i + 1 == argc);
    }
  }
  if (planPath.empty() || weights.empty() || !havePrompt)
    return usage("generation needs MODEL.plan, --weights and -p TEXT");
  auto plan = glm5rt::plan::LoadedPlan::open(planPath);
  if (!plan.isOk())
    return fail(plan.status());
  auto gguf = glm5rt::gguf::GgufFile::open(weights);
  if (!gguf.isOk())
    return fail(gguf.status());
  auto tok = glm5rt::tokenizer::Tokenizer::fromGguf(**gguf);
  if (!tok.isOk())
    return fail(tok.status());
  std::string text = prompt;
  if (chat) {
    auto templated = glm5rt::tokenizer::Tokenizer::applyChatTemplate({{"user", prompt}}, true);
    if (!templated.isOk())
      return fail(templated.status());
    text = *templated;
  }
  std::vector<int32_t> ids = (*tok)->encode(text, /*parseSpecial=*/chat);
  if (ids.empty())
    return usage("the prompt is empty");
  const long modelCtx = (*plan)->plan().config()->context_length();
  if (ctx <= 0)
    ctx = std::min<long>(modelCtx > 0 ? modelCtx : 4096, static_cast<long>(ids.size()) + n);
  if (static_cast<long>(ids.size()) >= ctx)
    return fail(glm5rt::makeStatus(glm5rt::StatusCode::kInvalidArgument,
                                   "the prompt is %zu tokens, longer than the context of %ld "
                                   "tokens; raise --ctx (the model allows %ld)",
                                   ids.size(), ctx, modelCtx));
  auto backend = makeBackend(dc, **plan, **gguf, ctx, chunk);
  if (!backend.isOk())
    return fail(backend.status());
  if (profile) {
    Status ps = (*backend)->enableProfile();
    if (!ps.isOk())
      return fail(ps);
  }
  if (graphTime) {
    Status gs = (*backend)->enableGraphTime();
    if (!gs.isOk())
      return fail(gs);
  }
  const int64_t vocab = (*backend)->vocab();
  glm5rt::sampler::Sampler sampler(so);
  glm5rt::tokenizer::TokenDecoder decoder(**tok, /*includeSpecial=*/false);
  auto t0 = std::chrono::steady_clock::now();
  std::vector<float> logits;
  Status s = prefillChunked(**backend, ids.data(), static_cast<long>(ids.size()), chunk,
                            /*everyRow=*/false, &logits);
  if (!s.isOk())
    return fail(s);
  auto t1 = std::chrono::steady_clock::now();
  int32_t next = sampler.sample(logits.data(), vocab); // the prompt's last token's row
  long generated = 0;
  int32_t p = static_cast<int32_t>(ids.size());
  std::fputs(prompt.c_str(), stdout);
  // `next` is printed, then decoded at position p while the context has room for it: the token
  // sampled from the last position's logits is printed too (it needs no position of its own).
  while (generated < n && !(*tok)->isEog(next)) {
    std::string piece = decoder.push(next);
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
    ++generated;
    if (generated == n || p >= ctx)
      break;
    s = (*backend)->run("decode", &next, &p, 1, &logits);
    if (!s.isOk())
      return fail(s);
    ++p;
    next = sampler.sample(logits.data(), vocab);
  }
  std::string tail = decoder.finish();
  std::fwrite(tail.data(), 1, tail.size(), stdout);
  std::fputc('\n', stdout);
  auto t2 = std::chrono::steady_clock::now();
  double pre = std::chrono::duration<double>(t1 - t0).count();
  double dec = std::chrono::duration<double>(t2 - t1).count();
  // Why generation stopped: an end-of-generation token, -n, or a full context (--ctx).
  std::string why = (*tok)->isEog(next) && generated < n ? "stopped at end of generation"
                    : generated >= n                     ? "length limit"
                                                         : "the context of " + std::to_string(ctx) +
                                                               " tokens is full; raise --ctx";
  std::fprintf(stderr, "glm5-run: %s: prefill %zu tokens %.1f tok/s, decode %ld tokens %.1f tok/s (%s)\n",
               (*backend)->name(), ids.size(), ids.size() / std::max(pre, 1e-9), generated,
               generated / std::max(dec, 1e-9), why.c_str());
  if (profile)
    std::fputs((*backend)->profileReport().c_str(), stderr);
  if (graphTime)
    std::fputs((*backend)->graphTimeReport().c_str(), stderr);
  return checkVerdict(**backend) ? 0 : 1;
}

} // namespace

int dispatch(int argc, char **argv) {
  if (argc < 2)
    return usage("");
  std::string cmd = argv[1];
  if (cmd == "score")
    return cmdScore(argc - 2, argv + 2);
  if (cmd == "tokenize")
    return cmdTokenize(argc - 2, argv + 2);
  if (cmd == "--help" || cmd == "-h") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  return cmdGenerate(argc - 1, argv + 1);
}

int main(int argc, char **argv) {
  // Host allocations the commands size ahead (the KV cache, logits) report their own message; this
  // is the net for the rest, so that running out of host memory is an error, never an abort.
  try {
    return dispatch(argc, argv);
  } catch (const std::bad_alloc &) {
    return fail(glm5rt::makeStatus(glm5rt::StatusCode::kResourceExhausted,
                                   "out of host memory (the model, the context or the request "
                                   "needs more than this machine has)"));
  }
}

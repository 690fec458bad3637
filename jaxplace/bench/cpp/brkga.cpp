// A single-core C++ BRKGA for the max-throughput pipeline partitioning problem (MTPP),
// the bench peer of `jaxplace bench search --suite regal-time`.
//
// Decoder (Archer et al., ICML 2024, Algorithm 2):
// Kahn's topological sort emitting the ready node of highest priority (float32 keys,
// ties to the smaller index), then the SliceGraph DP over the order with the
// streaming segment-cost column (range additions on a difference array). Tensors are
// hyperedges: paid once leaving a block that holds a consumer elsewhere, once
// entering each other block holding a consumer. Overflow max(0, param - M) / B and a
// hard capacity (cost +inf) as in jaxplace.objectives.throughput.reference. The DP scans cut points from
// the right and stops once the segment's work alone reaches the best cost so far
// (every cost term is non-negative, so this never changes the optimum).
//
// BRKGA (Goncalves and Resende 2011): population P, elite fraction 0.2, mutant
// fraction 0.1, crossover bias rho 0.7 (jaxplace's BRKGA defaults); G generations
// counting the initial one, so P = G = 100 is the paper's brkga-10000. Elites are
// carried over with their fitness (not decoded again).
//
// Graph file (text, whitespace separated):
//   jaxplace-mtpp 1
//   n T k
//   bandwidth memory capacity_limit      (memory < 0: no overflow; "inf": no capacity)
//   n lines: work param
//   T lines: producer size c consumer_1 .. consumer_c
//
// usage:
//   brkga GRAPH [--pop 100] [--gens 100] [--seed 0] [--elite 0.2] [--mutant 0.1]
//               [--rho 0.7] [--trace]
//     prints "best COST", "evaluations E", "seconds S" (the search loop), with --trace
//     one line "trace EVALUATIONS SECONDS BEST" per generation, and "x X_1 .. X_n".
//   brkga GRAPH --eval POP.bin
//     POP.bin: raw little-endian float32, P*n values; prints P costs, one a line.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

const double kInf = std::numeric_limits<double>::infinity();

struct Graph {
  int n = 0, T = 0, k = 1;
  double bw = 1.0, mem = -1.0, cap = kInf;
  std::vector<double> work, param;
  std::vector<int> t_prod;
  std::vector<double> t_size;  // already divided by the bandwidth
  std::vector<int> t_ptr, t_cons;  // CSR consumers per tensor
  std::vector<int> succ_ptr, succ;  // CSR successors (deduplicated)
  std::vector<int> indeg;
};

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "brkga: %s\n", what);
  std::exit(2);
}

double read_double(FILE* f) {
  char buf[64];
  if (std::fscanf(f, "%63s", buf) != 1) die("truncated graph file");
  char* end = nullptr;
  double v = std::strtod(buf, &end);
  if (end == buf || *end != '\0') die("bad number in graph file");
  return v;
}

int read_int(FILE* f) {
  int v;
  if (std::fscanf(f, "%d", &v) != 1) die("truncated graph file");
  return v;
}

Graph read_graph(const char* path) {
  FILE* f = std::fopen(path, "r");
  if (!f) die("cannot open the graph file");
  char magic[32];
  int version = 0;
  if (std::fscanf(f, "%31s %d", magic, &version) != 2 ||
      std::strcmp(magic, "jaxplace-mtpp") != 0 || version != 1)
    die("not a jaxplace-mtpp 1 graph file");
  Graph g;
  g.n = read_int(f);
  g.T = read_int(f);
  g.k = read_int(f);
  if (g.n < 1 || g.T < 0 || g.k < 1) die("bad sizes in graph file");
  g.bw = read_double(f);
  g.mem = read_double(f);
  g.cap = read_double(f);
  g.work.resize(g.n);
  g.param.resize(g.n);
  for (int v = 0; v < g.n; ++v) {
    g.work[v] = read_double(f);
    g.param[v] = read_double(f);
  }
  std::vector<std::vector<int>> succ(g.n);
  g.t_ptr.push_back(0);
  for (int t = 0; t < g.T; ++t) {
    int p = read_int(f);
    double s = read_double(f);
    int c = read_int(f);
    if (p < 0 || p >= g.n || c < 0) die("bad tensor in graph file");
    g.t_prod.push_back(p);
    g.t_size.push_back(s / g.bw);
    for (int i = 0; i < c; ++i) {
      int w = read_int(f);
      if (w < 0 || w >= g.n || w == p) die("bad consumer in graph file");
      g.t_cons.push_back(w);
      succ[p].push_back(w);
    }
    g.t_ptr.push_back((int)g.t_cons.size());
  }
  std::fclose(f);
  g.indeg.assign(g.n, 0);
  g.succ_ptr.push_back(0);
  for (int v = 0; v < g.n; ++v) {
    auto& s = succ[v];
    std::sort(s.begin(), s.end());
    s.erase(std::unique(s.begin(), s.end()), s.end());
    for (int w : s) {
      g.succ.push_back(w);
      ++g.indeg[w];
    }
    g.succ_ptr.push_back((int)g.succ.size());
  }
  return g;
}

struct Event {
  int lo, hi;
  double d;
};

// Scratch space of one decoder (allocated once, reused for every candidate).
struct Decoder {
  const Graph& g;
  int K;
  std::vector<int> order, pos, indeg, heap, cpos;
  std::vector<std::vector<Event>> events;
  std::vector<double> cost, diff, col, wpref, ppref, Q;

  explicit Decoder(const Graph& graph)
      : g(graph), K(std::min(graph.k, graph.n)), order(graph.n), pos(graph.n),
        indeg(graph.n), events(graph.n), cost(graph.n), diff(graph.n + 2), col(graph.n),
        wpref(graph.n + 1), ppref(graph.n + 1), Q((size_t)(K + 1) * (graph.n + 1)) {}

  // Kahn: a binary max-heap on (priority, -index).
  void kahn(const float* x) {
    auto before = [&](int a, int b) {  // a is emitted before b
      return x[a] > x[b] || (x[a] == x[b] && a < b);
    };
    heap.clear();
    for (int v = 0; v < g.n; ++v) {
      indeg[v] = g.indeg[v];
      if (indeg[v] == 0) heap.push_back(v);
    }
    auto cmp = [&](int a, int b) { return before(b, a); };  // std heap: max on "before"
    std::make_heap(heap.begin(), heap.end(), cmp);
    int m = 0;
    while (!heap.empty()) {
      std::pop_heap(heap.begin(), heap.end(), cmp);
      int u = heap.back();
      heap.pop_back();
      order[m++] = u;
      for (int i = g.succ_ptr[u]; i < g.succ_ptr[u + 1]; ++i) {
        int w = g.succ[i];
        if (--indeg[w] == 0) {
          heap.push_back(w);
          std::push_heap(heap.begin(), heap.end(), cmp);
        }
      }
    }
    if (m != g.n) die("the graph has a cycle");
  }

  // SliceGraph on `order`: the best bottleneck cost with at most k blocks.
  double slice() {
    const int n = g.n;
    for (int i = 0; i < n; ++i) pos[order[i]] = i;
    for (auto& e : events) e.clear();
    for (int t = 0; t < g.T; ++t) {
      double s = g.t_size[t];
      int a = g.t_ptr[t], b = g.t_ptr[t + 1];
      if (s == 0.0 || a == b) continue;
      int p = pos[g.t_prod[t]];
      cpos.clear();
      for (int i = a; i < b; ++i) cpos.push_back(pos[g.t_cons[i]]);
      std::sort(cpos.begin(), cpos.end());
      cpos.erase(std::unique(cpos.begin(), cpos.end()), cpos.end());
      events[p].push_back({0, p, s});             // leaves every segment [l <= p, p..]
      events[cpos.back()].push_back({0, p, -s});  // ... until its last consumer joins
      int prev = p;
      for (int c : cpos) {  // enters segments starting after the previous consumer
        events[c].push_back({prev + 1, c, s});
        prev = c;
      }
    }
    wpref[0] = ppref[0] = 0.0;
    for (int i = 0; i < n; ++i) {
      wpref[i + 1] = wpref[i] + g.work[order[i]];
      ppref[i + 1] = ppref[i] + g.param[order[i]];
    }
    const int W = n + 1;
    for (int j = 0; j <= K; ++j) {
      Q[(size_t)j * W] = 0.0;
      for (int t = 1; t <= n; ++t) Q[(size_t)j * W + t] = kInf;
    }
    std::fill(cost.begin(), cost.end(), 0.0);
    const bool overflow = g.mem >= 0.0, capped = std::isfinite(g.cap);
    for (int r = 0; r < n; ++r) {
      std::fill(diff.begin(), diff.begin() + r + 2, 0.0);
      double w = g.work[order[r]];
      diff[0] += w;
      diff[r + 1] -= w;
      for (const Event& e : events[r]) {
        diff[e.lo] += e.d;
        diff[e.hi + 1] -= e.d;
      }
      double acc = 0.0;
      for (int l = 0; l <= r; ++l) {
        acc += diff[l];
        cost[l] += acc;
        double c = cost[l];
        if (overflow || capped) {
          double prm = ppref[r + 1] - ppref[l];
          if (overflow) c += std::max(0.0, prm - g.mem) / g.bw;
          if (capped && prm > g.cap) c = kInf;
        }
        col[l] = c;
      }
      const int t = r + 1;
      for (int j = 1; j <= K; ++j) {
        const double* prev = &Q[(size_t)(j - 1) * W];
        double best = prev[t];
        for (int l = t - 1; l >= 0; --l) {
          if (wpref[t] - wpref[l] >= best) break;  // work alone is already worse
          double cand = std::max(prev[l], col[l]);
          if (cand < best) best = cand;
        }
        Q[(size_t)j * W + t] = best;
      }
    }
    return Q[(size_t)K * W + n];
  }

  double operator()(const float* x) {
    kahn(x);
    return slice();
  }
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int eval_mode(const Graph& g, const char* path) {
  FILE* f = std::fopen(path, "rb");
  if (!f) die("cannot open the population file");
  std::vector<float> x(g.n);
  Decoder dec(g);
  while (std::fread(x.data(), sizeof(float), g.n, f) == (size_t)g.n)
    std::printf("%.17g\n", dec(x.data()));
  std::fclose(f);
  return 0;
}

struct Options {
  int pop = 100, gens = 100;
  uint64_t seed = 0;
  double elite = 0.2, mutant = 0.1, rho = 0.7;
  bool trace = false;
};

int brkga_mode(const Graph& g, const Options& o) {
  const int P = o.pop, n = g.n;
  if (P < 2 || o.gens < 1) die("need --pop >= 2 and --gens >= 1");
  const int ne = std::clamp((int)std::floor(o.elite * P), 1, P - 1);
  const int nm = std::clamp((int)std::floor(o.mutant * P), 0, P - ne);
  std::mt19937_64 rng(o.seed);
  std::uniform_real_distribution<float> unif(0.0f, 1.0f);
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  std::uniform_int_distribution<int> pick_elite(0, ne - 1), pick_other(ne, P - 1);
  Decoder dec(g);
  auto t0 = std::chrono::steady_clock::now();
  std::vector<float> pop((size_t)P * n), next((size_t)P * n);
  std::vector<double> fit(P), nfit(P);
  std::vector<int> rank(P);
  long evaluations = 0;
  double best = kInf;
  std::vector<float> best_x(n);
  auto note = [&](int i, const float* x) {
    if (fit[i] < best) {
      best = fit[i];
      std::copy(x, x + n, best_x.begin());
    }
  };
  for (auto& v : pop) v = unif(rng);
  for (int i = 0; i < P; ++i) {
    fit[i] = dec(&pop[(size_t)i * n]);
    note(i, &pop[(size_t)i * n]);
  }
  evaluations += P;
  if (o.trace) std::printf("trace %ld %.6f %.17g\n", evaluations, seconds_since(t0), best);
  for (int gen = 1; gen < o.gens; ++gen) {
    for (int i = 0; i < P; ++i) rank[i] = i;
    std::stable_sort(rank.begin(), rank.end(), [&](int a, int b) { return fit[a] < fit[b]; });
    for (int i = 0; i < ne; ++i) {  // elites, unchanged
      std::copy_n(&pop[(size_t)rank[i] * n], n, &next[(size_t)i * n]);
      nfit[i] = fit[rank[i]];
    }
    for (int i = ne; i < ne + nm; ++i)  // fresh mutants
      for (int v = 0; v < n; ++v) next[(size_t)i * n + v] = unif(rng);
    for (int i = ne + nm; i < P; ++i) {  // biased crossover
      const float* a = &pop[(size_t)rank[pick_elite(rng)] * n];
      const float* b = &pop[(size_t)rank[pick_other(rng)] * n];
      for (int v = 0; v < n; ++v) next[(size_t)i * n + v] = coin(rng) < o.rho ? a[v] : b[v];
    }
    pop.swap(next);
    fit.swap(nfit);
    for (int i = ne; i < P; ++i) {
      fit[i] = dec(&pop[(size_t)i * n]);
      note(i, &pop[(size_t)i * n]);
    }
    evaluations += P - ne;
    if (o.trace) std::printf("trace %ld %.6f %.17g\n", evaluations, seconds_since(t0), best);
  }
  double secs = seconds_since(t0);
  std::printf("best %.17g\nevaluations %ld\nseconds %.6f\nx", best, evaluations, secs);
  for (int v = 0; v < n; ++v) std::printf(" %.9g", best_x[v]);
  std::printf("\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) die("usage: brkga GRAPH [--eval POP.bin | --pop P --gens G --seed S ...]");
  Graph g = read_graph(argv[1]);
  Options o;
  const char* eval = nullptr;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) die("option needs a value");
      return argv[++i];
    };
    if (a == "--eval") eval = value();
    else if (a == "--pop") o.pop = std::atoi(value());
    else if (a == "--gens") o.gens = std::atoi(value());
    else if (a == "--seed") o.seed = std::strtoull(value(), nullptr, 10);
    else if (a == "--elite") o.elite = std::atof(value());
    else if (a == "--mutant") o.mutant = std::atof(value());
    else if (a == "--rho") o.rho = std::atof(value());
    else if (a == "--trace") o.trace = true;
    else die("unknown option");
  }
  return eval ? eval_mode(g, eval) : brkga_mode(g, o);
}

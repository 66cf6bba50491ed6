// dtrain-bench-coco-eval: COCO bbox and segm evaluation, phase by phase, on
// val2017-sized sets with a detector's results (a synthetic one, and real
// val2014 annotations replicated with 100 or 10 detections per image) and on
// the golden set (tests/data/coco-fake100). Per set and IoU
// type it times dtrain's library in this process (ground truth load, results
// load, evaluate, accumulate, summarize), then `dtrain coco-eval` as a child
// process (whole command, peak RSS). With --pycocotools DIR it also runs
// pycocotools beside it (bench/coco_eval/pycocotools_phases.py, in a child
// Python), prints both with the ratios, checks the speed targets and that
// both give the same twelve statistics.
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/coco_eval/real_annotation_coco.h"
#include "bench/coco_eval/synthetic_coco.h"
#include "concurrency/parallel_for.h"
#include "vision/coco/coco_error.h"
#include "vision/evaluation/coco_evaluator.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;
namespace vision = dtrain::vision;
namespace concurrency = dtrain::concurrency;

// The speed targets on the val2017-sized sets; 0: none.
struct Targets {
  double evaluate_accumulate = 0;  // x pycocotools' evaluate + accumulate
  double whole_command = 0;        // x pycocotools' loadRes + evaluate + accumulate + summarize
};
constexpr Targets kSyntheticTargets{50, 40};
constexpr Targets kRealAnnotationTargets{0, 25};

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw vision::CocoError(fmt::format("{}: cannot write", path.string()));
}

// One COCO evaluation's phases in seconds; -1 where not measured.
struct Phases {
  double load_gt = -1, load_results = -1, evaluate = -1, accumulate = -1, summarize = -1;
  double whole_command = -1;  // the child process, start to exit
  double peak_rss_mb = -1;    // the child process
  std::vector<double> stats;
  double evaluate_accumulate() const { return evaluate + accumulate; }
  // What a user waits for once the ground truth is loaded: pycocotools'
  // loadRes + evaluate + accumulate + summarize.
  double after_ground_truth() const { return load_results + evaluate + accumulate + summarize; }
};

// Runs argv with stdout and stderr into `log`; the wall time and peak RSS.
struct ChildRun {
  double seconds = 0;
  double peak_rss_mb = 0;
};

// The peak RSS that wait4 reports for a child includes the RSS of the memory
// it was started from: exec keeps the high-water mark of the replaced image,
// and a child spawned from this process (gigabytes of generated JSON) starts
// from a copy or a share of ours. So the bench starts itself again as a small
// process in this mode, which forks the command from its own few megabytes
// and reports "status peak_rss_kib seconds" to `result`.
constexpr const char* kMeasureMode = "--measure-child";

int measure_child(int argc, char** argv) {
  // argv: self --measure-child RESULT LOG command...
  if (argc < 5) return 2;
  const auto start = Clock::now();
  const pid_t pid = fork();
  if (pid < 0) return 3;
  if (pid == 0) {
    const int fd = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0) _exit(126);
    close(fd);
    execvp(argv[4], argv + 4);
    std::fprintf(stderr, "cannot start %s: %s\n", argv[4], std::strerror(errno));
    _exit(127);
  }
  int status = 0;
  struct rusage usage {};
  if (wait4(pid, &status, 0, &usage) != pid) return 4;
  const double seconds = seconds_since(start);
  FILE* out = std::fopen(argv[2], "w");
  if (out == nullptr) return 5;
  std::fprintf(out, "%d %ld %.6f\n", status, usage.ru_maxrss, seconds);
  return std::fclose(out) == 0 ? 0 : 5;
}

ChildRun run_child(const std::vector<std::string>& argv, const fs::path& log) {
  const fs::path result = log.string() + ".rusage";
  std::vector<std::string> full = {fs::read_symlink("/proc/self/exe").string(), kMeasureMode, result.string(),
                                   log.string()};
  full.insert(full.end(), argv.begin(), argv.end());
  std::vector<char*> args;
  for (const std::string& a : full) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, args[0], nullptr, nullptr, args.data(), environ);
  if (spawned != 0) {
    throw vision::CocoError(fmt::format("cannot start {}: {}", full[0], std::strerror(spawned)));
  }
  int helper_status = 0;
  if (waitpid(pid, &helper_status, 0) != pid || !WIFEXITED(helper_status) || WEXITSTATUS(helper_status) != 0) {
    throw vision::CocoError(fmt::format("measuring {} failed (helper status {})", argv[0], helper_status));
  }
  int status = -1;
  long peak_kib = 0;
  double seconds = 0;
  std::istringstream(read_text(result)) >> status >> peak_kib >> seconds;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string command;
    for (const std::string& a : argv) command += (command.empty() ? "" : " ") + a;
    throw vision::CocoError(fmt::format("{} failed (status {}); its output:\n{}", command, status, read_text(log)));
  }
  return {seconds, peak_kib / 1024.0};  // ru_maxrss: KiB
}

std::vector<double> stats_of(const nlohmann::ordered_json& report) {
  std::vector<double> out;
  if (report["stats"].is_array()) {
    for (const auto& v : report["stats"]) out.push_back(v.get<double>());
  } else {
    for (const auto& [name, v] : report["stats"].items()) out.push_back(v.get<double>());
  }
  return out;
}

// dtrain's library in this process: every phase timed on its own.
Phases dtrain_in_process(const fs::path& gt_path, const fs::path& dt_path, vision::IouType type, int threads) {
  Phases p;
  auto start = Clock::now();
  const auto gt = vision::CocoGroundTruth::load(gt_path.string());
  p.load_gt = seconds_since(start);
  start = Clock::now();
  const auto dt = vision::CocoDetections::load(gt, dt_path.string(), threads);
  p.load_results = seconds_since(start);
  vision::CocoEvaluator evaluator(gt, dt, type, threads);
  start = Clock::now();
  evaluator.evaluate();
  p.evaluate = seconds_since(start);
  start = Clock::now();
  evaluator.accumulate();
  p.accumulate = seconds_since(start);
  start = Clock::now();
  const vision::CocoSummary summary = evaluator.summarize();
  p.summarize = seconds_since(start);
  p.stats = summary.values();
  return p;
}

struct Options {
  std::string dtrain;
  std::string python = "python3";
  std::string pycocotools;
  int threads = 0;
  int repeat = 1;
};

struct Outcome {
  Phases dtrain;
  std::optional<Phases> pycocotools;
  double max_stat_diff = -1;  // dtrain vs pycocotools
};

Phases dtrain_phases(const fs::path& gt_path, const fs::path& dt_path, vision::IouType type, const Options& options,
                     const fs::path& work) {
  const std::string name(vision::iou_type_name(type));
  Phases d = dtrain_in_process(gt_path, dt_path, type, options.threads);
  const fs::path report = work / ("dtrain_" + name + ".json");
  const ChildRun command =
      run_child({options.dtrain, "coco-eval", "--gt", gt_path.string(), "--dt", dt_path.string(), "--iou-type", name,
                 "--threads", std::to_string(options.threads), "--json", report.string()},
                work / ("dtrain_" + name + ".log"));
  d.whole_command = command.seconds;
  d.peak_rss_mb = command.peak_rss_mb;
  if (stats_of(nlohmann::ordered_json::parse(read_text(report))) != d.stats) {
    throw vision::CocoError("dtrain coco-eval and the library in this process disagree on " + dt_path.string());
  }
  return d;
}

Phases pycocotools_phases(const fs::path& gt_path, const fs::path& dt_path, vision::IouType type,
                          const Options& options, const fs::path& work) {
  const std::string name(vision::iou_type_name(type));
  const fs::path report = work / ("pycocotools_" + name + ".json");
  const ChildRun run =
      run_child({options.python, std::string(DTRAIN_SOURCE_DIR) + "/bench/coco_eval/pycocotools_phases.py",
                 "--pycocotools", options.pycocotools, "--gt", gt_path.string(), "--dt", dt_path.string(), "--iou-type",
                 name, "--out", report.string()},
                work / ("pycocotools_" + name + ".log"));
  const auto json = nlohmann::ordered_json::parse(read_text(report));
  Phases p;
  const auto& s = json["seconds"];
  p.load_gt = s["load_gt"];
  p.load_results = s["load_results"];
  p.evaluate = s["evaluate"];
  p.accumulate = s["accumulate"];
  p.summarize = s["summarize"];
  p.whole_command = run.seconds;
  p.peak_rss_mb = run.peak_rss_mb;
  p.stats = stats_of(json);
  return p;
}

// Each phase's median over the runs; the statistics must be the same in all.
Phases median(const std::vector<Phases>& runs) {
  Phases out = runs.front();
  for (const Phases& run : runs) {
    if (run.stats != out.stats) throw vision::CocoError("two runs gave different statistics");
  }
  for (double Phases::*field : {&Phases::load_gt, &Phases::load_results, &Phases::evaluate, &Phases::accumulate,
                                &Phases::summarize, &Phases::whole_command, &Phases::peak_rss_mb}) {
    std::vector<double> values;
    for (const Phases& run : runs) values.push_back(run.*field);
    std::sort(values.begin(), values.end());
    const size_t n = values.size();
    out.*field = n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
  }
  return out;
}

// dtrain and (when given) pycocotools on one pair of files, `repeat` times in
// turn so that both see the same background load; medians.
Outcome measure(const fs::path& gt_path, const fs::path& dt_path, vision::IouType type, const Options& options,
                const fs::path& work) {
  std::vector<Phases> ours, theirs;
  for (int r = 0; r < options.repeat; ++r) {
    ours.push_back(dtrain_phases(gt_path, dt_path, type, options, work));
    if (!options.pycocotools.empty()) {
      theirs.push_back(pycocotools_phases(gt_path, dt_path, type, options, work));
    }
  }
  Outcome out;
  out.dtrain = median(ours);
  if (!theirs.empty()) {
    const Phases p = median(theirs);
    out.pycocotools = p;
    out.max_stat_diff = 0;
    if (p.stats.size() != out.dtrain.stats.size()) {
      out.max_stat_diff = INFINITY;
    } else {
      for (size_t i = 0; i < p.stats.size(); ++i) {
        out.max_stat_diff = std::max(out.max_stat_diff, std::fabs(p.stats[i] - out.dtrain.stats[i]));
      }
    }
  }
  return out;
}

std::string seconds_text(double s) { return s < 0 ? "-" : fmt::format("{:.3f} s", s); }

std::string ratio_text(double reference, double ours) {
  if (reference < 0 || ours <= 0) return "";
  return fmt::format("{:.1f}x", reference / ours);
}

// Whether the outcome reaches the targets (and the statistics agree); true
// without pycocotools.
bool reached(const Outcome& o, const Targets& targets) {
  if (!o.pycocotools) return true;
  const Phases& p = *o.pycocotools;
  const Phases& d = o.dtrain;
  return p.evaluate_accumulate() >= targets.evaluate_accumulate * d.evaluate_accumulate() &&
         p.after_ground_truth() >= targets.whole_command * d.whole_command && d.peak_rss_mb <= p.peak_rss_mb &&
         o.max_stat_diff == 0;
}

void print_outcome(const std::string& title, const Outcome& o, const std::optional<Targets>& targets) {
  const Phases& d = o.dtrain;
  const Phases* p = o.pycocotools ? &*o.pycocotools : nullptr;
  std::printf("\n%s\n", title.c_str());
  std::printf("  %-44s %12s %12s %9s\n", "phase", "dtrain", p ? "pycocotools" : "", p ? "ratio" : "");
  const auto row = [&](const char* name, double ours, double theirs, const std::string& note) {
    std::printf("  %-44s %12s %12s %9s%s\n", name, seconds_text(ours).c_str(), p ? seconds_text(theirs).c_str() : "",
                p ? ratio_text(theirs, ours).c_str() : "", note.c_str());
  };
  row("ground truth load", d.load_gt, p ? p->load_gt : -1, "");
  row("results load", d.load_results, p ? p->load_results : -1, "");
  row("evaluate", d.evaluate, p ? p->evaluate : -1, "");
  row("accumulate", d.accumulate, p ? p->accumulate : -1, "");
  row("summarize", d.summarize, p ? p->summarize : -1, "");
  const auto verdict = [&](double ratio, double target) {
    return target > 0 ? fmt::format("  target >= {:.0f}x: {}", target, ratio >= target ? "reached" : "NOT reached")
                      : std::string();
  };
  row("evaluate + accumulate", d.evaluate_accumulate(), p ? p->evaluate_accumulate() : -1,
      p && targets ? verdict(p->evaluate_accumulate() / d.evaluate_accumulate(), targets->evaluate_accumulate) : "");
  row("loadRes + evaluate + accumulate + summarize", d.after_ground_truth(), p ? p->after_ground_truth() : -1, "");
  row("whole command (process start to exit)", d.whole_command, p ? p->whole_command : -1, "");
  if (p) {
    row("dtrain whole command vs loadRes+eval+acc+sum", d.whole_command, p->after_ground_truth(),
        targets ? verdict(p->after_ground_truth() / d.whole_command, targets->whole_command) : "");
  }
  std::printf("  %-44s %9.0f MB %9s %9s%s\n", "peak RSS (whole command)", d.peak_rss_mb,
              p ? fmt::format("{:.0f} MB", p->peak_rss_mb).c_str() : "",
              p ? fmt::format("{:.2f}x", d.peak_rss_mb / p->peak_rss_mb).c_str() : "",
              p && targets.has_value() ? (d.peak_rss_mb <= p->peak_rss_mb ? "  target <= pycocotools: reached"
                                                                          : "  target <= pycocotools: NOT reached")
                                       : "");
  std::printf("  AP %.4f", d.stats.empty() ? 0.0 : d.stats[0]);
  if (p) std::printf("; 12 statistics, max |dtrain - pycocotools| = %.3g", o.max_stat_diff);
  std::printf("\n");
}

void append_json(FILE* json, const std::string& set, vision::IouType type, int threads, const Outcome& o) {
  if (json == nullptr) return;
  nlohmann::ordered_json line;
  line["bench"] = "coco_eval";
  line["set"] = set;
  line["iou_type"] = std::string(vision::iou_type_name(type));
  line["threads"] = threads;
  line["load_average"] = load_average();
  const auto phases = [](const Phases& p) {
    nlohmann::ordered_json j;
    j["load_gt_s"] = p.load_gt;
    j["load_results_s"] = p.load_results;
    j["evaluate_s"] = p.evaluate;
    j["accumulate_s"] = p.accumulate;
    j["summarize_s"] = p.summarize;
    j["whole_command_s"] = p.whole_command;
    j["peak_rss_mb"] = p.peak_rss_mb;
    j["stats"] = p.stats;
    return j;
  };
  line["dtrain"] = phases(o.dtrain);
  if (o.pycocotools) {
    line["pycocotools"] = phases(*o.pycocotools);
    line["max_stat_diff"] = o.max_stat_diff;
  }
  std::fprintf(json, "%s\n", line.dump().c_str());
}

// A generated set written to `dir` and measured for bbox and segm; whether
// its targets were reached.
bool measure_generated_set(const std::string& set, const std::string& description,
                           const dtrain::bench::GeneratedCocoSet& data, const std::optional<Targets>& targets,
                           const Options& options, const fs::path& dir, FILE* json) {
  const auto gt_path = dir / ("instances_" + set + ".json");
  const auto box_path = dir / (set + "_bbox_results.json");
  const auto mask_path = dir / (set + "_segm_results.json");
  write_file(gt_path, data.ground_truth);
  write_file(box_path, data.box_results);
  write_file(mask_path, data.mask_results);
  std::printf(
      "\n%s set: %zu annotations, %zu detections (gt %.0f MB, bbox results %.0f MB, segm results "
      "%.0f MB) in %s\n",
      set.c_str(), data.annotations, data.detections, data.ground_truth.size() / 1e6, data.box_results.size() / 1e6,
      data.mask_results.size() / 1e6, dir.string().c_str());
  bool all_reached = true;
  for (const vision::IouType type : {vision::IouType::kBbox, vision::IouType::kSegm}) {
    const std::string name(vision::iou_type_name(type));
    const Outcome o = measure(gt_path, type == vision::IouType::kBbox ? box_path : mask_path, type, options, dir);
    print_outcome(fmt::format("{}, {}: {} (load average {})", set, name, description, load_average()), o, targets);
    append_json(json, set, type, options.threads, o);
    all_reached &= reached(o, targets.value_or(Targets{}));
  }
  return all_reached;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string_view(argv[1]) == kMeasureMode) return measure_child(argc, argv);
  CLI::App app{
      "Times COCO bbox/segm evaluation phase by phase on two val2017-sized sets (synthetic, and "
      "real annotations replicated) and the golden set, optionally beside pycocotools",
      "dtrain-bench-coco-eval"};
  dtrain::bench::SyntheticCocoSpec spec;
  int sparse_per_image = 10;
  Options options;
  std::string json_path, keep_dir, golden_dir = DTRAIN_SOURCE_DIR "/tests/data/coco-fake100";
  bool skip_golden = false, skip_synthetic = false, skip_real = false;
  app.add_option("--images", spec.images, "Images of each generated set")
      ->default_val(spec.images)
      ->check(CLI::PositiveNumber);
  app.add_option("--categories", spec.categories, "Categories of the synthetic set")
      ->default_val(spec.categories)
      ->check(CLI::Range(1, 90));
  app.add_option("--detections-per-image", spec.detections_per_image, "Detections per image")
      ->default_val(spec.detections_per_image)
      ->check(CLI::PositiveNumber);
  app.add_option("--seed", spec.seed, "Synthetic generator seed")->default_val(spec.seed);
  app.add_option("--threads", options.threads, "dtrain's threads (0: one per core)")->default_val(0);
  app.add_option("--pycocotools", options.pycocotools,
                 "Also run pycocotools from DIR (the folder holding the built pycocotools package, "
                 "e.g. a cocoapi checkout's PythonAPI after `python3 setup.py build_ext --inplace`)")
      ->type_name("DIR")
      ->check(CLI::ExistingDirectory);
  app.add_option("--repeat", options.repeat,
                 "Runs of every measurement (dtrain and pycocotools in turn); "
                 "the tables show each phase's median")
      ->default_val(options.repeat)
      ->check(CLI::PositiveNumber);
  app.add_option("--python", options.python, "Python for pycocotools (needs NumPy)")->default_val(options.python);
  app.add_option("--dtrain", options.dtrain,
                 "dtrain binary for the whole-command runs (default: "
                 "the one next to this program)");
  app.add_option("--golden", golden_dir,
                 "Golden set (instances_val2014_100.json and the fake results); its ground truth is also "
                 "the source of the real-annotation set")
      ->default_val(golden_dir);
  app.add_flag("--no-golden", skip_golden, "Skip the golden set");
  app.add_flag("--no-synthetic", skip_synthetic, "Skip the synthetic val2017-sized set");
  app.add_flag("--no-real", skip_real, "Skip the real-annotation val2017-sized sets");
  app.add_option("--sparse-detections-per-image", sparse_per_image,
                 "Detections per image of the second real-annotation set (real-sparse)")
      ->default_val(sparse_per_image)
      ->check(CLI::PositiveNumber);
  app.add_option("--json", json_path, "Append one JSON line per set and IoU type to this file");
  app.add_option("--keep-dir", keep_dir, "Write the generated JSON files and the reports here and keep them");
  CLI11_PARSE(app, argc, argv);

  try {
    if (options.dtrain.empty()) options.dtrain = (fs::read_symlink("/proc/self/exe").parent_path() / "dtrain").string();
    if (!options.pycocotools.empty()) options.pycocotools = fs::absolute(options.pycocotools).string();
    options.threads = concurrency::resolve_thread_count(options.threads);
    std::printf("load average before: %s\n", load_average().c_str());
    std::printf("dtrain: %d threads (hardware: %d), %s; medians of %d run%s\n", options.threads,
                concurrency::resolve_thread_count(0), options.dtrain.c_str(), options.repeat,
                options.repeat == 1 ? "" : "s");
    std::printf("pycocotools: %s\n", options.pycocotools.empty()
                                         ? "not run (--pycocotools DIR runs it beside dtrain)"
                                         : (options.pycocotools + " with " + options.python).c_str());

    fs::path dir = keep_dir;
    const bool temporary = keep_dir.empty();
    if (temporary) dir = fs::temp_directory_path() / fmt::format("dtrain-bench-coco-{}", getpid());
    fs::create_directories(dir);
    FILE* json = json_path.empty() ? nullptr : std::fopen(json_path.c_str(), "a");
    if (!json_path.empty() && json == nullptr) {
      throw vision::CocoError(fmt::format("{}: cannot open for appending", json_path));
    }
    const bool val2017_sized = spec.images == 5000 && spec.detections_per_image == 100;
    bool all_reached = true;
    if (!skip_synthetic) {
      const auto start = Clock::now();
      const auto data = dtrain::bench::generate_synthetic_coco(spec, options.threads);
      std::printf("\ngenerated the synthetic set in %.1f s\n", seconds_since(start));
      const bool targeted = val2017_sized && spec.categories == 80;
      all_reached &= measure_generated_set(
          "synthetic",
          fmt::format("{} images of 640x480, {} categories, generated outlines", spec.images, spec.categories), data,
          targeted ? std::optional(kSyntheticTargets) : std::nullopt, options, dir, json);
    }
    if (!skip_real) {
      // Twice: all of a detector's 100 best per image (what val2017 results
      // hold), and the few a score threshold keeps (most of the work is then
      // the ground truth's and the process's, not the detections').
      const fs::path source = fs::path(golden_dir) / "instances_val2014_100.json";
      for (const auto& [set, per_image] : {std::pair<std::string, int>{"real", spec.detections_per_image},
                                           std::pair<std::string, int>{"real-sparse", sparse_per_image}}) {
        dtrain::bench::RealAnnotationCocoSpec real_spec;
        real_spec.images = spec.images;
        real_spec.detections_per_image = per_image;
        const auto start = Clock::now();
        const auto data = dtrain::bench::generate_real_annotation_coco(read_text(source), real_spec, options.threads);
        std::printf("\ngenerated the %s set from %s in %.1f s\n", set.c_str(), source.string().c_str(),
                    seconds_since(start));
        all_reached &= measure_generated_set(
            set,
            fmt::format("{} images, val2014's annotations replicated, up to {} detections per image perturbed "
                        "from them",
                        spec.images, per_image),
            data, spec.images == 5000 ? std::optional(kRealAnnotationTargets) : std::nullopt, options, dir, json);
      }
    }
    if (!skip_golden) {
      const fs::path golden(golden_dir);
      for (const vision::IouType type : {vision::IouType::kBbox, vision::IouType::kSegm}) {
        const std::string name(vision::iou_type_name(type));
        const Outcome o = measure(golden / "instances_val2014_100.json",
                                  golden / ("instances_val2014_fake" + name + "100_results.json"), type, options, dir);
        print_outcome(fmt::format("golden set (tests/data/coco-fake100), {} (load average {})", name, load_average()),
                      o, std::nullopt);
        append_json(json, "golden", type, options.threads, o);
        all_reached &= reached(o, Targets{});
      }
    }
    if (json) std::fclose(json);
    std::printf("\nload average after: %s\n", load_average().c_str());
    if (!options.pycocotools.empty()) {
      std::printf("%s\n", !all_reached    ? "some targets NOT reached or statistics differ (see above)"
                          : val2017_sized ? "all targets reached, statistics identical"
                                          : "statistics identical (the speed targets are for val2017-sized sets)");
    }
    if (temporary) fs::remove_all(dir);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dtrain-bench-coco-eval: %s\n", e.what());
    return 1;
  }
  return 0;
}

// The layering of docs/architecture.md, checked on the sources themselves: every quoted
// include is rooted, a library includes only the modules below it, and the runtime and the
// LibTorch adapter are reached only through their public headers (include/dtrain/).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
const fs::path kRoot = DTRAIN_SOURCE_DIR;

// What each library module may include besides itself. A module is a folder of src/
// (vision's sub-folders are modules of their own); include/dtrain/dtrain.h belongs to
// runtime (and include/dtrain/elastic.h), include/dtrain/torch.h to torch, include/dtrain/error.h to error,
// include/dtrain/torch_threads.h to torch_threads (LibTorch's threads and memory without the runtime,
// which inference and serving use: their programs do not link the collective runtime).
const std::map<std::string, std::set<std::string>> kMayInclude = {
    {"error", {}},
    {"concurrency", {}},
    {"settings", {}},
    {"flight_record", {}},
    {"vectorize", {}},  // a header: loops compiled per instruction set
    {"rendezvous", {"error", "concurrency"}},
    {"slurm", {}},
    {"runtime", {"error", "rendezvous", "slurm", "concurrency", "flight_record"}},
    {"launch", {"rendezvous", "slurm", "settings", "flight_record"}},
    {"job", {"launch", "slurm", "settings"}},
    {"dashboard", {"launch", "concurrency"}},  // launch/job_identity.h: the token
    {"ps", {"error", "rendezvous", "settings", "concurrency"}},
    {"torch_threads", {}},
    {"torch", {"error", "runtime", "ps", "settings", "torch_threads", "concurrency"}},
    {"python", {"error", "runtime", "torch", "concurrency"}},
    {"metrics", {}},
    {"training", {"metrics", "torch", "vision/solver"}},  // the metrics log; the steps and the divergence watch
    {"serving", {"concurrency"}},
    {"mnist", {}},
    {"vision/coco", {}},
    {"vision/evaluation", {"vision/coco", "concurrency"}},
    {"vision/report", {"vision/evaluation", "vision/coco"}},
    {"vision/data", {"vision/coco", "mnist", "concurrency"}},
    {"vision/config", {"vision/modeling"}},  // only the plain-value mask_rcnn_options.h
    {"vision/ops", {"vectorize"}},
    {"vision/structures", {}},
    {"vision/torch_save", {}},
    {"vision/modeling", {"vision/ops", "vision/structures", "vision/torch_save"}},
    {"vision/solver", {"vectorize"}},
    {"vision/inference", {"vision/coco", "vision/data", "vision/modeling", "torch_threads"}},
};

// Modules whose only headers for others are their public ones.
const std::map<std::string, std::set<std::string>> kOnlyThroughPublicHeader = {
    {"runtime", {"include/dtrain/dtrain.h", "include/dtrain/elastic.h"}},
    {"torch", {"include/dtrain/torch.h"}},
};
// Files that measure or test a module's internals on purpose.
bool may_reach_internals(const std::string& file, const std::string& module) {
  return file.rfind("tests/" + module + "/", 0) == 0 ||
         file.rfind("tests/fuzz/", 0) == 0 ||  // fuzz targets reach the decoders themselves
         (module == "runtime" && file.rfind("bench/allreduce/", 0) == 0) ||  // the data path alone
         (module == "runtime" && file.rfind("bench/negotiation/", 0) == 0);  // the coordinator alone
}

std::string project_path(const fs::path& path) { return fs::relative(path, kRoot).generic_string(); }

// The module of a file under src/ or include/, or "" for apps, tests and benchmarks.
std::string module_of(const std::string& file) {
  static const std::map<std::string, std::string> kPublic = {{"include/dtrain/dtrain.h", "runtime"},
                                                             {"include/dtrain/elastic.h", "runtime"},
                                                             {"include/dtrain/torch.h", "torch"},
                                                             {"include/dtrain/error.h", "error"},
                                                             {"include/dtrain/torch_threads.h", "torch_threads"}};
  if (auto it = kPublic.find(file); it != kPublic.end()) return it->second;
  std::smatch m;
  if (std::regex_match(file, m, std::regex(R"(src/vision/([^/]+)/.*)"))) return "vision/" + m[1].str();
  if (std::regex_match(file, m, std::regex(R"(src/([^/]+)/.*)"))) return m[1].str();
  return "";
}

struct Include {
  std::string file;  // relative to the project root
  int line;
  std::string text;  // as written between the quotes
};

std::vector<Include> quoted_includes() {
  std::vector<Include> found;
  const std::regex include(R"re(^\s*#\s*include\s+"([^"]+)")re");
  for (const char* top : {"src", "include", "apps", "tests", "bench"}) {
    for (const auto& entry : fs::recursive_directory_iterator(kRoot / top)) {
      const std::string ext = entry.path().extension().string();
      if (ext != ".h" && ext != ".cc" && ext != ".cu" && ext != ".cuh") continue;
      std::ifstream in(entry.path());
      std::string line;
      for (int number = 1; std::getline(in, line); ++number) {
        std::smatch m;
        if (std::regex_search(line, m, include)) found.push_back({project_path(entry.path()), number, m[1].str()});
      }
    }
  }
  return found;
}

// Where a rooted include points (relative to the project root), or "" if it is not rooted.
// Generated protocol headers live in the build tree, as ps/<name>.pb.h.
std::string resolve(const std::string& text) {
  if (std::regex_match(text, std::regex(R"(ps/[a-z_]+(\.grpc)?\.pb\.h)"))) return "src/" + text;
  for (const char* root : {"src/", "include/"}) {
    if (fs::exists(kRoot / (root + text))) return root + text;
  }
  for (const char* top : {"tests/", "apps/", "bench/"}) {
    if (text.rfind(top, 0) == 0 && fs::exists(kRoot / text)) return text;
  }
  return "";
}

std::string where(const Include& include) {
  return include.file + ":" + std::to_string(include.line) + ": \"" + include.text + "\"";
}

TEST(IncludeRules, EveryQuotedIncludeIsRooted) {
  const auto includes = quoted_includes();
  ASSERT_GT(includes.size(), 500u) << "the walk found too few files";
  for (const auto& include : includes) {
    EXPECT_NE(resolve(include.text), "")
        << where(include) << " is not rooted: write \"module/header.h\" (src/ or include/) or \"tests/...\"";
  }
}

TEST(IncludeRules, LibrariesIncludeOnlyTheModulesBelowThem) {
  for (const auto& include : quoted_includes()) {
    const std::string from = module_of(include.file);
    if (from.empty()) continue;
    ASSERT_TRUE(kMayInclude.count(from)) << include.file << " is in a module this test does not know: add it";
    const std::string target = resolve(include.text);
    if (target.empty()) continue;  // reported by the test above
    const std::string to = module_of(target);
    EXPECT_FALSE(to.empty()) << where(include) << ": library code includes an app, test or benchmark";
    if (to.empty() || to == from) continue;
    EXPECT_TRUE(kMayInclude.at(from).count(to)) << where(include) << ": " << from << " may not include " << to;
  }
}

TEST(IncludeRules, RuntimeAndAdapterAreReachedThroughTheirPublicHeaders) {
  for (const auto& include : quoted_includes()) {
    const std::string target = resolve(include.text);
    const std::string to = module_of(target);
    auto it = kOnlyThroughPublicHeader.find(to);
    if (it == kOnlyThroughPublicHeader.end() || it->second.count(target)) continue;
    if (module_of(include.file) == to || may_reach_internals(include.file, to)) continue;
    ADD_FAILURE() << where(include) << ": " << to << " is internal; include \"" << it->second.begin()->substr(8)
                  << "\"";
  }
}

}  // namespace

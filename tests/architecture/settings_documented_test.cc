// Every DTRAIN_* environment variable the sources name is documented: in the README's knobs
// table, or in docs/ where a feature's page describes it. A setting added without a line
// for its users fails here, naming the variable and the file that reads or sets it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

// A named namespace: the unity build puts this file beside include_rules_test.cc.
namespace settings_documented {
namespace {

namespace fs = std::filesystem;
const fs::path kRoot = DTRAIN_SOURCE_DIR;

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Each quoted DTRAIN_* name in src/, apps/ and include/ (C++ and Python), with one file that names it.
std::map<std::string, std::string> variables_in_sources() {
  const std::regex quoted_name(R"(["'](DTRAIN_[A-Z0-9_]+)["'])");
  std::map<std::string, std::string> found;
  for (const char* top : {"src", "apps", "include"}) {
    for (const auto& entry : fs::recursive_directory_iterator(kRoot / top)) {
      const std::string extension = entry.path().extension().string();
      if (!entry.is_regular_file() || (extension != ".cc" && extension != ".h" && extension != ".py")) continue;
      const std::string text = read_file(entry.path());
      for (std::sregex_iterator it(text.begin(), text.end(), quoted_name), end; it != end; ++it) {
        found.emplace((*it)[1].str(), fs::relative(entry.path(), kRoot).generic_string());
      }
    }
  }
  return found;
}

TEST(SettingsDocumented, EveryDtrainVariableTheSourcesNameIsInTheReadmeOrDocs) {
  std::string documentation = read_file(kRoot / "README.md");
  for (const auto& entry : fs::directory_iterator(kRoot / "docs")) {
    if (entry.path().extension() == ".md") documentation += read_file(entry.path());
  }
  const auto variables = variables_in_sources();
  ASSERT_GT(variables.size(), 20u) << "the scan found too few DTRAIN_* names to be reading the sources";
  for (const auto& [name, file] : variables) {
    // Followed by a character that cannot continue the name, so DTRAIN_HOST is not found in DTRAIN_HOST_PORT.
    const std::regex mention(name + "($|[^A-Z0-9_])");
    EXPECT_TRUE(std::regex_search(documentation, mention))
        << name << " (named in " << file << ") is documented nowhere: add it to the README's knobs or a docs/ page";
  }
}

}  // namespace
}  // namespace settings_documented

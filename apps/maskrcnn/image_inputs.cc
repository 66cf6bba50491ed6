#include "apps/maskrcnn/image_inputs.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <system_error>

#include "apps/maskrcnn/usage_error.h"

namespace dtrain::maskrcnn {
namespace {

namespace fs = std::filesystem;

bool has_image_extension(const fs::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png";
}

}  // namespace

int64_t image_id_for(const std::string& stem, size_t index) {
  const bool all_digits =
      !stem.empty() && std::all_of(stem.begin(), stem.end(), [](unsigned char c) { return std::isdigit(c); });
  int64_t id = 0;
  if (all_digits) {
    const auto [end, error] = std::from_chars(stem.data(), stem.data() + stem.size(), id);
    // A digit string too long for int64 is a name, not an id.
    if (error == std::errc() && end == stem.data() + stem.size()) return id;
  }
  return static_cast<int64_t>(index);
}

std::vector<InputImage> list_input_images(const std::string& input) {
  std::error_code error;
  const fs::file_status status = fs::status(input, error);
  if (error || !fs::exists(status)) throw UsageError("--input " + input + ": no such file or directory");

  std::vector<fs::path> paths;
  if (fs::is_directory(status)) {
    fs::directory_iterator it(input, error);
    if (error) throw UsageError("--input " + input + ": cannot list the directory: " + error.message());
    for (const fs::directory_entry& entry : it) {
      std::error_code entry_error;
      if (entry.is_regular_file(entry_error) && has_image_extension(entry.path())) paths.push_back(entry.path());
    }
    if (paths.empty()) throw UsageError("--input " + input + ": no *.jpg, *.jpeg or *.png images in the directory");
    std::sort(paths.begin(), paths.end());
  } else {
    paths.push_back(input);
  }

  std::vector<InputImage> images;
  std::map<std::string, fs::path> by_stem;
  for (size_t i = 0; i < paths.size(); ++i) {
    const std::string stem = paths[i].stem().string();
    if (auto [it, added] = by_stem.emplace(stem, paths[i]); !added) {
      throw UsageError("--input " + input + ": " + it->second.filename().string() + " and " +
                       paths[i].filename().string() + " would both write " + stem + ".json");
    }
    images.push_back({paths[i], stem, image_id_for(stem, i)});
  }
  return images;
}

}  // namespace dtrain::maskrcnn

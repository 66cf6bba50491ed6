#include "apps/maskrcnn/predict_command.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>

#include "vision/inference/coco_results.h"
#include "apps/maskrcnn/detection_overlay.h"
#include "apps/maskrcnn/image_inputs.h"
#include "vision/inference/predictor.h"
#include "apps/maskrcnn/usage_error.h"
#include "vision/config/config_error.h"
#include "vision/config/maskrcnn_defaults.h"
#include "vision/config/model_options.h"
#include "vision/data/image_codec.h"

namespace dtrain::maskrcnn {
namespace {

namespace fs = std::filesystem;

// Refuses before any work when an output would replace one of the inputs
// (--output pointing at the image directory with --visualize and PNG inputs).
void check_outputs_spare_inputs(const std::vector<InputImage>& images, const fs::path& output, bool visualize) {
  std::error_code ignored;
  std::map<fs::path, const InputImage*> inputs;
  for (const InputImage& image : images) inputs[fs::weakly_canonical(image.path, ignored)] = &image;
  for (const InputImage& image : images) {
    for (const std::string& extension : {std::string(".json"), std::string(".png")}) {
      if (extension == ".png" && !visualize) continue;
      const fs::path written = output / (image.stem + extension);
      if (auto it = inputs.find(fs::weakly_canonical(written, ignored)); it != inputs.end()) {
        throw UsageError("--output " + output.string() + ": writing " + written.string() +
                         " would overwrite the input image " + it->second->path.string());
      }
    }
  }
}

void create_output_directory(const fs::path& output) {
  std::error_code error;
  if (fs::exists(output, error) && !fs::is_directory(output, error)) {
    throw std::runtime_error("--output " + output.string() + ": exists and is not a directory");
  }
  fs::create_directories(output, error);
  if (error)
    throw std::runtime_error("--output " + output.string() + ": cannot create the directory: " + error.message());
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) throw std::runtime_error(path.string() + ": cannot write file: " + std::strerror(errno));
}

// The model's own errors (an image too thin to resize, say) do not know the file.
vision::inference::ImageDetections detect_naming_image(vision::inference::Predictor& predictor,
                                                       const vision::RgbImage& pixels, const InputImage& image) {
  try {
    return predictor.detect(pixels);
  } catch (const std::exception& e) {
    throw std::runtime_error(image.path.string() + ": " + e.what());
  }
}

// MODEL.DEVICE: cpu, or cuda (the first GPU), checked before anything is loaded.
std::string predict_device(const vision::config::Config& config) {
  const auto device = config.get<std::string>("MODEL.DEVICE");
  if (device != "cpu" && device != "cuda") throw UsageError("MODEL.DEVICE must be cpu or cuda, got '" + device + "'");
  try {
    vision::inference::check_device(device);
  } catch (const std::invalid_argument& e) {
    throw UsageError("MODEL.DEVICE " + std::string(e.what()));
  }
  return device;
}

void print_summary(const InputImage& image, const vision::inference::ImageDetections& detections) {
  const size_t count = detections.instances.size();
  if (count == 0) {
    std::printf("%s: 0 detections\n", image.path.c_str());
  } else {
    const vision::inference::DetectedInstance& best = detections.instances.front();  // scores descend
    std::printf("%s: %zu detections (best: category %lld score %.3f)\n", image.path.c_str(), count,
                static_cast<long long>(best.label), best.score);
  }
  std::fflush(stdout);
}

}  // namespace

PredictCommand::PredictCommand(CLI::App& parent) {
  app_ = parent.add_subcommand("predict", "Detect and segment objects in JPEG/PNG images");
  app_->add_option("--config-file", config_file_, "Model config (YAML, e.g. configs/mask_rcnn_R_50_FPN_coco.yaml)")
      ->required()
      ->type_name("C");
  app_->add_option("--weights", weights_, "Weights (torch.save state dict); overrides MODEL.WEIGHTS")->type_name("W");
  app_->add_option("--input", input_, "An image, or a directory of *.jpg, *.jpeg, *.png (not recursive)")
      ->required()
      ->type_name("IMAGE_OR_DIR");
  app_->add_option("--output", output_, "Directory for <stem>.json (and <stem>.png); created if missing")
      ->required()
      ->type_name("OUT");
  app_->add_flag("--visualize", visualize_, "Also write <stem>.png: the image with boxes and masks drawn");
  app_->add_option("--threads", threads_, "LibTorch threads (0: one per core)")
      ->check(CLI::Range(0, 4096))
      ->default_val(0)
      ->type_name("N");
  // Trailing KEY VALUE overrides are taken as extras, verbatim: a positional
  // vector option would let CLI11 split a value such as "[450, 550]".
  app_->allow_extras();
  app_->footer(
      "Writes one COCO results JSON per image (bbox, category_id, score, RLE segmentation);\n"
      "category_id is the model's label (COCO category ids for torchvision COCO weights).\n"
      "Exit status: 0 on success, 1 when an image or the weights cannot be used or an output\n"
      "cannot be written, 2 for usage errors (options, config keys and values, --input).\n"
      "MODEL.DEVICE cuda runs the model on the first GPU (needs a LibTorch with CUDA).\n");
}

int PredictCommand::execute() const {
  const auto fail = [](const std::exception& e, int status) {
    std::fprintf(stderr, "dtrain-maskrcnn predict: %s\n", e.what());
    return status;
  };
  try {
    vision::config::Config config = vision::config::maskrcnn_defaults();
    config.merge_from_file(config_file_);
    config.merge_from_list(app_->remaining());
    const vision::modeling::MaskRcnnOptions options = vision::config::to_model_options(config);
    const std::string weights = weights_.empty() ? config.get<std::string>("MODEL.WEIGHTS") : weights_;
    const std::string device = predict_device(config);

    const std::vector<InputImage> images = list_input_images(input_);
    check_outputs_spare_inputs(images, output_, visualize_);
    create_output_directory(output_);

    const int threads = threads_ > 0 ? threads_ : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    vision::inference::Predictor predictor(options, threads, device);
    if (weights.empty()) {
      std::fprintf(stderr,
                   "dtrain-maskrcnn predict: warning: no weights (neither --weights nor MODEL.WEIGHTS); "
                   "predicting with a random initialisation\n");
    } else {
      const size_t loaded = predictor.load_weights(weights);
      std::fprintf(stderr, "dtrain-maskrcnn predict: loaded %zu tensors from %s\n", loaded, weights.c_str());
    }

    for (const InputImage& image : images) {
      const vision::RgbImage pixels = vision::read_image(image.path.string());
      const vision::inference::ImageDetections detections = detect_naming_image(predictor, pixels, image);
      write_text(fs::path(output_) / (image.stem + ".json"),
                 vision::inference::coco_results(detections, image.image_id).dump() + "\n");
      if (visualize_) {
        const std::vector<uint8_t> png = vision::encode_png(draw_detections(pixels, detections));
        vision::write_file_bytes((fs::path(output_) / (image.stem + ".png")).string(), png);
      }
      print_summary(image, detections);
    }
    return 0;
  } catch (const UsageError& e) {
    return fail(e, 2);
  } catch (const vision::config::ConfigError& e) {
    return fail(e, 2);
  } catch (const std::exception& e) {
    return fail(e, 1);
  }
}

}  // namespace dtrain::maskrcnn

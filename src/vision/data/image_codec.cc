#include "vision/data/image_codec.h"

#include <png.h>
#include <turbojpeg.h>

#include <csetjmp>
#include <cstring>
#include <fstream>
#include <memory>

#include <fmt/format.h>

#include "vision/coco/coco_error.h"

namespace dtrain::vision {
namespace {

bool is_jpeg(std::span<const uint8_t> b) { return b.size() >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF; }

bool is_png(std::span<const uint8_t> b) { return b.size() >= 8 && png_sig_cmp(b.data(), 0, 8) == 0; }

// One TurboJPEG handle per thread and direction: creating one allocates
// decoder state that is worth reusing across images.
struct TurboHandle {
  tjhandle handle = nullptr;
  explicit TurboHandle(bool compress) { handle = compress ? tjInitCompress() : tjInitDecompress(); }
  ~TurboHandle() {
    if (handle != nullptr) tjDestroy(handle);
  }
  TurboHandle(const TurboHandle&) = delete;
  TurboHandle& operator=(const TurboHandle&) = delete;
};

tjhandle thread_decompressor() {
  thread_local TurboHandle handle(false);
  if (handle.handle == nullptr) throw CocoError("cannot initialise the JPEG decoder");
  return handle.handle;
}

tjhandle thread_compressor() {
  thread_local TurboHandle handle(true);
  if (handle.handle == nullptr) throw CocoError("cannot initialise the JPEG encoder");
  return handle.handle;
}

RgbImage decode_jpeg(std::span<const uint8_t> bytes, const std::string& source) {
  tjhandle tj = thread_decompressor();
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  if (tjDecompressHeader3(tj, bytes.data(), static_cast<unsigned long>(bytes.size()), &width, &height, &subsampling,
                          &colorspace) != 0) {
    throw CocoError(fmt::format("{}: corrupt JPEG: {}", source, tjGetErrorStr2(tj)));
  }
  if (width <= 0 || height <= 0) throw CocoError(fmt::format("{}: corrupt JPEG: empty image", source));
  RgbImage image(static_cast<uint32_t>(height), static_cast<uint32_t>(width));
  // Any warning (a truncated or damaged stream) is an error too: a sample
  // with half its pixels grey must not reach training silently.
  if (tjDecompress2(tj, bytes.data(), static_cast<unsigned long>(bytes.size()), image.pixels.data(), width, width * 3,
                    height, TJPF_RGB, 0) != 0) {
    throw CocoError(fmt::format("{}: corrupt JPEG: {}", source, tjGetErrorStr2(tj)));
  }
  return image;
}

struct PngReadState {
  std::span<const uint8_t> bytes;
  size_t offset = 0;
  char message[256] = {};
};

void png_read_from_memory(png_structp png, png_bytep out, png_size_t length) {
  auto* state = static_cast<PngReadState*>(png_get_io_ptr(png));
  if (state->bytes.size() - state->offset < length) png_error(png, "file is truncated");
  std::memcpy(out, state->bytes.data() + state->offset, length);
  state->offset += length;
}

void png_record_error(png_structp png, png_const_charp message) {
  auto* state = static_cast<PngReadState*>(png_get_error_ptr(png));
  std::snprintf(state->message, sizeof state->message, "%s", message);
  png_longjmp(png, 1);
}

void png_ignore_warning(png_structp, png_const_charp) {}

// libpng reports errors by longjmp; everything with a destructor is created
// before setjmp so that nothing is skipped when it jumps back here.
RgbImage decode_png(std::span<const uint8_t> bytes, const std::string& source) {
  PngReadState state;
  state.bytes = bytes;
  RgbImage image;
  std::vector<png_bytep> rows;
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &state, png_record_error, png_ignore_warning);
  if (png == nullptr) throw CocoError(fmt::format("{}: cannot initialise the PNG decoder", source));
  png_infop info = png_create_info_struct(png);
  if (info == nullptr) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    throw CocoError(fmt::format("{}: cannot initialise the PNG decoder", source));
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    throw CocoError(fmt::format("{}: corrupt PNG: {}", source, state.message));
  }
  png_set_read_fn(png, &state, png_read_from_memory);
  png_read_info(png, info);
  const png_uint_32 width = png_get_image_width(png, info);
  const png_uint_32 height = png_get_image_height(png, info);
  const int color_type = png_get_color_type(png, info);
  // As PIL's convert("RGB"): expand palettes and low bit depths, reduce 16
  // bits to 8, replicate gray, and drop alpha without compositing or gamma.
  png_set_expand(png);
  png_set_strip_16(png);
  if (color_type == PNG_COLOR_TYPE_GRAY || color_type == PNG_COLOR_TYPE_GRAY_ALPHA) {
    png_set_gray_to_rgb(png);
  }
  png_set_strip_alpha(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  if (png_get_rowbytes(png, info) != size_t{width} * 3) {
    png_error(png, "unexpected pixel layout after conversion to RGB");
  }
  if (width == 0 || height == 0 || width >= (1u << 31) || height >= (1u << 31)) {
    png_error(png, "bad image size");
  }
  image = RgbImage(height, width);
  rows.resize(height);
  for (png_uint_32 y = 0; y < height; ++y) rows[y] = image.at(y, 0);
  png_read_image(png, rows.data());
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  return image;
}

struct PngWriteState {
  std::vector<uint8_t>* out;
};

void png_write_to_memory(png_structp png, png_bytep data, png_size_t length) {
  auto* state = static_cast<PngWriteState*>(png_get_io_ptr(png));
  state->out->insert(state->out->end(), data, data + length);
}

void png_flush_nothing(png_structp) {}

void png_throw_error(png_structp png, png_const_charp message) {
  auto* text = static_cast<char*>(png_get_error_ptr(png));
  std::snprintf(text, 256, "%s", message);
  png_longjmp(png, 1);
}

}  // namespace

RgbImage decode_image(std::span<const uint8_t> bytes, const std::string& source) {
  if (is_jpeg(bytes)) return decode_jpeg(bytes, source);
  if (is_png(bytes)) return decode_png(bytes, source);
  if (bytes.empty()) throw CocoError(fmt::format("{}: empty file, not an image", source));
  throw CocoError(fmt::format("{}: not a JPEG or PNG image", source));
}

ImageDimensions read_image_dimensions(std::span<const uint8_t> bytes, const std::string& source) {
  if (is_jpeg(bytes)) {
    int width = 0, height = 0, subsampling = 0, colorspace = 0;
    if (tjDecompressHeader3(thread_decompressor(), bytes.data(), static_cast<unsigned long>(bytes.size()), &width,
                            &height, &subsampling, &colorspace) != 0 ||
        width <= 0 || height <= 0) {
      throw CocoError(fmt::format("{}: corrupt JPEG: {}", source, tjGetErrorStr2(thread_decompressor())));
    }
    return {static_cast<uint32_t>(height), static_cast<uint32_t>(width)};
  }
  if (is_png(bytes)) {
    // The signature, then the IHDR chunk: length, "IHDR", width, height (big-endian).
    if (bytes.size() < 24 || std::memcmp(bytes.data() + 12, "IHDR", 4) != 0) {
      throw CocoError(fmt::format("{}: corrupt PNG: no IHDR header", source));
    }
    const auto big_endian = [&](size_t at) {
      return (uint32_t{bytes[at]} << 24) | (uint32_t{bytes[at + 1]} << 16) | (uint32_t{bytes[at + 2]} << 8) |
             uint32_t{bytes[at + 3]};
    };
    return {big_endian(20), big_endian(16)};
  }
  if (bytes.empty()) throw CocoError(fmt::format("{}: empty file, not an image", source));
  throw CocoError(fmt::format("{}: not a JPEG or PNG image", source));
}

std::vector<uint8_t> read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw CocoError(fmt::format("{}: cannot open file", path));
  const std::streamsize size = in.tellg();
  in.seekg(0);
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  if (size > 0 && !in.read(reinterpret_cast<char*>(bytes.data()), size)) {
    throw CocoError(fmt::format("{}: cannot read file", path));
  }
  return bytes;
}

void write_file_bytes(const std::string& path, std::span<const uint8_t> bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) throw CocoError(fmt::format("{}: cannot write file", path));
}

RgbImage read_image(const std::string& path) { return decode_image(read_file_bytes(path), path); }

std::vector<uint8_t> encode_png_channels(std::span<const uint8_t> pixels, uint32_t height, uint32_t width,
                                         int channels) {
  static constexpr int kColorTypes[] = {PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB,
                                        PNG_COLOR_TYPE_RGBA};
  if (channels < 1 || channels > 4) throw CocoError("encode_png: channels must be 1 to 4");
  if (pixels.size() != size_t{height} * width * static_cast<size_t>(channels)) {
    throw CocoError("encode_png: pixel buffer does not match the size");
  }
  std::vector<uint8_t> out;
  PngWriteState state{&out};
  char message[256] = {};
  std::vector<png_bytep> rows(height);
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, message, png_throw_error, png_ignore_warning);
  if (png == nullptr) throw CocoError("cannot initialise the PNG encoder");
  png_infop info = png_create_info_struct(png);
  if (info == nullptr) {
    png_destroy_write_struct(&png, nullptr);
    throw CocoError("cannot initialise the PNG encoder");
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    throw CocoError(std::string("PNG encoding failed: ") + message);
  }
  png_set_write_fn(png, &state, png_write_to_memory, png_flush_nothing);
  png_set_IHDR(png, info, width, height, 8, kColorTypes[channels - 1], PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  png_set_compression_level(png, 6);
  png_write_info(png, info);
  for (uint32_t y = 0; y < height; ++y) {
    rows[y] = const_cast<png_bytep>(pixels.data() + size_t{y} * width * static_cast<size_t>(channels));
  }
  png_write_image(png, rows.data());
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return out;
}

std::vector<uint8_t> encode_png(const RgbImage& image, bool gray) {
  if (!gray) return encode_png_channels(image.pixels, image.height, image.width, 3);
  std::vector<uint8_t> first(size_t{image.height} * image.width);
  for (size_t i = 0; i < first.size(); ++i) first[i] = image.pixels[i * 3];
  return encode_png_channels(first, image.height, image.width, 1);
}

std::vector<uint8_t> encode_jpeg(const RgbImage& image, int quality, bool gray) {
  tjhandle tj = thread_compressor();
  std::vector<uint8_t> first;
  const uint8_t* source = image.pixels.data();
  int format = TJPF_RGB;
  int pitch = static_cast<int>(image.width) * 3;
  if (gray) {
    first.resize(size_t{image.height} * image.width);
    for (size_t i = 0; i < first.size(); ++i) first[i] = image.pixels[i * 3];
    source = first.data();
    format = TJPF_GRAY;
    pitch = static_cast<int>(image.width);
  }
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  if (tjCompress2(tj, source, static_cast<int>(image.width), pitch, static_cast<int>(image.height), format, &jpeg,
                  &size, gray ? TJSAMP_GRAY : TJSAMP_420, quality, 0) != 0) {
    if (jpeg != nullptr) tjFree(jpeg);
    throw CocoError(std::string("JPEG encoding failed: ") + tjGetErrorStr2(tj));
  }
  std::vector<uint8_t> out(jpeg, jpeg + size);
  tjFree(jpeg);
  return out;
}

}  // namespace dtrain::vision

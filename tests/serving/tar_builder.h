#pragma once

// Builds tar archives byte by byte, including the malicious ones `tar` itself
// refuses to create (absolute names, "..", links out of the directory), and
// writes them gzip'd.
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

namespace dtrain::serving::testing {

class TarBuilder {
 public:
  TarBuilder& file(const std::string& name, const std::string& content) { return entry(name, '0', content, ""); }
  TarBuilder& directory(const std::string& name) { return entry(name, '5', "", ""); }
  TarBuilder& symlink(const std::string& name, const std::string& target) { return entry(name, '2', "", target); }
  TarBuilder& hard_link(const std::string& name, const std::string& target) { return entry(name, '1', "", target); }
  // An entry of any type, e.g. '3' (character device).
  TarBuilder& entry(const std::string& name, char type, const std::string& content, const std::string& link,
                    uint64_t declared_size = UINT64_MAX) {
    char header[512] = {};
    std::snprintf(header, 100, "%s", name.c_str());
    std::snprintf(header + 100, 8, "%07o", 0644);
    std::snprintf(header + 108, 8, "%07o", 0);
    std::snprintf(header + 116, 8, "%07o", 0);
    const uint64_t size = declared_size == UINT64_MAX ? content.size() : declared_size;
    std::snprintf(header + 124, 12, "%011llo", static_cast<unsigned long long>(size));
    std::snprintf(header + 136, 12, "%011o", 0);
    header[156] = type;
    std::snprintf(header + 157, 100, "%s", link.c_str());
    std::memcpy(header + 257,
                "ustar\0"
                "00",
                8);
    std::memset(header + 148, ' ', 8);
    unsigned sum = 0;
    for (unsigned char c : header) sum += c;
    std::snprintf(header + 148, 8, "%06o", sum);
    bytes_.append(header, 512);
    bytes_ += content;
    bytes_.append((512 - content.size() % 512) % 512, '\0');
    return *this;
  }
  // The end-of-archive marker: two zero blocks.
  std::string archive() const { return bytes_ + std::string(1024, '\0'); }
  std::string unterminated() const { return bytes_; }

  static void write_gzip(const std::string& path, const std::string& data) {
    gzFile out = gzopen(path.c_str(), "wb");
    if (!out || gzwrite(out, data.data(), static_cast<unsigned>(data.size())) != static_cast<int>(data.size())) {
      throw std::runtime_error("cannot write " + path);
    }
    gzclose(out);
  }

 private:
  std::string bytes_;
};

}  // namespace dtrain::serving::testing

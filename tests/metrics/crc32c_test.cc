#include "metrics/crc32c.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace dtrain::metrics {
namespace {

TEST(Crc32c, MatchesPublishedCheckValues) {
  EXPECT_EQ(crc32c(""), 0x00000000u);
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);  // the CRC catalogue's check value for CRC-32C
  // RFC 3720 (iSCSI), appendix B.4.
  EXPECT_EQ(crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(crc32c(std::string(32, '\xff')), 0x62A8AB43u);
  std::vector<unsigned char> ascending(32);
  for (int i = 0; i < 32; ++i) ascending[i] = static_cast<unsigned char>(i);
  EXPECT_EQ(crc32c(ascending.data(), ascending.size()), 0x46DD794Eu);
}

TEST(Crc32c, ExtendingEqualsOneCrcOfTheWhole) {
  const std::string whole = "The quick brown fox jumps over the lazy dog";
  for (std::size_t split = 0; split <= whole.size(); ++split) {
    const std::uint32_t first = crc32c(whole.data(), split);
    EXPECT_EQ(crc32c_extend(first, whole.data() + split, whole.size() - split), crc32c(whole)) << "split " << split;
  }
}

TEST(Crc32c, MaskIsRotateRightBy15PlusConstant) {
  for (std::uint32_t crc : {0x00000000u, 0x00000001u, 0xE3069283u, 0x8A9136AAu, 0xFFFFFFFFu}) {
    const std::uint32_t rotated = (crc >> 15) | (crc << 17);
    EXPECT_EQ(masked_crc32c(crc), static_cast<std::uint32_t>(rotated + 0xa282ead8u));
    EXPECT_EQ(unmasked_crc32c(masked_crc32c(crc)), crc);
  }
  EXPECT_EQ(masked_crc32c(0), 0xa282ead8u);
  EXPECT_EQ(masked_crc32c(crc32c("123456789")), 0xC78AB0E5u);  // (0xE3069283 ror 15) + 0xa282ead8, mod 2^32
  EXPECT_NE(masked_crc32c(crc32c("123456789")), crc32c("123456789"));
}

}  // namespace
}  // namespace dtrain::metrics

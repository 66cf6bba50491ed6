#include "launch/output_relay.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dtrain::launch {
namespace {

// Collects what the relay emits: each sink call is one write().
struct Capture {
  std::vector<std::string> writes;
  LineRelay::Sink sink() {
    return [this](std::string_view line) { writes.emplace_back(line); };
  }
  std::string joined() const {
    std::string all;
    for (const auto& w : writes) all += w;
    return all;
  }
};

TEST(OutputRelay, PrefixFormat) {
  EXPECT_EQ(relay_prefix(0, "stdout"), "[0]<stdout>:");
  EXPECT_EQ(relay_prefix(12, "stderr"), "[12]<stderr>:");
}

TEST(OutputRelay, OneWritePerCompleteLine) {
  Capture c;
  LineRelay relay("[0]<stdout>:", c.sink());
  relay.feed("hello\nwor");
  ASSERT_EQ(c.writes.size(), 1u);
  EXPECT_EQ(c.writes[0], "[0]<stdout>:hello\n");
  relay.feed("ld\n\nlast");
  relay.feed(" bit");
  ASSERT_EQ(c.writes.size(), 3u);
  EXPECT_EQ(c.writes[1], "[0]<stdout>:world\n");
  EXPECT_EQ(c.writes[2], "[0]<stdout>:\n");
  relay.finish();
  ASSERT_EQ(c.writes.size(), 4u);
  EXPECT_EQ(c.writes[3], "[0]<stdout>:last bit\n");
  relay.finish();  // nothing pending: no extra line
  EXPECT_EQ(c.writes.size(), 4u);
}

TEST(OutputRelay, ByteAtATimeGivesTheSameLines) {
  Capture c;
  LineRelay relay("p:", c.sink());
  std::string input = "ab\ncd\n";
  for (char ch : input) relay.feed(std::string_view(&ch, 1));
  EXPECT_EQ(c.writes, (std::vector<std::string>{"p:ab\n", "p:cd\n"}));
}

TEST(OutputRelay, CarriageReturnsAndInvalidUtf8PassThrough) {
  Capture c;
  LineRelay relay("p:", c.sink());
  std::string weird = "10%\r20%\r\xff\xfe\xc3(\x00z";
  weird.push_back('\0');
  relay.feed(weird + "\r\n");
  ASSERT_EQ(c.writes.size(), 1u);
  EXPECT_EQ(c.writes[0], "p:" + weird + "\r\n");
}

TEST(OutputRelay, LongLinesAreFlushedInPrefixedPieces) {
  Capture c;
  LineRelay relay("p:", c.sink(), 4);
  relay.feed("abcdefghij");  // two full pieces go out before the newline arrives
  EXPECT_EQ(c.writes, (std::vector<std::string>{"p:abcd\n", "p:efgh\n"}));
  relay.feed("\n");
  EXPECT_EQ(c.writes.back(), "p:ij\n");
  relay.feed("wxyz\n");  // exactly the limit: one piece
  EXPECT_EQ(c.writes.back(), "p:wxyz\n");
  EXPECT_EQ(c.writes.size(), 4u);
}

TEST(OutputRelay, DefaultLimitIs64KiB) {
  Capture c;
  LineRelay relay("p:", c.sink());
  std::string line(64 * 1024 + 10, 'x');
  relay.feed(line + "\n");
  ASSERT_EQ(c.writes.size(), 2u);
  EXPECT_EQ(c.writes[0].size(), 2 + 64 * 1024 + 1);
  EXPECT_EQ(c.writes[1], "p:" + std::string(10, 'x') + "\n");
}

TEST(OutputRelay, AllBytesSurviveWithoutPrefixes) {
  Capture c;
  LineRelay relay("", c.sink());
  std::string input;
  for (int i = 0; i < 300; ++i) input += std::string(static_cast<size_t>(i % 17), 'a' + i % 26) + "\n";
  for (size_t pos = 0; pos < input.size(); pos += 7) relay.feed(std::string_view(input).substr(pos, 7));
  relay.finish();
  EXPECT_EQ(c.joined(), input);
}

}  // namespace
}  // namespace dtrain::launch

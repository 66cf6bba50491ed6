#pragma once

#include <functional>
#include <string>

namespace dtrain::vision {

// What the data pipeline does with an entry it cannot use (an annotation
// pointing at an unknown image or category, a polygon with fewer than three
// points, a missing or corrupt image file): stop with a CocoError naming the
// file and the entry, or warn with that same message and leave the sample
// out. Malformed JSON always stops: nothing after the fault can be trusted.
enum class BadInputPolicy { kError, kSkip };

// Receives one warning line per skipped entry. An empty function writes
// "warning: MESSAGE" to stderr.
using WarningSink = std::function<void(const std::string& message)>;

void emit_warning(const WarningSink& sink, const std::string& message);

}  // namespace dtrain::vision

#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dtrain::vision::config {

// The known key a misspelt one most likely meant: the closest by edit
// distance, ignoring case, when it is close enough to be a typo; otherwise
// the only known key with the same last name (MODEL.NMS_THRESH_TEST ->
// MODEL.ROI_HEADS.NMS_THRESH_TEST). nullopt when nothing fits.
std::optional<std::string> closest_key(std::string_view unknown, const std::vector<std::string>& known);

// "unknown config key 'K' in WHERE (did you mean S?)"; WHERE is a file and
// line, "the overrides", or empty for none.
std::string unknown_key_message(std::string_view unknown, const std::vector<std::string>& known,
                                std::string_view where);

}  // namespace dtrain::vision::config

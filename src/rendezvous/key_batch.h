// The bodies of the store's batched wait (rendezvous/protocol.h, POST /v1/wait): the keys a
// client waits for, one per line, and the answer, every value as "<byte count>\n<bytes>" in
// the order the keys were asked. Both come from outside the process (a client's request, a
// store's answer), so both decoders check every length against the bytes they hold.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace dtrain::rendezvous {

// Whether `key` is one the store takes: [A-Za-z0-9._/:-]+ (also the route of /v1/kv/<key>).
bool is_valid_key(std::string_view key);

std::string encode_key_list(const std::vector<std::string>& keys);
// The keys of a request's body; throws dtrain::Error naming the first bad line (an empty or
// malformed key) or the count when it exceeds `max_keys`.
std::vector<std::string> parse_key_list(std::string_view body, std::size_t max_keys);

std::string encode_values(const std::vector<std::string>& values);
// The `count` values of an answer; throws dtrain::Error naming where the answer is malformed
// (a length that is not a number, longer than what follows, or bytes left over).
std::vector<std::string> decode_values(std::string_view body, std::size_t count);

}  // namespace dtrain::rendezvous

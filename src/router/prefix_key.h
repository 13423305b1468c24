// The prompt prefix of a generation request as a 64-bit key, for prefix affinity: requests
// whose prompts start alike go to the same replica, whose prefix cache then holds their KV.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace kiln {

// The FNV-1a hash of the first `chars` bytes of the prompt: TGI's "inputs", OpenAI's "prompt"
// (the first one of a list) or the chat messages (role and content of each, in order).
// nullopt when the body is not JSON or has no prompt (the request then goes by load alone).
std::optional<uint64_t> PromptPrefixKey(std::string_view body, size_t chars);

}  // namespace kiln

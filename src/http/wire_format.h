// Bytes of HTTP/1.1 responses: the status line and headers, and chunked-encoding frames.
// Written by hand rather than with Beast's serializer so that a response is plain bytes that
// any thread can append to a connection's output buffer.
#pragma once

#include <string>
#include <string_view>

#include "http/http_types.h"

namespace kiln::http {

// "HTTP/1.1 200 OK\r\n" + Content-Type + extra headers + Content-Length (or Transfer-Encoding:
// chunked when `chunked`) + Connection + "\r\n". `content_length` < 0: none.
std::string ResponseHead(int status, std::string_view content_type, const Headers& headers,
                         long long content_length, bool chunked, bool keep_alive);

// Appends one chunk ("<hex size>\r\n<data>\r\n") to `out`; nothing for empty data.
void AppendChunk(std::string& out, std::string_view data);
inline constexpr std::string_view kLastChunk = "0\r\n\r\n";

// The reason phrase of a status ("Unprocessable Entity").
std::string_view ReasonPhrase(int status);

}  // namespace kiln::http

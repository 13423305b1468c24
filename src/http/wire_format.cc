#include "http/wire_format.h"

#include <cstdio>

namespace kiln::http {

std::string_view ReasonPhrase(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 204:
      return "No Content";
    case 301:
      return "Moved Permanently";
    case 302:
      return "Found";
    case 304:
      return "Not Modified";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 411:
      return "Length Required";
    case 413:
      return "Payload Too Large";
    case 415:
      return "Unsupported Media Type";
    case 422:
      return "Unprocessable Entity";
    case 424:
      return "Failed Dependency";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "Unknown";
  }
}

std::string ResponseHead(int status, std::string_view content_type, const Headers& headers,
                         long long content_length, bool chunked, bool keep_alive) {
  std::string out;
  out.reserve(256);
  out.append("HTTP/1.1 ").append(std::to_string(status)).append(" ");
  out.append(ReasonPhrase(status)).append("\r\n");
  if (!content_type.empty()) out.append("Content-Type: ").append(content_type).append("\r\n");
  for (const auto& [name, value] : headers)
    out.append(name).append(": ").append(value).append("\r\n");
  if (chunked) {
    out.append("Transfer-Encoding: chunked\r\n");
  } else if (content_length >= 0) {
    out.append("Content-Length: ").append(std::to_string(content_length)).append("\r\n");
  }
  out.append(keep_alive ? "Connection: keep-alive\r\n" : "Connection: close\r\n");
  out.append("\r\n");
  return out;
}

void AppendChunk(std::string& out, std::string_view data) {
  if (data.empty()) return;  // an empty chunk would end the body
  char size[24];
  int n = std::snprintf(size, sizeof(size), "%zx\r\n", data.size());
  out.append(size, static_cast<size_t>(n)).append(data).append("\r\n");
}

}  // namespace kiln::http

// reports/render/html_escape.h: text into HTML: every string a page takes from a
// document is escaped, and long labels are shortened on a UTF-8 boundary.
#pragma once

#include <string>

namespace ladder {

inline std::string escape_html(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// At most `max_chars` bytes, cut on a UTF-8 boundary, with an ellipsis.
inline std::string shorten(const std::string& s, size_t max_chars) {
  if (s.size() <= max_chars) return s;
  size_t cut = max_chars - 1;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return s.substr(0, cut) + "\u2026";
}

}  // namespace ladder

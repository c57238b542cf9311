// Text a kernel wrote (or its compiler, quoting its source) shown inside the engine's own lines.
#pragma once

#include <string>

namespace ak {

// Every control character (and DEL) a space, but newlines where kept: a carriage return or a
// terminal's escape inside a reason or a results.tsv field cannot redraw the report around it.
inline std::string printable(std::string text, bool keep_newlines = false) {
  for (char& ch : text)
    if ((static_cast<unsigned char>(ch) < 0x20 || ch == '\x7f') && !(keep_newlines && ch == '\n')) ch = ' ';
  return text;
}

}  // namespace ak

#include "ktune/csv.h"

#include "ktune/error.h"

namespace ktune::csv {

std::string quote(std::string_view field) {
  if (field.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(field);
  std::string out = "\"";
  for (char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

std::string format_record(const std::vector<std::string>& fields) {
  std::string out;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (i) out += ',';
    out += quote(fields[i]);
  }
  out += '\n';
  return out;
}

std::vector<Record> parse(std::string_view text, const std::string& source) {
  std::vector<Record> records;
  std::size_t pos = 0, line = 1;
  const std::size_t n = text.size();
  auto fail = [&](std::size_t at_line, const std::string& what) -> void {
    throw InputError(source + ":" + std::to_string(at_line) + ": " + what);
  };
  // Length of the line break at p (1 for "\n", 2 for "\r\n"), 0 when there is none.
  auto line_break = [&](std::size_t p) -> std::size_t {
    if (p < n && text[p] == '\n') return 1;
    if (p + 1 < n && text[p] == '\r' && text[p + 1] == '\n') return 2;
    return 0;
  };

  while (pos < n) {
    Record rec;
    rec.line = line;
    rec.offset = pos;
    rec.complete = false;
    for (;;) {  // one field per iteration
      std::string field;
      if (pos < n && text[pos] == '"') {
        ++pos;
        bool closed = false;
        while (pos < n) {
          const char c = text[pos++];
          if (c == '"') {
            if (pos < n && text[pos] == '"') {
              field += '"';
              ++pos;
            } else {
              closed = true;
              break;
            }
          } else {
            if (c == '\n') ++line;
            field += c;
          }
        }
        if (!closed) {  // the text ends inside quotes: a record cut off mid-write
          rec.fields.push_back(std::move(field));
          break;
        }
        if (pos < n && text[pos] != ',' && !line_break(pos))
          fail(line, "unexpected text after the closing quote of field " + std::to_string(rec.fields.size() + 1) +
                         " (a quote inside a field must be doubled)");
      } else {
        while (pos < n && text[pos] != ',' && !line_break(pos)) {
          if (text[pos] == '"')
            fail(line, "quote inside unquoted field " + std::to_string(rec.fields.size() + 1) +
                           " (a field with quotes must be quoted, its quotes doubled)");
          field += text[pos++];
        }
      }
      rec.fields.push_back(std::move(field));
      if (pos >= n) break;  // no line break: incomplete
      if (text[pos] == ',') {
        ++pos;
        continue;
      }
      pos += line_break(pos);
      ++line;
      rec.complete = true;
      break;
    }
    records.push_back(std::move(rec));
  }
  return records;
}

}  // namespace ktune::csv

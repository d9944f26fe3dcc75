#pragma once
// CSV as RFC 4180 has it: a field holding a comma, quote, CR or LF is quoted, its quotes doubled.
// The reader reports the line each record starts on and whether the record was finished by a line
// break, so a file cut off mid-write (a killed run) can be told apart from a malformed one.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace ktune::csv {

// The field as it must appear in a record: unchanged, or quoted when it needs to be.
std::string quote(std::string_view field);
// One record, fields joined by commas, ending in "\n".
std::string format_record(const std::vector<std::string>& fields);

struct Record {
  std::vector<std::string> fields;
  std::size_t line = 0;    // 1-based line the record starts on
  std::size_t offset = 0;  // byte offset of its first character (to cut a torn record off)
  bool complete = true;    // false: the text ended before the record's line break
};

// Splits `text` into records; lines end in "\n" or "\r\n". A quote inside an unquoted field or
// text after a closing quote is an InputError "<source>:<line>: ...". A text that ends inside a
// record (even inside quotes) yields that record with complete == false.
std::vector<Record> parse(std::string_view text, const std::string& source);

}  // namespace ktune::csv

// read_input_file and parse_toml: see toml_input.hpp.
#include "io/toml_input.hpp"

#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "core/error.hpp"

namespace duet::io {

std::string read_input_file(const std::string& path, const std::string& what) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    throw InputError(path, 0, "cannot read " + what + ": it is a directory");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw InputError(path, 0,
                     "cannot read " + what + ": " + std::generic_category().message(errno));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw InputError(path, 0, "cannot read " + what + ": read error");
  return text.str();
}

toml::table parse_toml(std::string_view text, const std::string& source_name) {
  try {
    return toml::parse(text, source_name);
  } catch (const toml::parse_error& e) {
    throw InputError(source_name, static_cast<std::int64_t>(e.source().begin.line),
                     "TOML syntax error: " + std::string(e.description()));
  }
}

std::string_view describe_type(toml::node_type type) {
  switch (type) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a floating-point number";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
    case toml::node_type::none:
      break;
  }
  return "nothing";
}

}  // namespace duet::io

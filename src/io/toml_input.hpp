// Reading the TOML inputs (configuration, sweep and kernel-table files) the same way: the
// whole file as text, and the TOML parse, each failing with one InputError that names the
// file (and the line of a syntax error).
#pragma once

#include <toml++/toml.h>

#include <string>
#include <string_view>

namespace duet::io {

// The whole file; `what` names it in errors ("configuration file", "sweep file", ...).
std::string read_input_file(const std::string& path, const std::string& what);

// Parses TOML text; a syntax error is an InputError with `source_name` and its line.
toml::table parse_toml(std::string_view text, const std::string& source_name);

// The TOML type of a node with its article, for messages: "a string", "an integer".
std::string_view describe_type(toml::node_type type);

}  // namespace duet::io

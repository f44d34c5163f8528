// Options' values, checked: what kolorun's command line (launch_options.cc) and host lists take.
#pragma once

#include <string>

namespace kolo {
namespace launcher {

// A whole decimal integer >= min, else false.
bool parse_int(const std::string& text, long long min, long long* out);
// A finite number >= 0, else false.
bool parse_number(const std::string& text, double* out);
// A name -x can forward: letters, digits and '_', not starting with a digit.
bool valid_env_name(const std::string& name);
// Without the blanks (spaces, tabs, carriage returns) at either end.
std::string trimmed(const std::string& text);
// In lower case (ASCII).
std::string lowercase(std::string text);

}  // namespace launcher
}  // namespace kolo

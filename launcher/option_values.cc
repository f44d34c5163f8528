// The values kolorun's options take, one at a time: numbers, variable names, -H's host lists,
// hostfiles and --mpi-args' shell words. The last three are declared in launch_options.h (the tests
// use them); the others in option_values.h, for the command line's parser.
#include "option_values.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "launch_options.h"

namespace kolo {
namespace launcher {

bool parse_int(const std::string& text, long long min, long long* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (*end != '\0' || errno != 0 || v < min) return false;
  *out = v;
  return true;
}

bool parse_number(const std::string& text, double* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (*end != '\0' || errno != 0 || !std::isfinite(v) || v < 0) return false;
  *out = v;
  return true;
}

bool valid_env_name(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return true;
}

std::string trimmed(const std::string& text) {
  const size_t begin = text.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(" \t\r") - begin + 1);
}

std::string lowercase(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

bool split_shell_words(const std::string& text, std::vector<std::string>* words, std::string* error) {
  words->clear();
  std::string cur;
  bool in_word = false;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote == '\'') {
      if (c == '\'') quote = 0; else cur += c;
      continue;
    }
    if (quote == '"') {
      if (c == '"') {
        quote = 0;
      } else if (c == '\\' && i + 1 < text.size() && std::string("\"\\$`").find(text[i + 1]) != std::string::npos) {
        cur += text[++i];
      } else {
        cur += c;
      }
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (in_word) words->push_back(cur);
      cur.clear();
      in_word = false;
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == '\\' && i + 1 < text.size()) {
      cur += text[++i];
      in_word = true;
    } else {
      cur += c;
      in_word = true;
    }
  }
  if (quote != 0) {
    *error = std::string("unterminated ") + quote + " quote in --mpi-args";
    return false;
  }
  if (in_word) words->push_back(cur);
  return true;
}

bool parse_host_list(const std::string& text, std::vector<Host>* hosts, std::string* error) {
  std::stringstream s(text);
  std::string item;
  while (std::getline(s, item, ',')) {
    if (item.empty()) {
      *error = "empty host name in -H '" + text + "'";
      return false;
    }
    Host h;
    const size_t colon = item.rfind(':');
    h.name = item.substr(0, colon);
    if (colon != std::string::npos) {
      long long slots;
      if (!parse_int(item.substr(colon + 1), 1, &slots)) {
        *error = "bad slot count in '" + item + "': expected host:N with N >= 1";
        return false;
      }
      h.slots = static_cast<int>(slots);
    }
    if (h.name.empty()) {
      *error = "empty host name in -H '" + text + "'";
      return false;
    }
    hosts->push_back(h);
  }
  if (hosts->empty()) {
    *error = "-H needs at least one host";
    return false;
  }
  return true;
}

bool parse_hostfile_text(const std::string& text, std::vector<Host>* hosts, std::string* error) {
  std::stringstream s(text);
  std::string line;
  int number = 0;
  while (std::getline(s, line)) {
    ++number;
    line = line.substr(0, line.find('#'));
    std::stringstream words(line);
    std::string name, rest;
    if (!(words >> name)) continue;
    Host h;
    h.name = name;
    const size_t colon = name.rfind(':');
    long long slots = 1;
    if (colon != std::string::npos) {
      h.name = name.substr(0, colon);
      if (!parse_int(name.substr(colon + 1), 1, &slots)) {
        *error = "line " + std::to_string(number) + ": bad slot count in '" + name + "'";
        return false;
      }
    }
    while (words >> rest) {
      if (rest.rfind("slots=", 0) == 0 && parse_int(rest.substr(6), 1, &slots)) continue;
      if (rest.rfind("max_slots=", 0) == 0) continue;  // Open MPI's; kolo places one rank per slot
      *error = "line " + std::to_string(number) + ": expected 'host slots=N', got '" + line + "'";
      return false;
    }
    h.slots = static_cast<int>(slots);
    hosts->push_back(h);
  }
  if (hosts->empty()) {
    *error = "the hostfile lists no hosts";
    return false;
  }
  return true;
}

}  // namespace launcher
}  // namespace kolo

// docs/configuration.md's settings tables, made from the settings' table (src/settings/settings_table.cc), and
// the check (ctest settings_drift) that what else repeats the table agrees with it.
//
//   kolo_settings_doc --write SOURCE_DIR   rewrites the page's generated blocks
//   kolo_settings_doc --check SOURCE_DIR   exit 1, saying what differs, where the page, kolorun --help,
//                                          docs/migrating-from-horovod.md or a copied default drifted
//   kolo_settings_doc --markdown           prints the blocks
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "settings/settings_table.h"
#include "launch_options.h"

namespace {

using kolo::SettingSpec;
using kolo::SettingType;

const char* const kPage = "docs/configuration.md";
// Files that copy a default, on a line that says "kolo's default KOLO_...".
const char* const kCopies[] = {"benchmarks/scaling_report.py"};

std::string code(const std::string& text) { return "`" + text + "`"; }

// What the setting takes, as the docs say it.
std::string values(const SettingSpec& s) {
  std::string v;
  if (s.type == SettingType::kChoice) {
    std::istringstream words(s.words);
    std::vector<std::string> all;
    for (std::string w; words >> w;) all.push_back(code(w));
    for (size_t i = 0; i < all.size(); ++i) v += (i == 0 ? "" : i + 1 == all.size() ? " or " : ", ") + all[i];
    return v;
  }
  if (s.type == SettingType::kLogLevel) return "a log level";
  v = kolo::setting_takes(s);
  // "at most 4096" says the bound, not what kind of value.
  if (s.limits.expected != nullptr) {
    v = std::string(s.limits.expected).rfind("at most", 0) == 0 ? v + ", " + s.limits.expected : s.limits.expected;
  }
  if (std::string(s.default_text) == "auto") v += ", or auto";
  return v;
}

std::string settings_block() {
  std::string out = "| Variable | Default | Takes | Meaning |\n| --- | --- | --- | --- |\n";
  for (const SettingSpec& s : kolo::settings_table()) {
    out += "| " + code(s.name) + " | " + s.default_text + " | " + values(s) + " | " + s.meaning + " |\n";
  }
  return out;
}

std::string flags_block() {
  std::string out = "| Variable | kolorun (and horovodrun) flags | Horovod variable |\n| --- | --- | --- |\n";
  for (const SettingSpec& s : kolo::settings_table()) {
    std::string flags, aliases;
    for (const kolo::SettingFlagSpec& f : s.flags) {
      if (f.flag == nullptr) continue;
      const std::string shown = f.fixed ? code(f.flag) + " (" + f.fixed + ")" : code(f.usage ? f.usage : f.flag);
      flags += (flags.empty() ? "" : ", ") + shown;
    }
    for (const kolo::HorovodAliasSpec& a : s.aliases) {
      if (a.name != nullptr) aliases += (aliases.empty() ? "" : ", ") + code(a.name);
    }
    if (!flags.empty() || !aliases.empty()) out += "| " + code(s.name) + " | " + flags + " | " + aliases + " |\n";
  }
  return out;
}

struct Block {
  const char* name;
  std::string (*make)();
};
const Block kBlocks[] = {{"settings", settings_block}, {"flags", flags_block}};

std::string begin_marker(const Block& b) {
  return std::string("<!-- generated: ") + b.name + " (kolo_settings_doc, from src/settings/settings_table.cc) -->\n";
}
std::string end_marker(const Block& b) { return std::string("<!-- end generated: ") + b.name + " -->\n"; }

bool read(const std::string& path, std::string* text) {
  std::ifstream in(path);
  if (!in) return false;
  std::stringstream s;
  s << in.rdbuf();
  *text = s.str();
  return true;
}

// The page with each block made anew; false (naming the marker) where a marker is missing.
bool regenerated(const std::string& page, std::string* out, std::string* error) {
  *out = page;
  for (const Block& b : kBlocks) {
    const size_t begin = out->find(begin_marker(b));
    const size_t end = out->find(end_marker(b));
    if (begin == std::string::npos || end == std::string::npos || end < begin) {
      *error = std::string(kPage) + " lacks the lines " + begin_marker(b) + "and " + end_marker(b);
      return false;
    }
    const size_t from = begin + begin_marker(b).size();
    out->replace(from, end - from, b.make());
  }
  return true;
}

// Lines that say "kolo's default KOLO_X" carry the table's default of X before their comment.
void check_copies(const std::string& dir, std::vector<std::string>* problems) {
  for (const char* file : kCopies) {
    std::string text;
    if (!read(dir + "/" + file, &text)) {
      problems->push_back(std::string("cannot read ") + file);
      continue;
    }
    std::istringstream lines(text);
    std::string line;
    for (int number = 1; std::getline(lines, line); ++number) {
      const size_t at = line.find("kolo's default KOLO_");
      if (at == std::string::npos) continue;
      std::string name = line.substr(at + 15);
      name = name.substr(0, name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789"));
      const SettingSpec* s = kolo::find_setting(name);
      const std::string where = std::string(file) + ":" + std::to_string(number) + ": ";
      if (s == nullptr) {
        problems->push_back(where + name + " is not a setting");
        continue;
      }
      std::istringstream before(line.substr(0, line.find('#')));
      bool found = false;
      for (std::string token; before >> token;) found = found || token == s->default_text;
      if (!found) problems->push_back(where + "copies " + name + "'s default, which is " + s->default_text + ": " + line);
    }
  }
}

// kolorun --help shows each flag the table shows, and docs/migrating-from-horovod.md each alias.
void check_help_and_aliases(const std::string& dir, std::vector<std::string>* problems) {
  std::string migrating;
  if (!read(dir + "/docs/migrating-from-horovod.md", &migrating)) problems->push_back("cannot read the migration page");
  for (const SettingSpec& s : kolo::settings_table()) {
    for (const kolo::SettingFlagSpec& f : s.flags) {
      if (f.usage != nullptr && kolo::launcher::usage().find("  " + std::string(f.usage) + " ") == std::string::npos) {
        problems->push_back(std::string("kolorun --help lacks ") + f.usage);
      }
    }
    for (const kolo::HorovodAliasSpec& a : s.aliases) {
      const std::string row = "| " + code(a.name ? a.name : "") + " | " + code(s.name) + " |";
      if (a.name != nullptr && migrating.find(row) == std::string::npos) {
        problems->push_back("docs/migrating-from-horovod.md lacks the row starting " + row);
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "--markdown") {
    for (const Block& b : kBlocks) std::cout << b.make() << "\n";
    return 0;
  }
  if ((mode != "--write" && mode != "--check") || argc != 3) {
    std::cerr << "usage: kolo_settings_doc --write SOURCE_DIR | --check SOURCE_DIR | --markdown\n";
    return 2;
  }
  const std::string dir = argv[2], path = dir + "/" + kPage;
  std::string page, made, error;
  if (!read(path, &page) || !regenerated(page, &made, &error)) {
    std::cerr << (error.empty() ? "cannot read " + path : error) << "\n";
    return 1;
  }
  if (mode == "--write") {
    std::ofstream(path) << made;
    return 0;
  }
  std::vector<std::string> problems;
  if (made != page) {
    problems.push_back(std::string(kPage) + "'s settings tables are not the table's (src/settings/settings_table.cc); "
                       "remake them: cmake --build build --target kolo_settings_doc && "
                       "build/bin/kolo_settings_doc --write .");
  }
  check_copies(dir, &problems);
  check_help_and_aliases(dir, &problems);
  for (const std::string& p : problems) std::cerr << "settings drift: " << p << "\n";
  return problems.empty() ? 0 : 1;
}

// kolorun's command line, an option at a time: each theme's options (kolo's settings, the job's
// shape, its hosts, elastic mode, what goes on to mpirun) have a handler; the options together are
// checked at the end. The values themselves are parsed in option_values.cc and setting_flags.cc.
#include "launch_options.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "config_file.h"
#include "option_values.h"
#include "setting_flags.h"

namespace kolo {
namespace launcher {
namespace {

// What a handler made of an option.
enum class Took { kNotMine, kYes, kFailed };

Took took(bool ok) { return ok ? Took::kYes : Took::kFailed; }

// Walks the arguments once, in order; an option with a value moves i_ past it.
class CommandLineParser {
 public:
  CommandLineParser(const std::vector<std::string>& args, LaunchOptions* o, std::string* error)
      : args_(args), o_(o), error_(error) {}

  bool parse();

 private:
  bool parse_options();
  bool apply_config_file();
  std::string split_inline_value(const std::string& arg);
  bool value(const std::string& flag, std::string* v);
  bool count(const std::string& flag, long long min, int* out);
  bool seconds(const std::string& flag, bool zero_allowed, double* out);
  bool cooldown_range(const std::string& flag);
  bool hosts_once();
  bool read_hostfile(const std::string& path);

  Took setting_option(const std::string& a);
  Took job_option(const std::string& a);
  Took host_option(const std::string& a);
  Took elastic_option(const std::string& a);
  Took passed_on_option(const std::string& a);
  Took option(const std::string& a);

  bool check() const;

  const std::vector<std::string>& args_;
  LaunchOptions* o_;
  std::string* error_;
  size_t i_ = 0;
  // "--name=value" is "--name value", as argparse (and so horovodrun) takes it.
  std::string inline_value_;
  bool has_inline_ = false;
  bool hosts_given_ = false;
  std::string elastic_only_;  // the first option that means something in elastic mode only
};

// The option's name; a "--name=value" one's value kept for value().
std::string CommandLineParser::split_inline_value(const std::string& arg) {
  has_inline_ = false;
  const size_t eq = arg.find('=');
  if (arg.rfind("--", 0) == 0 && arg.size() > 2 && eq != std::string::npos) {
    inline_value_ = arg.substr(eq + 1);
    has_inline_ = true;
    return arg.substr(0, eq);
  }
  return arg;
}

bool CommandLineParser::value(const std::string& flag, std::string* v) {
  if (has_inline_) {
    *v = inline_value_;
    has_inline_ = false;
    return true;
  }
  if (i_ + 1 >= args_.size()) {
    *error_ = flag + " needs a value";
    return false;
  }
  *v = args_[++i_];
  return true;
}

bool CommandLineParser::count(const std::string& flag, long long min, int* out) {
  std::string v;
  long long n;
  if (!value(flag, &v)) return false;
  if (!parse_int(v, min, &n) || n > 1000000000) {
    *error_ = flag + " expects a " + (min > 0 ? "positive" : "non-negative") + " integer, got '" + v + "'";
    return false;
  }
  *out = static_cast<int>(n);
  return true;
}

bool CommandLineParser::seconds(const std::string& flag, bool zero_allowed, double* out) {
  std::string v;
  if (!value(flag, &v)) return false;
  double x;
  if (!parse_number(v, &x) || (x == 0 && !zero_allowed)) {
    *error_ = flag + " expects a " + (zero_allowed ? "non-negative" : "positive") + " number of seconds, got '" + v +
              "'";
    return false;
  }
  *out = x;
  return true;
}

// Two values, as horovodrun takes them: LOW HIGH seconds, 1 <= LOW <= HIGH <= 3600.
bool CommandLineParser::cooldown_range(const std::string& flag) {
  std::string low, high;
  double l, h;
  if (!value(flag, &low) || !value(flag, &high)) return false;
  if (!parse_number(low, &l) || !parse_number(high, &h) || l < 1 || h < l || h > 3600) {
    *error_ = flag + " expects LOW HIGH seconds, 1 <= LOW <= HIGH <= 3600, got '" + low + " " + high + "'";
    return false;
  }
  o_->cooldown_low_seconds = l;
  o_->cooldown_high_seconds = h;
  return true;
}

Took CommandLineParser::setting_option(const std::string& a) {
  const SettingFlag* f = find_setting_flag(a);
  if (!f) return Took::kNotMine;
  if (f->value == FlagValue::kFixed) {
    o_->settings.emplace_back(f->setting, f->fixed);
    return Took::kYes;
  }
  std::string v, setting;
  if (!value(f->flag, &v) || !setting_value(*f, v, &setting, error_)) return Took::kFailed;
  o_->settings.emplace_back(f->setting, setting);
  return Took::kYes;
}

// The job's size and what kolorun itself does: print, check, start.
Took CommandLineParser::job_option(const std::string& a) {
  if (a == "-np" || a == "--num-proc" || a == "-n") return took(count(a, 1, &o_->num_proc));
  if (a == "--verbose") {
    o_->verbose = true;
  } else if (a == "--dry-run") {
    o_->dry_run = true;
  } else if (a == "--check-build" || a == "-cb") {
    o_->check_build = true;
  } else if (a == "--version" || a == "-v") {  // -v is horovodrun's --version
    o_->version = true;
  } else if (a == "--disable-cache" || a == "--stall-check") {
    // horovodrun's: kolorun keeps no cache of its host checks between runs, and the stall check is on
    // unless --no-stall-check turns it off.
  } else if (a == "--jsrun") {
    *error_ = "--jsrun: kolorun starts ranks with Open MPI's mpirun (or Slurm's, inside an allocation), not "
              "IBM's jsrun; drop the option";
    return Took::kFailed;
  } else if (a == "--config-file") {
    return took(value(a, &o_->config_file));
  } else if (a == "-h" || a == "--help") {
    o_->help = true;
  } else if (a == "--start-timeout") {
    if (!seconds(a, false, &o_->start_timeout_seconds)) return Took::kFailed;
    o_->ranks_start_timeout_seconds = o_->start_timeout_seconds;
  } else {
    return Took::kNotMine;
  }
  return Took::kYes;
}

bool CommandLineParser::hosts_once() {
  if (hosts_given_) {
    *error_ = "give hosts once, with -H or --hostfile";
    return false;
  }
  hosts_given_ = true;
  return true;
}

bool CommandLineParser::read_hostfile(const std::string& path) {
  std::ifstream f(path);
  if (!f) {
    *error_ = "cannot read hostfile '" + path + "'";
    return false;
  }
  std::stringstream text;
  text << f.rdbuf();
  if (!parse_hostfile_text(text.str(), &o_->hosts, error_)) {
    *error_ = "hostfile '" + path + "': " + *error_;
    return false;
  }
  o_->hostfile = path;
  return true;
}

// -H and --hostfile; a host list is parsed before it is found to be the second.
Took CommandLineParser::host_option(const std::string& a) {
  std::string v;
  if (a == "-H" || a == "--hosts") {
    return took(value(a, &v) && parse_host_list(v, &o_->hosts, error_) && hosts_once());
  }
  if (a == "--hostfile" || a == "-hostfile") return took(value(a, &v) && hosts_once() && read_hostfile(v));
  return Took::kNotMine;
}

Took CommandLineParser::elastic_option(const std::string& a) {
  if (a == "--min-np" || a == "--min-num-proc") return took(count(a, 1, &o_->min_np));
  if (a == "--max-np" || a == "--max-num-proc") return took(count(a, 1, &o_->max_np));
  if (a == "--in-place") {
    o_->in_place = true;
    return Took::kYes;
  }
  if (a == "--host-discovery-script") {
    if (!value(a, &o_->discovery_script)) return Took::kFailed;
    if (o_->discovery_script.empty()) *error_ = a + " needs a file";
    return took(!o_->discovery_script.empty());
  }
  bool ok;
  if (a == "--elastic-timeout") {
    ok = seconds(a, true, &o_->elastic_timeout_seconds);
  } else if (a == "--reset-limit") {
    ok = count(a, 0, &o_->reset_limit);
  } else if (a == "--discovery-interval") {
    ok = seconds(a, false, &o_->discovery_interval_seconds);
  } else if (a == "--blacklist-after") {
    ok = count(a, 0, &o_->blacklist_after);
  } else if (a == "--slots-per-host") {
    ok = count(a, 1, &o_->slots_per_host);
  } else if (a == "--blacklist-cooldown-range") {
    ok = cooldown_range(a);
  } else {
    return Took::kNotMine;
  }
  // These mean nothing without elastic mode, which a later option may still turn on.
  if (elastic_only_.empty()) elastic_only_ = a;
  return took(ok);
}

// What goes on to mpirun, or through it to every rank.
Took CommandLineParser::passed_on_option(const std::string& a) {
  std::string v;
  if (a == "--network-interface" || a == "--network-interfaces") {
    // Given again, or as a comma-separated list: all of them, as horovodrun takes them.
    if (!value(a, &v)) return Took::kFailed;
    o_->network_interface += (o_->network_interface.empty() || v.empty() ? "" : ",") + v;
    return Took::kYes;
  }
  if (a == "--rsh-agent") return took(value(a, &o_->rsh_agent));
  if (a == "-p" || a == "--ssh-port") {
    int port = 0;
    if (!count(a, 1, &port)) return Took::kFailed;
    o_->ssh_port = std::to_string(port);
    return Took::kYes;
  }
  if (a == "-i" || a == "--ssh-identity-file") return took(value(a, &o_->ssh_identity_file));
  if (a == "--output-filename") return took(value(a, &o_->output_filename));
  if (a == "--prefix-output-with-timestamp" || a == "-prefix-timestamp") {
    o_->timestamp_output = true;
    return Took::kYes;
  }
  if (a == "--tcp") {
    o_->tcp = true;
    return Took::kYes;
  }
  if (a == "--binding-args") {
    o_->binding_args.clear();
    return took(value(a, &v) && split_shell_words(v, &o_->binding_args, error_));
  }
  if (a == "--mpi-args") {
    std::vector<std::string> words;
    if (!value(a, &v) || !split_shell_words(v, &words, error_)) return Took::kFailed;
    o_->mpi_args.insert(o_->mpi_args.end(), words.begin(), words.end());
    return Took::kYes;
  }
  if (a != "-x") return Took::kNotMine;
  if (!value(a, &v)) return Took::kFailed;
  LaunchOptions::EnvVar e;
  const size_t eq = v.find('=');
  e.name = v.substr(0, eq);
  if (eq != std::string::npos) {
    e.value = v.substr(eq + 1);
    e.has_value = true;
  }
  if (!valid_env_name(e.name)) {
    *error_ = "-x expects VAR or VAR=VALUE, got '" + v + "'";
    return Took::kFailed;
  }
  o_->env.push_back(e);
  return Took::kYes;
}

Took CommandLineParser::option(const std::string& a) {
  for (Took (CommandLineParser::*handler)(const std::string&) :
       {&CommandLineParser::setting_option, &CommandLineParser::job_option, &CommandLineParser::host_option,
        &CommandLineParser::elastic_option, &CommandLineParser::passed_on_option}) {
    const Took t = (this->*handler)(a);
    if (t != Took::kNotMine) return t;
  }
  return Took::kNotMine;
}

bool CommandLineParser::parse() { return parse_options() && apply_config_file() && check(); }

bool CommandLineParser::parse_options() {
  for (; i_ < args_.size(); ++i_) {
    const std::string a = split_inline_value(args_[i_]);
    const Took t = option(a);
    if (t == Took::kFailed) return false;
    if (t == Took::kNotMine) {
      if (a != "--" && !a.empty() && a[0] == '-') {
        *error_ = "unknown option '" + a + "' (kolorun --help lists them; pass mpirun's own with --mpi-args)";
        return false;
      }
      // The command: what follows "--", or this first word that is no option.
      o_->command.assign(args_.begin() + static_cast<long>(i_) + (a == "--" ? 1 : 0), args_.end());
      break;
    }
    if (has_inline_) {
      *error_ = a + " takes no value";
      return false;
    }
  }
  return true;
}

// --config-file's settings, under the command line's: an option given there wins, as in horovodrun.
bool CommandLineParser::apply_config_file() {
  if (o_->config_file.empty()) return true;
  std::ifstream f(o_->config_file);
  std::stringstream text;
  std::vector<std::pair<std::string, std::string>> from_file;
  if (!f || !(text << f.rdbuf()) || !read_config_file(text.str(), &from_file, error_)) {
    *error_ = "--config-file " + o_->config_file + ": " + (f ? *error_ : "cannot be read");
    return false;
  }
  std::vector<std::pair<std::string, std::string>> settings;
  for (auto it = from_file.rbegin(); it != from_file.rend(); ++it) {  // the file's last word on each
    auto given = [&](const std::pair<std::string, std::string>& s) { return s.first == it->first; };
    if (std::none_of(o_->settings.begin(), o_->settings.end(), given) &&
        std::none_of(settings.begin(), settings.end(), given)) {
      settings.insert(settings.begin(), *it);
    }
  }
  o_->settings.insert(o_->settings.begin(), settings.begin(), settings.end());
  return true;
}

// The options together.
bool CommandLineParser::check() const {
  if (o_->help || o_->check_build || o_->version) return true;
  if (!o_->discovery_script.empty() && hosts_given_) {
    *error_ = "give hosts one way: --host-discovery-script, or -H/--hostfile";
    return false;
  }
  if (!elastic_only_.empty() && !o_->elastic()) {
    *error_ = elastic_only_ + " is for elastic mode: add --min-np, --max-np, --host-discovery-script or --in-place";
    return false;
  }
  const int min_np = std::max(1, o_->min_np);
  if (o_->max_np > 0 && o_->max_np < min_np) {
    *error_ = "--max-np " + std::to_string(o_->max_np) + " is less than --min-np " + std::to_string(min_np);
    return false;
  }
  if (o_->elastic() && o_->num_proc > 0 && o_->num_proc < min_np) {
    *error_ = "-np " + std::to_string(o_->num_proc) + " is less than --min-np " + std::to_string(min_np);
    return false;
  }
  if (o_->elastic() && o_->max_np > 0 && o_->num_proc > o_->max_np) {
    *error_ = "-np " + std::to_string(o_->num_proc) + " is more than --max-np " + std::to_string(o_->max_np);
    return false;
  }
  if (o_->command.empty()) {
    *error_ = "no command to run: kolorun -np N [options] command [args...]";
    return false;
  }
  return true;
}

}  // namespace

std::vector<std::string> LaunchOptions::ssh_args() const {
  std::vector<std::string> args;
  if (!ssh_port.empty()) args.insert(args.end(), {"-p", ssh_port});
  if (!ssh_identity_file.empty()) args.insert(args.end(), {"-i", ssh_identity_file});
  return args;
}

bool parse_command_line(const std::vector<std::string>& args, LaunchOptions* o, std::string* error) {
  *o = LaunchOptions();
  return CommandLineParser(args, o, error).parse();
}

}  // namespace launcher
}  // namespace kolo

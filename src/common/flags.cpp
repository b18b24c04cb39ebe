#include <charconv>
#include <iostream>
#include <sstream>

#include <hybridjob/common/duration.h>
#include <hybridjob/common/flags.h>
#include <hybridjob/common/logging.h>

namespace hybridjob {

FlagSet::FlagSet(std::string program, std::string summary)
    : program_(std::move(program)), summary_(std::move(summary)) {}

void FlagSet::String(const std::string& name, std::string* target, std::string help) {
  flags_[name] = {Kind::kString, target, std::move(help), *target};
}

void FlagSet::Int(const std::string& name, int64_t* target, std::string help) {
  flags_[name] = {Kind::kInt, target, std::move(help), std::to_string(*target)};
}

void FlagSet::Double(const std::string& name, double* target, std::string help) {
  std::ostringstream text;
  text << *target;
  flags_[name] = {Kind::kDouble, target, std::move(help), text.str()};
}

void FlagSet::Bool(const std::string& name, bool* target, std::string help) {
  flags_[name] = {Kind::kBool, target, std::move(help), *target ? "true" : "false"};
}

void FlagSet::Duration(const std::string& name, std::chrono::milliseconds* target,
                       std::string help) {
  flags_[name] = {Kind::kDuration, target, std::move(help), FormatDuration(*target)};
}

bool FlagSet::WasSet(const std::string& name) const {
  auto it = flags_.find(name);
  return it != flags_.end() && it->second.set;
}

Status FlagSet::Assign(const std::string& name, Flag& flag, const std::string& value) {
  flag.set = true;
  switch (flag.kind) {
    case Kind::kString:
      *static_cast<std::string*>(flag.target) = value;
      return Status::Ok();
    case Kind::kInt: {
      int64_t parsed = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), parsed);
      if (ec != std::errc() || end != value.data() + value.size()) {
        return InvalidArgument("--" + name + ": \"" + value + "\" is not an integer");
      }
      *static_cast<int64_t*>(flag.target) = parsed;
      return Status::Ok();
    }
    case Kind::kDouble: {
      try {
        size_t used = 0;
        const double parsed = std::stod(value, &used);
        if (used != value.size()) {
          throw std::invalid_argument(value);
        }
        *static_cast<double*>(flag.target) = parsed;
      } catch (const std::exception&) {
        return InvalidArgument("--" + name + ": \"" + value + "\" is not a number");
      }
      return Status::Ok();
    }
    case Kind::kBool:
      if (value == "true" || value == "1") {
        *static_cast<bool*>(flag.target) = true;
      } else if (value == "false" || value == "0") {
        *static_cast<bool*>(flag.target) = false;
      } else {
        return InvalidArgument("--" + name + ": \"" + value + "\" is not true or false");
      }
      return Status::Ok();
    case Kind::kDuration: {
      auto parsed = ParseDuration(value);
      if (!parsed) {
        return InvalidArgument("--" + name + ": " + parsed.status().message());
      }
      *static_cast<std::chrono::milliseconds*>(flag.target) = *parsed;
      return Status::Ok();
    }
  }
  return Internal("unknown flag kind");
}

Status FlagSet::Parse(int argc, const char* const* argv, int first) {
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      help_requested_ = true;
      continue;
    }
    if (arg == "--") {
      for (++i; i < argc; ++i) {
        after_dash_dash_.emplace_back(argv[i]);
      }
      break;
    }
    std::string name;
    std::string value;
    bool has_value = false;
    if (arg.size() >= 2 && arg[0] == '-' && arg[1] != '-') {
      auto shorthand = shorthands_.find(arg[1]);
      if (shorthand == shorthands_.end()) {
        return InvalidArgument("unknown flag -" + std::string(1, arg[1]) + " (see --help)");
      }
      name = shorthand->second;
      if (arg.size() > 2) {
        value = arg.substr(arg[2] == '=' ? 3 : 2);
        has_value = true;
      }
    } else if (arg.rfind("--", 0) != 0) {
      positional_.push_back(arg);
      continue;
    } else {
      name = arg.substr(2);
      if (auto eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
        has_value = true;
      }
    }
    auto it = flags_.find(name);
    if (it == flags_.end()) {
      return InvalidArgument("unknown flag --" + name + " (see --help)");
    }
    if (!has_value) {
      if (it->second.kind == Kind::kBool) {
        value = "true";
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        return InvalidArgument("--" + name + " needs a value");
      }
    }
    if (Status s = Assign(name, it->second, value); !s.ok()) {
      return s;
    }
  }
  return Status::Ok();
}

void FlagSet::Shorthand(char letter, const std::string& name) {
  shorthands_[letter] = name;
}

void FlagSet::DescribeDefault(const std::string& name, std::string text) {
  if (auto it = flags_.find(name); it != flags_.end()) {
    it->second.default_text = std::move(text);
  }
}

std::string FlagSet::Usage() const {
  std::ostringstream out;
  out << "Usage: " << program_ << (synopsis_.empty() ? "" : " " + synopsis_) << " [flags]\n";
  if (!summary_.empty()) {
    out << "\n" << summary_ << "\n";
  }
  out << "\nFlags:\n";
  for (const auto& [name, flag] : flags_) {
    std::string left = "      --" + name;
    for (const auto& [letter, long_name] : shorthands_) {
      if (long_name == name) {
        left = "  -" + std::string(1, letter) + ", --" + name;
      }
    }
    if (flag.kind != Kind::kBool) {
      left += " value";
    }
    out << left;
    if (left.size() < 32) {
      out << std::string(32 - left.size(), ' ');
    } else {
      out << "\n" << std::string(32, ' ');
    }
    out << flag.help;
    if (!flag.default_text.empty()) {
      out << " (default " << flag.default_text << ")";
    }
    out << "\n";
  }
  out << "  -h, --help                    show this help\n";
  return out.str();
}

void AddLoggingFlags(FlagSet& flags, LoggingFlags* logging) {
  flags.String("log-level", &logging->level, "trace, debug, info, warn or error");
  flags.String("log-format", &logging->format, "text or json");
}

namespace {

constexpr const char* kMetricsAddrHelp = "host:port of /metrics; \"0\" disables it";
constexpr const char* kHealthAddrHelp = "host:port of /healthz and /readyz; \"0\" disables it";

}  // namespace

void AddServingFlags(FlagSet& flags, ServingFlags* serving) {
  flags.String("metrics-addr", &serving->metrics_addr, kMetricsAddrHelp);
  flags.String("health-addr", &serving->health_addr, kHealthAddrHelp);
  flags.Bool("insecure-serving", &serving->insecure_serving,
             "serve /metrics (and the dashboard) over plain HTTP to anyone, without TokenReview "
             "and SubjectAccessReview; never where others can connect");
  flags.String("tls-cert-file", &serving->tls_cert_file,
               "PEM certificate (and chain) of the HTTPS listeners");
  flags.DescribeDefault("tls-cert-file", "a self-signed certificate made at start");
  flags.String("tls-private-key-file", &serving->tls_private_key_file,
               "PEM private key of --tls-cert-file");
  flags.DescribeDefault("tls-private-key-file", "the self-signed certificate's");
}

void AddServingOverrideFlags(FlagSet& flags, ServingFlags* serving,
                             const std::string& config_flag) {
  AddServingFlags(flags, serving);
  flags.DescribeDefault("metrics-addr",
                        "metricsAddr of " + config_flag + ", else " + serving->metrics_addr);
  flags.DescribeDefault("health-addr",
                        "healthAddr of " + config_flag + ", else " + serving->health_addr);
}

int FailStartup(const std::string& program, const std::string& message) {
  std::cerr << program << ": " << message << "\n";
  return 1;
}

std::optional<int> ParseCommandLine(FlagSet& flags, int argc, const char* const* argv,
                                    const LoggingFlags& logging, bool positional_allowed) {
  if (Status status = flags.Parse(argc, argv); !status.ok()) {
    return FailStartup(flags.program(), status.message());
  }
  if (flags.help_requested()) {
    std::cout << flags.Usage();
    return 0;
  }
  if (!positional_allowed && (!flags.positional().empty() || !flags.after_dash_dash().empty())) {
    const std::string& first =
        flags.positional().empty() ? flags.after_dash_dash().front() : flags.positional().front();
    return FailStartup(flags.program(), "unexpected argument \"" + first + "\" (see --help)");
  }
  if (Status status = ConfigureLogging(logging.level, logging.format, flags.program());
      !status.ok()) {
    return FailStartup(flags.program(), status.message());
  }
  return std::nullopt;
}

}  // namespace hybridjob

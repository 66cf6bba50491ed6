#include "job/job_spec.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include "job/job_error.h"

namespace dtrain::job {
namespace {

namespace fs = std::filesystem;

const std::regex kJobName("^[A-Za-z0-9](-*[A-Za-z0-9]){0,62}$");
const std::regex kChannelName("^[A-Za-z0-9._-]{1,64}$");
const std::regex kEnvName("^[A-Za-z_][A-Za-z0-9_]*$");
const std::regex kYamlInt("^[-+]?[0-9]+$");
const std::regex kYamlFloat("^[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?$");

// Collects every problem of a spec so they are reported together.
class Problems {
 public:
  void add(const std::string& field, const std::string& message) {
    items_.push_back(fmt::format("{}: {}", field, message));
  }
  bool empty() const { return items_.empty(); }
  bool about(const std::string& field) const {
    return std::any_of(items_.begin(), items_.end(), [&](const std::string& i) { return i.starts_with(field + ":"); });
  }
  const std::vector<std::string>& items() const { return items_; }

 private:
  std::vector<std::string> items_;
};

std::string where(const YAML::Node& node) {
  YAML::Mark mark = node.Mark();
  if (mark.line < 0) return "";
  return fmt::format(" (line {})", mark.line + 1);
}

std::string single_quoted(const std::string& s) { return "'" + s + "'"; }

bool is_plain(const YAML::Node& node) { return node.Tag() != "!"; }

// A YAML scalar as JSON, with YAML 1.2 core-schema typing for plain scalars
// and strings for quoted ones.
nlohmann::ordered_json scalar_to_json(const YAML::Node& node) {
  const std::string& text = node.Scalar();
  if (!is_plain(node)) return text;
  if (text == "true" || text == "True" || text == "TRUE") return true;
  if (text == "false" || text == "False" || text == "FALSE") return false;
  if (text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL") {
    return nullptr;
  }
  if (std::regex_match(text, kYamlInt)) {
    try {
      return std::stoll(text);
    } catch (...) {
      return text;
    }
  }
  if (std::regex_match(text, kYamlFloat)) return std::stod(text);
  if (text == ".inf" || text == "+.inf") return HUGE_VAL;
  if (text == "-.inf") return -HUGE_VAL;
  return text;
}

nlohmann::ordered_json to_json(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar: return scalar_to_json(node);
    case YAML::NodeType::Sequence: {
      auto array = nlohmann::ordered_json::array();
      for (const auto& item : node) array.push_back(to_json(item));
      return array;
    }
    case YAML::NodeType::Map: {
      auto object = nlohmann::ordered_json::object();
      for (const auto& item : node) object[item.first.Scalar()] = to_json(item.second);
      return object;
    }
    default: return nullptr;
  }
}

void check_keys(const YAML::Node& map, const std::string& field, const std::vector<std::string>& allowed,
                Problems& problems) {
  for (const auto& item : map) {
    std::string key = item.first.Scalar();
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      problems.add(field.empty() ? key : field + "." + key,
                   fmt::format("unknown field{}; allowed: {}", where(item.first), fmt::join(allowed, ", ")));
    }
  }
}

std::optional<std::string> get_string(const YAML::Node& node, const std::string& field, Problems& problems) {
  if (!node.IsScalar() || node.Scalar().empty()) {
    problems.add(field, fmt::format("must be a non-empty string{}", where(node)));
    return std::nullopt;
  }
  return node.Scalar();
}

std::optional<long long> get_int(const YAML::Node& node, const std::string& field, long long minimum, long long maximum,
                                 Problems& problems) {
  if (node.IsScalar() && std::regex_match(node.Scalar(), kYamlInt)) {
    try {
      long long value = std::stoll(node.Scalar());
      if (value >= minimum && value <= maximum) return value;
    } catch (...) {}
  }
  problems.add(field, fmt::format("must be an integer in {}..{}, got {}{}", minimum, maximum,
                                  node.IsScalar() ? single_quoted(node.Scalar()) : "a collection", where(node)));
  return std::nullopt;
}

std::optional<bool> get_bool(const YAML::Node& node, const std::string& field, Problems& problems) {
  if (node.IsScalar()) {
    auto value = scalar_to_json(node);
    if (value.is_boolean()) return value.get<bool>();
  }
  problems.add(field, fmt::format("must be true or false, got {}{}",
                                  node.IsScalar() ? single_quoted(node.Scalar()) : "a collection", where(node)));
  return std::nullopt;
}

template <typename Enum>
std::optional<Enum> get_enum(const YAML::Node& node, const std::string& field,
                             const std::vector<std::pair<std::string, Enum>>& choices, Problems& problems) {
  std::vector<std::string> names;
  for (const auto& [name, value] : choices) {
    if (node.IsScalar() && node.Scalar() == name) return value;
    names.push_back(name);
  }
  problems.add(field, fmt::format("must be one of {}, got {}{}", fmt::join(names, ", "),
                                  node.IsScalar() ? single_quoted(node.Scalar()) : "a collection", where(node)));
  return std::nullopt;
}

std::string absolute_path(const std::string& path, const std::string& base_dir) {
  fs::path p(path);
  if (p.is_relative()) p = fs::path(base_dir) / p;
  return p.lexically_normal().string();
}

void apply_override(YAML::Node& root, const std::string& assignment, Problems& problems) {
  size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    problems.add("--set " + assignment, "must be key=value (e.g. hyperparameters.lr=0.01)");
    return;
  }
  std::string key = assignment.substr(0, eq);
  std::string text = assignment.substr(eq + 1);
  YAML::Node value;
  try {
    value = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    problems.add("--set " + key, fmt::format("value is not valid YAML: {}", e.msg));
    return;
  }
  if (!value.IsDefined() || value.IsNull()) value = YAML::Node(text);
  std::vector<std::string> parts;
  std::stringstream stream(key);
  for (std::string part; std::getline(stream, part, '.');) parts.push_back(part);
  // Hyperparameter and environment names are free-form and may hold dots
  // (Detectron2's SOLVER.BASE_LR): everything after the field is one key.
  if (parts.size() > 2 && (parts[0] == "hyperparameters" || parts[0] == "environment")) {
    parts = {parts[0], key.substr(parts[0].size() + 1)};
  }
  if (std::any_of(parts.begin(), parts.end(), [](const std::string& p) { return p.empty(); })) {
    problems.add("--set " + key, "empty component in the dotted key");
    return;
  }
  YAML::Node current(root);
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    YAML::Node next = current[parts[i]];
    if (!next.IsMap()) {
      current[parts[i]] = YAML::Node(YAML::NodeType::Map);
      next = current[parts[i]];
    }
    current.reset(next);
  }
  current[parts.back()] = value;
}

void parse_channel(const std::string& name, const YAML::Node& node, const std::string& base_dir, JobSpec& spec,
                   Problems& problems) {
  std::string field = "channels." + name;
  if (!std::regex_match(name, kChannelName)) {
    problems.add(field, "channel names are 1-64 characters of A-Z a-z 0-9 . _ -");
  }
  if (!node.IsMap()) {
    problems.add(field, fmt::format("must be a mapping with source, input_mode, distribution, "
                                    "shared{}",
                                    where(node)));
    return;
  }
  check_keys(node, field, {"source", "input_mode", "distribution", "shared", "content_type"}, problems);
  ChannelSpec channel;
  channel.name = name;
  if (!node["source"]) {
    problems.add(field + ".source", "required: the directory holding the channel's files");
  } else if (auto source = get_string(node["source"], field + ".source", problems)) {
    // Whether it exists is not the spec's concern: see missing_channel_sources.
    channel.source = absolute_path(*source, base_dir);
  }
  if (node["input_mode"]) {
    channel.input_mode = get_enum<InputMode>(node["input_mode"], field + ".input_mode",
                                             {{"File", InputMode::kFile}, {"Pipe", InputMode::kPipe}}, problems)
                             .value_or(InputMode::kFile);
  }
  if (node["distribution"]) {
    channel.distribution = get_enum<Distribution>(node["distribution"], field + ".distribution",
                                                  {{"FullyReplicated", Distribution::kFullyReplicated},
                                                   {"ShardedByKey", Distribution::kShardedByKey}},
                                                  problems)
                               .value_or(Distribution::kFullyReplicated);
  }
  if (node["shared"]) channel.shared = get_bool(node["shared"], field + ".shared", problems).value_or(false);
  if (node["content_type"]) {
    channel.content_type = get_string(node["content_type"], field + ".content_type", problems);
  }
  if (channel.shared && channel.distribution == Distribution::kShardedByKey) {
    problems.add(field + ".shared",
                 "a shared channel is the same directory on every host; it cannot be "
                 "ShardedByKey (allowed with shared: FullyReplicated)");
  }
  if (channel.shared && channel.input_mode == InputMode::kPipe) {
    problems.add(field + ".shared", "a shared channel is mounted, not streamed; use input_mode File");
  }
  spec.channels.push_back(std::move(channel));
}

void parse_name(const YAML::Node& node, JobSpec& spec, Problems& problems) {
  if (!node) {
    problems.add("name", "required: 1-63 characters of A-Z a-z 0-9 and -, starting with a letter or digit");
  } else if (auto name = get_string(node, "name", problems)) {
    if (!std::regex_match(*name, kJobName)) {
      problems.add("name", fmt::format("must be 1-63 characters of A-Z a-z 0-9 and -, not starting "
                                       "or ending with -, got {}",
                                       single_quoted(*name)));
    }
    spec.name = *name;
  }
}

// A list of words, or one string split at spaces.
void parse_command(const YAML::Node& node, const std::string& base_dir, JobSpec& spec, Problems& problems) {
  if (!node) {
    problems.add("command", "required: the algorithm's program and arguments (a list of strings)");
  } else if (node.IsSequence() && node.size() > 0) {
    for (const auto& word : node) {
      if (word.IsScalar()) {
        spec.command.push_back(word.Scalar());
      } else {
        problems.add("command", fmt::format("every element must be a string{}", where(word)));
      }
    }
  } else if (node.IsScalar() && !node.Scalar().empty()) {
    std::stringstream words(node.Scalar());
    for (std::string w; words >> w;) spec.command.push_back(w);
  } else {
    problems.add("command", "must be a non-empty list of strings (program, then arguments)");
  }

  // A relative program path ("../build/apps/x") is relative to the spec, like every path in it.
  if (!spec.command.empty() && spec.command[0].find('/') != std::string::npos &&
      fs::path(spec.command[0]).is_relative()) {
    spec.command[0] = absolute_path(spec.command[0], base_dir);
  }
}

// instance_count, instance_type, processes_per_host.
void parse_instances(const YAML::Node& root, JobSpec& spec, Problems& problems) {
  if (root["instance_count"]) {
    spec.instance_count =
        static_cast<int>(get_int(root["instance_count"], "instance_count", 1, 200, problems).value_or(1));
  }
  if (root["instance_type"]) {
    spec.instance_type = get_string(root["instance_type"], "instance_type", problems).value_or("local");
  }
  if (root["processes_per_host"]) {
    spec.processes_per_host =
        static_cast<int>(get_int(root["processes_per_host"], "processes_per_host", 1, 1024, problems).value_or(1));
  }
}

void parse_hyperparameters(const YAML::Node& hps, JobSpec& spec, Problems& problems) {
  if (!hps.IsMap()) {
    problems.add("hyperparameters", fmt::format("must be a mapping of name: value{}", where(hps)));
    return;
  }
  for (const auto& item : hps) {
    std::string key = item.first.Scalar();
    if (key.empty()) {
      problems.add("hyperparameters", "empty hyperparameter name");
      continue;
    }
    spec.hyperparameters[key] = to_json(item.second);
  }
}

void parse_channels(const YAML::Node& channels, const std::string& base_dir, JobSpec& spec, Problems& problems) {
  if (!channels.IsMap()) {
    problems.add("channels", fmt::format("must be a mapping of channel name: {{source, ...}}{}", where(channels)));
    return;
  }
  for (const auto& item : channels) parse_channel(item.first.Scalar(), item.second, base_dir, spec, problems);
  std::sort(spec.channels.begin(), spec.channels.end(),
            [](const ChannelSpec& a, const ChannelSpec& b) { return a.name < b.name; });
}

void parse_distribution(const YAML::Node& dist, JobSpec& spec, Problems& problems) {
  if (!dist.IsMap()) {
    problems.add("distribution", "must be a mapping with engine and custom_mpi_options");
    return;
  }
  check_keys(dist, "distribution", {"engine", "custom_mpi_options"}, problems);
  if (dist["engine"]) {
    spec.engine =
        get_enum<Engine>(
            dist["engine"], "distribution.engine",
            {{"gloo", Engine::kGloo}, {"mpi", Engine::kMpi}, {"parameter_server", Engine::kParameterServer}}, problems)
            .value_or(Engine::kGloo);
  }
  if (dist["custom_mpi_options"]) {
    if (dist["custom_mpi_options"].IsScalar()) {
      spec.custom_mpi_options = dist["custom_mpi_options"].Scalar();
    } else {
      problems.add("distribution.custom_mpi_options", "must be a string of mpirun options");
    }
  }
}

// A regular expression with a group around the value.
bool check_metric_regex(const std::string& regex, const std::string& field, Problems& problems) {
  try {
    std::regex compiled(regex);
    if (compiled.mark_count() < 1) {
      problems.add(field, "needs a capture group around the value, e.g. 'loss: ([0-9.eE+-]+)'");
      return false;
    }
  } catch (const std::regex_error& e) {
    problems.add(field, fmt::format("not a valid regular expression ({}): {}", e.what(), regex));
    return false;
  }
  return true;
}

// One {name, regex} entry; nothing when it is unusable. A duplicate name is reported but kept.
std::optional<MetricDefinition> parse_metric_definition(const YAML::Node& m, const std::string& field,
                                                        std::set<std::string>& seen, Problems& problems) {
  if (!m.IsMap()) {
    problems.add(field, fmt::format("must be a mapping with name and regex{}", where(m)));
    return std::nullopt;
  }
  check_keys(m, field, {"name", "regex"}, problems);
  MetricDefinition def;
  bool ok = true;
  if (!m["name"]) {
    problems.add(field + ".name", "required");
    ok = false;
  } else if (auto name = get_string(m["name"], field + ".name", problems)) {
    def.name = *name;
    if (!seen.insert(def.name).second) {
      problems.add(field + ".name", fmt::format("duplicate metric name {}", single_quoted(def.name)));
    }
  } else {
    ok = false;
  }
  if (!m["regex"]) {
    problems.add(field + ".regex", "required: a regular expression whose first group is the value");
    ok = false;
  } else if (auto regex = get_string(m["regex"], field + ".regex", problems)) {
    def.regex = *regex;
    ok = check_metric_regex(def.regex, field + ".regex", problems) && ok;
  } else {
    ok = false;
  }
  return ok ? std::optional<MetricDefinition>(def) : std::nullopt;
}

void parse_metric_definitions(const YAML::Node& metrics, JobSpec& spec, Problems& problems) {
  if (!metrics.IsSequence()) {
    problems.add("metric_definitions", "must be a list of {name, regex}");
    return;
  }
  std::set<std::string> seen;
  for (size_t i = 0; i < metrics.size(); ++i) {
    const std::string field = fmt::format("metric_definitions[{}]", i);
    if (auto def = parse_metric_definition(metrics[i], field, seen, problems)) spec.metric_definitions.push_back(*def);
  }
}

void parse_checkpoint(const YAML::Node& ckpt, const std::string& base_dir, JobSpec& spec, Problems& problems) {
  if (!ckpt.IsMap()) {
    problems.add("checkpoint", "must be a mapping with local_path and sync_to");
    return;
  }
  check_keys(ckpt, "checkpoint", {"local_path", "sync_to"}, problems);
  if (ckpt["local_path"]) {
    if (auto path = get_string(ckpt["local_path"], "checkpoint.local_path", problems)) {
      std::string normal = fs::path(*path).lexically_normal().string();
      if (!normal.starts_with("/opt/ml/") || normal.find("..") != std::string::npos) {
        problems.add("checkpoint.local_path",
                     fmt::format("must be a directory under /opt/ml (the host's root), got {}", single_quoted(*path)));
      } else {
        spec.checkpoint.local_path = normal;
      }
    }
  }
  if (ckpt["sync_to"]) {
    if (auto path = get_string(ckpt["sync_to"], "checkpoint.sync_to", problems)) {
      spec.checkpoint.sync_to = absolute_path(*path, base_dir);
    }
  }
}

// Relative to the spec when given, else dtrain-jobs in the current directory.
void parse_output_path(const YAML::Node& node, const std::string& base_dir, JobSpec& spec, Problems& problems) {
  std::error_code ec;
  std::string cwd = fs::current_path(ec).string();
  spec.output_path = absolute_path("dtrain-jobs", cwd);
  if (node) {
    if (auto path = get_string(node, "output_path", problems)) spec.output_path = absolute_path(*path, base_dir);
  }
}

void parse_max_run_seconds(const YAML::Node& max_run, JobSpec& spec, Problems& problems) {
  if (max_run.IsScalar()) {
    auto value = scalar_to_json(max_run);
    if (value.is_number() && value.get<double>() > 0 && std::isfinite(value.get<double>())) {
      spec.max_run_seconds = value.get<double>();
      return;
    }
  }
  problems.add("max_run_seconds",
               fmt::format("must be a number of seconds > 0, got {}{}",
                           max_run.IsScalar() ? single_quoted(max_run.Scalar()) : "a collection", where(max_run)));
}

void parse_environment(const YAML::Node& env, JobSpec& spec, Problems& problems) {
  if (!env.IsMap()) {
    problems.add("environment", "must be a mapping of NAME: value");
    return;
  }
  for (const auto& item : env) {
    std::string key = item.first.Scalar();
    if (!std::regex_match(key, kEnvName)) {
      problems.add("environment." + key, "names are letters, digits and _, not starting with a digit");
    } else if (!item.second.IsScalar()) {
      problems.add("environment." + key, "must be a string, number or boolean");
    } else {
      spec.environment.emplace_back(key, item.second.Scalar());
    }
  }
  std::sort(spec.environment.begin(), spec.environment.end());
}

// A number of seconds >= 0.
std::optional<double> get_seconds(const YAML::Node& node, const std::string& field, Problems& problems) {
  if (node.IsScalar()) {
    auto value = scalar_to_json(node);
    if (value.is_number() && value.get<double>() >= 0 && std::isfinite(value.get<double>())) return value.get<double>();
  }
  problems.add(field, fmt::format("must be a number of seconds >= 0, got {}{}",
                                  node.IsScalar() ? single_quoted(node.Scalar()) : "a collection", where(node)));
  return std::nullopt;
}

// The `elastic:` section, after instance_count and distribution (its bounds and the engine).
void parse_elastic(const YAML::Node& node, JobSpec& spec, Problems& problems) {
  if (!node.IsMap()) {
    problems.add("elastic", fmt::format("must be a mapping with min_hosts (required), max_hosts, timeout_s, "
                                        "host_cooldown_s, reset_limit{}",
                                        where(node)));
    return;
  }
  check_keys(node, "elastic", {"min_hosts", "max_hosts", "timeout_s", "host_cooldown_s", "reset_limit"}, problems);
  if (spec.engine != Engine::kGloo) {
    problems.add("elastic", fmt::format("not supported with distribution.engine {}: elastic jobs run over dtrain's "
                                        "own launcher and Gloo (use engine gloo)",
                                        to_string(spec.engine)));
  }
  ElasticSpec elastic;
  // A bad instance_count is reported already; its default must not make a second problem here.
  const int hosts = problems.about("instance_count") ? 200 : spec.instance_count;
  bool bounds_ok = true;
  if (!node["min_hosts"]) {
    problems.add("elastic.min_hosts", fmt::format("required: the fewest hosts the job goes on with, 1..{} "
                                                  "(instance_count)",
                                                  hosts));
    bounds_ok = false;
  } else if (auto min = get_int(node["min_hosts"], "elastic.min_hosts", 1, hosts, problems)) {
    elastic.min_hosts = static_cast<int>(*min);
  } else {
    bounds_ok = false;
  }
  elastic.max_hosts = hosts;
  if (node["max_hosts"]) {
    // At least min_hosts when that is known; at most the hosts the job has.
    const long long lowest = bounds_ok ? elastic.min_hosts : 1;
    if (auto max = get_int(node["max_hosts"], "elastic.max_hosts", lowest, hosts, problems)) {
      elastic.max_hosts = static_cast<int>(*max);
    }
  }
  if (node["timeout_s"])
    elastic.timeout_s = get_seconds(node["timeout_s"], "elastic.timeout_s", problems).value_or(600);
  if (node["host_cooldown_s"]) {
    elastic.host_cooldown_s = get_seconds(node["host_cooldown_s"], "elastic.host_cooldown_s", problems).value_or(300);
  }
  if (node["reset_limit"]) {
    elastic.reset_limit =
        static_cast<int>(get_int(node["reset_limit"], "elastic.reset_limit", 0, 1000000, problems).value_or(50));
  }
  spec.elastic = elastic;
}

// The spec's fields in order, every problem collected.
JobSpec convert(const YAML::Node& root, const std::string& base_dir, Problems& problems) {
  JobSpec spec;
  if (!root.IsMap()) {
    problems.add("(top level)", "the spec must be a YAML mapping of fields");
    return spec;
  }
  check_keys(
      root, "",
      {"name", "command", "instance_count", "instance_type", "processes_per_host", "hyperparameters", "channels",
       "distribution", "metric_definitions", "checkpoint", "output_path", "max_run_seconds", "environment", "elastic"},
      problems);
  parse_name(root["name"], spec, problems);
  parse_command(root["command"], base_dir, spec, problems);
  parse_instances(root, spec, problems);
  if (const YAML::Node hps = root["hyperparameters"]) parse_hyperparameters(hps, spec, problems);
  if (const YAML::Node channels = root["channels"]) parse_channels(channels, base_dir, spec, problems);
  if (const YAML::Node dist = root["distribution"]) parse_distribution(dist, spec, problems);
  if (const YAML::Node metrics = root["metric_definitions"]) parse_metric_definitions(metrics, spec, problems);
  if (const YAML::Node ckpt = root["checkpoint"]) parse_checkpoint(ckpt, base_dir, spec, problems);
  parse_output_path(root["output_path"], base_dir, spec, problems);
  if (const YAML::Node max_run = root["max_run_seconds"]) parse_max_run_seconds(max_run, spec, problems);
  if (const YAML::Node env = root["environment"]) parse_environment(env, spec, problems);
  if (const YAML::Node elastic = root["elastic"]) parse_elastic(elastic, spec, problems);
  return spec;
}

}  // namespace

JobSpec parse_job_spec(std::string_view yaml_text, std::string_view origin, const std::string& base_dir,
                       const std::vector<std::string>& overrides) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    throw JobError::usage(fmt::format("{}: not valid YAML: {}", origin, e.what()));
  }
  if (!root.IsDefined() || root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  Problems problems;
  if (root.IsMap()) {
    for (const auto& assignment : overrides) apply_override(root, assignment, problems);
  }
  JobSpec spec = convert(root, base_dir, problems);
  if (!problems.empty()) {
    std::string message = fmt::format("{}: {} problem{} in the job spec:", origin, problems.items().size(),
                                      problems.items().size() == 1 ? "" : "s");
    for (const auto& item : problems.items()) message += "\n  " + item;
    throw JobError::usage(message);
  }
  return spec;
}

JobSpec load_job_spec(const std::string& path, const std::vector<std::string>& overrides) {
  std::ifstream in(path);
  if (!in) throw JobError::usage(fmt::format("{}: cannot read the job spec", path));
  std::stringstream text;
  text << in.rdbuf();
  std::error_code ec;
  fs::path absolute = fs::absolute(path, ec);
  return parse_job_spec(text.str(), path, absolute.parent_path().string(), overrides);
}

std::vector<std::string> missing_channel_sources(const JobSpec& spec) {
  std::vector<std::string> missing;
  for (const auto& channel : spec.channels) {
    std::error_code ec;
    if (!fs::is_directory(channel.source, ec)) {
      missing.push_back(
          fmt::format("channels.{}.source: no such directory on this machine: {}", channel.name, channel.source));
    }
  }
  return missing;
}

std::string to_string(InputMode mode) { return mode == InputMode::kFile ? "File" : "Pipe"; }

std::string to_string(Distribution distribution) {
  return distribution == Distribution::kFullyReplicated ? "FullyReplicated" : "ShardedByKey";
}

std::string to_string(Engine engine) {
  switch (engine) {
    case Engine::kMpi: return "mpi";
    case Engine::kParameterServer: return "parameter_server";
    default: return "gloo";
  }
}

}  // namespace dtrain::job

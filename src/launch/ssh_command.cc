#include "launch/ssh_command.h"

#include <fmt/format.h>

namespace dtrain::launch {
namespace {

bool is_plain_shell_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
         c == '.' || c == '/' || c == ':' || c == ',' || c == '+' || c == '@' || c == '%';
}

std::vector<std::string> ssh_base_argv(const SshOptions& options) {
  if (options.agent) return *options.agent;
  std::vector<std::string> argv = {"ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no"};
  if (options.port) {
    argv.push_back("-p");
    argv.push_back(std::to_string(*options.port));
  }
  if (options.identity_file) {
    argv.push_back("-i");
    argv.push_back(*options.identity_file);
  }
  return argv;
}

}  // namespace

std::string shell_quote(std::string_view word) {
  if (!word.empty()) {
    bool plain = true;
    for (char c : word) plain = plain && is_plain_shell_char(c);
    if (plain) return std::string(word);
  }
  std::string quoted = "'";
  for (char c : word) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  quoted += '\'';
  return quoted;
}

std::string remote_worker_script(const std::string& cwd, const EnvVars& env, const std::vector<std::string>& command,
                                 double kill_grace_s) {
  std::string run = "env";
  for (const auto& [key, value] : env) run += " " + shell_quote(key + "=" + value);
  for (const auto& word : command) run += " " + shell_quote(word);

  // fd 3 keeps the ssh channel's stdin for the watcher; the worker itself
  // gets /dev/null. The watcher blocks in cat until the launcher's end of
  // stdin closes (or the connection drops), then stops the worker.
  return fmt::format(
      "cd {cwd} || exit 127\n"
      "exec 3<&0 </dev/null\n"
      "{run} &\n"
      "worker=$!\n"
      "( cat <&3 >/dev/null 2>&1; kill -TERM $worker 2>/dev/null; sleep {grace}; "
      "kill -KILL $worker 2>/dev/null ) >/dev/null 2>&1 &\n"
      "watcher=$!\n"
      "exec 3<&-\n"
      "wait $worker\n"
      "status=$?\n"
      "kill $watcher 2>/dev/null\n"
      "exit $status\n",
      fmt::arg("cwd", shell_quote(cwd)), fmt::arg("run", run), fmt::arg("grace", format_env_number(kill_grace_s)));
}

std::string remote_shell_command(const std::string& script) { return "sh -c " + shell_quote(script); }

std::vector<std::string> ssh_worker_argv(const std::string& host, const SshOptions& options,
                                         const std::string& remote_command) {
  std::vector<std::string> argv = ssh_base_argv(options);
  argv.push_back(host);
  argv.push_back(remote_command);
  return argv;
}

std::vector<std::string> ssh_probe_argv(const std::string& host, const SshOptions& options, int connect_timeout_s) {
  std::vector<std::string> argv = ssh_base_argv(options);
  if (!options.agent) {
    argv.insert(argv.begin() + 3, {"-o", fmt::format("ConnectTimeout={}", connect_timeout_s)});
  }
  argv.push_back(host);
  argv.push_back("true");
  return argv;
}

}  // namespace dtrain::launch

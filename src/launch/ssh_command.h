#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launch/worker_env.h"

namespace dtrain::launch {

// How to reach remote hosts: ssh's -p and -i, or an agent used instead of
// ssh (like mpirun's plm_rsh_agent): it is called as `agent... host command`
// and must run `command` through a shell on `host`, keeping stdin connected.
struct SshOptions {
  std::optional<int> port;
  std::optional<std::string> identity_file;
  std::optional<std::vector<std::string>> agent;
};

// Quotes `word` for a POSIX shell so it reaches the command as exactly one
// argument: plain words stay as they are, anything else is put in single
// quotes with embedded single quotes written as '\''.
std::string shell_quote(std::string_view word);

// The sh script that runs one worker on a remote host: it changes to `cwd`,
// starts `command` under `env` with the given variables, and kills it (TERM,
// then KILL after `kill_grace_s`) as soon as its standard input reaches end
// of file — which happens when the ssh connection closes, because the
// launcher holds the other end of ssh's stdin open. Exits with the command's
// status.
std::string remote_worker_script(const std::string& cwd, const EnvVars& env, const std::vector<std::string>& command,
                                 double kill_grace_s);

// What ssh hands to the remote login shell: "sh -c '<script>'", so the script
// runs under sh whatever the user's login shell is.
std::string remote_shell_command(const std::string& script);

// ssh argv that runs `remote_command` on `host`.
std::vector<std::string> ssh_worker_argv(const std::string& host, const SshOptions& options,
                                         const std::string& remote_command);

// ssh argv that checks `host` is reachable without a password: "... host true".
std::vector<std::string> ssh_probe_argv(const std::string& host, const SshOptions& options, int connect_timeout_s = 5);

}  // namespace dtrain::launch

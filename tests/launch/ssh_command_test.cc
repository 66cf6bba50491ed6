#include "launch/ssh_command.h"

#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <filesystem>

#include "tests/launch/child_runner.h"
#include "tests/support/temp_dir.h"

namespace dtrain::launch {
namespace {

using testing::ChildRunner;

TEST(ShellQuote, LeavesPlainWordsAlone) {
  EXPECT_EQ(shell_quote("python3"), "python3");
  EXPECT_EQ(shell_quote("/usr/bin/train.py"), "/usr/bin/train.py");
  EXPECT_EQ(shell_quote("--lr"), "--lr");
  EXPECT_EQ(shell_quote("a:b,c@d+e%f"), "a:b,c@d+e%f");
}

TEST(ShellQuote, QuotesEverythingElse) {
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote("$HOME"), "'$HOME'");
  EXPECT_EQ(shell_quote("x=1"), "'x=1'");  // would be an assignment as a first word
  EXPECT_EQ(shell_quote("--lr=0.1"), "'--lr=0.1'");
  EXPECT_EQ(shell_quote("a;b|c&d`e`"), "'a;b|c&d`e`'");
}

// The quoted word must come back from a real shell as exactly the original.
TEST(ShellQuote, RoundTripsThroughSh) {
  std::vector<std::string> words = {
      "",           "plain", "two words", "it's",      "\"dq\"", "$(id)", "`id`",  "a\\b",
      "*",          "~",     "new\nline", "tab\there", "'",      "''",    "!bang", "\xc3\xa9t\xc3\xa9",
      "semi;colon", "-n"};
  std::string script = "for w in";
  for (const auto& w : words) script += " " + shell_quote(w);
  script += "; do printf '%s\\0' \"$w\"; done";
  ChildRunner child({"/bin/sh", "-c", script});
  auto result = child.finish(10);
  ASSERT_TRUE(result.exited && result.exit_code == 0) << result.err;
  std::string expected;
  for (const auto& w : words) expected += w + std::string(1, '\0');
  EXPECT_EQ(result.out, expected);
}

TEST(SshCommand, WorkerArgv) {
  SshOptions options;
  auto argv = ssh_worker_argv("node1", options, "sh -c 'true'");
  EXPECT_EQ(argv, (std::vector<std::string>{"ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no", "node1",
                                            "sh -c 'true'"}));
  options.port = 2222;
  options.identity_file = "/keys/id ed25519";
  argv = ssh_worker_argv("node1", options, "cmd");
  EXPECT_EQ(argv, (std::vector<std::string>{"ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no", "-p",
                                            "2222", "-i", "/keys/id ed25519", "node1", "cmd"}));
}

TEST(SshCommand, ProbeArgv) {
  SshOptions options;
  options.port = 22;
  auto argv = ssh_probe_argv("node2", options);
  EXPECT_EQ(argv, (std::vector<std::string>{"ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", "-o",
                                            "StrictHostKeyChecking=no", "-p", "22", "node2", "true"}));
}

TEST(SshCommand, RemoteScriptShape) {
  std::string script =
      remote_worker_script("/work dir", {{"DTRAIN_RANK", "1"}}, {"python3", "train.py", "--name", "a b"}, 5);
  EXPECT_NE(script.find("cd '/work dir' || exit 127"), std::string::npos) << script;
  EXPECT_NE(script.find("env 'DTRAIN_RANK=1' python3 train.py --name 'a b' &"), std::string::npos) << script;
  EXPECT_NE(script.find("sleep 5;"), std::string::npos) << script;
  EXPECT_EQ(remote_shell_command("echo 'x'"), "sh -c 'echo '\\''x'\\'''");
}

// No sshd here, so play the remote side: the remote login shell receives
// remote_shell_command() as a command string, i.e. it runs `sh -c <that>`.
// Our stdin pipe stands in for the ssh channel's stdin.
class RemoteScript : public ::testing::Test {
 protected:
  std::string run_remote(const std::vector<std::string>& command, const EnvVars& env, double grace = 1) {
    return remote_shell_command(remote_worker_script(dir_, env, command, grace));
  }
  // A space in the path: the script must quote the directory.
  void SetUp() override { std::filesystem::create_directories(dir_); }
  const dtrain::testing::TempDir temp_;
  const std::string dir_ = temp_ / "dtrain remote cwd";
};

TEST_F(RemoteScript, RunsInDirectoryWithEnvironmentAndArguments) {
  std::string remote = run_remote({"sh", "-c", "echo \"$DTRAIN_RANK|$X|$1\"; pwd", "zero", "it's $1"},
                                  {{"DTRAIN_RANK", "3"}, {"X", "a b'c"}});
  ChildRunner child({"/bin/sh", "-c", remote}, {}, /*stdin_pipe=*/true);
  auto result = child.finish(10);
  ASSERT_TRUE(result.exited) << result.err;
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "3|a b'c|it's $1\n" + std::filesystem::canonical(dir_).string() + "\n");
}

TEST_F(RemoteScript, PassesTheExitStatusThrough) {
  ChildRunner child({"/bin/sh", "-c", run_remote({"sh", "-c", "exit 7"}, {})}, {}, true);
  auto result = child.finish(10);
  EXPECT_TRUE(result.exited);
  EXPECT_EQ(result.exit_code, 7);
}

TEST_F(RemoteScript, ClosingStdinKillsTheWorker) {
  std::string marker = "61." + std::to_string(::getpid());
  ChildRunner child({"/bin/sh", "-c", run_remote({"sh", "-c", "echo up; exec sleep " + marker}, {})}, {}, true);
  ASSERT_TRUE(child.wait_for_stdout("up\n", 10));
  child.close_stdin();  // what ssh does on the remote side when the connection closes
  auto result = child.finish(10);
  EXPECT_FALSE(result.timed_out);  // the sleep would take an hour: the worker was killed
  EXPECT_TRUE(result.exited);
  EXPECT_EQ(result.exit_code, 128 + SIGTERM);
  EXPECT_EQ(testing::wait_for_no_marker(marker, 5), 0);
}

TEST_F(RemoteScript, KillsAWorkerThatIgnoresSigtermAfterTheGrace) {
  ChildRunner child(
      {"/bin/sh", "-c", run_remote({"sh", "-c", "trap '' TERM; echo up; while :; do sleep 0.05; done"}, {}, 0.5)}, {},
      true);
  ASSERT_TRUE(child.wait_for_stdout("up\n", 10));
  child.close_stdin();
  auto result = child.finish(10);
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.exit_code, 128 + SIGKILL);
}

}  // namespace
}  // namespace dtrain::launch

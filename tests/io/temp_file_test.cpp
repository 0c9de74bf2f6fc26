// TempFile: removed when dropped uncommitted, kept once committed, and removed by the signal handler when
// SIGTERM ends the process (what mpirun sends the other ranks when one aborts, and Slurm at preemption), which
// also prints the last interrupt message and ends the process by the signal (exit status 143).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "core/files.h"
#include "io_test_util.h"

namespace {

using omni::test_util::TempDir;

TEST(TempFile, RemovedUnlessCommitted) {
  TempDir dir;
  const std::string path = omni::temp_sibling(dir / "video.mp4", "partial");
  EXPECT_EQ(path.rfind(dir.path() + "/.video.mp4.partial-", 0), 0u) << path;
  {
    omni::TempFile t(path);
    omni::test_util::write_file(t.path(), "x");
  }
  EXPECT_FALSE(omni::is_file(path));
  {
    omni::TempFile t(path);
    omni::test_util::write_file(t.path(), "x");
    omni::commit_file(t.path(), dir / "video.mp4", false);
    t.committed();
  }
  EXPECT_TRUE(omni::is_file(dir / "video.mp4"));
}

TEST(TempFile, SigtermRemovesLiveTempFiles) {
  TempDir dir;
  const std::string live = dir / ".a.partial", done = dir / "b.mp4";
  int ready[2], err[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(err), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::dup2(err[1], 2);  // the handler's line, for the parent to read
    omni::install_temp_file_cleanup();
    omni::set_interrupt_message("first message");
    omni::set_interrupt_message("2 video(s) are kept; run again to resume");
    omni::TempFile t(live);
    omni::test_util::write_file(t.path(), "partial video");
    omni::TempFile c(dir / ".b.partial");
    omni::test_util::write_file(c.path(), "complete video");
    omni::commit_file(c.path(), done, false);
    c.committed();
    const char byte = 1;
    if (::write(ready[1], &byte, 1) != 1) ::_exit(3);
    ::pause();  // until the signal
    ::_exit(4);
  }
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  ASSERT_TRUE(omni::is_file(live));
  ::kill(child, SIGTERM);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << "status " << status;
  EXPECT_FALSE(omni::is_file(live)) << "the live temporary file outlived SIGTERM";
  EXPECT_TRUE(omni::is_file(done)) << "a committed file was removed";
  ::close(err[1]);
  std::string said;
  char buf[256];
  for (ssize_t got; (got = ::read(err[0], buf, sizeof(buf))) > 0;) said.append(buf, static_cast<size_t>(got));
  EXPECT_EQ(said, "omni-generate: stopped by SIGTERM: 2 video(s) are kept; run again to resume\n");
  ::close(err[0]);
  ::close(ready[0]);
  ::close(ready[1]);
}

}  // namespace

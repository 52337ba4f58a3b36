//go:build cann

package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/runtime/acl"
)

// The tests below run ranks as child processes (TestHelperIrtoolProcess)
// against the emulator and check what they leave: nothing in /dev/shm
// made by them, nothing beside the root info path.

// rankProc is one irtool process of a test.
type rankProc struct {
	cmd          *exec.Cmd
	out, errb    bytes.Buffer
	code         int
	elapsed      time.Duration
	done         chan struct{}
	cancel       context.CancelFunc
	started      time.Time
	signalled    bool
	stderrString string
}

// startRank starts irtool run args in a child process with the emulator
// in libs and env added; it is killed after 20 s.
func startRank(t *testing.T, libs string, env []string, args ...string) *rankProc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	p := &rankProc{done: make(chan struct{}), cancel: cancel}
	p.cmd = exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperIrtoolProcess$")
	p.cmd.Env = append(append(os.Environ(), "IRTOOL_TEST_ARGS="+strings.Join(append([]string{"run"}, args...), "\x1f"),
		"IRTOOL_ACL_LIBS="+libs, "IRTFAKE_DEVICE_COUNT=4"), env...)
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.errb
	p.started = time.Now()
	require.NoError(t, p.cmd.Start())
	go func() {
		p.cmd.Wait()
		p.elapsed = time.Since(p.started)
		p.code = p.cmd.ProcessState.ExitCode()
		if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			p.code, p.signalled = -int(ws.Signal()), true
		}
		p.stderrString = p.errb.String()
		cancel()
		close(p.done)
	}()
	t.Cleanup(func() { cancel(); <-p.done })
	return p
}

func (p *rankProc) wait() *rankProc {
	<-p.done
	return p
}

// shmOf lists the emulator's /dev/shm segments made by process pid.
func shmOf(t *testing.T, pid int) []string {
	t.Helper()
	ents, err := os.ReadDir("/dev/shm")
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), fmt.Sprintf("irtool-fakehccl-%d-", pid)) {
			out = append(out, e.Name())
		}
	}
	return out
}

// requireNoLeftovers checks that dir holds only the files of keep and
// that the processes left no segment.
func requireNoLeftovers(t *testing.T, dir string, keep []string, ps ...*rankProc) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	require.ElementsMatch(t, keep, names, "files beside the root info")
	for _, p := range ps {
		left := shmOf(t, p.cmd.Process.Pid)
		for _, name := range left {
			os.Remove(filepath.Join("/dev/shm", name)) // a failing test leaves nothing either
		}
		require.Empty(t, left, "/dev/shm segments of process %d", p.cmd.Process.Pid)
	}
}

// ranksLibs is the emulator for the child processes: IRTOOL_ACL_LIBS
// when that directory is still there (fakeCANN builds it in the first
// test that needs it, removed at its end), else one built for t. The
// library is loaded in this process too (kept mapped).
func ranksLibs(t *testing.T) string {
	t.Helper()
	fakeCANN(t)
	require.NoError(t, acl.LoadHCCL())
	libs := os.Getenv("IRTOOL_ACL_LIBS")
	if _, err := os.Stat(filepath.Join(libs, acl.HCCLLibrary)); err != nil {
		libs = buildFake(t)
	}
	return libs
}

// TestRootInfoRanks runs the checks of ranks in several processes with
// one build of the emulator.
func TestRootInfoRanks(t *testing.T) {
	libs := ranksLibs(t)
	model := testref.Testdata("stories260K.gguf")
	t.Run("RefusedAtOnce", func(t *testing.T) { testRootInfoRefusedAtOnce(t, libs, model) })
	t.Run("WaitBoundedByConnectTimeout", func(t *testing.T) { testRootInfoWaitBounded(t, libs, model) })
	t.Run("Rank0LeavesNothing", func(t *testing.T) { testRootInfoRank0LeavesNothing(t, libs, model) })
	t.Run("Signals", func(t *testing.T) { testRootInfoSignals(t, libs, model) })
	t.Run("MismatchesNamed", func(t *testing.T) { testRootInfoMismatchesNamed(t, libs, model) })
}

func rankArgs(model, rootInfo string, rank int, extra ...string) []string {
	return append([]string{model, "--tokens", "1,403,407", "-n", "3", "--backend", "cann", "--tp", "2",
		"--rank", fmt.Sprint(rank), "--root-info", rootInfo}, extra...)
}

// What cannot become a root info is refused at once by rank 1, naming the
// file: a named pipe (no hang in open), a symlink to /dev/zero (no
// unbounded read), a directory, a file of the wrong size once it has
// stopped changing; a file naming a /dev/shm object smaller than a
// communicator's header is an error, not SIGBUS.
func testRootInfoRefusedAtOnce(t *testing.T, libs, model string) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	zero := filepath.Join(dir, "zero")
	require.NoError(t, os.Symlink("/dev/zero", zero))
	sub := filepath.Join(dir, "dir")
	require.NoError(t, os.Mkdir(sub, 0o700))
	short := filepath.Join(dir, "short")
	require.NoError(t, os.WriteFile(short, []byte("abc"), 0o600))
	// a root info naming an empty shared memory object
	name := fmt.Sprintf("irtool-fakehccl-test-%d", os.Getpid())
	require.NoError(t, os.WriteFile("/dev/shm/"+name, nil, 0o600))
	t.Cleanup(func() { os.Remove("/dev/shm/" + name) })
	small := filepath.Join(dir, "small")
	info := make([]byte, acl.RootInfoBytes)
	copy(info, "irtool-fakehccl-v1 /"+name)
	require.NoError(t, os.WriteFile(small, info, 0o600))
	env := []string{"IRTFAKE_HCCL_TIMEOUT_MS=15000"}
	for _, tc := range []struct{ path, want string }{
		{fifo, "named pipe"},
		{zero, "character device"},
		{sub, "directory"},
		{short, "3 bytes, a root info has 4108"},
		{small, "is not a communicator segment (0 B"},
	} {
		p := startRank(t, libs, env, rankArgs(model, tc.path, 1)...).wait()
		require.Equal(t, 1, p.code, "%s: %s", tc.path, p.stderrString)
		require.Less(t, p.elapsed, 5*time.Second, tc.path)
		require.Contains(t, p.stderrString, "--root-info "+tc.path)
		require.Contains(t, p.stderrString, tc.want)
		require.Equal(t, 1, strings.Count(p.stderrString, "\n"), "one line: %s", p.stderrString)
	}
	requireNoLeftovers(t, dir, []string{"fifo", "zero", "dir", "short", "small"})
	_, err := os.Stat("/dev/shm/" + name)
	require.NoError(t, err, "the object named by the root info is not rank 1's to remove")
}

// A missing root info file and one whose communicator is gone (left by a
// run that was killed) are waited for within HCCL_CONNECT_TIMEOUT (the
// emulator's IRTFAKE_HCCL_TIMEOUT_MS here), not a fixed 120 s, and the
// error says which.
func testRootInfoWaitBounded(t *testing.T, libs, model string) {
	dir := t.TempDir()
	stale := filepath.Join(dir, "stale")
	info := make([]byte, acl.RootInfoBytes)
	copy(info, "irtool-fakehccl-v1 /irtool-fakehccl-999999999-1-1")
	require.NoError(t, os.WriteFile(stale, info, 0o600))
	env := []string{"IRTFAKE_HCCL_TIMEOUT_MS=700"}
	for _, tc := range []struct{ path, want string }{
		{filepath.Join(dir, "missing"), "waited 700ms (HCCL_CONNECT_TIMEOUT) for rank 0's root info"},
		{stale, "names a communicator that is gone"},
	} {
		p := startRank(t, libs, env, rankArgs(model, tc.path, 1)...).wait()
		require.Equal(t, 1, p.code, "%s: %s", tc.path, p.stderrString)
		require.Less(t, p.elapsed, 5*time.Second, tc.path)
		require.Contains(t, p.stderrString, tc.want)
	}
	requireNoLeftovers(t, dir, []string{"stale"})
}

// Out-of-range or garbage HCCL timeouts and emulated device counts are
// one-line errors naming the variable and its range, before any rank
// waits.
func TestHCCLEnvironmentRefused(t *testing.T) {
	fakeCANN(t)
	require.NoError(t, acl.LoadHCCL())
	model := testref.Testdata("stories260K.gguf")
	for _, tc := range []struct{ name, val, want string }{
		{"HCCL_EXEC_TIMEOUT", "9223372036854775807", "[0, 2147483647]"},
		{"HCCL_EXEC_TIMEOUT", "-1", "[0, 2147483647]"},
		{"HCCL_CONNECT_TIMEOUT", "garbage", "[120, 7200]"},
		{"HCCL_CONNECT_TIMEOUT", "0", "[120, 7200]"},
		{"IRTFAKE_DEVICE_COUNT", "1000", "[1, 64]"},
		{"IRTFAKE_DEVICE_COUNT", "abc", "[1, 64]"},
	} {
		t.Run(tc.name+"="+tc.val, func(t *testing.T) {
			t.Setenv("IRTFAKE_DEVICE_COUNT", "2")
			t.Setenv(tc.name, tc.val)
			code, _, errOut := runCLI(t, "run", model, "--tokens", "1,403", "-n", "2", "--backend", "cann", "--tp", "2")
			require.Equal(t, 1, code, errOut)
			require.Contains(t, errOut, tc.name)
			require.Contains(t, errOut, tc.want)
			require.NotContains(t, errOut, "set it to")
			require.Equal(t, 1, strings.Count(errOut, "\n"), errOut)
		})
	}
}

// Rank 0 makes its segment only once it can write the root info file, and
// refuses to replace anything but a root info file: a directory that does
// not exist and a path holding another file leave nothing behind, and
// that file's bytes unchanged.
func testRootInfoRank0LeavesNothing(t *testing.T, libs, model string) {
	dir := t.TempDir()
	other := filepath.Join(dir, "notes.txt")
	require.NoError(t, os.WriteFile(other, []byte("keep me"), 0o600))
	for _, tc := range []struct{ path, want string }{
		{"/nonexistent/ri", "rank 0 cannot write it"},
		{other, "exists and is a file of 7 bytes, not a root info file"},
		{dir, "not a regular file"},
	} {
		p := startRank(t, libs, nil, rankArgs(model, tc.path, 0)...).wait()
		requireNoLeftovers(t, dir, []string{"notes.txt"}, p)
		require.Equal(t, 1, p.code, p.stderrString)
		require.Contains(t, p.stderrString, "--root-info "+tc.path)
		require.Contains(t, p.stderrString, tc.want)
	}
	b, err := os.ReadFile(other)
	require.NoError(t, err)
	require.Equal(t, "keep me", string(b))
}

// SIGTERM on rank 0 waiting for its peers removes its root info file and
// segment and exits 143 with one line; SIGINT on rank 1 waiting for the
// file exits 130.
func testRootInfoSignals(t *testing.T, libs, model string) {
	dir := t.TempDir()
	ri := filepath.Join(dir, "ri")
	env := []string{"IRTFAKE_HCCL_TIMEOUT_MS=15000"}
	p := startRank(t, libs, env, rankArgs(model, ri, 0)...)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(ri); err == nil {
			break
		}
		require.True(t, time.Now().Before(deadline), "rank 0 wrote no root info: %s", p.errb.String())
		time.Sleep(20 * time.Millisecond)
	}
	require.NotEmpty(t, shmOf(t, p.cmd.Process.Pid), "rank 0's segment while it waits")
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	t0 := time.Now()
	p.wait()
	require.Less(t, time.Since(t0), 3*time.Second)
	require.Equal(t, 143, p.code, p.stderrString)
	require.Contains(t, p.stderrString, "rank 0 interrupted by SIGTERM")
	require.Equal(t, 1, strings.Count(p.stderrString, "\n"), p.stderrString)
	requireNoLeftovers(t, dir, nil, p)

	q := startRank(t, libs, env, rankArgs(model, ri, 1)...)
	time.Sleep(1500 * time.Millisecond) // past loading the model: waiting for the file
	require.NoError(t, q.cmd.Process.Signal(syscall.SIGINT))
	q.wait()
	require.Equal(t, 130, q.code, q.stderrString)
	require.Contains(t, q.stderrString, "rank 1 interrupted by SIGINT")
	requireNoLeftovers(t, dir, nil, q)
}

// Ranks that disagree are named at once, on every rank: a rank count
// (--tp), a duplicate --rank, a flag that shapes the run (--ctx).
func testRootInfoMismatchesNamed(t *testing.T, libs, model string) {
	env := []string{"IRTFAKE_HCCL_TIMEOUT_MS=15000"}
	t.Run("count", func(t *testing.T) {
		dir := t.TempDir()
		ri := filepath.Join(dir, "ri")
		r1 := startRank(t, libs, env, append(rankArgs(model, ri, 1), "--tp", "4")...)
		r0 := startRank(t, libs, env, rankArgs(model, ri, 0)...)
		for _, p := range []*rankProc{r0.wait(), r1.wait()} {
			require.Equal(t, 1, p.code, p.stderrString)
			require.Less(t, p.elapsed, 10*time.Second)
			require.Contains(t, p.stderrString, "rank 1 says 4 ranks, rank 0 said 2")
		}
		requireNoLeftovers(t, dir, nil, r0, r1)
	})
	t.Run("ctx", func(t *testing.T) {
		dir := t.TempDir()
		ri := filepath.Join(dir, "ri")
		r1 := startRank(t, libs, env, append(rankArgs(model, ri, 1), "--ctx", "128")...)
		r0 := startRank(t, libs, env, append(rankArgs(model, ri, 0), "--ctx", "256")...)
		require.Equal(t, 1, r0.wait().code, r0.stderrString)
		require.Contains(t, r0.stderrString, "rank 0: this rank runs with --ctx 256, rank 1 with another value")
		require.Equal(t, 1, r1.wait().code, r1.stderrString)
		require.Contains(t, r1.stderrString, "rank 1: this rank runs with --ctx 128, rank 0 with another value")
		requireNoLeftovers(t, dir, nil, r0, r1)
	})
	t.Run("duplicate", func(t *testing.T) {
		dir := t.TempDir()
		ri := filepath.Join(dir, "ri")
		denv := []string{"IRTFAKE_HCCL_TIMEOUT_MS=3000"}
		a := startRank(t, libs, denv, append(rankArgs(model, ri, 1), "--device", "1")...)
		b := startRank(t, libs, denv, append(rankArgs(model, ri, 1), "--device", "2")...)
		r0 := startRank(t, libs, denv, rankArgs(model, ri, 0)...)
		require.Equal(t, 0, r0.wait().code, r0.stderrString)
		codes := []int{a.wait().code, b.wait().code}
		require.ElementsMatch(t, []int{0, 1}, codes, "%s\n%s", a.stderrString, b.stderrString)
		loser := a
		if codes[1] == 1 {
			loser = b
		}
		require.Regexp(t, `rank 1 joined twice|--rank 1 given`, loser.stderrString)
		require.Less(t, loser.elapsed, 8*time.Second)
		requireNoLeftovers(t, dir, nil, r0, a, b)
	})
}

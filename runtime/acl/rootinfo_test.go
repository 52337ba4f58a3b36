package acl

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// ReadRootInfo refuses at once, without blocking or reading past
// RootInfoBytes, whatever cannot be a root info: a named pipe without a
// writer, a symlink to /dev/zero, a directory, a file of another size
// (a large one is not read); a missing file is fs.ErrNotExist.
func TestReadRootInfo(t *testing.T) {
	dir := t.TempDir()
	good := bytes.Repeat([]byte{7}, RootInfoBytes)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, b, 0o600))
		return p
	}
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	zero := filepath.Join(dir, "zero")
	require.NoError(t, os.Symlink("/dev/zero", zero))
	big := filepath.Join(dir, "big")
	f, err := os.Create(big)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(1<<40)) // sparse: reading it would take hours
	require.NoError(t, f.Close())
	for _, tc := range []struct {
		name, path string
		want       func(error) bool
		text       string
	}{
		{"fifo", fifo, func(err error) bool { return errors.Is(err, ErrRootInfoNotRegular) }, "named pipe"},
		{"dev-zero", zero, func(err error) bool { return errors.Is(err, ErrRootInfoNotRegular) }, "character device"},
		{"dir", dir, func(err error) bool { return errors.Is(err, ErrRootInfoNotRegular) }, "directory"},
		{"missing", filepath.Join(dir, "none"), func(err error) bool { return errors.Is(err, fs.ErrNotExist) }, ""},
		{"empty", write("empty", nil), func(err error) bool { var se *RootInfoSizeError; return errors.As(err, &se) && se.Size == 0 }, "0 bytes"},
		{"short", write("short", good[:100]), func(err error) bool { var se *RootInfoSizeError; return errors.As(err, &se) }, "100 bytes, a root info has 4108"},
		{"big", big, func(err error) bool { var se *RootInfoSizeError; return errors.As(err, &se) && se.Size == 1<<40 }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t0 := time.Now()
			b, err := ReadRootInfo(tc.path)
			require.Nil(t, b)
			require.True(t, tc.want(err), "%v", err)
			require.Contains(t, err.Error(), tc.text)
			require.Less(t, time.Since(t0), time.Second)
		})
	}
	b, err := ReadRootInfo(write("good", good))
	require.NoError(t, err)
	require.Equal(t, good, b)
	require.Equal(t, "an HCCL root info", DescribeRootInfo(b))
	emu := append([]byte("irtool-fakehccl-v1 /irtool-fakehccl-1-2-3"), make([]byte, RootInfoBytes-41)...)
	require.Equal(t, "the emulator's segment /irtool-fakehccl-1-2-3", DescribeRootInfo(emu))
}

// FuzzReadRootInfo: any bytes in a file are read back whole when they are
// a root info's size and refused with a size error otherwise, and
// DescribeRootInfo names what they point at without echoing anything but
// an emulator segment name.
func FuzzReadRootInfo(f *testing.F) {
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0}, RootInfoBytes))
	f.Add(append([]byte("irtool-fakehccl-v1 /irtool-fakehccl-1-2-3"), make([]byte, RootInfoBytes-41)...))
	f.Add(append([]byte("irtool-fakehccl-v1 /x\n\x1b[2J"), make([]byte, RootInfoBytes-28)...))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 2*RootInfoBytes {
			b = b[:2*RootInfoBytes]
		}
		p := filepath.Join(dir, "ri")
		require.NoError(t, os.WriteFile(p, b, 0o600))
		got, err := ReadRootInfo(p)
		if len(b) != RootInfoBytes {
			var se *RootInfoSizeError
			require.True(t, errors.As(err, &se), "%v", err)
			require.EqualValues(t, len(b), se.Size)
			require.Error(t, ParseRootInfo(b))
			return
		}
		require.NoError(t, err)
		require.Equal(t, b, got)
		d := DescribeRootInfo(got)
		if d != "an HCCL root info" {
			name, ok := strings.CutPrefix(d, "the emulator's segment /irtool-fakehccl-")
			require.True(t, ok, d)
			require.True(t, isPrintable(name), "%q", d)
		}
	})
}

// The HCCL timeouts: CANN's defaults when unset; whole seconds in their
// documented ranges; anything else (garbage, out of range, values that
// would overflow in milliseconds) an error naming the variable and the
// range; the emulator's IRTFAKE_HCCL_TIMEOUT_MS overrides both.
func TestReadHCCLTimeouts(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	to, err := ReadHCCLTimeouts(env(), true)
	require.NoError(t, err)
	require.Equal(t, HCCLTimeouts{Connect: 120 * time.Second, Exec: 1836 * time.Second}, to)
	to, err = ReadHCCLTimeouts(env(EnvConnectTimeout, "7200", EnvExecTimeout, "2147483647"), false)
	require.NoError(t, err)
	require.Equal(t, HCCLTimeouts{Connect: 7200 * time.Second, Exec: 2147483647 * time.Second}, to)
	to, err = ReadHCCLTimeouts(env(EnvExecTimeout, "0"), false)
	require.NoError(t, err)
	require.Zero(t, to.Exec, "0: no bound")
	to, err = ReadHCCLTimeouts(env(EnvFakeTimeoutMS, "250", EnvConnectTimeout, "300"), true)
	require.NoError(t, err)
	require.Equal(t, HCCLTimeouts{Connect: 250 * time.Millisecond, Exec: 250 * time.Millisecond}, to)
	to, err = ReadHCCLTimeouts(env(EnvFakeTimeoutMS, "250"), false)
	require.NoError(t, err)
	require.Equal(t, 120*time.Second, to.Connect, "IRTFAKE_HCCL_TIMEOUT_MS is the emulator's only")
	for _, tc := range []struct{ name, val, want string }{
		{EnvConnectTimeout, "abc", "[120, 7200]"},
		{EnvConnectTimeout, "0", "[120, 7200]"},
		{EnvConnectTimeout, "-1", "[120, 7200]"},
		{EnvConnectTimeout, "119", "[120, 7200]"},
		{EnvConnectTimeout, "99999999999999", "[120, 7200]"},
		{EnvExecTimeout, "9223372036854775807", "[0, 2147483647]"},
		{EnvExecTimeout, "99999999999999999999999", "[0, 2147483647]"},
		{EnvExecTimeout, "-1", "[0, 2147483647]"},
		{EnvExecTimeout, "1.5", "[0, 2147483647]"},
		{EnvFakeTimeoutMS, "0", "[1, 2147483647]"},
	} {
		_, err := ReadHCCLTimeouts(env(tc.name, tc.val), true)
		require.Error(t, err, "%s=%s", tc.name, tc.val)
		require.Contains(t, err.Error(), tc.name)
		require.Contains(t, err.Error(), tc.want)
		require.NotContains(t, err.Error(), "\n")
	}
}

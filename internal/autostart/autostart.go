// Package autostart starts keyrelay when the user signs in to Windows: a
// value of the per-user Run key, its command line, and the log the
// command started there writes to. Linux and macOS start keyrelay with
// the session through systemd user units and launchd agents instead
// (contrib/), and ErrElsewhere says so.
package autostart

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrElsewhere is autostart's answer off Windows, where the
// session's own service manager starts keyrelay.
var ErrElsewhere = errors.New("keyrelay autostart sets up Windows' per-user Run entry; on Linux use the systemd user units (contrib/systemd, installed by make install and the release tarballs), on macOS the launchd agents (contrib/launchd)")

// Line is the Run entry's command line: exe running autostart run
// with the command and its flags, each quoted as Windows' command-line
// parsing (CommandLineToArgvW, Go's os.Args) reads it back.
func Line(exe, name string, flags []string) string {
	args := append([]string{exe, "autostart", "run", name}, flags...)
	for i, a := range args {
		args[i] = windowsQuote(a)
	}
	return strings.Join(args, " ")
}

// windowsQuote quotes an argument as Windows' command-line parsing reads
// it back (syscall.EscapeArg's rules, here on every system for the tests):
// one with a space, tab or double quote, or empty, goes in double quotes,
// a double quote in it escaped with a backslash, and the backslashes
// before a double quote, or before the closing one, doubled.
func windowsQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\"") {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	slashes := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			slashes++
		case '"':
			b.WriteString(strings.Repeat(`\`, 2*slashes+1))
			b.WriteByte('"')
			slashes = 0
		default:
			b.WriteString(strings.Repeat(`\`, slashes))
			b.WriteByte(c)
			slashes = 0
		}
	}
	b.WriteString(strings.Repeat(`\`, 2*slashes))
	b.WriteByte('"')
	return b.String()
}

// LogPath is the log file of the command started at sign-in:
// %LOCALAPPDATA%\keyrelay\NAME.log (os.UserCacheDir elsewhere).
func LogPath(name string) (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no directory for the log: %w", err)
	}
	return filepath.Join(dir, "keyrelay", name+".log"), nil
}

// maxLog is how large a log may grow before the next start moves
// it to NAME.log.old (one generation kept).
const maxLog = 1 << 20

// OpenLog opens path to append to, moving a log past maxLog aside
// first.
func OpenLog(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("unable to make the log's directory: %w", err)
	}
	if st, err := os.Stat(path); err == nil && st.Size() > maxLog {
		os.Rename(path, path+".old")
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("unable to open the log: %w", err)
	}
	return f, nil
}

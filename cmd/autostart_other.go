//go:build !windows

package cmd

// The Run key is Windows'; elsewhere autostart says what starts keyrelay
// with the session there (errAutostartElsewhere).

func setRunEntry(string, string) error      { return errAutostartElsewhere }
func deleteRunEntry(string) (bool, error)   { return false, errAutostartElsewhere }
func runEntry(string) (string, bool, error) { return "", false, errAutostartElsewhere }
func detachConsole()                        {}

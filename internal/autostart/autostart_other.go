//go:build !windows

package autostart

// The Run key is Windows'; elsewhere autostart says what starts keyrelay
// with the session there (ErrElsewhere).

func Set(string, string) error         { return ErrElsewhere }
func Delete(string) (bool, error)      { return false, ErrElsewhere }
func Get(string) (string, bool, error) { return "", false, ErrElsewhere }
func DetachConsole()                   {}

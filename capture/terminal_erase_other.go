//go:build !linux

package capture

// eraseIsBS: outside Linux keyrelay assumes the usual DEL for Backspace.
func eraseIsBS(int) bool { return false }

//go:build !unix

package cmd

import "io/fs"

// ownerOf is the user id owning a file: unknown here (the directory's
// access list, not a mode, guards it).
func ownerOf(fs.FileInfo) (int, bool) { return 0, false }

// processGone reports whether no process has the id pid: never known
// here, so no socket is taken for dead.
func processGone(int) bool { return false }

// fileID is a file's identity for fileStamp: none here (its size,
// modification time and mode tell a change).
func fileID(fs.FileInfo) string { return "" }

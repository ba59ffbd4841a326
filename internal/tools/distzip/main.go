// Command distzip writes make dist's Windows archive: a zip of the files
// under a directory, the same bytes whenever the files are the same
// (reproducible, as make dist's tarballs are): entries in name order,
// each dated -date (make dist's BUILD_DATE) in UTC, mode 0644 (0755 for
// .exe), Deflate-compressed, with no directory entries.
//
//	go run ./internal/tools/distzip -date 2026-01-02T03:04:05Z -o out.zip -C stage keyrelay-windows-amd64
//	go run ./internal/tools/distzip -l out.zip    # the names in it, one a line
//
// archive/zip, not the zip program: the archive depends on no tool beyond
// Go, and zip stores the local time zone's time and each file's own.
package main

import (
	"archive/zip"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

func main() {
	out := flag.String("o", "", "the zip file to write")
	dir := flag.String("C", ".", "the directory the names are in")
	date := flag.String("date", "", "every entry's time (RFC 3339)")
	list := flag.String("l", "", "list the names in this zip file instead")
	flag.Parse()
	var err error
	if *list != "" {
		err = names(*list)
	} else {
		err = run(*out, *dir, *date, flag.Args())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "distzip:", err)
		os.Exit(1)
	}
}

// names prints the names of the files in the zip file path.
func names(path string) error {
	r, err := zip.OpenReader(path)
	if err != nil {
		return err
	}
	defer r.Close()
	for _, f := range r.File {
		fmt.Println(f.Name)
	}
	return nil
}

func run(out, dir, date string, names []string) error {
	if out == "" || date == "" || len(names) == 0 {
		return fmt.Errorf("usage: distzip -date RFC3339 -o OUT.zip [-C DIR] NAME...")
	}
	when, err := time.Parse(time.RFC3339, date)
	if err != nil {
		return fmt.Errorf("-date: %w", err)
	}
	var files []string
	for _, n := range names {
		err := filepath.WalkDir(filepath.Join(dir, n), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.Type().IsRegular() {
				rel, err := filepath.Rel(dir, p)
				if err != nil {
					return err
				}
				files = append(files, filepath.ToSlash(rel))
			} else if !d.IsDir() {
				return fmt.Errorf("%s is not a regular file or directory", p)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	slices.Sort(files)
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(f)
	for _, name := range files {
		h := &zip.FileHeader{Name: name, Method: zip.Deflate, Modified: when.UTC()}
		h.SetMode(0o644)
		if strings.HasSuffix(name, ".exe") {
			h.SetMode(0o755)
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			f.Close()
			return err
		}
		src, err := os.Open(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil {
			f.Close()
			return err
		}
		_, err = io.Copy(w, src)
		src.Close()
		if err != nil {
			f.Close()
			return err
		}
	}
	if err := zw.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

//go:build ignore

// gen writes the generated tables of package keys from qemu's keycodemapdb
// keymaps.csv, Chromium's KeyboardEvent.code table and the UI Events code
// values; each table's //go:generate line runs it with -kind:
//
//	table     table_gen.go: every key's codes and name (package keygen
//	          documents which CSV row a key is made from and its name)
//	macos     macos_gen.go: the key of each macOS virtual keycode
//	scancode  scancode_gen.go: USB HID usage ↔ Windows scan code (package
//	          scangen documents the rules)
package main

import (
	"flag"
	"log"
	"os"

	"github.com/keyrelay/keyrelay/keys/internal/keygen"
	"github.com/keyrelay/keyrelay/keys/internal/scangen"
)

func main() {
	var s keygen.Sources
	kind := flag.String("kind", "", "the table to write: table, macos or scancode")
	flag.StringVar(&s.CSV, "in", "", "keycodemapdb keymaps.csv")
	flag.StringVar(&s.License, "license", "", "keycodemapdb LICENSE.BSD to quote in the header (table, scancode)")
	flag.StringVar(&s.Chromium, "chromium", "", "Chromium's code table (dom_codes.tsv)")
	flag.StringVar(&s.Spec, "spec", "", "the UI Events code values (codes.tsv)")
	out := flag.String("out", "", "output file")
	flag.Parse()
	if s.CSV == "" || s.Chromium == "" || s.Spec == "" || *out == "" {
		log.Fatal("gen: -in, -chromium, -spec and -out are required")
	}
	if s.License == "" && *kind != "macos" {
		log.Fatalf("gen: -kind %s needs -license", *kind)
	}
	var src []byte
	var err error
	switch *kind {
	case "table":
		src, err = keygen.Generate(s)
	case "macos":
		src, err = keygen.GenerateMacOS(s)
	case "scancode":
		var t *keygen.Table
		if t, err = keygen.Load(s); err == nil {
			src, err = scangen.Generate(s.CSV, s.License, t.Labels())
		}
	default:
		log.Fatalf("gen: -kind %q: want table, macos or scancode", *kind)
	}
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		log.Fatal(err)
	}
}

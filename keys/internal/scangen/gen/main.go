// Command gen writes keys/scancode_gen.go, the USB HID usage ↔ Windows scan
// code table, from qemu's keycodemapdb keymaps.csv, naming the keys in its
// comments as keys/table_gen.go does (Chromium's code table, the UI Events
// code values); go generate runs it from keys/. Package scangen does the
// work and documents the rules.
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
	flag.StringVar(&s.CSV, "in", "", "keycodemapdb keymaps.csv")
	flag.StringVar(&s.License, "license", "", "LICENSE.BSD to quote in the header")
	flag.StringVar(&s.Chromium, "chromium", "", "Chromium's code table (dom_codes.tsv), for the names")
	flag.StringVar(&s.Spec, "spec", "", "the UI Events code values (codes.tsv), for the names")
	out := flag.String("out", "scancode_gen.go", "output file")
	flag.Parse()
	if s.CSV == "" || s.License == "" || s.Chromium == "" || s.Spec == "" {
		log.Fatal("scangen: -in, -license, -chromium and -spec are required")
	}
	t, err := keygen.Load(s)
	if err != nil {
		log.Fatal(err)
	}
	src, err := scangen.Generate(s.CSV, s.License, t.Labels())
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		log.Fatal(err)
	}
}

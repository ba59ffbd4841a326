// Command gen writes keys/table_gen.go from qemu's keycodemapdb keymaps.csv,
// Chromium's KeyboardEvent.code table and the UI Events code values; go
// generate runs it from keys/. Package keygen does the work and documents
// the rules: which CSV row a key is made from, and which name it gets.
package main

import (
	"flag"
	"log"
	"os"

	"github.com/keyrelay/keyrelay/keys/internal/keygen"
)

func main() {
	var s keygen.Sources
	flag.StringVar(&s.CSV, "in", "", "keycodemapdb keymaps.csv")
	flag.StringVar(&s.License, "license", "", "keycodemapdb LICENSE.BSD to quote in the header")
	flag.StringVar(&s.Chromium, "chromium", "", "Chromium's code table (dom_codes.tsv)")
	flag.StringVar(&s.Spec, "spec", "", "the UI Events code values (codes.tsv)")
	out := flag.String("out", "table_gen.go", "output file")
	flag.Parse()
	if s.CSV == "" || s.License == "" || s.Chromium == "" || s.Spec == "" {
		log.Fatal("gen: -in, -license, -chromium and -spec are required")
	}
	src, err := keygen.Generate(s)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		log.Fatal(err)
	}
}

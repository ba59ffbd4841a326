// Command genmacos writes keys/macos_gen.go, the key of each macOS virtual
// keycode, from qemu's keycodemapdb keymaps.csv, naming the keys in its
// comments as table_gen.go does (Chromium's code table, the UI Events code
// values); go generate runs it from keys/. Package keygen does the work
// (GenerateMacOS).
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
	flag.StringVar(&s.Chromium, "chromium", "", "Chromium's code table (dom_codes.tsv)")
	flag.StringVar(&s.Spec, "spec", "", "the UI Events code values (codes.tsv)")
	out := flag.String("out", "macos_gen.go", "output file")
	flag.Parse()
	if s.CSV == "" || s.Chromium == "" || s.Spec == "" {
		log.Fatal("genmacos: -in, -chromium and -spec are required")
	}
	src, err := keygen.GenerateMacOS(s)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		log.Fatal(err)
	}
}

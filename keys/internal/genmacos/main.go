// Command genmacos writes keys/macos_gen.go, the key of each macOS virtual
// keycode, from qemu's keycodemapdb keymaps.csv; go generate runs it from
// keys/. Package keygen does the work (GenerateMacOS).
package main

import (
	"flag"
	"log"
	"os"

	"github.com/keyrelay/keyrelay/keys/internal/keygen"
)

func main() {
	in := flag.String("in", "", "keymaps.csv")
	out := flag.String("out", "macos_gen.go", "output file")
	flag.Parse()
	if *in == "" {
		log.Fatal("genmacos: -in is required")
	}
	src, err := keygen.GenerateMacOS(*in)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		log.Fatal(err)
	}
}

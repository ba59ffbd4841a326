// Command mangen writes keyrelay's man pages (make man), one per command,
// from the cobra command tree, so they never drift from --help.
package main

import (
	"flag"
	"log"
	"os"

	"github.com/spf13/cobra/doc"

	"github.com/keyrelay/keyrelay/cmd"
)

func main() {
	dir := flag.String("dir", "man", "output directory")
	flag.Parse()
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		log.Fatal(err)
	}
	root := cmd.NewRootCmd(cmd.IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	root.DisableAutoGenTag = true // reproducible: no generation date
	header := &doc.GenManHeader{Title: "KEYRELAY", Section: "1", Source: "keyrelay", Manual: "keyrelay manual"}
	if err := doc.GenManTree(root, header, *dir); err != nil {
		log.Fatal(err)
	}
}

// Command mangen writes keyrelay's man pages (make man): one per command
// from the cobra command tree, so they never drift from --help, and
// keyrelay-script(5), the key script format, from `keyrelay help script`.
package main

import (
	"flag"
	"log"
	"os"

	"github.com/keyrelay/keyrelay/cmd"
	"github.com/keyrelay/keyrelay/internal/manpage"
)

func main() {
	dir := flag.String("dir", "man", "output directory")
	flag.Parse()
	root := cmd.NewRootCmd(cmd.IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	// cobra adds `completion` when it executes; the page is wanted too.
	root.InitDefaultCompletionCmd()
	if err := manpage.Write(*dir, manpage.Tree(root, manpage.Header{Source: "keyrelay", Manual: "keyrelay manual"})); err != nil {
		log.Fatal(err)
	}
}

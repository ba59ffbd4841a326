package capture

import (
	"fmt"
	"io"
	"os"
)

// OpenScript is the source of --script name (stdin: send's standard input). A regular file (standard
// input redirected from one too) is read and checked whole before anything
// is sent, and every bad line is reported; anything else, a pipe or a FIFO
// that a program writes keys into as it goes, is played line by line as it
// arrives (capture.ScriptStream), so that keys go out at once and a signal
// ends send at once, not when the writer closes it. For a file the source
// is its *Script, whose HeldAtEnd send reports.
func OpenScript(name string, stdin io.Reader) (Source, error) {
	if name == "-" {
		if f, ok := stdin.(*os.File); ok && !isRegular(f.Stat()) {
			return &ScriptStream{Name: name, R: f}, nil
		}
		return parsedScript("-", stdin)
	}
	if fi, err := os.Stat(name); err == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
		// Opening a FIFO waits for its writer: Play's reader does it, so
		// that a signal still ends send meanwhile.
		return &ScriptStream{Name: name, R: &openOnRead{name: name}}, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("unable to open script: %w", err)
	}
	defer f.Close()
	return parsedScript(name, f)
}

// parsedScript is ParseScript's script as a Source: nil, not a nil
// *Script, when it fails.
func parsedScript(name string, r io.Reader) (Source, error) {
	script, err := ParseScript(name, r)
	if err != nil {
		return nil, err
	}
	return script, nil
}

func isRegular(fi os.FileInfo, err error) bool {
	return err == nil && fi.Mode().IsRegular()
}

// openOnRead opens the file name at its first Read.
type openOnRead struct {
	name string
	f    *os.File
}

func (o *openOnRead) Read(b []byte) (int, error) {
	if o.f == nil {
		f, err := os.Open(o.name)
		if err != nil {
			return 0, fmt.Errorf("unable to open script: %w", err)
		}
		o.f = f
	}
	return o.f.Read(b)
}

//go:build e2e

package e2e

import (
	"os"
	"strings"
	"testing"
)

// bashCompletion is the bash-completion package's script, which keyrelay's
// bash completion (cobra's) needs: make deps installs it.
const bashCompletion = "/usr/share/bash-completion/bash_completion"

// TestBashCompletionAsTheREADMESays (README "Installing and running every
// day": source <(keyrelay completion bash), with bash-completion): in bash
// with bash-completion loaded, the script keyrelay writes completes a
// command (rec: recv) and a flag's value (--input: x11). Skipped without
// bash-completion, but in CI, where make deps installs it.
func TestBashCompletionAsTheREADMESays(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(bashCompletion); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("bash-completion missing in CI: make deps must install it (%v)", err)
		}
		t.Skip("needs bash-completion (make deps installs it)")
	}
	// The completion function is called as bash calls it on Tab, but
	// outside a real completion, where the builtin compopt refuses to
	// run: a no-op stands in for it.
	script := `source ` + bashCompletion + `
source <(keyrelay completion bash)
compopt() { :; }
complete_line() {
  COMP_LINE="$1"; COMP_POINT=${#COMP_LINE}
  read -ra COMP_WORDS <<<"$COMP_LINE"
  [[ $COMP_LINE == *" " ]] && COMP_WORDS+=("")
  COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
  COMPREPLY=()
  __start_keyrelay keyrelay "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
  echo "$1 => ${COMPREPLY[*]}"
}
complete_line "keyrelay rec"
complete_line "keyrelay send --input x1"
`
	out, err := runBash(t.TempDir(), script)
	if err != nil || strings.Contains(string(out), "command not found") {
		t.Fatalf("bash completion failed (%v):\n%s", err, out)
	}
	for _, want := range []string{"keyrelay rec => recv\n", "keyrelay send --input x1 => x11\n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	// Without bash-completion the same script fails as the README says.
	out, _ = runBash(t.TempDir(), strings.Replace(script, "source "+bashCompletion, "", 1))
	if !strings.Contains(string(out), "_get_comp_words_by_ref: command not found") {
		t.Errorf("without bash-completion: %s", out)
	}
}

package xkblayout

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// TestParseList: evdev.lst's layouts and variants become the names
// --layout takes, with their descriptions; models and options do not.
func TestParseList(t *testing.T) {
	const lst = `! model
  pc105           Generic 105-key PC
! layout
  us              English (US)
  de              German
! variant
  nodeadkeys      de: German (no dead keys)
  intl            us: English (US, intl., with dead keys)
  bad             no colon here
! option
  grp             Switching to another layout
`
	got, err := ParseList(strings.NewReader(lst))
	want := []Entry{{"us", "English (US)"}, {"de", "German"}, {"de(nodeadkeys)", "German (no dead keys)"}, {"us(intl)", "English (US, intl., with dead keys)"}}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("ParseList = %q, %v; want %q", got, err, want)
	}
	f, err := os.Open(ListFile)
	if err != nil {
		t.Skipf("no %s (apt-get install xkb-data): %v", ListFile, err)
	}
	defer f.Close()
	all, err := ParseList(f)
	if err != nil || !slices.Contains(all, Entry{"de", "German"}) || !slices.Contains(all, Entry{"fr", "French"}) {
		t.Errorf("%s: %d entries, %v; want de and fr among them", ListFile, len(all), err)
	}
}

// FuzzParseList: any text reads without panicking, into names --layout
// takes.
func FuzzParseList(f *testing.F) {
	f.Add("! layout\n  de   German\n! variant\n  intl  us: English\n")
	f.Add("! variant\n  x\n  y :\n!\n")
	f.Fuzz(func(t *testing.T, src string) {
		es, _ := ParseList(strings.NewReader(src))
		for _, e := range es {
			if err := CheckName(e.Name); err != nil {
				t.Fatalf("entry %q: %v", e.Name, err)
			}
		}
	})
}

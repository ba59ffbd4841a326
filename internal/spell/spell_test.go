package spell

import "testing"

// TestDistance checks the typo suggestion's metric.
func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"a", "", 1}, {"intervall", "interval", 1}, {"injcet", "inject", 2}, {"kitten", "sitting", 3}} {
		if got := Distance(tc.a, tc.b); got != tc.d {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.d)
		}
	}
}

// TestClosest: the nearest name within two edits, the first of equals,
// none beyond.
func TestClosest(t *testing.T) {
	known := []string{"send", "recv", "doctor"}
	for _, tc := range []struct{ k, want string }{
		{"sned", "send"}, {"recv", "recv"}, {"docter", "doctor"}, {"rec", "recv"}, {"keygen", ""}, {"", ""},
	} {
		if got := Closest(tc.k, known); got != tc.want {
			t.Errorf("Closest(%q) = %q, want %q", tc.k, got, tc.want)
		}
	}
}

// TestJoinOr: a list of names in prose, as messages name the choices.
func TestJoinOr(t *testing.T) {
	for _, tc := range []struct {
		words []string
		want  string
	}{{nil, ""}, {[]string{"a"}, "a"}, {[]string{"a", "b"}, "a or b"}, {[]string{"a", "b", "c"}, "a, b or c"}} {
		if got := JoinOr(tc.words); got != tc.want {
			t.Errorf("JoinOr(%q) = %q, want %q", tc.words, got, tc.want)
		}
	}
}

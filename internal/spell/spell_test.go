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

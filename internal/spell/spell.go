// Package spell words names in messages: for a name someone mistyped,
// the known name they probably meant (the config file's settings, a flag,
// a peer's name), and a list of names in prose (JoinOr).
package spell

import (
	"fmt"
	"strings"
)

// JoinOr joins words as a list in prose: "a, b or c".
func JoinOr(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// Closest is the name in known nearest to a misspelt one, "" when none is
// within two edits (more is not a typo). Of equally near names the first
// wins.
func Closest(k string, known []string) string {
	best, bestD := "", 3
	for _, c := range known {
		if d := Distance(k, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// Distance is the Levenshtein distance between a and b, in bytes: the
// fewest insertions, deletions and substitutions that make one the other.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Suggest is the hint for a misspelt name: ` (did you mean "NAME"?)` with
// the closest known name, "" when none is near.
func Suggest(k string, known []string) string {
	best := Closest(k, known)
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// Package xkblayout is the table of a named keyboard layout that recv
// --layout types characters through, for injectors whose target has a
// layout keyrelay cannot ask (a USB host, the kernel under uinput): for
// each character, the keys that layout needs pressed, Shift, AltGr and
// dead keys included. It reads XKB's own data (Debian's xkb-data: the
// symbols files and keycodes/evdev) and the Compose file, as X and
// Wayland do, so that a layout means here what it means to them.
//
// It parses the part of the symbols format the table needs itself
// (xkb_symbols sections, include, key <XXXX> { [ ... ] } and name[Group1]),
// checked against xkbcomp: libxkbcommon's Go bindings need cgo, which
// keyrelay's Linux builds do without, and the one pure-Go XKB library
// (github.com/unxed/xkb-go) is at v0.1, first published weeks ago, with no
// importers: a young dependency for the few hundred lines needed here.
// It reads what it is given (an fs.FS, an io.Reader): no globals, and a
// Layout is read-only once loaded, safe for concurrent use.
package xkblayout

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/keyrelay/keyrelay/internal/x11/keysym"
	"github.com/keyrelay/keyrelay/keys"
)

// Dir is where Debian's xkb-data installs XKB's data; Load's fsys is
// rooted there.
const Dir = "/usr/share/X11/xkb"

// ComposeFile is the Compose file whose dead-key sequences Load reads.
const ComposeFile = "/usr/share/X11/locale/en_US.UTF-8/Compose"

// ErrUnknown is wrapped by Load's error for a layout or variant that is
// not in the XKB data.
var ErrUnknown = errors.New("no such XKB layout")

// Stroke is one key press of a character's sequence: Key with Shift
// and/or AltGr (the layout's ISO_Level3_Shift key) held. Alpha says the
// key's type has Caps Lock shift this level (a letter's): with Caps Lock
// on, Shift is inverted. CapsOff says Caps Lock changes this level some
// other way: with Caps Lock on, it is typed with Caps Lock tapped off and
// on again around it.
type Stroke struct {
	Key          keys.Code
	Shift, AltGr bool
	Alpha        bool
	CapsOff      bool
}

// Layout is a named layout's table of characters. Read-only: safe for
// concurrent use.
type Layout struct {
	name  string
	desc  string
	altgr keys.Code // 0: the layout has no level 3
	chars map[rune][]Stroke
	// The other way round, for send --keys characters from a source
	// whose layout is named (charmode.Keymap): each key's keysyms at
	// levels 1-4, whether Caps Lock shifts levels 1-2, and the Compose
	// file's dead-key pairs.
	levels map[keys.Code][4]uint32
	alpha  map[keys.Code]bool
	seqs   map[[2]uint32]rune
}

// Keysyms are the keysyms key c gives at levels 1-4 (alone, Shift,
// AltGr, Shift+AltGr; 0 where its type has no such level), whether Caps
// Lock shifts levels 1 and 2, and false for a key the layout lacks. With
// Compose, a Layout is a charmode.Keymap.
func (l *Layout) Keysyms(c keys.Code) (syms [4]uint32, alpha bool, ok bool) {
	syms, ok = l.levels[c]
	return syms, l.alpha[c], ok
}

// Compose is the character a dead key's keysym then a base keysym
// compose, as the Compose file Load read says.
func (l *Layout) Compose(dead, base uint32) (rune, bool) {
	r, ok := l.seqs[[2]uint32{dead, base}]
	return r, ok
}

// Name is the layout as named ("de", "us(intl)"); Description its
// name[Group1] ("German").
func (l *Layout) Name() string        { return l.name }
func (l *Layout) Description() string { return l.desc }

// AltGr is the key that selects levels 3 and 4 (right Alt on most
// layouts), and false when the layout has none.
func (l *Layout) AltGr() (keys.Code, bool) { return l.altgr, l.altgr != 0 }

// Strokes returns the key presses that type r on the layout, in order (a
// dead key, then its base key, for a character the layout has only
// through a dead key), and false when the layout cannot type r.
func (l *Layout) Strokes(r rune) ([]Stroke, bool) {
	s, ok := l.chars[r]
	return s, ok
}

// Chars are the characters the layout types, in code point order.
func (l *Layout) Chars() []rune {
	out := make([]rune, 0, len(l.chars))
	for r := range l.chars {
		out = append(out, r)
	}
	slices.Sort(out)
	return out
}

var nameRE = regexp.MustCompile(`^([a-z0-9_-]+)(?:\(([A-Za-z0-9_-]+)\))?$`)

// CheckName says whether name is written as a layout is: file or
// file(variant), such as de, fr, us(intl). It does not look the layout up.
func CheckName(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("%q is not a layout name: write it as XKB names layouts, LAYOUT or LAYOUT(VARIANT), e.g. de, fr, gb, us(intl)", name)
	}
	return nil
}

// Load reads the layout name ("de", "us(intl)") from fsys (rooted at Dir:
// symbols/ and keycodes/evdev) on top of the pc symbols every layout is
// used with, as XKB's rules do, and its dead-key sequences from compose (a
// Compose file; nil: dead keys are not used).
func Load(fsys fs.FS, name string, compose io.Reader) (*Layout, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	codes, err := readKeycodes(fsys)
	if err != nil {
		return nil, err
	}
	r := &resolver{fsys: fsys, files: map[string][]Symbols{}, keys: map[string][]string{}, keypad: map[string]bool{}, types: map[string]string{}}
	if err := r.include("pc", mergeOverride, 0); err != nil {
		return nil, fmt.Errorf("reading the pc symbols every layout is used with: %w", err)
	}
	if err := r.include(name, mergeOverride, 0); err != nil {
		return nil, err
	}
	l := &Layout{name: name, desc: r.desc, chars: map[rune][]Stroke{},
		levels: map[keys.Code][4]uint32{}, alpha: map[keys.Code]bool{}, seqs: map[[2]uint32]rune{}}
	l.build(r, codes)
	if compose != nil {
		if err := l.addDeadKeys(r, codes, compose); err != nil {
			return nil, fmt.Errorf("reading the Compose file: %w", err)
		}
	}
	return l, nil
}

// resolver holds the keys of a layout as its includes and statements
// leave them.
type resolver struct {
	fsys   fs.FS
	files  map[string][]Symbols
	keys   map[string][]string // key name: Group1 keysym names by level
	keypad map[string]bool
	types  map[string]string // key name: its Group1 type, where named
	order  []string          // key names in the order first defined
	desc   string
}

// maxDepth bounds nested includes: XKB's data nests a few deep; a file
// that includes itself must not loop.
const maxDepth = 16

func (r *resolver) file(name string) ([]Symbols, error) {
	if s, ok := r.files[name]; ok {
		return s, nil
	}
	b, err := fs.ReadFile(r.fsys, "symbols/"+name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w %q: there is no %s/symbols/%s (name a file there, e.g. de, fr, gb, us; apt-get install xkb-data)", ErrUnknown, name, Dir, name)
		}
		return nil, fmt.Errorf("reading XKB symbols %q: %w", name, err)
	}
	s, err := ParseSymbols(b)
	if err != nil {
		return nil, fmt.Errorf("parsing %s/symbols/%s: %w", Dir, name, err)
	}
	r.files[name] = s
	return s, nil
}

// include applies "a(b)+c|d": each part in turn, + overriding and |
// augmenting what the parts before left.
func (r *resolver) include(spec string, m merge, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("include %q: includes nested more than %d deep (an include loop?)", spec, maxDepth)
	}
	part, pm := "", m
	flush := func(next merge) error {
		if part != "" {
			if err := r.section(part, pm, depth); err != nil {
				return err
			}
		}
		part, pm = "", next
		return nil
	}
	for _, c := range spec {
		switch c {
		case '+':
			if err := flush(mergeOverride); err != nil {
				return err
			}
		case '|':
			if err := flush(mergeAugment); err != nil {
				return err
			}
		default:
			part += string(c)
		}
	}
	return flush(m)
}

// section applies one file(variant) (or the file's default section).
func (r *resolver) section(part string, m merge, depth int) error {
	m2 := nameRE.FindStringSubmatch(part)
	if m2 == nil {
		// %-expansions of the rules (%l, %v) and anything else a
		// symbols file can name but a layout here cannot.
		return fmt.Errorf("include %q: not a symbols file(section) this reads", part)
	}
	file, variant := m2[1], m2[2]
	secs, err := r.file(file)
	if err != nil {
		return err
	}
	if len(secs) == 0 {
		return fmt.Errorf("%w %q: %s/symbols/%s has no xkb_symbols section", ErrUnknown, part, Dir, file)
	}
	i := -1
	if variant == "" {
		i = slices.IndexFunc(secs, func(s Symbols) bool { return s.Default })
		if i < 0 {
			i = 0
		}
	} else {
		i = slices.IndexFunc(secs, func(s Symbols) bool { return s.Name == variant })
	}
	if i < 0 {
		names := make([]string, 0, len(secs))
		for _, s := range secs {
			names = append(names, file+"("+s.Name+")")
		}
		if len(names) > 8 {
			names = append(names[:8], "...")
		}
		return fmt.Errorf("%w %q: %s/symbols/%s has no variant %q (it has %s)", ErrUnknown, part, Dir, file, variant, strings.Join(names, ", "))
	}
	sec := secs[i]
	if depth == 0 && sec.Group1 != "" {
		r.desc = sec.Group1
	}
	for _, st := range sec.Stmts {
		sm := st.Merge
		if m == mergeAugment && sm == mergeOverride {
			sm = mergeAugment // an augmenting include's keys augment
		}
		if st.Include != "" {
			if err := r.include(st.Include, sm, depth+1); err != nil {
				return err
			}
			if depth == 0 && sec.Group1 != "" {
				r.desc = sec.Group1
			}
			continue
		}
		r.key(st, sm)
	}
	return nil
}

func (r *resolver) key(st Stmt, m merge) {
	old, had := r.keys[st.Key]
	if !had {
		r.order = append(r.order, st.Key)
	}
	if !had || m == mergeReplace {
		r.keys[st.Key] = slices.Clone(st.Syms)
		r.keypad[st.Key] = st.Keypad
		r.types[st.Key] = st.Type
		return
	}
	if st.Type != "" && (m == mergeOverride || r.types[st.Key] == "") {
		r.types[st.Key] = st.Type
		r.keypad[st.Key] = st.Keypad
	}
	syms := old
	for len(syms) < len(st.Syms) {
		syms = append(syms, "")
	}
	for i, s := range st.Syms {
		if s != "" && (m == mergeOverride || syms[i] == "") {
			syms[i] = s
		}
	}
	r.keys[st.Key] = syms
}

// readKeycodes reads keycodes/evdev's <NAME> = N and alias lines, and
// keycodes/aliases's, into evdev codes (XKB's keycodes are evdev + 8).
func readKeycodes(fsys fs.FS) (map[string]keys.Code, error) {
	b, err := fs.ReadFile(fsys, "keycodes/evdev")
	if err != nil {
		return nil, fmt.Errorf("reading XKB's key names (%s/keycodes/evdev; apt-get install xkb-data): %w", Dir, err)
	}
	if a, err := fs.ReadFile(fsys, "keycodes/aliases"); err == nil {
		b = append(append(b, '\n'), a...)
	}
	codes := map[string]keys.Code{}
	aliases := map[string]string{}
	toks := tokenize(b)
	for i := 0; i+2 < len(toks); i++ {
		t := toks[i]
		switch {
		case t.kind == 'k' && toks[i+1].kind == '=' && toks[i+2].kind == 'i' && (i == 0 || toks[i-1].text != "alias"):
			n, err := strconv.Atoi(toks[i+2].text)
			if err != nil || n < 8 {
				continue
			}
			if c, ok := keys.FromEvdev(uint16(n - 8)); ok {
				if _, dup := codes[t.text]; !dup {
					codes[t.text] = c
				}
			}
		case t.kind == 'i' && t.text == "alias" && toks[i+1].kind == 'k' && i+3 < len(toks) && toks[i+3].kind == 'k':
			if _, dup := aliases[toks[i+1].text]; !dup {
				aliases[toks[i+1].text] = toks[i+3].text
			}
		}
	}
	for a, to := range aliases {
		if c, ok := codes[to]; ok {
			if _, dup := codes[a]; !dup {
				codes[a] = c
			}
		}
	}
	if len(codes) == 0 {
		return nil, fmt.Errorf("%s/keycodes/evdev names no keys: is xkb-data installed whole?", Dir)
	}
	return codes, nil
}

// candidate is one way to type a character, with its cost: fewer keys,
// lower levels, the main block before the ISO key.
type candidate struct {
	strokes []Stroke
	cost    int
	key     keys.Code
}

// better is a's cost lower, or equal and its key first in evdev's order
// (the number row, then the letters' rows), which is stable and puts
// fr's @ on AltGr+0, where the keyboard prints it.
func better(a, b candidate) bool {
	return cmp.Or(cmp.Compare(a.cost, b.cost), cmp.Compare(evdevOf(a.key), evdevOf(b.key))) < 0
}

func evdevOf(c keys.Code) uint16 {
	info, _ := keys.Lookup(c)
	return info.Evdev
}

func (l *Layout) build(r *resolver, codes map[string]keys.Code) {
	best := map[rune]candidate{}
	for _, name := range r.order {
		// pc's <LVL3> and <MDSW> are no keys a keyboard has: a
		// layout has levels 3 and 4 when a real key selects them.
		if syms := r.keys[name]; slices.Contains(syms, "ISO_Level3_Shift") && name != "LVL3" && name != "MDSW" {
			if c, ok := codes[name]; ok && (l.altgr == 0 || name == "RALT") {
				l.altgr = c
			}
		}
	}
	for _, name := range r.order {
		code, ok := codes[name]
		if !ok || r.keypad[name] || strings.HasPrefix(name, "KP") {
			continue
		}
		syms := r.keys[name]
		kt := typeOf(r.types[name], syms)
		if _, dup := l.levels[code]; !dup {
			var lvs [4]uint32
			for lv, s := range syms {
				if lv >= kt.levels || lv >= 2 && l.altgr == 0 {
					break
				}
				lvs[lv], _ = keysym.Parse(s)
			}
			l.levels[code] = lvs
			l.alpha[code] = kt.alpha[0]
		}
		for lv, s := range syms {
			if lv >= kt.levels || lv >= 2 && l.altgr == 0 {
				break
			}
			c, ok := symRune(s)
			if !ok {
				continue
			}
			cost := lv
			if name == "LSGT" {
				// The ISO key is missing on ANSI keyboards, whose
				// hosts may take it for another: used only when the
				// layout has the character nowhere else as cheaply.
				cost += 2
			}
			cand := candidate{[]Stroke{{Key: code, Shift: lv&1 != 0, AltGr: lv&2 != 0, Alpha: kt.alpha[lv/2], CapsOff: kt.capsOff[lv]}}, cost, code}
			if old, ok := best[c]; !ok || better(cand, old) {
				best[c] = cand
			}
		}
	}
	for c, cand := range best {
		l.chars[c] = cand.strokes
	}
}

// levelType is what a key's type means for typing its levels 1-4: how
// many of them are reached with Shift (level 2), AltGr (3) and both (4),
// which pairs Caps Lock shifts, and which levels Caps Lock changes some
// other way (they are typed with it off).
type levelType struct {
	levels  int
	alpha   [2]bool // levels 1-2, 3-4
	capsOff [maxLevels]bool
}

// typeOf is the levelType of a key of type name (its keysyms syms when
// the layout names none: XKB then picks ALPHABETIC, FOUR_LEVEL_ALPHABETIC
// or FOUR_LEVEL_SEMIALPHABETIC for a letter and its capital, else
// ONE_LEVEL, TWO_LEVEL or FOUR_LEVEL: types/ in XKB's data). A type this
// does not know is trusted for level 1 only, and with Caps Lock off.
func typeOf(name string, syms []string) levelType {
	pair := func(i int) bool { return len(syms) > i+1 && isAlpha(syms[i], syms[i+1]) }
	switch name {
	case "":
		a := pair(0)
		return levelType{levels: maxLevels, alpha: [2]bool{a, a && pair(2)}}
	case "ONE_LEVEL", "TWO_LEVEL", "THREE_LEVEL", "FOUR_LEVEL", "EIGHT_LEVEL":
		return levelType{levels: maxLevels}
	case "ALPHABETIC", "FOUR_LEVEL_SEMIALPHABETIC", "EIGHT_LEVEL_SEMIALPHABETIC":
		return levelType{levels: maxLevels, alpha: [2]bool{true, false}}
	case "FOUR_LEVEL_ALPHABETIC", "EIGHT_LEVEL_ALPHABETIC":
		return levelType{levels: maxLevels, alpha: [2]bool{true, true}}
	case "FOUR_LEVEL_PLUS_LOCK":
		// Caps Lock alone is a fifth level (de's ẞ on the ß key).
		return levelType{levels: maxLevels, capsOff: [maxLevels]bool{true}}
	}
	return levelType{levels: 1, capsOff: [maxLevels]bool{true}}
}

// symRune is the character a keysym name types.
func symRune(name string) (rune, bool) {
	ks, ok := keysym.Parse(name)
	if !ok {
		return 0, false
	}
	return keysym.ToRune(ks)
}

// isAlpha reports whether two levels of a key are a lower-case letter
// and an upper-case one, as XKB picks an alphabetic type for them (Caps
// Lock shifts them): not necessarily each other's case (de's ſ and ẞ).
func isAlpha(lower, upper string) bool {
	l, ok1 := symRune(lower)
	u, ok2 := symRune(upper)
	return ok1 && ok2 && isLower(l) && isUpper(u)
}

// isLower and isUpper are X's (XConvertCase): a letter with another
// case. X pairs ß with ẞ, which Unicode's simple mapping does not.
func isLower(r rune) bool { return r == 'ß' || unicode.ToLower(r) == r && unicode.ToUpper(r) != r }
func isUpper(r rune) bool { return unicode.ToUpper(r) == r && unicode.ToLower(r) != r }

// deadCost puts a character typed through a dead key after any typed
// directly.
const deadCost = 10

// addDeadKeys adds the characters the layout types as a dead key and a
// base key (<dead_acute> <e> : "é"), for those it does not have on a key.
func (l *Layout) addDeadKeys(r *resolver, codes map[string]keys.Code, compose io.Reader) error {
	// The dead keys on the layout, and their strokes, by keysym: the
	// Compose file may name one by an alias (dead_perispomeni is
	// dead_tilde).
	dead := map[uint32]candidate{}
	for _, name := range r.order {
		code, ok := codes[name]
		if !ok || r.keypad[name] || strings.HasPrefix(name, "KP") {
			continue
		}
		syms := r.keys[name]
		kt := typeOf(r.types[name], syms)
		for lv, s := range syms {
			if lv >= kt.levels || lv >= 2 && l.altgr == 0 {
				break
			}
			ks, ok := keysym.Parse(s)
			if !ok || !strings.HasPrefix(s, "dead_") {
				continue
			}
			cand := candidate{[]Stroke{{Key: code, Shift: lv&1 != 0, AltGr: lv&2 != 0, Alpha: kt.alpha[lv/2], CapsOff: kt.capsOff[lv]}}, lv, code}
			if old, ok := dead[ks]; !ok || better(cand, old) {
				dead[ks] = cand
			}
		}
	}
	if len(dead) == 0 {
		return nil
	}
	best := map[rune]candidate{}
	err := ParseCompose(compose, func(seq []string, result string) {
		if len(seq) != 2 {
			return
		}
		ks, ok := keysym.Parse(seq[0])
		if !ok {
			return
		}
		d, ok := dead[ks]
		if !ok {
			return
		}
		c, size := utf8.DecodeRuneInString(result)
		if size != len(result) || c == utf8.RuneError {
			return
		}
		if bs, ok := keysym.Parse(seq[1]); ok {
			if _, dup := l.seqs[[2]uint32{ks, bs}]; !dup {
				l.seqs[[2]uint32{ks, bs}] = c
			}
		}
		if _, direct := l.chars[c]; direct {
			return
		}
		b, ok := symRune(seq[1])
		if !ok {
			return
		}
		base, ok := l.chars[b]
		if !ok || len(base) != 1 {
			return
		}
		cost := deadCost + d.cost + lvCost(base[0])
		cand := candidate{[]Stroke{d.strokes[0], base[0]}, cost, d.key}
		if old, ok := best[c]; !ok || better(cand, old) {
			best[c] = cand
		}
	})
	for c, cand := range best {
		l.chars[c] = cand.strokes
	}
	return err
}

func lvCost(s Stroke) int {
	n := 0
	if s.Shift {
		n++
	}
	if s.AltGr {
		n += 2
	}
	return n
}

// ParseCompose reads a Compose file's sequences: for each line
// <k1> <k2> ... : "result" [keysym], it calls f with the keysym names and
// the result. Lines it cannot read (include, comments, a result that is
// not a plain string) are skipped, as libX11 skips them.
func ParseCompose(r io.Reader, f func(seq []string, result string)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "<") {
			continue
		}
		var seq []string
		rest := line
		for strings.HasPrefix(rest, "<") {
			end := strings.IndexByte(rest, '>')
			if end < 0 {
				break
			}
			seq = append(seq, rest[1:end])
			rest = strings.TrimLeft(rest[end+1:], " \t")
		}
		if !strings.HasPrefix(rest, ":") {
			continue
		}
		rest = strings.TrimLeft(rest[1:], " \t")
		if !strings.HasPrefix(rest, `"`) {
			continue
		}
		// The string ends at the first " not escaped.
		end := 1
		for end < len(rest) && rest[end] != '"' {
			if rest[end] == '\\' {
				end++
			}
			end++
		}
		if end >= len(rest) {
			continue
		}
		s, err := strconv.Unquote(rest[:end+1])
		if err != nil || s == "" {
			continue
		}
		f(seq, s)
	}
	return sc.Err()
}

package xkblayout

import (
	"errors"
	"fmt"
	"strings"
)

// maxLevels are the shift levels a character is looked for on: 1 (none),
// 2 (Shift), 3 (AltGr, ISO_Level3_Shift) and 4 (Shift+AltGr).
const maxLevels = 4

// merge is how a key statement or an include combines with what is there
// (XKB's merge modes): override takes the new key's levels, augment keeps
// the levels already set, replace drops the old key.
type merge int

const (
	mergeOverride merge = iota
	mergeAugment
	mergeReplace
)

// Symbols is one xkb_symbols section of a symbols file, as written:
// includes are not resolved here.
type Symbols struct {
	Name    string // the section's name: de(Name)
	Default bool   // flagged default: the one "de" alone names
	// Group1 is name[Group1], the layout's description.
	Group1 string
	// Stmts are its include and key statements, in order: the order
	// decides which definition of a key wins.
	Stmts []Stmt
}

// Stmt is an include (Include set) or a key statement of a section.
type Stmt struct {
	Merge   merge
	Include string // "latin(type4)+level3(ralt_switch)"
	Key     string // the key's name, without <>
	// Syms are the key's Group1 keysym names, level by level ("" where
	// NoSymbol or a list of several keysyms).
	Syms []string
	// Type is the key's Group1 type ("FOUR_LEVEL_SEMIALPHABETIC"), ""
	// when not named: XKB then picks one by the keysyms.
	Type string
	// Keypad is set for a key whose type reads "KEYPAD": its levels
	// follow Num Lock, not Shift, so it is not used to type characters.
	Keypad bool
}

// ParseSymbols parses an XKB symbols file (/usr/share/X11/xkb/symbols/de):
// its xkb_symbols sections, their includes, key statements and
// name[Group1]. What the table of characters does not need (modifier_map,
// actions, virtual modifiers, groups beyond the first) is skipped.
func ParseSymbols(src []byte) ([]Symbols, error) {
	p := &parser{toks: tokenize(src)}
	var out []Symbols
	for !p.eof() {
		s, err := p.section()
		if err != nil {
			return nil, err
		}
		if s != nil {
			out = append(out, *s)
		}
	}
	return out, nil
}

type token struct {
	kind byte // 'i' identifier, 's' string, 'k' <key name>, or the punctuation itself
	text string
	line int
}

// tokenize splits an XKB file into tokens; // and # comments are dropped.
func tokenize(src []byte) []token {
	var toks []token
	line := 1
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '#' || c == '/' && i+1 < len(src) && src[i+1] == '/':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			i += 2
			for i < len(src) && !(src[i] == '*' && i+1 < len(src) && src[i+1] == '/') {
				if src[i] == '\n' {
					line++
				}
				i++
			}
			i += 2
		case c == '"':
			j := i + 1
			for j < len(src) && src[j] != '"' && src[j] != '\n' {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			end := min(j, len(src))
			toks = append(toks, token{'s', string(src[i+1 : end]), line})
			i = end + 1
		case c == '<':
			j := i + 1
			for j < len(src) && src[j] != '>' && src[j] != '\n' {
				j++
			}
			end := min(j, len(src))
			toks = append(toks, token{'k', string(src[i+1 : end]), line})
			i = end + 1
		case isIdent(c):
			j := i
			for j < len(src) && isIdent(src[j]) {
				j++
			}
			toks = append(toks, token{'i', string(src[i:j]), line})
			i = j
		default:
			toks = append(toks, token{c, string(c), line})
			i++
		}
	}
	return toks
}

func isIdent(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '+' || c == '-' || c == '.' || c >= 0x80
}

type parser struct {
	toks []token
	pos  int
}

func (p *parser) eof() bool { return p.pos >= len(p.toks) }

func (p *parser) peek() token {
	if p.eof() {
		return token{}
	}
	return p.toks[p.pos]
}

func (p *parser) next() token {
	t := p.peek()
	p.pos++
	return t
}

func (p *parser) errorf(format string, args ...any) error {
	line := 0
	if !p.eof() {
		line = p.peek().line
	} else if len(p.toks) > 0 {
		line = p.toks[len(p.toks)-1].line
	}
	return fmt.Errorf("line %d: %s", line, fmt.Sprintf(format, args...))
}

var errEOF = errors.New("the file ends inside a section")

// section reads flags, xkb_symbols "name" { ... }; it returns nil for a
// section of another kind (xkb_keycodes...), skipped.
func (p *parser) section() (*Symbols, error) {
	s := &Symbols{}
	for {
		t := p.next()
		switch {
		case t.kind == 0:
			if s.Default {
				return nil, p.errorf("flags with no section after them")
			}
			return nil, nil
		case t.kind == 'i' && t.text == "default":
			s.Default = true
			continue
		case t.kind == 'i' && strings.HasPrefix(t.text, "xkb_"):
			if p.peek().kind == 's' {
				s.Name = p.next().text
			}
			if p.next().kind != '{' {
				return nil, p.errorf("%s %q: { expected", t.text, s.Name)
			}
			if t.text != "xkb_symbols" {
				if err := p.skipBlock(); err != nil {
					return nil, err
				}
				p.optional(';')
				return nil, nil
			}
			if err := p.body(s); err != nil {
				return nil, fmt.Errorf("xkb_symbols %q: %w", s.Name, err)
			}
			p.optional(';')
			return s, nil
		case t.kind == 'i':
			continue // partial, alphanumeric_keys, hidden...
		case t.kind == ';':
			continue
		default:
			return nil, p.errorf("%q where a section was expected", t.text)
		}
	}
}

func (p *parser) optional(kind byte) {
	if p.peek().kind == kind {
		p.pos++
	}
}

// skipBlock skips to the } that closes the { just read.
func (p *parser) skipBlock() error {
	depth := 1
	for depth > 0 {
		switch p.next().kind {
		case 0:
			return errEOF
		case '{':
			depth++
		case '}':
			depth--
		}
	}
	return nil
}

// skipStmt skips to the end of a statement it does not need: the next ;
// outside braces, or the } closing the section (left unread).
func (p *parser) skipStmt() error {
	depth := 0
	for {
		switch p.peek().kind {
		case 0:
			return errEOF
		case '{', '[', '(':
			depth++
		case ']', ')':
			depth--
		case '}':
			if depth == 0 {
				return nil
			}
			depth--
		case ';':
			if depth <= 0 {
				p.pos++
				return nil
			}
		}
		p.pos++
	}
}

func (p *parser) body(s *Symbols) error {
	for {
		t := p.peek()
		switch {
		case t.kind == 0:
			return errEOF
		case t.kind == '}':
			p.pos++
			return nil
		case t.kind == ';':
			p.pos++
			continue
		}
		m := mergeOverride
		if t.kind == 'i' {
			switch t.text {
			case "override":
				p.pos++
			case "augment":
				m = mergeAugment
				p.pos++
			case "replace":
				m = mergeReplace
				p.pos++
			}
		}
		t = p.peek()
		switch {
		case t.kind == 's' && m != mergeOverride || t.kind == 'i' && t.text == "include":
			// include "x", or augment "x": an include with that merge mode.
			if t.kind == 'i' {
				p.pos++
			}
			inc := p.next()
			if inc.kind != 's' {
				return p.errorf("include: a quoted name expected")
			}
			s.Stmts = append(s.Stmts, Stmt{Merge: m, Include: inc.text})
		case t.kind == 'i' && t.text == "key":
			p.pos++
			name := p.next()
			if name.kind != 'k' {
				return p.errorf("key: a <name> expected")
			}
			st, err := p.key(name.text)
			if err != nil {
				return fmt.Errorf("key <%s>: %w", name.text, err)
			}
			st.Merge = m
			s.Stmts = append(s.Stmts, st)
		case t.kind == 'i' && t.text == "name":
			p.pos++
			if p.groupIndex() == 1 && p.peek().kind == '=' {
				p.pos++
				if v := p.next(); v.kind == 's' {
					s.Group1 = v.text
				}
			}
			if err := p.skipStmt(); err != nil {
				return err
			}
		default:
			if err := p.skipStmt(); err != nil {
				return err
			}
		}
	}
}

// groupIndex reads an optional [GroupN] and returns N (1 when absent or
// not a group).
func (p *parser) groupIndex() int {
	if p.peek().kind != '[' {
		return 1
	}
	p.pos++
	g := p.next()
	p.optional(']')
	switch strings.ToLower(g.text) {
	case "group1", "1":
		return 1
	}
	return 2
}

// key reads { ... } after key <NAME>.
func (p *parser) key(name string) (Stmt, error) {
	st := Stmt{Key: name}
	if p.next().kind != '{' {
		return st, p.errorf("{ expected")
	}
	group := 0 // bare [ ] lists seen: the first is Group1
	for {
		t := p.peek()
		switch {
		case t.kind == 0:
			return st, errEOF
		case t.kind == '}':
			p.pos++
			p.optional(';')
			return st, nil
		case t.kind == ',':
			p.pos++
		case t.kind == '[':
			group++
			syms, err := p.symList()
			if err != nil {
				return st, err
			}
			if group == 1 {
				st.Syms = syms
			}
		case t.kind == 'i' && (t.text == "symbols" || t.text == "type"):
			p.pos++
			g := p.groupIndex()
			if p.next().kind != '=' {
				return st, p.errorf("= expected after %s", t.text)
			}
			if t.text == "type" {
				v := p.next()
				if g == 1 && v.kind == 's' {
					st.Type = v.text
					st.Keypad = strings.Contains(strings.ToUpper(v.text), "KEYPAD")
				}
				continue
			}
			syms, err := p.symList()
			if err != nil {
				return st, err
			}
			if g == 1 {
				st.Syms = syms
			}
		default:
			// actions[Group1]= [...], virtualMods= ..., repeat= ...:
			// skipped up to the next , or } at this depth.
			depth := 0
			for {
				k := p.peek().kind
				if k == 0 {
					return st, errEOF
				}
				if depth == 0 && (k == ',' || k == '}') {
					break
				}
				switch k {
				case '[', '{', '(':
					depth++
				case ']', '}', ')':
					depth--
				}
				p.pos++
			}
		}
	}
}

// symList reads [ sym, sym, { sym, sym }, ... ]: a level with several
// keysyms types several characters at once, which is no use here, so it
// reads as "".
func (p *parser) symList() ([]string, error) {
	if p.next().kind != '[' {
		return nil, p.errorf("[ expected")
	}
	var syms []string
	cur, n := "", 0
	for {
		t := p.next()
		switch t.kind {
		case 0:
			return nil, errEOF
		case ']', ',':
			if n != 1 || cur == "NoSymbol" || cur == "VoidSymbol" {
				cur = ""
			}
			syms = append(syms, cur)
			cur, n = "", 0
			if t.kind == ']' {
				if len(syms) == 1 && syms[0] == "" {
					syms = nil
				}
				return syms, nil
			}
		case '{':
			for k := p.next().kind; k != '}'; k = p.next().kind {
				if k == 0 {
					return nil, errEOF
				}
			}
			n += 2
		case 'i':
			cur = t.text
			n++
		default:
			return nil, p.errorf("%q in a list of keysyms", t.text)
		}
	}
}

package config

import (
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/pflag"
)

// TableValue is a flag's value that the config file may also give as
// tables, [[SECTION.FLAG]] or FLAG = [{ ... }] (send's [[send.to]]), as
// well as strings.
type TableValue interface {
	pflag.Value
	// SetTable takes one table; an error also returns the key at fault
	// ("" for the table as a whole), and the caller adds the file's line.
	SetTable(table map[string]any) (key string, err error)
	// TOML writes the value as TOML, for keyrelay config, when it holds
	// tables (ok false: a plain list of strings).
	TOML() (toml string, ok bool)
}

// hasTables reports whether a setting's value holds tables ([[send.to]],
// or to = [{ name = ..., addr = ... }]).
func hasTables(v any) bool {
	switch v := v.(type) {
	case []map[string]any:
		return true
	case []any:
		for _, e := range v {
			if _, ok := e.(map[string]any); ok {
				return true
			}
		}
	}
	return false
}

// setTables gives the flag name (tv its value) a setting with tables:
// each table whole, each string as the flag takes it. An error names the
// table's line in the file, or its faulty setting's. The tables are
// send's ([[send.to]]) whichever command reads them: doctor reads send's.
func (cf *File) setTables(name string, tv TableValue, v any) error {
	const section = "send"
	var list []any
	switch v := v.(type) {
	case []map[string]any:
		for _, m := range v {
			list = append(list, m)
		}
	case []any:
		list = v
	}
	tables := 0
	for _, e := range list {
		switch e := e.(type) {
		case map[string]any:
			if bad, err := tv.SetTable(e); err != nil {
				return placedError{fmt.Errorf("%s%w", cf.tableWhere(section, name, tables, bad), err)}
			}
			tables++
		case string:
			tv.Set(e)
		default:
			return placedError{fmt.Errorf("%s%s: want a destination's table or \"HOST[:PORT]\", got %s", cf.where(section, name), name, TypeOf(e))}
		}
	}
	return nil
}

// tableWhere is the place of the n-th (from 0) [[section.name]] table in
// the file, or of its setting key when it is given and found there.
func (cf *File) tableWhere(section, name string, n int, key string) string {
	want := []string{section, name}
	seen := -1
	for i, line := range cf.lines {
		m := tomlTable.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if !slices.Equal(tomlPath(m[1]), want) {
			continue
		}
		if seen++; seen < n {
			continue
		}
		at := i + 1
		for j := i + 1; j < len(cf.lines) && key != ""; j++ {
			if tomlTable.MatchString(cf.lines[j]) {
				break
			}
			if km := tomlKey.FindStringSubmatch(cf.lines[j]); km != nil && slices.Equal(tomlPath(km[1]), []string{key}) {
				at = j + 1
				break
			}
		}
		return fmt.Sprintf("%s:%d: ", cf.Path, at)
	}
	return cf.where(section, name)
}

// placedError is an error of the config file that names its place
// itself (a [[send.to]] table's line): the caller adds no other.
type placedError struct{ err error }

func (e placedError) Error() string { return e.err.Error() }
func (e placedError) Unwrap() error { return e.err }

// placed is err as a usage error when it names its place, else fallback.
func placed(err, fallback error) error {
	if p, ok := errors.AsType[placedError](err); ok {
		return UsageError{Err: p.err}
	}
	return fallback
}

package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// TOMLValue writes a flag's value as TOML, as the config file would set
// it: keyrelay config's output reads back the same.
func TOMLValue(f *pflag.Flag) string {
	if tv, ok := f.Value.(TableValue); ok {
		if s, ok := tv.TOML(); ok {
			return s
		}
	}
	switch f.Value.Type() {
	case "bool", "int", "int64", "uint", "uint64", "int32":
		return f.Value.String()
	case "stringArray", "stringSlice":
		var list []string
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			list = sv.GetSlice()
		}
		quoted := make([]string, len(list))
		for i, s := range list {
			quoted[i] = Quote(s)
		}
		return "[" + strings.Join(quoted, ", ") + "]"
	}
	return Quote(f.Value.String())
}

// IsUnset reports whether a flag holds nothing: an empty list or text
// (keyrelay config comments such settings out).
func IsUnset(f *pflag.Flag) bool {
	if sv, ok := f.Value.(pflag.SliceValue); ok {
		return len(sv.GetSlice()) == 0
	}
	return f.Value.Type() == "string" && f.Value.String() == ""
}

// Quote quotes s as a TOML basic string. Go's strconv.Quote is not
// TOML: it may write \x escapes, which TOML lacks.
func Quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			b.WriteString(`\u` + fmt.Sprintf("%04X", r))
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// TypeOf describes a value read from the config file, for an error that
// wanted another kind: "a list", "the number 3", the string quoted.
func TypeOf(v any) string {
	switch v := v.(type) {
	case string:
		return strconv.Quote(v)
	case int64:
		return "the number " + strconv.FormatInt(v, 10)
	case float64:
		return "the number " + strconv.FormatFloat(v, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	case []any:
		return "a list"
	case map[string]any:
		return "a table"
	case time.Time:
		return "a date"
	}
	return fmt.Sprintf("%T", v)
}

// tomlLiteral writes a value read from the config file as it reads there.
func tomlLiteral(v any) string {
	switch v := v.(type) {
	case string:
		return Quote(v)
	case []any:
		items := make([]string, len(v))
		for i, e := range v {
			items[i] = tomlLiteral(e)
		}
		return "[" + strings.Join(items, ", ") + "]"
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	}
	return fmt.Sprint(v)
}

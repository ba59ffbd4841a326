package config

import (
	"errors"
	"fmt"
)

// UsageError is a mistake in how keyrelay was called: a flag, an
// argument, a setting (exit status 2).
//
// A mistake in one setting's value also names the setting (its flag) and
// says what is wanted without the flag's words, so that when the value
// came from the config file or the environment Attribute can name the
// file's line or the variable instead. Also lists the other settings a
// mistake involves (two that exclude each other), whose sources Attribute
// adds to the message.
type UsageError struct {
	Err     error
	Setting string // the setting whose value is wrong ("" for other mistakes)
	Want    string // what is wrong and wanted, without the flag's name
	Also    []string
}

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

// Usagef is a UsageError with a message of its own.
func Usagef(format string, args ...any) error {
	return UsageError{Err: fmt.Errorf(format, args...)}
}

// BadValue is the usage error for a wrong value of setting: flagMsg is
// how it reads when the value came from the command line, want what is
// wrong and wanted whatever the source ("out of range 1..80").
func BadValue(setting, want, flagMsg string) error {
	return UsageError{Err: errors.New(flagMsg), Setting: setting, Want: want}
}

// Involving is a usage error about how several settings go together:
// the sources of those not from the command line are named with it.
func Involving(err error, settings ...string) error {
	return UsageError{Err: err, Also: settings}
}

// SettingError marks an error (not a usage error) that is about one
// setting's value, such as a key file that cannot be read: Attribute adds
// where the value came from.
type SettingError struct {
	Err     error
	Setting string
}

func (e SettingError) Error() string { return e.Err.Error() }
func (e SettingError) Unwrap() error { return e.Err }

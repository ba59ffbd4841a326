package cmd

// The commands' side of the settings layer (internal/config): send, recv
// and doctor read the environment and the config file before they run,
// and their usage errors name where a setting's value came from.

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/keyrelay/keyrelay/internal/config"
)

// configSchema is what the settings layer knows of the configurable
// commands: their flags, from a fresh command of each.
func configSchema() config.Schema {
	return config.Schema{Flags: func(name string) *pflag.FlagSet { return newConfigurable(name, IO{}).Flags() }}
}

// newConfigurable builds a fresh command of the given name, for validating
// a section of the file and for printing effective settings.
func newConfigurable(name string, stdio IO) *cobra.Command {
	switch name {
	case "send":
		return NewCmdSend(stdio, nil)
	case "recv":
		return NewCmdRecv(stdio, nil)
	case "doctor":
		return NewCmdDoctor(stdio)
	}
	panic("newConfigurable: no command " + name) // a programming error: the names are the config layer's
}

// loadConfig reads the config file c's --config names, else the one
// $KEYRELAY_CONFIG or the default path names.
func loadConfig(c *cobra.Command) (*config.File, error) {
	path := ""
	if f := c.Flags().Lookup("config"); f != nil {
		path = f.Value.String()
	}
	return config.Load(path, configSchema())
}

// configure fills every flag of c the command line left unset from the
// environment, then the config file; it returns each flag's source.
func configure(c *cobra.Command) ([]config.Setting, *config.File, error) {
	cf, err := loadConfig(c)
	if err != nil {
		return nil, nil, err
	}
	configSchema().WarnUnknownEnv(c.ErrOrStderr(), c.Name())
	settings, err := cf.Apply(c.Name(), c.Flags())
	return settings, cf, err
}

// configurable makes c read its settings from the environment and the
// config file before it runs (configure), and name, in a usage error about
// a setting, where that setting's value came from.
func configurable(c *cobra.Command) {
	var settings []config.Setting
	var cf *config.File
	c.PreRunE = func(c *cobra.Command, _ []string) (err error) {
		settings, cf, err = configure(c)
		return err
	}
	run := c.RunE
	c.RunE = func(c *cobra.Command, args []string) error {
		return config.Attribute(run(c, args), settings, cf)
	}
}

module github.com/keyrelay/keyrelay

go 1.26

require (
	github.com/go-vgo/robotgo v1.1.0
	github.com/jezek/xgb v1.3.1
	github.com/spf13/cobra v1.10.2
	pgregory.net/rapid v1.3.0
)

require (
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/jezek/xgbutil v0.0.0-20260124183602-9fd151d6a51a // indirect
	github.com/spf13/pflag v1.0.9 // indirect
)

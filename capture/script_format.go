package capture

import _ "embed"

// ScriptFormat is the key script format (SCRIPT_FORMAT.md), for `keyrelay
// help script`: people with only the binary have no README.
//
//go:embed SCRIPT_FORMAT.md
var ScriptFormat string

// Package capture holds keyrelay's key sources.
package capture

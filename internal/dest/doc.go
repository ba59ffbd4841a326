// Package dest is send's destinations as the commands take them: --to
// (HOST[:PORT], a paired machine's name, NAME=HOST[:PORT]) and the config
// file's [[send.to]] tables, merged into named destinations (Spec), and
// resolved for send and doctor alike (Resolve, PROTOCOL.md §8.3): a
// paired machine at the address its peers file gives, under its key.
package dest

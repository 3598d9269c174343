// Package roster is the roster room: every session on every node as a
// reader sees it. It merges this node's own sessions, the live presence
// other nodes gossip and the registry's records into one list of entries
// (List), each entry the session's roster row (api.SessionRow), made once, derives what the fold never sets (silent_since, a waiting
// subagent surfaced on its parent), orders it for `harn agents list
// --json` (Rows), reads one session anywhere, asking its owner for the
// live detail (ReadSession, ReadTrace), names the owner of a session this
// node does not hold (OwnerErr), renders the prompt-time table of the
// other live sessions (PeerContext), and adds a session's facts to the
// calls that wait for an operator (Facts, WaitingOf).
//
// It reads the node through the interfaces it declares (Host, Sessions,
// Mesh, Registry, Ledger, Remote); the composition root (node) passes the
// concrete rooms.
package roster

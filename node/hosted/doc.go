// Package hosted is the node's hosting room: agents (Claude Code, Codex,
// Gemini CLI, Cursor, harn's own TUI, a configured launcher) that the node
// starts in pseudo-terminals it owns (github.com/creack/pty), each
// optionally in a fresh git worktree. The room keeps a screen model of
// each terminal (github.com/charmbracelet/x/vt), so that an attach paints
// the current screen at once, several people can attach, and a reader
// sees the last lines of a question without attaching; it types steers,
// held follow-ups and the agent's interrupt key into the terminal, and
// ends a process with SIGTERM then SIGKILL. It ties the hooks of a hosted
// agent to its row (tie.go), remembers what it runs so that a node killed
// with -9 reaps its survivors at the next start (state.go), and makes,
// lists and removes its worktrees with the git CLI (worktree.go).
//
// The room knows nothing of the mesh or of the wire: the node routes
// remote actions to it, after its own checks (remote control, workspace
// roots), and passes the agent's argv, never a caller's command.
package hosted

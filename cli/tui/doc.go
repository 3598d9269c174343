// Package tui is the terminal UI of harn's own agent (`harn chat`, `harn`
// alone, `harn attach` of a harn session). Its room is the screen and the
// keys: it folds a session's loop events, read from the node that owns the
// session by long poll, into a transcript (prompts, the answer as
// markdown, each tool call with its arguments, diff and output), asks y/n
// for pending calls and other prompts, and sends what is typed as task
// actions. It holds no session state: kill it and run it again and the
// same screen comes back from the node.
//
// It knows the node only through Node, which the command in package cli
// builds; it never imports cli.
package tui

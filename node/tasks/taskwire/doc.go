// Package taskwire is the wire half of the tasks room (node/tasks): an
// operator's Action on a task runtime and its Result, a hook's Query and
// its Verdict, an open permission Request, the launchers a node defines,
// and their conversions to and from the node's API (node/api). It is
// light so that the client (the hook, `harn task`, `harn ask`, `harn
// agents pending`) links it without the runtimes' executors and harn's
// agent loop, whose provider SDKs belong to the daemon. Package tasks
// re-exports these names.
package taskwire
